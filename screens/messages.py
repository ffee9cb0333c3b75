"""Typed navigation messages: screens, widgets and the palette ask; the app decides how to show."""

from __future__ import annotations

from textual.message import Message

from taudash.engine.rules.base import ObjRef


class Navigate(Message):
    """Show one of the numbered screens (by its name, e.g. "pool")."""

    def __init__(self, screen: str) -> None:
        super().__init__()
        self.screen = screen


class OpenObject(Message):
    """Drill down into one object: a TauWorkspace opens the workspace detail, anything else the object detail."""

    def __init__(self, ref: ObjRef, raw: bool = False) -> None:
        super().__init__()
        self.ref = ref
        self.raw = raw  # the object detail (YAML) even for a TauWorkspace


class RequestOperation(Message):
    """A guided operation (issue 9) asks to write. Nothing posts it yet; the app refuses it in read-only
    mode and otherwise asks for confirmation naming every target (`ConfirmScreen`) before anything runs."""

    def __init__(self, title: str, targets: list[str], reversible: bool) -> None:
        super().__init__()
        self.title = title
        self.targets = targets
        self.reversible = reversible


# guided operations (issue 9) ------------------------------------------------------------
# Every request below is refused by the app when the session is read-only; the runner's worker
# only ever posts WorkflowEvent / WorkflowFinished and never touches a widget.


class NewWorkflow(Message):
    """Open the "new workflow" form (nothing is written by opening or filling it)."""

    def __init__(self, kind: str | None = None, cqs: list[str] | None = None, workspace: str | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.cqs = cqs or []
        self.workspace = workspace


class StartWorkflow(Message):
    """Journal a new workflow with these parameters and open its wizard; each step still asks first."""

    def __init__(self, kind: str, params: dict) -> None:
        super().__init__()
        self.kind = kind
        self.params = params


class ResumeWorkflow(Message):
    """Continue a journaled workflow (after a crash, a closed terminal or a failed step)."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__()
        self.workflow_id = workflow_id


class AbortWorkflow(Message):
    """Mark a workflow aborted in its journal (stopping it at its next wait if it runs here)."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__()
        self.workflow_id = workflow_id


class OpenWorkflow(Message):
    """Show a workflow's wizard (its steps, plan, progress and log); reading only."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__()
        self.workflow_id = workflow_id


class WorkflowEvent(Message):
    """One runner event (engine.workflows.base.RunnerEvent) of a workflow running in this dashboard."""

    def __init__(self, workflow_id: str, event) -> None:
        super().__init__()
        self.workflow_id = workflow_id
        self.event = event


class WorkflowFinished(Message):
    """The runner stopped: Completed, Failed, Aborted, or Interrupted (an error; resumable)."""

    def __init__(self, workflow_id: str, state: str, error: str = "") -> None:
        super().__init__()
        self.workflow_id = workflow_id
        self.state = state
        self.error = error
