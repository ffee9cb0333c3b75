"""`:` jumps, as in k9s: `:cq` → Queues, `:wl NS/NAME` → that Workload, `:ws NAME` → the workspace
detail, `:q` → quit. What a jump means is decided here, without the app (`resolve`, given the app's
screens); the app acts on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from taudash.engine.model import KINDS
from taudash.engine.rules.base import ObjRef

from .entries import Registry

# The screen each kind is listed on (a bare `:KIND` goes there).
KIND_SCREENS = {
    "ClusterQueue": "queues", "Cohort": "queues", "LocalQueue": "queues", "Workload": "queues",
    "ResourceFlavor": "pool", "Node": "pool", "TauCluster": "overview", "TauTeam": "pool",
    "TauWorkspace": "workspaces", "Namespace": "workspaces", "PersistentVolumeClaim": "workspaces",
    "MultiKueueConfig": "multikueue", "MultiKueueCluster": "multikueue", "AdmissionCheck": "multikueue",
    "Job": "sources", "Deployment": "sources", "RayJob": "sources", "RayService": "sources",
    "Pod": "pods",
}
# Words k9s users type that are not kubectl short names.
EXTRA = {"ws": "TauWorkspace", "workspace": "TauWorkspace", "workspaces": "TauWorkspace",
         "team": "TauTeam", "teams": "TauTeam", "cluster": "TauCluster", "node": "Node", "nodes": "Node"}
QUIT = {"q", "q!", "quit", "exit", "qa"}
CONTEXTS = {"ctx", "context", "contexts"}  # k9s' words for the kubeconfig's contexts
HINT = ":cq · :wl NS/NAME · :ws NAME · :pods [NS] · :events [NS|all] · :ctx · :pool · :q"


def kind_aliases() -> dict[str, str]:
    """Every word naming a kind: its kind, lower-case kind, plural and kubectl short names."""
    out: dict[str, str] = {}
    for k in KINDS:
        for word in (k.kind.lower(), k.plural, *k.short_names):
            out.setdefault(word, k.kind)
    out.update(EXTRA)
    return out


def screen_aliases(screens: Registry) -> dict[str, str]:
    """Every word naming a screen: its name, title, footer label and number key."""
    out: dict[str, str] = {}
    for e in screens:
        for word in (e.name, e.title.lower(), e.short.lower(), *([e.key] if e.key else [])):
            out.setdefault(word, e.name)
    return out


@dataclass(frozen=True)
class Jump:
    """What a `:` line asks for: exactly one of screen, ref, quit, the contexts list, a context to switch to,
    or an error to show."""

    screen: str | None = None
    arg: str = ""  # what the screen is asked to show (`:pods NS`, `:events all`: its `jump_to`)
    ref: ObjRef | None = None
    quit: bool = False
    contexts: bool = False
    context: str | None = None
    error: str = ""


def resolve(line: str, screens: Registry, *, namespaced: dict[str, bool] | None = None,
            system_namespace: str = "tau-system", exists=None) -> Jump:
    """Parse a `:` line; `screens` are the ones a jump may name. `exists(kind, name, namespace)` says whether
    the store holds the object."""
    words = line.strip().lstrip(":").split()
    if not words:
        return Jump(error=f"nothing to jump to: {HINT}")
    head, rest = words[0].lower(), words[1:]
    if head in QUIT and not rest:
        return Jump(quit=True)
    if head in CONTEXTS:
        if len(rest) > 1:
            return Jump(error=f"one context after :{head}")
        return Jump(context=rest[0]) if rest else Jump(contexts=True)
    kinds = kind_aliases()
    if not rest:
        aliases = screen_aliases(screens)
        if head in aliases:
            return Jump(screen=aliases[head])
        if head in kinds:
            target = KIND_SCREENS.get(kinds[head])
            if target:
                return Jump(screen=target)
            return Jump(error=f"no screen lists {kinds[head]}: give a name (:{head} NAME)")
        return Jump(error=f"unknown jump “{line.strip()}”: {HINT}")
    aliases = screen_aliases(screens)
    named = aliases.get(head) or (KIND_SCREENS.get(kinds[head]) if head in kinds else None)
    entry = screens.get(named)
    if entry is not None and hasattr(entry.cls, "jump_to") and len(rest) == 1 and "/" not in rest[0]:
        return Jump(screen=entry.name, arg=rest[0])  # `:pods train`, `:events all`
    if head not in kinds:
        return Jump(error=f"unknown kind “{words[0]}”: {HINT}")
    if len(rest) > 1:
        return Jump(error=f"one name after :{head}, as NAME or NAMESPACE/NAME")
    kind = kinds[head]
    is_ns = (namespaced or {k.kind: k.namespaced for k in KINDS}).get(kind, False)
    ns, _, name = rest[0].rpartition("/")
    if not name:
        return Jump(error=f"no name after :{head}")
    if not is_ns:
        if ns:
            return Jump(error=f"{kind} is not namespaced: :{head} NAME")
        namespace = None
    elif kind == "TauWorkspace":
        namespace = ns or system_namespace
    elif not ns:
        return Jump(error=f"{kind} is namespaced: :{head} NAMESPACE/NAME")
    else:
        namespace = ns
    if exists is not None and not exists(kind, name, namespace):
        where = f"{namespace}/{name}" if namespace else name
        return Jump(error=f"no {kind} {where} in the current data")
    return Jump(ref=ObjRef(kind=kind, namespace=namespace, name=name))


class JumpScreen(ModalScreen[str | None]):
    """One input line at the bottom: Enter jumps, Esc cancels."""

    DEFAULT_CSS = """
    JumpScreen > Horizontal { dock: bottom; height: 1; margin-bottom: 1; background: $panel; }
    JumpScreen #jump-prompt { width: 2; padding-left: 1; color: $accent; text-style: bold; }
    JumpScreen Input { width: 1fr; height: 1; border: none; padding: 0 1 0 0; background: $panel; }
    JumpScreen Input:focus { border: none; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static(":", id="jump-prompt")
            yield Input(placeholder=f"{HINT}   (enter go · esc cancel)", id="jump-input", compact=True)

    def on_mount(self) -> None:
        # the app's `Screen { background }` would hide the screen the jump is typed over
        self.styles.background = "transparent"
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
