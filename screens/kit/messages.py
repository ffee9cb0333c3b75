"""The messages screens, widgets and the palette post to ask the app for something; the app decides how.

Each is a small dataclass (Textual initialises a dataclass message through `Message.__post_init__`).
A message that only one widget posts is nested in that widget instead (`FilterBar.Applied`,
`KeyedTable.Counted`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from taudash.engine.rules.base import ObjRef
from taudash.engine.workflows.base import RunnerEvent

# navigation -----------------------------------------------------------------------------------------


@dataclass
class Navigate(Message):
    """Show one of the registered screens (by its name, e.g. "pool"; see screens/registry.py)."""

    screen: str


@dataclass
class OpenObject(Message):
    """Drill down into one object: a TauWorkspace opens the workspace detail, anything else the object detail."""

    ref: ObjRef
    raw: bool = False  # the object detail (YAML) even for a TauWorkspace


@dataclass
class OpenQueue(Message):
    """Open a ClusterQueue's own screen: its ordered pending Workloads (Kueue's positions) and what it admitted;
    with `local_queue` (namespace, name), that LocalQueue's screen instead."""

    cluster_queue: str
    local_queue: tuple[str, str] | None = None


@dataclass
class OpenPods(Message):
    """The Pods of one object (a Workload, node, namespace or queue: an engine PodScope), on a Pods view pushed
    on the screen that asked."""

    scope: Any  # taudash.engine.pod_list.PodScope
    title: str = ""  # what the view is of, when the scope's own label says too little ("workspace train")


@dataclass
class OpenLogs(Message):
    """Read one Pod's log on the log screen (a read: allowed in read-only mode)."""

    ref: ObjRef
    containers: tuple[str, ...] = ()
    started: bool = True  # some container runs or ran (else the server says it is waiting to start)


@dataclass
class SwitchContext(Message):
    """Show another kubeconfig context (the contexts screen, `:ctx NAME`): the app opens a new session on its
    cluster, or says why not; None goes back to the screen the contexts list was opened from."""

    context: str | None


@dataclass
class RequestOperation(Message):
    """A guided operation asks to write. Nothing posts it yet; the app refuses it in read-only
    mode and otherwise asks for confirmation naming every target (`ConfirmScreen`) before anything runs."""

    title: str
    targets: list[str]
    reversible: bool


# guided operations ---------------------------------------------------------------------------------
# Every request below is refused by the app's WorkflowHost when the session is read-only; the
# runner's worker only ever posts WorkflowEvent / WorkflowFinished and never touches a widget.


@dataclass
class NewWorkflow(Message):
    """Open the "new workflow" form (nothing is written by opening or filling it)."""

    kind: str | None = None
    cqs: list[str] = field(default_factory=list)
    workspace: str | None = None
    reactivate_from: str | None = None  # release: reactivate what this run deactivated


@dataclass
class StartWorkflow(Message):
    """Journal a new workflow with these parameters and open its wizard; each step still asks first."""

    kind: str
    params: dict[str, Any]
    rehearsal: str | None = None  # the rehearsal this real run follows (its journal keeps the id)


@dataclass
class RehearseWorkflow(Message):
    """Rehearse a workflow on a simulated fork of the cluster (nothing is written to the cluster); the app
    (program layer) runs it, since screens never import the simulator."""

    kind: str
    params: dict[str, Any]


@dataclass
class ResumeWorkflow(Message):
    """Continue a journaled workflow (after a crash, a closed terminal or a failed step)."""

    workflow_id: str


@dataclass
class AbortWorkflow(Message):
    """End a workflow for good (asks for its id first), stopping it at its next wait if it runs here."""

    workflow_id: str


@dataclass
class PauseWorkflow(Message):
    """Pause a workflow running here at its next wait or confirmation (Paused: resumable)."""

    workflow_id: str


@dataclass
class OpenWorkflow(Message):
    """Show a workflow's wizard (its steps, plan, progress and log); reading only."""

    workflow_id: str


@dataclass
class WorkflowEvent(Message):
    """One runner event of a workflow running in this dashboard."""

    workflow_id: str
    event: RunnerEvent


@dataclass
class WorkflowFinished(Message):
    """The runner stopped: Completed, Paused, Failed, Aborted, or Interrupted (an error; resumable)."""

    workflow_id: str
    state: str
    error: str = ""


@dataclass
class OpenWhatIf(Message):
    """Open the what-if modal (docs/whatif.md): "what if I submit this?"."""


@dataclass
class PredictWhatIf(Message):
    """Predict a manifest on a simulated fork of the session's cluster: the YAML pasted, or a file path (the app
    reads it). The app answers on the screen that asked (`show_prediction` / `show_error`)."""

    text: str
    path: str
    screen: Any = None
