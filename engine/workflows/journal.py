"""Workflow journal: JSON lines, one fsync per record, mode 0600.

Records say what happened to each step — planned, confirmed, executed, observed, verified — so a
resumed workflow (after a crash or a closed terminal) knows what was already done. A torn last
line (kill -9 mid-write) is ignored; a torn line anywhere else is corruption and reported.

The readers at the end read across journals: the run a run undoes (`about`), the runs that undo it
(`later_runs`), and the Workloads it deactivated that are still deactivated (`deactivated_by`).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..identity import ClusterIdentity
from ..model import Workload
from ..model.names import DEACTIVATED_BY_ANNOTATION as DEACTIVATED_BY
from ..paths import append_private, state_dir, write_atomic
from .ops import DONE, operation_records


class JournalError(Exception):
    pass


class JournalBusy(JournalError):
    """Another process (or another run in this one) is running this workflow now."""


def workflows_dir() -> Path:
    d = state_dir() / "workflows"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


# States a run never leaves: nothing to resume. Paused (declined, Ctrl-C, paused by the operator), Failed
# and InProgress (a run whose process died) resume; Aborted is the operator's explicit end (`workflow abort`).
TERMINAL = ("Completed", "RolledBack", "Aborted", "Abandoned")
RESUMABLE = ("InProgress", "Paused", "Failed")
_STATE_OF_EVENT = {"failed": "Failed", "resumed": "InProgress", "paused": "Paused", "aborted": "Aborted",
                   "completed": "Completed", "rolled-back": "RolledBack", "abandoned": "Abandoned"}


# The journaled parameters by which a run names the run it undoes: a release's `reactivate_from`, a
# rollback's `from`. A kind declares the one its runs journal (WorkflowKind.undoes); no other kind may
# journal either (WorkflowKind.make refuses it), so these readers need no kind.
UNDO_PARAMS = ("reactivate_from", "from")


def new_id() -> str:
    return secrets.token_hex(3)


@dataclass
class StepRecord:
    planned: dict[str, Any] | None = None
    confirmed: bool = False
    declined: bool = False
    executed: list[dict[str, Any]] = field(default_factory=list)
    executed_done: bool = False
    observed: dict[str, Any] | None = None
    verified: bool = False
    failed: str | None = None


@dataclass
class Journal:
    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    torn_tail: bool = False

    @classmethod
    def create(cls, workflow_id: str, kind: str, params: dict[str, Any], context: str | None,
               directory: Path | None = None, cluster: ClusterIdentity | None = None,
               rehearsal: str | None = None) -> Journal:
        d = directory or workflows_dir()
        path = d / f"{workflow_id}.jsonl"
        if path.exists():
            raise JournalError(f"workflow {workflow_id} already exists ({path})")
        j = cls(path)
        j.append("created", None, {"id": workflow_id, "kind": kind, "params": params, "context": context,
                                   "cluster": cluster.to_dict() if cluster is not None else None,
                                   **({"rehearsal": rehearsal} if rehearsal else {})})  # the rehearsal it follows
        return j

    @classmethod
    def open(cls, workflow_id_or_path: str, directory: Path | None = None) -> Journal:
        p = Path(workflow_id_or_path)
        if not p.suffix:
            p = (directory or workflows_dir()) / f"{workflow_id_or_path}.jsonl"
        if not p.exists():
            raise JournalError(f"no workflow {workflow_id_or_path} (looked for {p})")
        return cls(p)._read()

    def reload(self) -> None:
        """Read the records again (another process may have appended since this one opened it)."""
        fresh = Journal(self.path)._read()
        self.records[:] = fresh.records
        self.torn_tail = fresh.torn_tail

    @contextmanager
    def running(self) -> Iterator[None]:
        """Held while a runner runs this workflow: one run at a time, across processes (the dashboard and
        the CLI alike). An exclusive lock on `<id>.lock` beside the journal, released by the kernel when
        the process dies, so a crashed run never blocks its resume."""
        lock = self.path.with_suffix(".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.read(fd, 64).decode(errors="replace").strip()
            finally:
                os.close(fd)
            by = f" (pid {holder})" if holder.isdigit() else ""
            raise JournalBusy(f"workflow {self.id} is running now in another taudash{by}: "
                              f"follow it there, or stop that run before resuming it here") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def runner_pid(self) -> int | None:
        """The process running this workflow now (its lock is held), 0 when unknown, None when none runs it."""
        lock = self.path.with_suffix(".lock")
        try:
            fd = os.open(lock, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 64).decode(errors="replace").strip()
                return int(holder) if holder.isdigit() else 0
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def _read(self) -> Journal:
        j, p = self, self.path
        j.records = []
        lines = p.read_bytes().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for i, raw in enumerate(lines):
            try:
                j.records.append(json.loads(raw))
            except ValueError:
                if i == len(lines) - 1:
                    j.torn_tail = True  # killed mid-write: the record never happened
                    break
                raise JournalError(f"{p}:{i + 1}: corrupt journal record") from None
        if not j.records or j.records[0].get("event") != "created":
            raise JournalError(f"{p}: not a taudash workflow journal")
        if j.torn_tail:
            # Rewrite without the torn tail so later appends start on a clean line.
            text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in j.records)
            write_atomic(p, text, mode=0o600)  # private from the first byte, unique temp name
        return j

    # writing -----------------------------------------------------------------------------
    def append(self, event: str, step: str | None, data: dict[str, Any] | None = None) -> dict[str, Any]:
        rec = {"seq": len(self.records), "at": time.time(), "event": event, "step": step, "data": data or {}}
        append_private(self.path, json.dumps(rec, separators=(",", ":"), default=str))
        self.records.append(rec)
        return rec

    # reading -----------------------------------------------------------------------------
    @property
    def header(self) -> dict[str, Any]:
        data: dict[str, Any] = self.records[0]["data"]
        return data

    @property
    def id(self) -> str:
        return str(self.header["id"])

    @property
    def kind(self) -> str:
        return str(self.header["kind"])

    @property
    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = self.header["params"]
        return params

    @property
    def cluster(self) -> ClusterIdentity | None:
        """The cluster the run is bound to (None: journaled before identities were recorded)."""
        return ClusterIdentity.from_dict(self.header.get("cluster"))

    def steps(self) -> dict[str, StepRecord]:
        out: dict[str, StepRecord] = {}
        for r in self.records[1:]:
            if r["step"] is None:
                continue
            s = out.setdefault(r["step"], StepRecord())
            ev, data = r["event"], r["data"]
            if ev != "failed":
                s.failed = None  # the step was taken up again after its failure (a resume)
            if ev == "planned":
                s.planned = data
            elif ev == "confirmed":
                s.confirmed = True
            elif ev == "declined":
                s.declined = True
            elif ev == "executed":
                s.executed.append(data)
            elif ev == "executed-all":
                s.executed_done = True
            elif ev == "observed":
                s.observed = data
            elif ev == "verified":
                s.verified = True
            elif ev == "failed":
                s.failed = data.get("error")
        return out

    def last(self, event: str) -> dict[str, Any] | None:
        r: dict[str, Any]
        for r in reversed(self.records):
            if r["event"] == event:
                return r
        return None

    @property
    def state(self) -> str:
        state = "InProgress"
        for r in self.records:
            if r["event"] == "rolled-back":
                state = "RolledBack"  # a rollback ends its source run, even a completed one
            elif state not in TERMINAL:  # otherwise a terminal state is final, whatever a stray record says
                state = _STATE_OF_EVENT.get(r["event"], state)
        return state

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def resumable(self) -> bool:
        return self.state in RESUMABLE

    def artifacts(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for r in self.records:
            if r["event"] == "artifact":
                out[r["data"]["name"]] = r["data"]["path"]
        return out


# --- readers across journals ------------------------------------------------------------------


def _is_deactivation(op: dict[str, Any]) -> bool:
    # Journals before the deactivated-by annotation patched only spec.active.
    return op.get("kind") == "Workload" and ((op.get("patch") or {}).get("spec") or {}).get("active") is False


def _is_reactivation(op: dict[str, Any]) -> bool:
    return op.get("kind") == "Workload" and ((op.get("patch") or {}).get("spec") or {}).get("active") is True


def undone_ids(params: dict[str, Any]) -> set[str]:
    """The runs a run with these journaled parameters undoes (a release, a rollback): its UNDO_PARAMS."""
    return {str(v) for v in (params.get(k) for k in UNDO_PARAMS) if v}


def about(journal: Journal) -> str | None:
    """The run a release or rollback undoes (`--reactivate-from`, `--from`), else None."""
    p = journal.params
    ref = next((p[k] for k in UNDO_PARAMS if p.get(k)), None)
    return str(ref) if ref else None


def later_runs(journal: Journal, directory: Path | None = None) -> list[Journal]:
    """The runs in the journal directory that undo this one (a release --reactivate-from it, its rollback)."""
    out = []
    for p in sorted((directory or journal.path.parent).glob("*.jsonl")):
        if p == journal.path:
            continue
        try:
            other = Journal.open(str(p))
        except (JournalError, OSError):
            continue
        if about(other) == journal.id:
            out.append(other)
    return out


def deactivated_by(journal: Journal, later: Iterable[Journal] | None = None,
                   store: Any = None) -> list[tuple[str, str]]:
    """Workloads this run (a hold, catalog change or rollback) deactivated that are still deactivated, as
    (namespace, name): its deactivations — done, or in flight when the process died (the server may have
    applied them; reactivating an active Workload is a no-op) — minus what it reactivated itself and what
    the runs that undo it reactivated since (`later`: by default read from the journal directory). With
    `store` (a live store of the same cluster) only those still inactive there and annotated
    `taudash.io/deactivated-by: <this run>` are kept."""
    events: list[tuple[float, int, tuple[str, str], bool]] = []  # (when, order, workload, deactivated?)
    runs = [journal, *(later_runs(journal) if later is None else later)]
    for rank, run in enumerate(runs):
        for rec in operation_records(run):
            if rec.kind != "Workload" or not rec.namespace:
                continue
            key = (rec.namespace, rec.name)
            if run is journal and _is_deactivation(rec.op) and rec.wrote:
                events.append((rec.sent_at or rec.at, rank, key, True))  # when sent (a resume may close it later)
            elif _is_reactivation(rec.op) and rec.state == DONE:  # one in flight may not have landed
                events.append((rec.at, rank, key, False))
    still: dict[tuple[str, str], None] = {}
    for _at, _rank, key, deactivated in sorted(events, key=lambda e: (e[0], e[1])):
        if deactivated:
            still[key] = None
        else:
            still.pop(key, None)
    out = list(still)
    if store is not None:
        out = [key for key in out if _still_ours(store, key, journal.id)]
    return out


def _still_ours(store: Any, key: tuple[str, str], workflow_id: str) -> bool:
    wl = store.get(Workload, key[1], key[0])
    return wl is not None and not wl.finished and not wl.spec.active and \
        wl.metadata.annotations.get(DEACTIVATED_BY) == workflow_id
