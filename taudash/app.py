"""TaudashApp: the composition root of the dashboard — session in, screens out.

Refresh chain (never overlapping): timer → derive in a worker thread → render the visible screen →
next timer. A hidden screen is not rendered; it catches up from `session.last_frame` when shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import partial
from typing import Protocol

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from taudash.engine.model import BY_KIND
from taudash.engine.session import Frame, Session
from taudash.engine.sources.client import ConfigError
from taudash.engine.sources.contexts import contexts
from taudash.screens.contexts import ContextsScreen
from taudash.screens.kit.base import DashScreen
from taudash.screens.kit.confirm import ConfirmScreen
from taudash.screens.kit.entries import Registry
from taudash.screens.kit.help import HelpScreen
from taudash.screens.kit.jump import JumpScreen, resolve
from taudash.screens.kit.messages import (
    AbortWorkflow,
    Navigate,
    NewWorkflow,
    OpenLogs,
    OpenObject,
    OpenPods,
    OpenQueue,
    OpenWhatIf,
    OpenWorkflow,
    PauseWorkflow,
    PredictWhatIf,
    RehearseWorkflow,
    RequestOperation,
    ResumeWorkflow,
    StartWorkflow,
    SwitchContext,
    WorkflowEvent,
    WorkflowFinished,
)
from taudash.screens.kit.palette import NavigationProvider
from taudash.screens.kit.whatif import WhatIfScreen
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.pod_logs import LogScreen
from taudash.screens.pods import PodsScreen
from taudash.screens.queue_detail import LocalQueueDetailScreen, QueueDetailScreen
from taudash.screens.registry import REGISTRY
from taudash.screens.workflow.forms import WorkflowProvider
from taudash.screens.workflow.host import RunOptions, WorkflowHost
from taudash.screens.workflow.rehearsal import RehearsalScreen
from taudash.screens.workflows import WorkflowsScreen
from taudash.screens.workspace_detail import WorkspaceDetailScreen

# After the first view, the other screens are composed in the background, one every PRECOMPOSE_GAP
# seconds (a first visit paid 0.2–0.6 s of Textual composing and styling at fleet scale).
PRECOMPOSE_AFTER = 0.5
PRECOMPOSE_GAP = 0.05

SCREENS: dict[str, type[DashScreen]] = {e.name: e.cls for e in REGISTRY}  # the registry by name (bench, tests)

Clock = Callable[[], datetime]
# Told after every rendered tick: the frame, the screen it went to and how long rendering took (s).
# How tests and the bench watch the dashboard from outside (TaudashApp(on_frame=...) or observe_frames).
FrameObserver = Callable[[Frame, DashScreen, float], None]


def utc_now() -> datetime:
    return datetime.now(UTC)


CONTEXTS_MODE = "contexts"  # `:ctx`: the kubeconfig's contexts, a mode of its own (not a registered screen)


class ContextSwitcher(Protocol):
    """What the program that opened the dashboard gives it to show another context (commands/dashboard.py):
    `open` connects and syncs that context's cluster and answers its Session (raising, with a one-line reason,
    when it cannot), `retire` closes the session shown before once the dashboard has left it."""

    kubeconfig: str | None

    async def open(self, context: str) -> Session: ...

    async def retire(self, session: Session) -> None: ...


class TaudashApp(App):
    CSS_PATH = "theme.tcss"
    TITLE = "taudash"
    COMMANDS = App.COMMANDS | {NavigationProvider, WorkflowProvider}
    BINDINGS = [
        *(Binding(e.key, f"go('{e.name}')", e.title, show=False) for e in REGISTRY.keyed() if e.key),
        Binding("question_mark", "help", "help", show=False),
        Binding("q", "quit", "quit", show=False),
        Binding("ctrl+c", "quit", "quit", show=False),  # a selection is copied first (the screen's binding)
        Binding("colon", "jump", "jump", show=False),
        Binding("W", "whatif", "what if…", show=False),
    ]

    def __init__(self, session: Session, clock: Clock | None = None, tick: float = 1.0,
                 workflows: RunOptions | None = None, on_frame: Iterable[FrameObserver] = (),
                 notices: Iterable[str] = (), precompose: bool = True,
                 contexts: ContextSwitcher | None = None) -> None:
        super().__init__()
        self.contexts = contexts  # None: nothing to switch to (a snapshot, a fleet of its own, a test)
        self._contexts_back: str | None = None  # the mode `:ctx` was typed on (Esc goes back there)
        self.switching: str | None = None  # the context being connected to now
        self._contexts_mode_added = False
        self.precompose = precompose  # compose the other screens in the background after the first view
        self._composing: str | None = None  # the screen being composed in the background now
        self.notices = tuple(notices)  # said once the dashboard shows (how to reach the demo cluster)
        self.session = session
        self.clock = clock or utc_now
        self.tick = tick
        self._frame_observers: list[FrameObserver] = list(on_frame)
        # The screens this app shows: its modes and number keys, and what it hands the footer, `?` help, the
        # palette and `:` jumps (screens/kit/entries.py registry_of), so none of those imports the screens.
        self.screen_registry: Registry = REGISTRY
        # guided operations (screens/workflow/host.py), shown on the Workflows screen
        self.workflows = WorkflowHost(self, session, self.clock, workflows,
                                      listed_on=self.screen_registry.of(WorkflowsScreen))

    # lifecycle -----------------------------------------------------------------------------
    def on_mount(self) -> None:
        for entry in self.screen_registry:
            self.add_mode(entry.name, partial(entry.cls, self.session, entry.name))
        # The first frame is derived before the first paint, so nobody stares at an empty dashboard.
        try:
            self.session.frame(self.clock())
        except Exception as exc:  # a rule bug must not keep the operator out: later ticks retry
            self.notify(f"could not derive the view: {exc}", severity="error", markup=False)
        self.switch_mode(self.screen_registry.home.name)
        if self.session.issues:
            first = self.session.issues[0]
            more = f" (+{len(self.session.issues) - 1} more, listed on exit)" if len(self.session.issues) > 1 else ""
            self.notify(f"skipped objects the source could not load: {first}{more}", severity="warning",
                        markup=False, timeout=10)
        for text in self.notices:
            self.notify(text, markup=False, timeout=20)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self._schedule()
        if self.precompose:
            self.set_timer(PRECOMPOSE_AFTER, self._precompose_next, name="taudash-precompose")

    # screens composed ahead of their first visit ---------------------------------------------------
    @property
    def composed(self) -> bool:
        """Every registered screen is composed (shown once, or composed in the background)."""
        return self._composing is None and all(e.name in self._screen_stacks for e in self.screen_registry)

    async def _precompose_next(self) -> None:
        """Compose one registered screen not yet visited, off screen, then schedule the next: composing,
        mounting and styling a screen's widgets (and building its rows for the newest frame) then happens
        while the operator reads the first one, not when a key first asks for it. One screen per step, so
        a key pressed meanwhile waits for at most one screen's composition (what it paid before anyway)."""
        if not self.is_running or not self.precompose or getattr(self, "_exit", False):  # not while exiting
            return
        pending = [e for e in self.screen_registry if e.name not in self._screen_stacks]
        if not pending:
            return
        entry = pending[0]
        self._composing = entry.name
        try:
            # Textual internals (what switch_mode does for a mode's first screen, without showing it):
            # if they move, screens are simply composed on first visit again.
            factory = self._modes[entry.name]
            if isinstance(factory, str):  # a mode named by a screen name: nothing of ours to compose
                return
            screen, mounted = self._get_screen(factory())
            self._screen_stacks[entry.name] = [screen]
            self._load_screen_css(screen)
            await mounted
            # Laid out at the app's size now, so its tables build their first page at their real width
            # here rather than on the first visit (which then finds the screen at its size already).
            if self.is_running and screen is not self.screen and screen.is_attached:
                screen._refresh_layout(self.size)
                if isinstance(screen, DashScreen):
                    screen.composed_off_screen()
        except Exception:  # noqa: BLE001 - an optimisation only: the first visit composes it as before
            self.precompose = False
            return
        finally:
            self._composing = None
        if len(pending) > 1:
            self.set_timer(PRECOMPOSE_GAP, self._precompose_next, name="taudash-precompose")

    def _theme_changed(self, _theme) -> None:
        """A theme picked (ctrl+p → theme): the visible screen redraws its cells (their colours come from the
        theme's variables, screens/kit/text.py Tones) now, not at the next tick."""
        screen = self.screen if self._screen_stack else None
        if isinstance(screen, DashScreen) and screen.is_mounted and self.session.last_frame is not None:
            screen.invalidate()
            self.render_frame(self.session.last_frame)

    def _schedule(self) -> None:
        self.set_timer(self.tick, self._tick, name="taudash-tick")

    def _tick(self) -> None:
        self._derive()

    @work(thread=True, exclusive=True, group="derive", exit_on_error=False, description="derive the view")
    def _derive(self) -> Frame:
        return self.session.frame(self.clock())

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "derive":
            return
        if event.state is WorkerState.SUCCESS:
            if event.worker.result is self.session.last_frame:  # not a frame of the session shown before a switch
                self.render_frame(event.worker.result)
            self._schedule()
        elif event.state is WorkerState.ERROR:
            self.notify(f"could not derive the view: {event.worker.error}", severity="error", markup=False)
            self._schedule()
        elif event.state is WorkerState.CANCELLED:
            self._schedule()

    def render_frame(self, frame: Frame | None) -> None:
        """Render on the visible screen only; a modal on top (help, palette) pauses rendering."""
        if not self._screen_stack or not self.is_running:
            return  # shutting down: a derive that finished late has nowhere to render
        screen = self.screen
        if frame is None or not isinstance(screen, DashScreen) or not screen.is_mounted:
            return  # a screen pushed a moment ago renders the newest frame itself when mounted
        started = time.perf_counter()
        with self.batch_update():
            screen.show(frame)
        if self._frame_observers:
            took = time.perf_counter() - started
            for observer in tuple(self._frame_observers):
                observer(frame, screen, took)

    def observe_frames(self, observer: FrameObserver) -> Callable[[], None]:
        """Call `observer` after every rendered tick from now on; returns what stops it."""
        self._frame_observers.append(observer)
        return lambda: self._frame_observers.remove(observer) if observer in self._frame_observers else None

    # navigation ----------------------------------------------------------------------------
    def action_go(self, name: str) -> None:
        if name not in self.screen_registry:
            return
        while isinstance(self.screen, HelpScreen):
            self.pop_screen()
        if name == self.current_mode:
            while len(self.screen_stack) > 1:  # the same number again: back to that screen's top
                self.pop_screen()
        else:
            self.switch_mode(name)

    def action_jump(self) -> None:
        """`:` as in k9s: a screen, an object, or :q."""
        if isinstance(self.screen, JumpScreen):
            return
        self.push_screen(JumpScreen(), self.jump)

    def jump(self, line: str | None) -> None:
        if line is None:
            return
        s = self.session
        target = resolve(line, self.screen_registry, system_namespace=s.config.system_namespace,
                         exists=lambda kind, name, ns: s.get(kind, name, ns) is not None)
        if target.error:
            self.notify(target.error, severity="warning", markup=False)
        elif target.quit:
            self.call_later(self.action_quit)
        elif target.contexts:
            self.show_contexts()
        elif target.context is not None:
            self.switch_context(target.context)
        elif target.screen:
            self.action_go(target.screen)
            screen = self.screen
            if hasattr(screen, "jump_to"):  # `:pods` all again, `:pods NS` one namespace, `:events all`
                error = screen.jump_to(target.arg)
                if error:
                    self.notify(error, severity="warning", markup=False)
        elif target.ref is not None:
            self.post_message(OpenObject(target.ref))

    # contexts (`:ctx`) ---------------------------------------------------------------------
    def show_contexts(self) -> bool:
        """The kubeconfig's contexts, in a mode of their own (built again each time: probed on every visit)."""
        if self.contexts is None:
            self.notify("contexts: this dashboard has no kubeconfig to switch in (a snapshot or a fleet): open one "
                        "with taudash --context NAME", severity="warning", markup=False)
            return False
        if self.current_mode == CONTEXTS_MODE:
            return True
        while isinstance(self.screen, HelpScreen):
            self.pop_screen()
        self._contexts_back = self.current_mode
        if self._contexts_mode_added:
            self.remove_mode(CONTEXTS_MODE)
        kubeconfig, back = self.contexts.kubeconfig, self._contexts_back
        self.add_mode(CONTEXTS_MODE, lambda: ContextsScreen(self.session, kubeconfig,
                                                            back if back in self.screen_registry else None))
        self._contexts_mode_added = True
        self.switch_mode(CONTEXTS_MODE)
        return True

    def switch_context(self, name: str) -> None:
        """Open a new session on the cluster of kubeconfig context `name` and show it; the session shown
        until now is closed once the new one shows. Refused (said why) for an unknown context, while a
        workflow runs here, or while another switch is under way."""
        if self.contexts is None:
            self.show_contexts()
            return
        if self.switching is not None:
            self.notify(f"already switching to {self.switching}", severity="warning", markup=False)
            return
        try:
            known = [e.name for e in contexts(self.contexts.kubeconfig)]
        except ConfigError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        if name not in known:
            self.notify(f"no context “{name}” in the kubeconfig (known: {', '.join(known)})",
                        severity="warning", markup=False)
            return
        if name == self.session.source.context:
            self.notify(f"already showing {name}", markup=False)
            return
        running = self.workflows.live()
        if running:
            wid = next(iter(running))
            self.notify(f"workflow {wid} runs on {self.session.source.context}: pause it before switching "
                        "(its journal stays with this cluster)", severity="warning", markup=False)
            return
        if not self.show_contexts():
            return
        self.switching = name
        self._redraw_contexts()
        self.notify(f"connecting to {name} …", markup=False)
        self._switch(name)

    def _redraw_contexts(self) -> None:
        if isinstance(self.screen, ContextsScreen) and self.screen.is_mounted:
            self.screen.draw()  # its title says which context is being connected to

    @work(exclusive=True, group="context", exit_on_error=False, description="switch the kubeconfig context")
    async def _switch(self, name: str) -> None:
        assert self.contexts is not None
        try:
            session = await self.contexts.open(name)
        except Exception as exc:  # noqa: BLE001 - said, and the dashboard stays on its cluster
            self.switching = None
            self._redraw_contexts()
            self.notify(f"could not switch to {name}: {exc}", severity="error", markup=False)
            return
        old = self.session
        try:
            self._install(session)
        finally:
            self.switching = None
        await self.contexts.retire(old)

    def _install(self, session: Session) -> None:
        """Every screen rebuilt on `session` (none keeps the old cluster's rows), a new workflow host bound
        to its cluster (no run of the old one is carried), then back to the screen `:ctx` was typed on."""
        back = self._contexts_back if self._contexts_back and self._contexts_back in self.screen_registry \
            else self.screen_registry.home.name
        if self.current_mode != CONTEXTS_MODE:
            self.show_contexts()  # the registered modes are rebuilt: none of them may be the one shown
        self.session = session
        self.workflows = WorkflowHost(self, session, self.clock, self.workflows.options,
                                      listed_on=self.screen_registry.of(WorkflowsScreen))
        for entry in self.screen_registry:
            self.remove_mode(entry.name)
            self.add_mode(entry.name, partial(entry.cls, self.session, entry.name))
        try:
            self.session.frame(self.clock())
        except Exception as exc:  # noqa: BLE001 - as at mount: later ticks retry
            self.notify(f"could not derive the view: {exc}", severity="error", markup=False)
        self.switch_mode(back)
        self.remove_mode(CONTEXTS_MODE)
        self._contexts_mode_added = False
        self.notify(f"showing {session.source.context}" + (" · read-only" if session.read_only else ""),
                    markup=False)
        if self.precompose:
            self.set_timer(PRECOMPOSE_AFTER, self._precompose_next, name="taudash-precompose")

    def on_switch_context(self, message: SwitchContext) -> None:
        if message.context is not None:
            self.switch_context(message.context)
        elif self.current_mode == CONTEXTS_MODE:
            self.action_go(self._contexts_back or self.screen_registry.home.name)

    def on_navigate(self, message: Navigate) -> None:
        self.action_go(message.screen)

    def on_open_queue(self, message: OpenQueue) -> None:
        nav = self.current_mode if self.current_mode in self.screen_registry else None
        if message.local_queue is not None:
            self.push_screen(LocalQueueDetailScreen(self.session, *message.local_queue, nav))
        else:
            self.push_screen(QueueDetailScreen(self.session, message.cluster_queue, nav))

    def on_open_pods(self, message: OpenPods) -> None:
        nav = self.current_mode if self.current_mode in self.screen_registry else None
        self.push_screen(PodsScreen(self.session, nav, scope=message.scope, title=message.title))

    def on_open_logs(self, message: OpenLogs) -> None:
        """A Pod's log: a read, so read-only mode opens it too."""
        nav = self.current_mode if self.current_mode in self.screen_registry else None
        self.push_screen(LogScreen(self.session, message.ref, message.containers, message.started, nav))

    def on_open_object(self, message: OpenObject) -> None:
        ref = message.ref
        if ref.kind not in BY_KIND:
            self.notify(f"{ref.kind} {ref.name} is not an object taudash stores", markup=False)
            return
        nav = self.current_mode if self.current_mode in self.screen_registry else None
        if not message.raw and ref.kind == "TauWorkspace" and \
                (ref.namespace or self.session.config.system_namespace) == self.session.config.system_namespace:
            self.push_screen(WorkspaceDetailScreen(self.session, ref.name, nav))
        else:
            self.push_screen(ObjectDetailScreen(self.session, ref, nav))

    # writes ---------------------------------------------------------------------------
    def on_request_operation(self, message: RequestOperation) -> None:
        """The one door for writes from the UI: refused when read-only, else confirmed target by target."""
        if self.session.read_only:
            why = self.session.actions.why_read_only or f"{self.session.mode.lower()} source"  # who asked
            self.notify(f"read-only: {message.title} was not run ({why})", severity="warning", markup=False)
            return
        self.push_screen(ConfirmScreen(message.title, message.targets, message.reversible))

    # what if I submit this? (docs/whatif.md) ------------------------------------------------
    def action_whatif(self) -> None:
        if not isinstance(self.screen, WhatIfScreen):
            self.push_screen(WhatIfScreen())

    def on_open_what_if(self, _message: OpenWhatIf) -> None:
        self.action_whatif()

    def on_predict_what_if(self, message: PredictWhatIf) -> None:
        """Read the manifest, fork the session's store now (on the loop that feeds it), predict in a worker
        thread and answer the modal. Nothing is written, whatever the session's mode."""
        from contextlib import nullcontext

        from taudash.engine.rules.queue_order import parse_time
        from taudash.rehearse import fork_store
        from taudash.whatif import ManifestError
        from taudash.whatif.manifest import from_text_or_path

        try:
            manifest = from_text_or_path(message.text, message.path)
        except ManifestError as exc:
            message.screen.show_error(str(exc))
            return
        s = self.session
        at = parse_time(s.source.observed_at) if s.source.type == "snapshot" else None  # judged when captured
        with s.lock if s.lock is not None else nullcontext():
            fork = fork_store(s.store, (at or self.clock()).timestamp(), s.source.context, s.cluster)
        self._whatif(manifest, fork, message.screen)

    @work(thread=True, exclusive=True, group="whatif", exit_on_error=False, description="what if I submit this")
    def _whatif(self, manifest, fork, screen) -> None:
        from taudash.whatif import ManifestError, whatif

        try:
            doc = whatif(fork, manifest, config=self.session.config, source=self.session.source.type or "live")
        except ManifestError as exc:
            self.call_from_thread(screen.show_error, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - shown, never raised into the UI
            self.call_from_thread(screen.show_error, f"the prediction failed: {exc}")
            return
        self.call_from_thread(screen.show_prediction, doc, self._keep_prediction(doc))

    def _keep_prediction(self, doc: dict) -> str:
        """Keep the prediction beside the cluster's history, as `taudash whatif` does, so the History screen
        and `taudash history whatif` hold it against what happens (a local file; never a cluster write)."""
        reader = self.session.history_reader
        keep = getattr(reader, "keep_prediction", None)
        if keep is None or self.session.source.type == "snapshot":
            return ""  # a snapshot has no cluster to hold it against
        try:
            path = keep(doc)
        except (OSError, ValueError) as exc:
            return f"the prediction was not kept: {exc}"
        return "" if path is None else (f"kept as {doc['metadata']['id']}: the History screen and `taudash history "
                                        "whatif` hold it against what happens")

    # rehearsals -------------------------------------------------------------------------
    def on_rehearse_workflow(self, message: RehearseWorkflow) -> None:
        """Fork the session's store now (on the loop that feeds it: a consistent copy), rehearse in a
        worker thread, show the report. Nothing is written to the cluster."""
        from contextlib import nullcontext

        from taudash.rehearse import fork_store

        s = self.session
        with s.lock if s.lock is not None else nullcontext():
            fork = fork_store(s.store, self.clock().timestamp(), s.source.context, s.cluster)
        self.notify(f"rehearsing the {message.kind} workflow on a simulated fork ({len(fork.objects)} objects); "
                    "nothing is written to the cluster", markup=False)
        self._rehearse(message.kind, message.params, fork)

    @work(thread=True, exclusive=True, group="rehearse", exit_on_error=False, description="rehearse a workflow")
    def _rehearse(self, kind: str, params: dict, fork) -> None:
        import asyncio

        from taudash.rehearse import rehearse, save

        try:
            report = asyncio.run(rehearse(kind, params, fork, config=self.session.config,
                                          wait_timeout=self.workflows.options.wait_timeout))
            save(report)
        except Exception as exc:  # noqa: BLE001 - shown, never raised into the UI
            self.call_from_thread(self.notify, f"the rehearsal failed: {exc}", severity="error", markup=False)
            return
        self.call_from_thread(self.show_rehearsal, kind, params, report)

    def show_rehearsal(self, kind: str, params: dict, report: dict) -> None:
        def chosen(real: bool | None) -> None:
            if real:  # the ordinary start: journaled, every step asks before it writes
                self.post_message(StartWorkflow(kind, params, rehearsal=(report.get("metadata") or {}).get("id")))

        self.push_screen(RehearsalScreen(report, can_run=self.workflows.writable), chosen)

    def action_help(self) -> None:
        screen = self.screen
        if isinstance(screen, HelpScreen):
            screen.dismiss(None)
            return
        if isinstance(screen, DashScreen):
            entry = self.screen_registry.find(type(screen))
            title = entry.title if entry else screen.TITLE_TEXT or type(screen).__name__
            help_text = entry.help if entry else screen.HELP
            self.push_screen(HelpScreen(f"{title} — help", help_text, self.screen_registry))

    # guided operations (screens/workflow/host.py) ---------------------------------------------------
    def on_new_workflow(self, message: NewWorkflow) -> None:
        self.workflows.new(message)

    def on_start_workflow(self, message: StartWorkflow) -> None:
        self.workflows.start(message.kind, message.params, rehearsal=message.rehearsal)

    def on_open_workflow(self, message: OpenWorkflow) -> None:
        self.workflows.open(message.workflow_id)

    def on_resume_workflow(self, message: ResumeWorkflow) -> None:
        self.workflows.resume(message.workflow_id)

    def on_abort_workflow(self, message: AbortWorkflow) -> None:
        self.workflows.abort(message.workflow_id)

    def on_pause_workflow(self, message: PauseWorkflow) -> None:
        self.workflows.pause(message.workflow_id)

    def on_workflow_event(self, message: WorkflowEvent) -> None:
        self.workflows.event(message.workflow_id, message.event)

    def on_workflow_finished(self, message: WorkflowFinished) -> None:
        self.workflows.finished(message.workflow_id, message.state, message.error)

    async def action_quit(self) -> None:
        self.workflows.quit()  # asks first while a workflow runs
