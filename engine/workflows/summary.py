"""What a run did and what it leaves behind, read from its journal (and, when given, the live cluster).

`status` is `taudash workflow status ID -o json` (apiVersion taudash/v1, kind WorkflowStatus): each step
with every operation the run sent and its real state, and `leftovers`: what the run leaves in the
cluster — queues held, Workloads still deactivated, the catalog changed, objects deleted — each with
the command that undoes it. Everything here reads; nothing writes to the cluster or to the journal.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from ..model import ClusterQueue
from . import registry
from .journal import Journal, JournalError, about, deactivated_by, later_runs
from .ops import DONE, NOT_DONE, UNCONFIRMED, OpRecord, operation_records
from .steps import previous_stop_policies, stop_policy_written

HELD = ("Hold", "HoldAndDrain")
NAMES_SHOWN = 10  # Workload names in a leftover's message; `objects` lists them all
CATALOG_STEPS = ("apply", "restore-catalog")  # the steps that rewrite the TauCluster catalog


def command(words: str, journal: Journal) -> str:
    """A taudash command line for this run's cluster (its journaled context, when there is one)."""
    ctx = journal.header.get("context")
    return f"taudash {words}" + (f" --context {shlex.quote(str(ctx))}" if ctx else "")


def resume_command(journal: Journal) -> str:
    return command(f"workflow resume {journal.id}", journal)


def cluster_of(journal: Journal) -> dict[str, Any]:
    """Where a run ran: its context and the cluster identity it was bound to (None when journaled before)."""
    ident = journal.cluster
    return {"context": journal.header.get("context"), "server": ident.server if ident else None,
            "uid": ident.uid if ident else None}


# --- operations and steps ---------------------------------------------------------------------------


def _unfinished_plan(journal: Journal, step_id: str) -> bool:
    """The step's last plan was confirmed and some of its operations sent, but not all ("executed-all" never
    followed): a pause, Ctrl-C or a crash came between them."""
    planned = sent = False
    for r in journal.records:
        if r.get("step") != step_id:
            continue
        if r["event"] == "planned":
            planned, sent = bool((r.get("data") or {}).get("operations")), False
        elif r["event"] == "executing":
            sent = True
        elif r["event"] == "executed-all":
            planned = sent = False
    return planned and sent


def _step_state(journal: Journal, step_id: str, rec: Any, ops: list[OpRecord]) -> str:
    if rec is None:
        return "Pending"
    if rec.failed:
        return "Failed"
    if rec.verified:
        return "Done"
    if any(o.state == UNCONFIRMED for o in ops) or _unfinished_plan(journal, step_id):
        return "Partial"  # some of its operations were sent, not all (or not answered): it stopped in between
    if rec.observed is not None or rec.executed_done:
        return "Waiting"
    if any(o.state in (DONE, NOT_DONE) for o in ops):
        return "Partial"  # it sent some, then stopped before its next plan was confirmed
    if rec.planned is not None:
        return "Planned"
    return "Pending"


def _op_doc(rec: OpRecord, probed: dict[int, tuple[bool, str]]) -> dict[str, Any]:
    doc = rec.to_dict()
    if rec.state == UNCONFIRMED and id(rec) in probed:
        done, note = probed[id(rec)]
        doc.update(state=DONE if done else "not-done", note=note, live=True)
    elif rec.state == UNCONFIRMED:
        doc["note"] = "sent, its answer never journaled; --context/--kubeconfig reads the object"
    return doc


def status(journal: Journal, later: Iterable[Journal] | None = None, store: Any = None,
           probed: dict[int, tuple[bool, str]] | None = None, records: list[OpRecord] | None = None) -> dict[str, Any]:
    """The WorkflowStatus document. `later`: the runs that undo this one (default: read from its
    directory); `store`: a live store of the same cluster to check the leftovers against; `probed`:
    writes in flight found done or not by re-reading them (keyed by id() of the `records` given)."""
    wf = registry.get(journal.kind).build(journal.params)
    later = list(later_runs(journal) if later is None else later)
    recs = journal.steps()
    records = operation_records(journal) if records is None else records
    probed = probed or {}
    steps = []
    for s in wf.steps:
        r = recs.get(s.id)
        ops = [o for o in records if o.step == s.id]
        steps.append({
            "id": s.id, "title": s.title, "state": _step_state(journal, s.id, r, ops),
            "operations": [_op_doc(o, probed) for o in ops],
            "plan": (r.planned or {}).get("operations", []) if r else [],
            "executed": [e.get("result") or e.get("local") for e in (r.executed if r else [])],
            "observed": r.observed if r else None, "error": r.failed if r else None,
        })
    paused = journal.last("paused") if journal.state == "Paused" else None
    deactivating = journal.kind in registry.deactivating()
    return {"apiVersion": "taudash/v1", "kind": "WorkflowStatus", "id": journal.id, "workflow": journal.kind,
            "context": journal.header.get("context"), "cluster": cluster_of(journal), "state": journal.state,
            "params": _public_params(journal.params), "artifacts": journal.artifacts(), "steps": steps,
            "journal": str(journal.path),
            "paused": dict((paused or {}).get("data") or {}, at=paused["at"]) if paused else None,
            "resume": resume_command(journal) if journal.resumable else None,
            "inFlight": sum(1 for o in records if o.state == UNCONFIRMED and id(o) not in probed),
            "deactivated": [f"{ns}/{name}" for ns, name in deactivated_by(journal, later, store)] if deactivating
            else [],
            "leftovers": leftovers(journal, later, store, records)}


def _public_params(params: dict[str, Any]) -> dict[str, Any]:
    out = dict(params)
    for key in ("catalog", "previous_catalog"):
        if key in out:
            out[key] = [p.get("name") for p in out[key]]
    return out


# --- leftovers --------------------------------------------------------------------------------------


def _item(kind: str, message: str, checked: bool, undo: str | None, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "message": message, "checked": "cluster" if checked else "journal", "undo": undo, **extra}


def _readable(store: Any, kind: str) -> bool:
    return store is not None and bool(store.readable(kind))


def leftovers(journal: Journal, later: Iterable[Journal] | None = None, store: Any = None,
              records: list[OpRecord] | None = None) -> list[dict[str, Any]]:
    """What the run leaves in the cluster, each with the command that undoes it (`undo`, None when taudash
    cannot: a deletion). Read from its journal — a write in flight counts as made — and, with `store`
    (the same cluster, live), kept only where the live object still shows it (`checked: cluster`)."""
    later = list(later_runs(journal) if later is None else later)
    records = operation_records(journal) if records is None else records
    items = _catalog_left(journal, records, later, store)
    items += _queues_left(journal, records, later, store)
    if journal.kind in registry.deactivating():
        items += _workloads_left(journal, later, store)
    if _rolls_back(journal.kind) and about(journal):  # what the run it undoes still leaves, until it is done
        try:
            source = Journal.open(str(about(journal)), journal.path.parent)
        except (JournalError, OSError):
            source = None
        if source is not None:
            for it in leftovers(source, None, store):
                if it["kind"] in ("catalog-changed", "workloads-deactivated"):
                    # finishing this rollback undoes them; a second rollback would be refused while it is unfinished
                    items.append(dict(it, of=source.id, undo=resume_command(journal) if journal.resumable
                                      else it["undo"]))
    for rec in records:
        if rec.verb == "delete" and rec.wrote:
            checked = _readable(store, rec.kind)
            if checked and store.get(rec.kind, rec.name, rec.namespace) is not None and rec.state == UNCONFIRMED:
                continue  # the delete in flight never landed: nothing was deleted
            items.append(_item("deleted", f"{rec.ref} deleted" + (" (the delete was in flight: unconfirmed)"
                                                                 if rec.state == UNCONFIRMED and not checked else "")
                               + ": not reversible by taudash; re-create it from its source if it is still needed",
                               checked, None, object=rec.ref))
    return items


def _rolls_back(kind: str) -> bool:
    """A kind whose completed run ends the run it undoes for good (WorkflowKind.rolls_back: a rollback)."""
    wk = registry.find(kind)
    return wk is not None and wk.rolls_back


def _catalog_left(journal: Journal, records: list[OpRecord], later: list[Journal], store: Any) -> list[dict[str, Any]]:
    if journal.kind != "catalog":
        return []
    applied = [r for r in records if r.step == "apply" and r.kind == "TauCluster" and r.wrote]
    if not applied:
        return []
    when = applied[-1].sent_at or applied[-1].at
    for run in later:  # a rollback that restored the previous catalog since
        if _rolls_back(run.kind) and any(r.step in CATALOG_STEPS and r.state == DONE and r.at >= when
                                         for r in operation_records(run)):
            return []
    catalog = journal.params.get("catalog") or []
    checked = _readable(store, "TauCluster")
    if checked:
        from .catalog import _same_catalog  # the catalog module builds on this one's readers

        live = ((store.raw("TauCluster", "cluster") or {}).get("spec") or {}).get("workloadProfiles") or []
        if not _same_catalog(live, catalog):
            return []
    unconfirmed = not checked and applied[-1].state == UNCONFIRMED
    return [_item("catalog-changed", f"TauCluster cluster declares the new catalog ({len(catalog)} profiles)"
                  + (" (the update was in flight: unconfirmed)" if unconfirmed else ""), checked,
                  command(f"workflow start rollback --from {journal.id}", journal), object="TauCluster cluster")]


def _queues_left(journal: Journal, records: list[OpRecord], later: list[Journal], store: Any) -> list[dict[str, Any]]:
    """Queues whose last stopPolicy write (this run's, after the writes of the runs that undo it) holds them
    on something other than what they had before the run."""
    if journal.kind not in registry.deactivating():  # a release or a drain never holds a queue
        return []
    last: dict[str, tuple[float, OpRecord, bool]] = {}  # queue -> (when, write, by this run)
    for run in [journal, *later]:
        for rec in records if run is journal else operation_records(run):
            target = stop_policy_written(rec.op)
            if target is None or not rec.wrote or (run is not journal and rec.state != DONE):
                continue
            when = rec.sent_at or rec.at
            if rec.name not in last or when >= last[rec.name][0]:
                last[rec.name] = (when, rec, run is journal)
    previous = previous_stop_policies(journal, "hold")
    undo = command(f"workflow start release --reactivate-from {journal.id}", journal)
    out = []
    for name in sorted(last):
        _when, rec, ours = last[name]
        target = stop_policy_written(rec.op) or "None"
        was = previous.get(name, "None")
        if not ours or target not in HELD or target == was:
            continue
        checked = _readable(store, "ClusterQueue")
        if checked:
            cq = store.get(ClusterQueue, name)
            if cq is None or (cq.spec.stop_policy or "None") != target:
                continue  # gone, or changed since by someone else: not this run's to undo
        unconfirmed = not checked and rec.state == UNCONFIRMED
        out.append(_item("queue-held", f"ClusterQueue {name} is on stopPolicy {target} (it was {was} before the run)"
                         + (" (the write was in flight: unconfirmed)" if unconfirmed else ""), checked, undo,
                         object=f"ClusterQueue {name}", stopPolicy=target, previous=was))
    return out


def _workloads_left(journal: Journal, later: list[Journal], store: Any) -> list[dict[str, Any]]:
    checked = _readable(store, "Workload")
    names = [f"{ns}/{name}" for ns, name in deactivated_by(journal, later, store if checked else None)]
    if not names:
        return []
    shown = (", ".join(names[:NAMES_SHOWN])
             + (f" … and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""))
    return [_item("workloads-deactivated", f"{len(names)} Workload(s) deactivated (spec.active=false, out of admission "
                  f"until reactivated): {shown}", checked,
                  command(f"workflow start release --reactivate-from {journal.id}", journal), objects=names)]
