"""Workspace detail (4 → Enter): every condition with reason and message, drain routes and blockers
with the next step, identity and researcher access, storage."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from taudash.engine.pod_list import NAMESPACE, PodScope
from taudash.engine.rules.base import ObjRef
from taudash.engine.rules.workspaces import WorkspaceView
from taudash.engine.session import Frame, Session

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import condition_cell, drain_cell, kv_grid, objname
from .kit.messages import NewWorkflow, OpenObject, OpenPods, OpenQueue
from .kit.presenters import operations_enabled, phase_text, refuse_read_only
from .kit.text import Tones, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

COND_COLS = [Col("type", "type", 16, ident=True), Col("status", "status", 9), Col("reason", "reason", 24),
             Col("message", "message", flex=True)]
ROUTE_COLS = [
    Col("lq", "local queue", 14, ident=True),
    Col("cq", "cluster queue", 18),
    Col("state", "state", 21),
    Col("uid", "queue UID", 11),
    Col("why", "why", flex=True),
]
BLOCKER_COLS = [Col("kind", "kind", 10), Col("name", "object", 16, ident=True), Col("reason", "reason", 19),
                Col("why", "why it blocks", flex=True)]
ROUTE_TONE = {"Required": "warn", "SelectorIndependent": "ok", "NotRouted": "ok", "Missing": "ok", "Unknown": "unknown"}
ROUTE_WORD = {
    "Required": "waits for the drain",
    "SelectorIndependent": "independent of the workspace labels: no wait",
    "NotRouted": "does not select the old namespace: no wait",
    "Missing": "the ClusterQueue does not exist: no wait",
    "Unknown": "inputs unreadable: fail closed",
}


class WorkspaceDetailScreen(DashScreen):
    TITLE_TEXT = "Workspace detail"
    HELP = """\
Workspace detail: everything the verdicts about one TauWorkspace used.

CONDITIONS   each condition's status, reason and message, as the controller published them.
             RBACReady and QueueReady gate the phase; DriftDetected=True means Degraded;
             WorkloadIdentityReady is diagnostic only.
ROUTES       for a deleting or retargeted workspace: every route of the old namespace (LocalQueues
             and unfinished Workloads → ClusterQueue) and whether it waits for the drain.
BLOCKERS     what keeps a Required route open, and the next step (e.g. delete a RayService).
IDENTITY     workload identity retained/revoked and researcher RoleBindings per namespace.
STORAGE      configured claims; Ready proves RBAC and queues only — run a mount/read/write canary.

enter  open the highlighted route or blocker     y  open the TauWorkspace object (YAML)
o/O    sort by the next column / reverse it
l      open the workspace's LocalQueue: its pending Workloads in Kueue's order and its admitted ones
p      the Pods in the workspace's namespace (phase, node, GPUs, restarts; l there reads a log)
w      supervise the drain (a draining workspace only): opens the "new workflow" form; each blocker
       is deleted only after its own confirmation. In a read-only session it only says why it is disabled.
esc    back"""

    BINDINGS = [
        Binding("y", "open_object", "object/YAML", show=False),
        Binding("w", "supervise_drain", "supervise drain…", show=False),
        Binding("l", "open_local_queue", "LocalQueue", show=False),
        Binding("p", "pods", "Pods", show=False),
    ]
    FOOTER_KEYS = (("p", "Pods"),)

    def __init__(self, session: Session, name: str, nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.ws_name = name

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="wsd-title", classes="tile")
            yield Section("CONDITIONS", KeyedTable(COND_COLS, empty="no conditions published", id="wsd-conditions"))
            yield Section("ROUTES", KeyedTable(ROUTE_COLS, empty="not draining: no routes to check", id="wsd-routes"),
                          id="wsd-routes-section")
            yield Section("BLOCKERS", KeyedTable(BLOCKER_COLS, empty="✓ nothing blocks the drain", id="wsd-blockers"),
                          id="wsd-blockers-section")
            yield Static(id="wsd-steps", classes="detail")
            yield Static(id="wsd-identity", classes="detail")
            yield Static(id="wsd-storage", classes="detail")

    @property
    def ref(self) -> ObjRef:
        return ObjRef(kind="TauWorkspace", namespace=self.session.config.system_namespace, name=self.ws_name)

    def action_open_object(self) -> None:
        self.post_message(OpenObject(self.ref, raw=True))

    def action_open_local_queue(self) -> None:
        """The workspace's LocalQueue view (queue_detail.py): its pending Workloads in Kueue's order."""
        w = next((x for x in self.frame.view.workspaces if x.name == self.ws_name), None) if self.frame else None
        if w is None or not w.local_queue:
            self.notify(f"workspace {self.ws_name} has no LocalQueue yet", markup=False)
            return
        self.post_message(OpenQueue(w.cluster_queue or "", local_queue=(w.namespace, w.local_queue)))

    def action_pods(self) -> None:
        w = next((x for x in self.frame.view.workspaces if x.name == self.ws_name), None) if self.frame else None
        if w is None or not w.namespace:
            self.notify(f"workspace {self.ws_name} has no namespace yet", markup=False)
            return
        self.post_message(OpenPods(PodScope(NAMESPACE, w.namespace), title=f"workspace {self.ws_name} "
                                   f"(namespace {w.namespace})"))

    def _draining(self) -> bool:
        w = next((x for x in self.frame.view.workspaces if x.name == self.ws_name), None) if self.frame else None
        return w is not None and w.drain.state != "NotDraining"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "supervise_drain":
            return self._draining()  # also when read-only: the key says why it is disabled
        return True

    def action_supervise_drain(self) -> None:
        if self._draining() and not refuse_read_only(self, "supervising the drain"):
            self.post_message(NewWorkflow("drain", workspace=self.ws_name))

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        w = next((x for x in frame.view.workspaces if x.name == self.ws_name), None)
        title = self.query_one("#wsd-title", Static)
        if w is None:
            title.update(Text(f"workspace {self.ws_name} is gone from the store (deleted?) — esc to go back",
                              style=tones.warn))
            for t in self.query(KeyedTable):
                t.sync([])
            return
        title.update(self._title(w, tones))
        self.query_one("#wsd-conditions", KeyedTable).sync([
            Row(c.type, (lit(c.type), condition_cell(c.status, tones, c.type), lit(c.reason), lit(c.message)),
                RowMeta(text=f"{c.type} {c.reason} {c.message}"))
            for c in w.conditions
        ])
        d = w.drain
        old = d.old_namespace or w.namespace
        self.query_one("#wsd-routes-section", Section).set_note(f"in {old}" if d.state != "NotDraining" else "")
        self.query_one("#wsd-routes", KeyedTable).sync([
            Row(f"{r.local_queue}|{r.cluster_queue}", (
                lit(r.local_queue or "(workload)"),
                lit(r.cluster_queue),
                tones.mark(ROUTE_TONE.get(r.state, "unknown"), r.state),
                _uid(r.uid_continuity, tones),
                lit(r.reason or ROUTE_WORD.get(r.state, ""), tones.muted),
            ), RowMeta(kind="ClusterQueue", name=r.cluster_queue, text=f"{r.local_queue} {r.state}"))
            for r in d.routes
        ])
        self.query_one("#wsd-blockers", KeyedTable).sync([
            Row(f"{b.kind}|{b.namespace}|{b.name}", (
                lit(b.kind), lit(objname(b.namespace, b.name)), Text(f"⚠ {b.reason}", style=tones.warn),
                lit(b.message),
            ), RowMeta(kind=b.kind, namespace=b.namespace, name=b.name, text=f"{b.reason} {b.message}"))
            for b in d.blockers
        ])
        steps = self.query_one("#wsd-steps", Static)
        steps.display = bool(d.blockers)
        if d.blockers:
            head = span("NEXT STEPS", tones.heading, end="\n")
            head.append("  to finish the drain (w supervises it here: each deletion confirmed on its own)"
                        if operations_enabled(self.session)[0] else
                        "  to finish the drain (taudash only reads: do these with kubectl or the workflow)",
                        style=tones.muted)
            steps.update(Group(head, kv_grid([(f"{i}.", lit(b.action or b.message, tones.accent))
                                              for i, b in enumerate(d.blockers, start=1)], tones.muted)))
        self.query_one("#wsd-identity", Static).update(self._identity(w, tones))
        self.query_one("#wsd-storage", Static).update(self._storage(w, tones))

    def _title(self, w: WorkspaceView, tones: Tones) -> Text:
        t = span("workspace ", tones.heading)
        t.append(lit(w.name, "bold"))
        t.append("  ")
        d = w.drain
        if d.mode == "Retarget":
            t.append("◐ Retarget ", style=tones.warn)
            t.append(lit(f"{d.old_namespace} → {d.new_namespace}"))
            t.append("  ")
        elif d.mode == "Deletion":
            t.append("◐ Deletion ", style=tones.warn)
            t.append(lit(d.old_namespace or w.namespace))
            t.append("  ")
        t.append("drain ")
        t.append(drain_cell(d.state, tones, len(d.blockers)))
        t.append("   phase ")
        t.append(phase_text(w, tones))
        t.append(f" (expected {w.expected_phase})", style=tones.muted)
        t.append("\n")
        t.append(lit(f"team {w.team or '–'} · namespace {w.namespace} · LocalQueue {w.local_queue or '–'} "
                     f"→ ClusterQueue {w.cluster_queue or '–'}", tones.muted))
        if d.unknown:
            t.append("\n? unreadable: ", style=tones.warn)
            t.append(lit(", ".join(f"{u.resource} ({u.reason})" for u in d.unknown), tones.warn))
            t.append(" — the drain verdict is Unknown until they can be read (fail closed)", style=tones.muted)
        return t

    @staticmethod
    def _identity(w: WorkspaceView, tones: Tones) -> Group:
        i = w.identity
        head = span("IDENTITY ", tones.heading, end="\n")
        if i.service_account:
            head.append(lit(f"ServiceAccount {i.service_account}"))
            if i.client_id:
                head.append(lit(f" (client id {i.client_id})", tones.muted))
            head.append(" · ")
        id_tone = {"Current": "ok", "NotConfigured": "ok", "Unknown": "unknown", "Retained": "partial",
                   "CleanupPending": "partial"}.get(i.state, "warn")
        head.append(tones.mark(id_tone, i.state))
        rows: list[tuple[str, Text]] = []
        for a in i.accounts:
            v = lit(a.status, tones.warn if a.status in ("Obsolete", "CleanupPending") else "")
            if a.reason:
                v.append(lit(f" — {a.reason}", tones.muted))
            rows.append((f"  {a.namespace}/{a.name}", v))
        for o in i.obsolete:
            rows.append(("  ✖ revoke now", lit(o, tones.bad)))
        if i.revocation_confirmed is None:
            rows.append(("  ? revocation", Text("unconfirmed: ServiceAccounts unreadable", style=tones.unknown)))
        access = span("ACCESS   ", tones.heading, end="\n")
        access.append(lit(f"{i.authorization_mode} · researcher {i.researcher or '–'} · "))
        tone = {"Ok": "ok", "Missing": "warn", "ClusterWide": "info"}.get(
            i.access_state, "unknown" if i.access_state == "Unknown" else "bad")
        access.append(tones.mark(tone, i.access_state))
        if i.expected_bindings:
            access.append(lit(f" · expected in {', '.join(i.expected_bindings)}", tones.muted))
        brows: list[tuple[str, Text]] = []
        for b in i.bindings:
            v = tones.mark({"Expected": "ok", "External": "info"}.get(b.status, "bad"), b.status)
            v.append(" ")
            v.append(lit(f"→ {', '.join(b.subjects)}"))
            if b.reason:
                v.append(lit(f" — {b.reason}", tones.muted))
            brows.append((f"  RoleBinding {b.namespace}/{b.name}", v))
        if i.missing_bindings:
            brows.append(("  ⚠ no binding in", lit(", ".join(i.missing_bindings), tones.warn)))
        for u in i.unknown:
            brows.append(("  ? unreadable", lit(f"{u.resource} ({u.reason})", tones.unknown)))
        parts: list = [head]
        if rows:
            parts.append(kv_grid(rows, tones.muted))
        parts.append(access)
        if brows:
            parts.append(kv_grid(brows, tones.muted))
        return Group(*parts)

    @staticmethod
    def _storage(w: WorkspaceView, tones: Tones) -> Group:
        s = w.storage
        head = span("STORAGE  ", tones.heading, end="\n")
        if s.state == "NotConfigured":
            head.append("no claims configured (start taudash with --pvc CLAIM to check them)", style=tones.muted)
        else:
            tone = {"Ready": "ok", "NotReady": "bad", "Skipped": "info"}.get(s.state, "unknown")
            head.append(tones.mark(tone, s.state))
        rows: list[tuple[str, Text]] = []
        for c in s.claims:
            v = tones.mark("ok" if c.state == "Ready" else "unknown" if c.state == "Unknown" else "bad", c.state)
            if c.phase:
                v.append(lit(f" {c.phase}"))
            if c.driver:
                v.append(lit(f" · {c.driver}", tones.muted))
            if c.nodes_missing_driver:
                v.append(" · driver missing on ", style=tones.warn)
                v.append(lit(", ".join(c.nodes_missing_driver), tones.warn))
            if c.flex_nodes:
                v.append(" · Flex nodes on an AKS addon driver: ", style=tones.warn)
                v.append(lit(", ".join(c.flex_nodes), tones.warn))
            if c.message:
                v.append(lit(f" — {c.message}", tones.muted))
            rows.append((f"  PVC {c.namespace}/{c.name}", v))
        rows.append(("  canary", Text(s.canary or "Ready proves RBAC and queue reconciliation only: "
                                      "run a mount/read/write canary", style=tones.muted)))
        return Group(head, kv_grid(rows, tones.muted))


def _uid(continuity: str | None, tones: Tones) -> Text:
    if continuity == "Changed":
        return tones.mark("bad", "replaced")
    if continuity == "Unchanged":
        return tones.mark("ok", "same")
    return span("– none", tones.muted)  # no UID recorded in the workspace status
