"""What the wizard shows about one workflow, as plain data: built from its journal, then moved along
by the runner's events. No widgets here; the wizard renders it, the app's message handler updates it.
The marks and tones of a run's and a step's state (and `run_state_text`) are shared by the wizard and
the Workflows screen.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rich.text import Text

from taudash.engine.workflows import Journal, JournalError, build, status
from taudash.engine.workflows.ops import DONE, UNCONFIRMED, operation_records
from taudash.engine.workflows.params import describe

from ..kit.text import Tones, lit

# step states: ✓ done, ▶ current, ◐ waiting, ✖ failed (a symbol with every colour)
STEP_MARK = {"Done": "✓", "Current": "▶", "Waiting": "◐", "Partial": "◑", "Failed": "✖", "Paused": "‖",
             "Stopped": "■", "Pending": " "}
STEP_TONE = {"Done": "ok", "Current": "info", "Waiting": "partial", "Partial": "partial", "Failed": "bad",
             "Paused": "warn", "Stopped": "warn", "Pending": "muted"}
RUN_MARK = {"Completed": "✓", "Running": "▶", "Confirm": "◐", "InProgress": "◐", "Paused": "‖", "Failed": "✖",
            "Aborted": "■", "Interrupted": "✖", "Unreadable": "?", "RolledBack": "↶", "Abandoned": "■"}
RUN_TONE = {"Completed": "ok", "Running": "info", "Confirm": "warn", "InProgress": "partial", "Paused": "warn",
            "Failed": "bad", "Aborted": "warn", "Interrupted": "bad", "Unreadable": "unknown", "RolledBack": "muted",
            "Abandoned": "muted"}
RESUMABLE = ("InProgress", "Paused", "Failed", "Interrupted")
# A journaled step state (engine.workflows.summary) as the wizard shows it
STEP_OF_STATUS = {"Done": "Done", "Failed": "Failed", "Waiting": "Waiting", "Partial": "Partial", "Planned": "Current"}
LOG_LINES = 400


@dataclass
class StepLine:
    id: str
    title: str
    state: str = "Pending"
    note: str = ""  # what it did or is doing, in a few words
    sent: set[str] = field(default_factory=set)  # diffs of its operations sent (done or in flight), from the journal


@dataclass
class ProgressItem:
    label: str
    first: float  # the value when the wait started (the bar fills as it moves to the target)
    current: float
    target: float

    @property
    def fraction(self) -> float | None:
        span = self.first - self.target
        if span == 0:
            return 1.0 if self.current == self.target else None
        return max(0.0, min(1.0, (self.first - self.current) / span))


@dataclass
class LogLine:
    at: datetime
    mark: str
    text: str
    tone: str = ""


@dataclass
class RunModel:
    id: str
    kind: str
    title: str
    about: str
    context: str | None
    journal_path: str
    steps: list[StepLine]
    state: str  # InProgress | Running | Confirm | Completed | Failed | Aborted | Interrupted
    current: str | None = None
    plan: dict[str, Any] | None = None  # the current step's plan (Plan.to_dict())
    plan_step: str | None = None
    checks: list[tuple[bool, str]] = field(default_factory=list)  # the current step's preconditions
    progress: str = ""
    items: dict[str, ProgressItem] = field(default_factory=dict)
    eta: float | None = None
    remaining: tuple[float, float] | None = None  # (first, now) of the items' sum
    asking: str = ""  # what the open confirmation asks, while it is open
    error: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)
    log: deque[LogLine] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    params: dict[str, Any] = field(default_factory=dict)
    # Workloads (namespace, name) this run deactivated and still deactivated, read once it stopped running
    deactivated: list[tuple[str, str]] = field(default_factory=list)
    # What the run leaves in the cluster (engine.workflows.summary.leftovers), read once it stopped running
    leftovers: list[dict[str, Any]] = field(default_factory=list)
    paused: dict[str, Any] | None = None  # where and why it paused (the journal's last "paused" record)
    store: Any = field(default=None, repr=False, compare=False)  # the live store its leftovers are checked against

    # construction ------------------------------------------------------------------------
    @classmethod
    def from_journal(cls, journal: Journal, store: Any = None) -> RunModel:
        """`store`: a live store of the cluster the run is bound to (its leftovers are checked against it)."""
        doc = status(journal, store=store)
        title = build(journal.kind, journal.params).title
        recs = journal.steps()
        steps = []
        for s in doc["steps"]:
            state = STEP_OF_STATUS.get(s["state"], "Pending")
            note = ""
            obs = s.get("observed") or {}
            sent = [o for o in s.get("operations") or [] if o["state"] != "skipped"]
            if obs.get("message") and obs["message"] != "nothing to wait for":
                note = obs["message"]
            elif s["state"] == "Partial":
                diffs = {o.get("diff") for o in sent}
                left = [op for op in s["plan"] if op.get("diff") not in diffs]
                note = (f"{len(sent)} change(s) sent before it stopped"
                        + (f", {len(left)} planned, not sent" if left else ""))
            elif s["plan"]:
                note = f"{len(s['plan'])} change(s)"
            steps.append(StepLine(s["id"], s["title"], state, note,
                                  {o.get("diff", "") for o in sent if o["state"] in ("done", "unconfirmed")}))
        model = cls(id=journal.id, kind=journal.kind, title=title, about=describe(journal.kind, journal.params),
                    context=journal.header.get("context"), journal_path=str(journal.path), steps=steps,
                    state=journal.state, artifacts=doc.get("artifacts") or {}, params=dict(journal.params),
                    store=store)
        # the step that is not done yet: its last plan is what a resume starts from
        for s in steps:
            if s.state != "Done":
                rec = recs.get(s.id)
                model.current = s.id
                if rec is not None and rec.planned is not None:
                    model.plan, model.plan_step = rec.planned, s.id
                if rec is not None and rec.failed:
                    model.error = rec.failed
                break
        if model.state == "Aborted" and model.current:
            model.step(model.current).state = "Stopped"
        if model.state == "Paused" and model.current:
            model.step(model.current).state = "Paused"
        for r in journal.records:
            line = _journal_line(r)
            if line is not None:
                model.log.append(line)
        model._take(doc)
        return model

    def _take(self, doc: dict[str, Any]) -> None:
        self.deactivated = [(ref.split("/", 1)[0], ref.split("/", 1)[1]) for ref in doc.get("deactivated") or []]
        self.leftovers = list(doc.get("leftovers") or [])
        self.paused = doc.get("paused")

    def read_leftovers(self, journal: Journal | None = None) -> None:
        """What the run leaves in the cluster, read again from its journal (and the live store)."""
        try:
            self._take(status(journal or Journal.open(self.journal_path), store=self.store))
        except (JournalError, OSError, KeyError, ValueError):
            pass  # the journal went away: keep what was read before

    @property
    def checked_live(self) -> bool:
        return bool(self.leftovers) and all(it.get("checked") == "cluster" for it in self.leftovers)

    def step(self, step_id: str | None) -> StepLine:
        return next((s for s in self.steps if s.id == step_id), StepLine(step_id or "?", step_id or "?"))

    def index(self, step_id: str | None) -> int:
        return next((i for i, s in enumerate(self.steps, start=1) if s.id == step_id), 0)

    @property
    def done(self) -> int:
        return sum(1 for s in self.steps if s.state == "Done")

    @property
    def resumable(self) -> bool:
        return self.state in RESUMABLE

    # runner events -----------------------------------------------------------------------
    def apply(self, event: Any, at: datetime) -> None:
        """Move along with one RunnerEvent (kind, step, message, data)."""
        kind, sid, msg, data = event.kind, event.step, event.message, event.data or {}
        s = self.step(sid) if sid else None
        if kind == "step-start" and s is not None:
            s.state, self.current = "Current", sid
            self.plan, self.plan_step, self.checks = None, None, []
            self.items, self.eta, self.remaining, self.progress, self.error = {}, None, None, "", ""
            self._log(at, "▶", f"step {self.index(sid)} {msg}", "info")
        elif kind == "plan" and s is not None:
            self.plan, self.plan_step = data.get("plan") or {}, sid
            self._log(at, " ", f"plan: {msg}")
        elif kind == "checks":
            self.checks = [(bool(ok), str(text)) for ok, text in data.get("checks", [])]
        elif kind == "confirm":
            self.asking, self.state = msg, "Confirm"
            self._log(at, "?", f"asking: {msg}", "warn")
        elif kind == "answer":
            self.asking, self.state = "", "Running"
            self._log(at, "✓" if data.get("ok") else "■", msg, "ok" if data.get("ok") else "warn")
        elif kind == "executed":
            self._log(at, "·", msg)
        elif kind == "progress" and s is not None:
            if not data.get("done"):
                s.state = "Waiting"
            if msg != self.progress:
                self._log(at, "…", msg, "muted")
            self.progress = msg
            self.eta = data.get("eta")
            total_first = total_now = 0.0
            for label, cur, target in data.get("items") or []:
                item = self.items.get(label)
                if item is None:
                    item = self.items[label] = ProgressItem(label, float(cur), float(cur), float(target))
                item.current = float(cur)
                item.first = max(item.first, item.current)  # re-planned work can raise it again
                total_first += item.first
                total_now += item.current
            if self.items:
                self.remaining = (total_first, total_now)
            if data.get("done") and msg != "nothing to wait for":
                s.note = msg
        elif kind == "verified" and s is not None:
            s.state = "Done"
            self._log(at, "✓", msg, "ok")
        elif kind == "failed":
            if s is not None:
                s.state = "Failed"
            self.state, self.error = "Failed", msg
            self._log(at, "✖", msg, "bad")
        elif kind == "completed":
            self.state, self.current = "Completed", None
            self.plan, self.plan_step, self.checks, self.asking = None, None, [], ""
            self._log(at, "✓", msg, "ok")
        elif kind == "paused":
            if s is not None and s.state != "Done":
                s.state = "Paused"
            self.state, self.asking = "Paused", ""
            self._log(at, "‖", msg, "warn")
        elif kind == "aborted":
            if s is not None:
                s.state = "Stopped"
            self.state = "Aborted"
            self._log(at, "■", msg, "warn")

    def started(self, at: datetime, resumed: bool) -> None:
        self.state, self.error, self.asking, self.paused = "Running", "", "", None
        if self.current:
            st = self.step(self.current)
            if st.state in ("Failed", "Stopped", "Paused", "Partial"):
                st.state = "Current"
        self._log(at, "▶", "resumed in the dashboard" if resumed else "started in the dashboard", "info")

    def finished(self, state: str, error: str, at: datetime) -> None:
        if state == "Aborted" and self.current and self.step(self.current).state != "Done":
            self.step(self.current).state = "Stopped"
        if state == "Paused" and self.current and self.step(self.current).state != "Done":
            self.step(self.current).state = "Paused"
        if state == "Aborted" and self.state != "Aborted":
            self._log(at, "■", "aborted by the operator: it will not be resumed; nothing in the cluster is undone",
                      "warn")
        if state == "Interrupted":
            self.error = error
            self._log(at, "✖", f"interrupted: {error} (resumable)", "bad")
        self.state, self.asking = state, ""
        self.read_leftovers()  # the journal now holds every write the run made

    def _log(self, at: datetime, mark: str, text: str, tone: str = "") -> None:
        self.log.append(LogLine(at, mark, text, tone))


_JOURNAL_WORDS = {
    "created": ("·", "journal created", ""),
    "resumed": ("▶", "resumed", "info"),
    "planned": (" ", "planned", ""),
    "confirmed": ("✓", "confirmed", "ok"),
    "declined": ("■", "declined", "warn"),
    "executed-all": ("·", "changes sent", ""),
    "observed": ("…", "observed", "muted"),
    "verified": ("✓", "verified", "ok"),
    "failed": ("✖", "failed", "bad"),
    "paused": ("‖", "paused", "warn"),
    "aborted": ("■", "aborted", "warn"),
    "completed": ("✓", "completed", "ok"),
    "replan": ("…", "new work appeared: planned again", "muted"),
    "artifact": ("·", "artifact", ""),
}


def _journal_line(r: dict[str, Any]) -> LogLine | None:
    ev, data, step = r.get("event"), r.get("data") or {}, r.get("step")
    try:
        at = datetime.fromtimestamp(float(r.get("at", 0)), UTC)
    except (TypeError, ValueError, OverflowError):
        at = datetime.fromtimestamp(0, UTC)
    if ev == "executed":
        op = data.get("op") or {}
        if op:
            result = data.get("result") or {}
            what = "skipped" if data.get("skipped") else ("done" if result.get("changed") else result.get("note", ""))
            return LogLine(at, "·", f"{step}: {op.get('diff', '')} ({what})")
        if data.get("local") is not None:
            return LogLine(at, "·", f"{step}: local work done")
        return None
    if ev not in _JOURNAL_WORDS:
        return None
    mark, word, tone = _JOURNAL_WORDS[ev]
    text = f"{step}: {word}" if step else word
    if ev == "planned":
        text += f" ({len(data.get('operations') or [])} change(s))"
    elif ev == "observed" and data.get("message"):
        text += f": {data['message']}"
    elif ev == "failed" and data.get("error"):
        text += f": {data['error']}"
    elif ev == "artifact":
        text += f" {data.get('name', '')}: {data.get('path', '')}"
    elif ev == "aborted" and data.get("by"):
        text += f" by the {data['by']}"
    elif ev == "paused":
        text += f" at step {data.get('step')}: {data.get('message') or data.get('reason') or ''}" if data.get("step") \
            else f": {data.get('message') or data.get('reason') or ''}"
    return LogLine(at, mark, text, tone)


def written_by(journal: Journal) -> list[str]:
    """The cluster changes a workflow made so far, as diff lines, oldest first: operations the server
    changed, and operations sent whose answer never came (the process died in between, so the server may
    have applied them). Skipped and no-op operations are not writes."""
    out = []
    for rec in operation_records(journal):
        if rec.state == DONE:
            out.append(rec.diff)
        elif rec.state == UNCONFIRMED:
            out.append(f"{rec.diff} (sent; its answer never came)")
    return out


def eta_text(eta: float | None) -> str:
    if eta is None:
        return "ETA –"
    if eta < 90:
        return f"ETA {max(1, int(round(eta)))} s"
    if eta < 5400:
        return f"ETA {int(round(eta / 60))} min"
    return f"ETA {eta / 3600:.1f} h"


def age_text(seconds: float) -> str:
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400 * 2:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def run_state_text(state: str, tones: Tones, wide: bool = False) -> Text:
    """A run's state as its mark and word, in its tone ("Confirm" reads "waiting for you")."""
    word = {"Confirm": "waiting for you", "InProgress": "InProgress (not running)" if wide else "InProgress"}.get(
        state, state)
    tone = RUN_TONE.get(state, "unknown")
    t = Text(end="")
    t.append(f"{RUN_MARK.get(state, '?')} ", style=tones.of(tone))
    t.append(lit(word, tones.of(tone)))
    return t
