"""The composition root: the Session each program shows, built whole, here and nowhere else.

A Session is given everything it may do in its constructor (engine/session.py) and keeps it: the write
path, the reads made on demand, the recorded history, the cluster's identity, who asked for read-only mode.
What each program's Session holds:

    program                source                write path (Actions)              on demand        history  identity
    dashboard, live        LiveCluster           live, or read-only (who asked)    positions, YAML  reader   read
    dashboard, snapshot    a snapshot file       read-only: nothing to write to    -                -        -
    serve (+ wallboard)    LiveCluster / file    read-only by construction         -                -        -
    fleet member           LiveCluster per try   read-only: a fleet view           -                -        once synced
    bench                  LiveCluster (timed)   none configured                   positions        -        -

The connection itself (connect → sync → identity → write path) is taudash/live.py's LiveCluster.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from taudash.engine.actions import Actions
from taudash.engine.history import DEMO_CLUSTER_KEY, HistoryReader, cluster_key
from taudash.engine.identity import ClusterIdentity
from taudash.engine.rules.base import RuleConfig
from taudash.engine.session import HISTORY_WINDOW, Session
from taudash.engine.sources.ondemand import KubeOnDemand
from taudash.engine.store import Store
from taudash.engine.view import SourceInfo

from .live import LiveCluster
from .loading import Loaded

SNAPSHOT_REASON = "snapshot source: nothing to write to"
FLEET_READ_ONLY = "fleet view: open one cluster (taudash --context NAME) to act on it"
FLEET_BADGE = "fleet view"


def history_key(live: LiveCluster, demo: bool) -> str:
    """Which history file a live cluster records into and is read from (docs/history.md)."""
    return DEMO_CLUSTER_KEY if demo else cluster_key(live.target.context, live.target.server)


def dashboard_session(live: LiveCluster, config: RuleConfig, *, demo: bool, source_type: str,
                      history_reader: HistoryReader | None, now: datetime) -> Session:
    """The dashboard on a synced live cluster: its write path (read-only when anyone asked, the header
    badge saying who), Kueue's queue positions and an object's whole YAML and Events on demand, the
    cluster's recorded history, and its identity (journals are bound to it)."""
    asked = live.read_only_state
    session = Session(live.store, live.source_info(source_type), config, lock=live.lock, read_only=bool(asked),
                      read_only_why=asked.badge, demo=demo, actions=live.actions, cluster=live.identity,
                      queue_positions=live.source.pending_workloads, on_demand=KubeOnDemand.for_source(live.source),
                      history_reader=history_reader)
    seed_from_history(session, now)
    return session


def seed_from_history(session: Session, now: datetime) -> None:
    """Start the "last 30 min" sparklines from the session's recorded history, so they survive a restart."""
    if session.history_reader is not None:
        session.seed_history(session.history_reader.recent_reserved(now.timestamp(), HISTORY_WINDOW))


def snapshot_session(loaded: Loaded, config: RuleConfig, *, demo: bool = False, why: str = SNAPSHOT_REASON,
                     badge: str = "") -> Session:
    """A snapshot file: an observed revision, never written back (its write path holds no client)."""
    return Session(loaded.store, loaded.source, config, read_only=True, read_only_why=badge, demo=demo,
                   issues=tuple(str(i) for i in loaded.issues), actions=Actions.read_only(why))


def serve_session(live: LiveCluster, config: RuleConfig, *, demo: bool, source_type: str, badge: str = "") -> Session:
    """`taudash serve` on a synced live cluster: read-only by construction (`live` was opened with
    `never_writes`, so its write path holds no client); nothing asked on demand."""
    if live.actions.writable:
        raise ValueError("taudash serve shows a read-only session only: open its LiveCluster with never_writes")
    return Session(live.store, live.source_info(source_type), config, lock=live.lock, read_only=True,
                   read_only_why=badge, demo=demo, actions=live.actions)


def fleet_member_session(context: str, config: RuleConfig | None, source_type: str,
                         cluster: Callable[[], ClusterIdentity | None]) -> Session:
    """One cluster of the fleet dashboard, read-only. It exists before its cluster answers (the Fleet screen
    shows it connecting): its store is filled by each connection attempt, `cluster` returns the identity
    the last one read."""
    return Session(Store(), SourceInfo(type=source_type, context=context), config, read_only=True,
                   read_only_why=FLEET_BADGE, actions=Actions.read_only(FLEET_READ_ONLY, context), cluster=cluster)


AGENTS_READ_ONLY = "fleet from agents: summaries only (Enter on a cluster with a kubeconfig context opens it live)"


def agents_session(config: RuleConfig | None, label: str) -> Session:
    """What the other screens of a fleet-from-agents dashboard show until a cluster is opened live: an
    empty, read-only cluster (the app keeps them closed meanwhile; taudash/agents.py)."""
    return Session(Store(), SourceInfo(type="agents", context=label), config, read_only=True,
                   read_only_why="fleet from agents", actions=Actions.read_only(AGENTS_READ_ONLY))


def bench_session(live: LiveCluster, url: str) -> Session:
    """The benchmark's dashboard on its synthetic cluster: Kueue's positions asked as live; no write path."""
    return Session(live.store, SourceInfo(type="sim", context="taudash-bench", path=url), RuleConfig(),
                   lock=live.lock, queue_positions=live.source.pending_workloads)
