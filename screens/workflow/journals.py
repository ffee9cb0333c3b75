"""The journal directory as the dashboard lists it: one entry per workflow run, re-read only for the files
that changed. The Workflows screen lists them; the new-workflow form picks from them (a run to roll back,
a run whose deactivated Workloads to reactivate)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taudash.engine.identity import ClusterIdentity, resume_refusal
from taudash.engine.workflows import Journal, JournalError, status
from taudash.engine.workflows.journal import about
from taudash.engine.workflows.params import describe


@dataclass
class Entry:
    id: str
    kind: str
    state: str
    done: int
    total: int
    context: str | None
    started: float
    about: str
    path: str
    error: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)  # status(journal)["steps"]
    leftovers: list[dict[str, Any]] = field(default_factory=list)  # status(journal)["leftovers"]
    paused: dict[str, Any] | None = None
    deactivated: int = 0  # Workloads it deactivated that are still deactivated
    artifacts: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)  # the journal's first record (id, context, cluster)
    elsewhere: str = ""  # why it does not belong to the shown cluster (never resumable here); "" when it does

    @property
    def server(self) -> str | None:
        ident = ClusterIdentity.from_dict(self.header.get("cluster"))
        return ident.server if ident else None


class JournalIndex:
    """The journal directory as entries, re-read only for files that changed (stat per tick, no parse) —
    and, when a release or rollback changed, for the run it undoes (what that run leaves depends on it).

    Given the shown cluster (`here`), an entry journaled on another cluster — or one that cannot be
    shown to be on this one — carries `elsewhere` (listed greyed as "other cluster", never resumable).
    With `store` (the shown cluster, live) the leftovers of this cluster's runs are checked against it."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int], Entry]] = {}
        self._journals: dict[str, Journal] = {}  # parsed once per change: what a run leaves reads the runs undoing it

    def load(self, directory: Path, here: ClusterIdentity | None = None, context: str | None = None,
             store: Any = None) -> list[Entry]:
        def ours(header: dict[str, Any]) -> bool:  # only this cluster's runs are checked against its store
            return here is not None and resume_refusal(header, context, here) is None

        entries = self._load(directory, store, ours)
        for e in entries:
            e.elsewhere = "" if here is None or e.state == "Unreadable" else \
                (resume_refusal(e.header, context, here) or "")
        return entries

    def _load(self, directory: Path, store: Any = None, ours: Any = None) -> list[Entry]:
        seen: dict[str, tuple[int, int]] = {}
        try:
            paths = sorted(directory.glob("*.jsonl"))
        except OSError:
            paths = []
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                continue
            seen[str(path)] = (st.st_mtime_ns, st.st_size)
        stale = {p for p, key in seen.items() if p not in self._cache or self._cache[p][0] != key}
        for gone in set(self._cache) - set(seen):
            del self._cache[gone]
            self._journals.pop(gone, None)
        failed: dict[str, str] = {}
        for p in stale:
            try:
                self._journals[p] = Journal.open(p)
            except (JournalError, OSError) as exc:
                self._journals.pop(p, None)
                failed[p] = str(exc)
        undoing: dict[str, list[Journal]] = {}
        for j in self._journals.values():
            ref = about(j)
            if ref:
                undoing.setdefault(ref, []).append(j)
        # a release or rollback that changed: the run it undoes leaves less behind
        stale |= {str(directory / f"{about(self._journals[p])}.jsonl") for p in list(stale)
                  if p in self._journals and about(self._journals[p])} & set(seen)
        for p in stale:
            run = self._journals.get(p)
            entry = _entry(run, undoing.get(run.id, []), store, ours) if run is not None else \
                _unreadable(Path(p), failed.get(p, "not a journal"))
            self._cache[p] = (seen[p], entry)
        out = [self._cache[p][1] for p in sorted(seen)]
        out.sort(key=lambda e: (-e.started, e.id))
        return out


def _unreadable(path: Path, error: str) -> Entry:
    return Entry(path.stem, "?", "Unreadable", 0, 0, None, 0.0, "", str(path), error=error)


def _entry(j: Journal, later: list[Journal], store: Any = None, ours: Any = None) -> Entry:
    try:
        doc = status(j, later, store=store if store is not None and (ours is None or ours(j.header)) else None)
    except (JournalError, KeyError, ValueError, TypeError) as exc:
        return _unreadable(j.path, str(exc))
    steps = doc["steps"]
    err = next((s["error"] for s in steps if s.get("error")), "") if j.state == "Failed" else ""
    return Entry(j.id, j.kind, j.state, sum(1 for s in steps if s["state"] == "Done"), len(steps),
                 j.header.get("context"), float(j.records[0].get("at", 0)), describe(j.kind, j.params), str(j.path),
                 error=err or "", steps=steps, leftovers=doc.get("leftovers") or [], paused=doc.get("paused"),
                 deactivated=len(doc.get("deactivated") or []), artifacts=doc.get("artifacts") or {},
                 params=j.params, header=dict(j.header))
