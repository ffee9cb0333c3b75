"""Fast tests of the dashboard's building blocks: the Session, the filter grammar, literal text,
the keyed table's in-place updates, and help layout."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from rich.console import Console
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static
from tools.paths import FIXTURES, REPO

from taudash.engine.incremental import derive
from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Session
from taudash.engine.sources.snapshot import load_documents, load_snapshot
from taudash.engine.store import AccessState
from taudash.engine.view import SourceInfo
from taudash.screens.kit.filtering import RowMeta, parse_filter
from taudash.screens.kit.help import help_renderable
from taudash.screens.kit.text import clean, lit, tones_for
from taudash.screens.widgets.bars import bar, sparkline
from taudash.screens.widgets.keyed_table import Col, KeyedTable, Row

FIXTURE = FIXTURES / "ui-demo.yaml"
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SCREENS_DIR = REPO / "screens"
TONES = tones_for({})


def session(**kw) -> Session:
    r = load_snapshot(FIXTURE)
    return Session(r.store, SourceInfo(type="snapshot", context=r.context, observed_at=r.captured_at), **kw)


# --- Session -------------------------------------------------------------------------------


def test_view_is_cached_per_revision_and_access_state():
    calls = []

    def counting(store, now, config, source):
        calls.append(now)
        return derive(store, now, config, source)

    s = session(derive_fn=counting)
    v1 = s.view(NOW)
    assert s.view(NOW.replace(minute=6)) is v1 and len(calls) == 1  # nothing changed: no re-derive
    s.store.set_access("Job", AccessState.FORBIDDEN, "forbidden by RBAC")
    v2 = s.view(NOW)
    assert v2 is not v1 and len(calls) == 2  # access states are part of the key
    with s.writing() as store:
        store.delete("TauWorkspace", "vision", "tau-system")
    v3 = s.view(NOW)
    assert len(calls) == 3 and "vision" not in [w.name for w in v3.workspaces]


def test_snapshot_sessions_are_read_only_and_say_so():
    s = session()
    assert s.read_only and s.mode == "SNAPSHOT"
    assert session(demo=True).mode == "DEMO"
    live = Session(s.store, SourceInfo(type="kube", context="prod"))
    assert not live.read_only and live.mode == "LIVE"
    assert Session(s.store, SourceInfo(type="kube"), read_only=True).read_only


def test_freshness_lists_kinds_not_synced_and_age_of_last_event():
    s = session()
    s.store.set_access("Workload", AccessState.ERROR, "connection reset", since=NOW.timestamp() - 12)
    s.store.last_event_at = NOW.timestamp() - 0.8
    f = s.freshness(NOW)
    assert abs(f.age - 0.8) < 1e-3 and f.read_only and f.revision == s.store.revision
    described = {p.resource: p.describe(NOW.timestamp()) for p in f.problems}
    assert described == {"deployments.apps": "deployments.apps forbidden",
                         "workloads.kueue.x-k8s.io": "workloads.kueue.x-k8s.io error (stale 12 s)"}


def test_history_is_bucketed_and_unknown_before_the_first_sample():
    s = session()
    frame = s.frame(NOW)
    h100 = frame.history["taugrid-gpu-h100-80gb"]
    assert len(h100) == 16 and h100[-1] == 16.0 and all(v is None for v in h100[:-1])
    with s.writing() as store:  # a reservation change later in the session
        load_documents([(None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})], store=store)
    later = s.frame(NOW.replace(minute=20))
    series = later.history["taugrid-gpu-h100-80gb"]
    assert series[-1] == 16.0 and series.count(None) < len(series) - 1


def test_related_links_owner_workload_queue_and_nodes():
    s = session()
    rel = {(r.relation, r.ref.kind, r.ref.name) for r in s.related(ObjRef(kind="Workload", namespace="train",
                                                                         name="job-job-train-17-a1b2c"))}
    assert ("owner", "Job", "job-train-17") in rel
    assert ("local queue", "LocalQueue", "jobqueue") in rel
    assert ("cluster queue (admitted)", "ClusterQueue", "tau-ws-train") in rel
    assert ("flavor", "ResourceFlavor", "taugrid-gpu-h100-80gb") in rel
    assert ("node (of flavor)", "Node", "gpu-h100-1") in rel
    job = {(r.relation, r.ref.kind, r.ref.name) for r in s.related(ObjRef(kind="Job", namespace="train",
                                                                          name="job-train-17"))}
    assert ("owns", "Workload", "job-job-train-17-a1b2c") in job  # one row per object
    ws = {(r.relation, r.ref.name) for r in s.related(ObjRef(kind="TauWorkspace", namespace="tau-system", name="eval"))}
    assert {("namespace", "eval"), ("new namespace", "eval-v2"), ("cluster queue", "tau-ws-eval")} <= ws
    assert s.related(ObjRef(kind="Job", namespace="nope", name="missing")) == []


# --- filter and literal text ------------------------------------------------------------------


def test_filter_grammar():
    meta = RowMeta(kind="RayService", namespace="eval", name="llm", text="LongRunningService tau-ws-eval",
                   severity="warning", rule="DRAIN-BLOCKED")
    labels = {"kueue.x-k8s.io/queue-name": "jobqueue"}

    def m(q: str) -> bool:
        return parse_filter(q).matches(meta, lambda _m: labels)

    assert m("") and m("llm") and m("LONGRUNNING") and m("kind:rayservice") and m("kind:job,rayservice")
    assert not m("kind:job") and m("ns:ev*") and not m("ns:train")
    assert m("label:kueue.x-k8s.io/queue-name") and m("label:kueue.x-k8s.io/queue-name=jobqueue")
    assert not m("label:kueue.x-k8s.io/queue-name!=jobqueue") and not m("label:other")
    assert m("sev:warn rule:drain") and not m("sev:crit") and not m("llm rule:POOL")
    assert m('"tau-ws-eval"')
    assert parse_filter('unbalanced "quo').text == ("unbalanced", "quo")  # a half-typed quote never breaks it
    assert parse_filter("kind:").errors and not parse_filter("kind:").active
    # a severity no finding has is said, never silently nothing (nor silently everything)
    bogus = parse_filter("sev:bogus")
    assert bogus.active and bogus.invalid == ("unknown severity 'bogus' (one of critical, warning, info)",)
    assert not m("sev:bogus") and not m("llm sev:bogus")
    assert not parse_filter("sev:c").invalid and not parse_filter("severity:INFO").invalid


def test_clean_makes_control_characters_visible():
    assert clean("plain [bold]x[/]") == "plain [bold]x[/]"
    assert clean("a\x1b[2Jb\a") == "a\\x1b[2Jb\\x07"
    assert clean("evil\u202egnp.exe") == "evil\\u202egnp.exe"
    assert clean("one\ntwo") == "one ⏎ two" and clean("one\ntwo", multiline=True) == "one\ntwo"
    t = lit("[bold red]x[/]", "italic")
    assert t.plain == "[bold red]x[/]" and not any("bold" in str(s.style) for s in t.spans)


def test_bars_and_sparklines_never_draw_unknown_as_zero():
    assert bar(None, 8, 8, TONES).plain == "········"
    assert bar(0, 8, 8, TONES).plain == "░" * 8
    assert bar(1, 64, 8, TONES).plain.startswith("█")  # a little reserved is never nothing
    assert bar(12, 8, 8, TONES).plain.endswith("⚠")
    assert sparkline([None, None, 0.0, 8.0], TONES, ceiling=8).plain == "  ▁█"


def test_help_layout_keeps_descriptions_under_themselves():
    text = "Intro line.\n\nKEY      what it does, at length\n         continued\n  M1     sub entry\nenter  open"
    console = Console(width=30, record=True, file=io.StringIO())
    console.print(help_renderable(text))
    lines = console.export_text().splitlines()
    assert lines[0] == "Intro line."
    assert lines[2].startswith("KEY") and "what it does" in lines[2]
    wrapped = [line for line in lines[3:] if line.strip() and not line.startswith(("  M1", "enter"))]
    assert wrapped and all(line.startswith(" " * 7) for line in wrapped)  # under the description, not the key


# --- keyed table --------------------------------------------------------------------------------


class _TableApp(App):
    def compose(self) -> ComposeResult:
        yield KeyedTable([Col("name", "name", 10), Col("value", "value", flex=True)], id="t")


def _rows(*pairs: tuple[str, str]) -> list[Row]:
    return [Row(k, (Text(k), Text(v)), RowMeta(kind="Job", name=k, text=v)) for k, v in pairs]


async def test_keyed_table_updates_in_place_keeps_selection_and_order():
    app = _TableApp()
    async with app.run_test(size=(60, 12)) as pilot:
        t = app.query_one(KeyedTable)
        t.focus()
        t.sync(_rows(("a", "1"), ("b", "2"), ("c", "3")))
        await pilot.pause()
        t.move_cursor(row=2)
        assert t.selected_key() == "c"
        row_c = t.rows["c"]
        t.sync(_rows(("a", "1"), ("aa", "new"), ("c", "33")))  # b gone, aa inserted before c, c changed
        await pilot.pause()
        assert t.visible_keys() == ["a", "aa", "c"]
        assert t.selected_key() == "c" and t.rows["c"] is row_c  # same row object: updated, not re-added
        assert t.get_cell("c", "value").plain == "33"
        t.set_filter(parse_filter("a"))
        assert t.visible_keys() == ["a", "aa"] and (t.shown, t.total) == (2, 3)
        t.set_filter(parse_filter("zzz"))
        assert t.visible_keys() == [] and t.selected_key() is None  # only the "no rows match" placeholder
        t.set_filter(parse_filter(""))
        t.sync([])
        assert t.visible_keys() == [] and t.row_count == 1  # the empty placeholder says so


class _ScrollApp(App):
    def compose(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static("above\n" * 3)
            yield KeyedTable([Col("name", "name", 10), Col("value", "value", flex=True)], id="t")


async def test_cursor_in_a_growing_table_stays_visible_in_its_scroller():
    app = _ScrollApp()
    async with app.run_test(size=(60, 12)) as pilot:
        t = app.query_one(KeyedTable)
        t.sync(_rows(*[(f"r{i:02}", str(i)) for i in range(40)]))
        t.focus()
        await pilot.pause()
        body = app.query_one("#body", VerticalScroll)
        for key in ("end", "home", "end"):
            await pilot.press(key)
            await pilot.pause()
            row_y = t.content_region.y + t.header_height + t.cursor_row - int(t.scroll_y)
            assert body.content_region.y <= row_y < body.content_region.bottom, (t.cursor_row, body.scroll_y)


# --- structure: one registry, shared presenters, a composed workflow host ----------------------------


def test_registry_lists_each_screen_once_and_refuses_ambiguity():
    from taudash.app import SCREENS, TaudashApp
    from taudash.screens.kit.base import DashScreen
    from taudash.screens.kit.entries import Registry, ScreenEntry
    from taudash.screens.registry import REGISTRY

    assert [e.key for e in REGISTRY.keyed()] == [str(i) for i in range(1, 10)]
    assert SCREENS == {e.name: e.cls for e in REGISTRY}
    for e in REGISTRY:
        assert issubclass(e.cls, DashScreen) and e.help == e.cls.HELP and e.help.strip()
        assert REGISTRY.of(e.cls) is e and REGISTRY.get(e.name) is e and e.name in REGISTRY
    bound = {b.key: b.action for b in TaudashApp.BINDINGS if b.key.isdigit()}
    assert bound == {e.key: f"go('{e.name}')" for e in REGISTRY.keyed()}
    first, second = REGISTRY.entries[:2]
    for bad in ((first, ScreenEntry(first.key, "other", "Other", "O", second.cls)),  # a key twice
                (first, ScreenEntry("2", first.name, "Other", "O", second.cls)),  # a name twice
                (first, ScreenEntry("2", "other", "Other", "O", first.cls)),  # a class twice
                (ScreenEntry("10", "other", "Other", "O", first.cls),)):  # not a digit
        with pytest.raises(ValueError):
            Registry(*bad)
    assert REGISTRY.get("nope") is None and REGISTRY.get(None) is None


def test_help_lists_the_number_keys_from_the_registry():
    from taudash.screens.kit.help import global_keys
    from taudash.screens.registry import REGISTRY

    first = global_keys(REGISTRY).splitlines()[0]
    assert first.startswith("1–9      Overview · Pool · ")
    assert first.endswith(" · ".join(e.title for e in REGISTRY.keyed())
                          + " (the current screen's number returns to its top level)")


def test_the_screens_folder_holds_the_screens_and_their_registry_only():
    """Each module directly in screens/ is a screen: it defines a DashScreen (a dashboard screen or a detail
    pushed on one). The registry lists them; what they share lives in the rooms beneath (kit/, widgets/,
    workflow/). That no screen imports another is an import-linter contract (pyproject.toml; its negative
    controls: tests/e2e/test_import_contract.py)."""
    import importlib
    import inspect

    from taudash.screens.kit.base import DashScreen
    from taudash.screens.registry import REGISTRY

    screens: dict[str, list[str]] = {}
    for path in sorted(SCREENS_DIR.glob("*.py")):
        if path.stem in ("__init__", "registry"):
            continue
        module = importlib.import_module(f"taudash.screens.{path.stem}")
        screens[path.stem] = [c.__name__ for _, c in inspect.getmembers(module, inspect.isclass)
                              if issubclass(c, DashScreen) and c.__module__ == module.__name__]
    assert {"overview", "pool", "workflows", "object_detail", "queue_detail", "workspace_detail"} <= set(screens)
    assert not [m for m, classes in screens.items() if not classes], "modules in screens/ that define no screen"
    assert {e.cls.__module__.removeprefix("taudash.screens.") for e in REGISTRY} <= set(screens)
    rooms = {p.name for p in SCREENS_DIR.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert rooms == {"kit", "widgets", "workflow"}


async def test_the_workflow_host_is_owned_not_mixed_in_and_refuses_in_read_only(tmp_path):
    """The host works for any App that owns it: a read-only session is refused (said, nothing
    journaled), and quitting without a running workflow exits at once."""
    from taudash.app import TaudashApp
    from taudash.screens.kit.confirm import ConfirmScreen
    from taudash.screens.kit.messages import StartWorkflow
    from taudash.screens.registry import REGISTRY
    from taudash.screens.workflow.host import RunOptions, WorkflowHost
    from taudash.screens.workflows import WorkflowsScreen

    assert not issubclass(TaudashApp, WorkflowHost)
    s = session()

    class Bare(App):
        def __init__(self) -> None:
            super().__init__()
            self.workflows = WorkflowHost(self, s, lambda: NOW, RunOptions(directory=tmp_path),
                                          listed_on=REGISTRY.of(WorkflowsScreen))

        def on_start_workflow(self, message: StartWorkflow) -> None:
            self.workflows.start(message.kind, message.params)

    app = Bare()
    async with app.run_test() as pilot:
        host = app.workflows
        assert host.directory() == tmp_path and host.live() == {} and not host.writable
        app.post_message(StartWorkflow("hold", {"cqs": ["tau-ws-train"], "mode": "Hold"}))
        await pilot.pause()
        assert [n.message for n in app._notifications] == [
            "read-only: starting a hold workflow refused — guided operations are disabled (read-only session)"]
        assert list(tmp_path.iterdir()) == []
        assert not app._exit
        host.quit()
        assert app._exit and not isinstance(app.screen, ConfirmScreen)  # nothing runs: no question asked
