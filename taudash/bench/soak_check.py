"""What the soak checks at its end: the store against the server, the findings against a fresh list, the
recorder's file against what it was asked to write (taudash/bench/soak.py)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from taudash.engine.history import db as hdb
from taudash.engine.history.recorder import Observation, Recorder, SeriesKey
from taudash.engine.store import Store

State = dict[str, set[tuple[str, str, str]]]


def store_state(store: Store, kinds: Iterable[str]) -> State:
    """(namespace, name, resourceVersion) per kind, as the store holds it."""
    return {k: {(o.namespace or "", o.name, o.metadata.resource_version or "") for o in store.list(k)} for k in kinds}


def differing(server: dict[str, list[list[str]]], store: Store) -> dict[str, list[str]]:
    """Per kind, the objects that differ — missing from the store, extra in it, or at another
    resourceVersion — as `namespace/name`; empty when the store holds exactly what the server holds."""
    want = {k: {tuple(o) for o in objs} for k, objs in server.items()}
    have = store_state(store, want)
    out = {}
    for kind, objs in want.items():
        wrong = {(ns, name) for ns, name, _ in objs ^ have[kind]}
        if wrong:
            out[kind] = sorted(f"{ns}/{name}" if ns else name for ns, name in wrong)
    return out


def finding_keys(view: Any) -> set[tuple[str, str, str, str, str, str]]:
    """Every finding as (rule, kind, namespace, name, severity, message)."""
    return {(f.rule, f.object.kind, f.object.namespace or "", f.object.name, str(f.severity), f.message)
            for f in view.findings}


def digest(samples: dict[SeriesKey, float | None]) -> bytes:
    """A sample pass's values, order-free; a NULL is no value (a series that ended reads as NULL)."""
    items = sorted((k, v) for k, v in samples.items() if v is not None)
    return hashlib.blake2b(repr(items).encode(), digest_size=16).digest()


class CountedRecorder(Recorder):
    """The dashboard's recorder, keeping a digest of each sample pass it committed and counting failed
    writes: what the soak reads back from the file at the end (a digest, so an hour's passes stay small)."""

    def __init__(self, path: Path | str, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.passes: list[tuple[int, bytes]] = []
        self.failed_writes = 0
        self.event_rows = 0

    def write(self, obs: Observation) -> None:
        try:
            super().write(obs)
        except Exception:
            self.failed_writes += 1
            raise
        if obs.samples is not None:
            self.passes.append((int(obs.now), digest(obs.samples)))


def passes_read_back(path: Path) -> dict[int, bytes]:
    """Each sample pass in the file with the digest of its values as the read path defines them (db.py,
    KEYFRAME_SECONDS: a series' latest sample at or before the pass in the pass's keyframe bucket)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        keys = {sid: (kind, name, flavor, resource, metric) for sid, kind, name, flavor, resource, metric
                in conn.execute("SELECT id, kind, name, flavor, resource, metric FROM series")}
        by_ts: dict[int, list[tuple[int, float | None]]] = {}
        for sid, ts, value in conn.execute("SELECT series_id, ts, value FROM samples"):
            by_ts.setdefault(ts, []).append((sid, value))
        out: dict[int, bytes] = {}
        held: dict[SeriesKey, float | None] = {}
        bucket = None
        for (ts,) in conn.execute("SELECT ts FROM sample_passes ORDER BY ts"):
            if ts // hdb.KEYFRAME_SECONDS != bucket:
                bucket, held = ts // hdb.KEYFRAME_SECONDS, {}
            for sid, value in by_ts.get(ts, ()):
                held[keys[sid]] = value
            out[ts] = digest(held)
        return out
    finally:
        conn.close()


def lost_passes(written: list[tuple[int, bytes]], path: Path) -> tuple[int, int]:
    """(passes written but missing from the file or reading other values, passes written)."""
    have = passes_read_back(path)
    return sum(1 for ts, d in written if have.get(ts) != d), len(written)


def finding_difference(live_view: Any, fresh_view: Any) -> list[str]:
    """Findings only one of the two views has, described (empty when they agree)."""
    live, fresh = finding_keys(live_view), finding_keys(fresh_view)
    return ([f"only live: {k[0]} {k[1]} {k[2]}/{k[3]}" for k in sorted(live - fresh)]
            + [f"only fresh: {k[0]} {k[1]} {k[2]}/{k[3]}" for k in sorted(fresh - live)])

