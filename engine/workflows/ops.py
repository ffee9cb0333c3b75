"""The operations a run sent, read back from its journal: one record per write, with its real state.

Every write is journaled twice: `executing` before the request, `executed` with the server's answer.
A process that dies (kill -9, a closed terminal) between the two leaves the write *in flight*: the
server may or may not have applied it. A resume re-reads the object and closes the record as done or
not done (an `executed` record marked `reconciled`); until then `workflow status` calls it
unconfirmed, or reads the object itself when it is given a cluster (without journaling anything).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

# States of one operation: the server changed the object, did not (already so, refused, or found not
# applied on re-reading), the operator skipped it (a confirm-each plan), or its answer never came.
DONE, NOT_DONE, SKIPPED, UNCONFIRMED = "done", "not-done", "skipped", "unconfirmed"


@dataclass
class OpRecord:
    step: str
    op: dict[str, Any]  # Operation.to_dict() as journaled
    state: str
    at: float  # when it was answered (or, in flight, sent)
    sent_at: float | None = None  # the `executing` record's time (None: a skip, or a journal from before it)
    note: str = ""
    reconciled: bool = False  # closed by re-reading the object after the run stopped

    @property
    def key(self) -> tuple[str, str, str | None, str]:
        return op_key(self.op)

    @property
    def kind(self) -> str:
        return str(self.op.get("kind", ""))

    @property
    def namespace(self) -> str | None:
        ns = self.op.get("namespace")
        return str(ns) if ns else None

    @property
    def name(self) -> str:
        return str(self.op.get("name", ""))

    @property
    def verb(self) -> str:
        return str(self.op.get("verb", ""))

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    @property
    def diff(self) -> str:
        return str(self.op.get("diff") or self.ref)

    @property
    def wrote(self) -> bool:
        """The object may carry this write: done, or in flight (the server may have applied it)."""
        return self.state in (DONE, UNCONFIRMED)

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "verb": self.verb, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "diff": self.diff, "state": self.state, "note": self.note,
                "reconciled": self.reconciled, "at": self.at}


class Journaled(Protocol):
    """What these readers read of a journal (journal.Journal): its records, oldest first."""

    records: list[dict[str, Any]]


def op_key(op: dict[str, Any]) -> tuple[str, str, str | None, str]:
    return (str(op.get("verb", "")), str(op.get("kind", "")), op.get("namespace") or None, str(op.get("name", "")))


def operation_records(journal: Journaled) -> list[OpRecord]:
    """Every operation the run sent or skipped, oldest first. An `executing` record is paired with the
    next `executed` record of the same step and object; one left unpaired is in flight (UNCONFIRMED)."""
    out: list[OpRecord] = []
    open_: dict[tuple[str, tuple[str, str, str | None, str]], OpRecord] = {}
    for r in journal.records:
        event, data, step = r.get("event"), r.get("data") or {}, r.get("step")
        op = data.get("op")
        if event not in ("executing", "executed") or not isinstance(op, dict) or step is None:
            continue  # a confirm-each "confirmed" record names its object as a string
        at = float(r.get("at") or 0.0)
        slot = (str(step), op_key(op))
        if event == "executing":
            rec = OpRecord(str(step), op, UNCONFIRMED, at, sent_at=at)
            open_[slot] = rec
            out.append(rec)
            continue
        result = data.get("result") or {}
        rec_or_none = open_.pop(slot, None)
        if rec_or_none is None:  # a skip (never sent), or a journal from before `executing` was written
            rec_or_none = OpRecord(str(step), op, UNCONFIRMED, at)
            out.append(rec_or_none)
        rec = rec_or_none
        rec.at = at
        if data.get("skipped"):
            rec.state, rec.note = SKIPPED, "skipped by the operator"
        else:
            rec.state = DONE if result.get("changed") else NOT_DONE
            rec.reconciled = bool(result.get("reconciled"))
            # a write's note is the reason it was sent; one not done says why not ("already in the planned state")
            rec.note = str(result.get("note") or "") if rec.state == NOT_DONE or rec.reconciled else ""
    return out


def in_flight(journal: Journaled) -> list[OpRecord]:
    """Writes sent whose answer the journal never got."""
    return [r for r in operation_records(journal) if r.state == UNCONFIRMED]


def _holds(have: Any, want: Any) -> bool:
    """Whether `have` carries the merge patch `want` (a None value in the patch means the key is gone)."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        return all((k not in have or have[k] is None) if v is None else _holds(have.get(k), v)
                   for k, v in want.items())
    return bool(have == want)


def landed(op: dict[str, Any], obj: dict[str, Any] | None) -> bool:
    """Whether the object as read now (None: gone) shows the journaled operation applied: a delete when the
    object is gone or deleting, a patch when the object carries the patch. Steps whose journaled patch
    is a summary (the catalog) decide for themselves (Step.landed)."""
    if op.get("verb") == "delete":
        return obj is None or bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    if obj is None:
        return False
    return _holds(obj, op.get("patch") or {})
