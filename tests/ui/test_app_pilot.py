"""Pilot tests of the dashboard: navigation (number keys, palette, mouse), filter, drill-down and back,
help, the refresh chain, and hostile strings. They assert on widget state and captured messages."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from rich.console import Console
from textual.command import CommandPalette
from textual.widgets import Static
from tools.paths import FIXTURES
from tools.waiting import FrameCount, eventually, palette_results

from taudash.engine.rules.base import ObjRef
from taudash.screens.kit.base import DashScreen
from taudash.screens.kit.confirm import ConfirmScreen
from taudash.screens.kit.entries import Registry, ScreenEntry
from taudash.screens.kit.help import HelpScreen
from taudash.screens.kit.messages import Navigate, OpenObject, RequestOperation
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.pool import PoolScreen
from taudash.screens.registry import REGISTRY
from taudash.screens.widgets.filter_bar import FilterBar
from taudash.screens.widgets.footer_bar import FooterBar
from taudash.screens.widgets.header_bar import HeaderBar
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.screens.workspace_detail import WorkspaceDetailScreen
from taudash.screens.workspaces import WorkspacesScreen

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)


def plain(widget) -> str:
    """What a Static shows, as plain text."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def table(app, selector: str) -> KeyedTable:
    return app.screen.query_one(selector, KeyedTable)


def cell_texts(t: KeyedTable, key: str) -> list[str]:
    return [c.plain for c in t.get_row(key)]


def assert_columns_fit(app, where: str) -> None:
    """Fixed columns fit the table: only the flex column gives way on narrow terminals."""
    for t in app.screen.query(KeyedTable):
        assert t.columns, (where, t.id)
        width = sum(c.get_render_width(t) for c in t.columns.values())
        assert width <= t.size.width, (where, t.id, width, t.size.width)


async def test_number_keys_switch_screens_and_every_screen_fits_both_sizes():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    order = (("2", "pool"), ("3", "queues"), ("4", "workspaces"), ("5", "sources"),
             ("6", "multikueue"), ("7", "profiles"), ("8", "findings"), ("1", "overview"))
    async with app.run_test(size=(100, 30)) as pilot:  # the tmux sizes: 100×30, then resized to 200×60
        assert app.current_mode == "overview"
        assert_columns_fit(app, "overview")
        for key, mode in order:
            await pilot.press(key)
            await pilot.pause()
            assert app.current_mode == mode
            assert app.screen.query_one(FooterBar).active == mode
            assert_columns_fit(app, mode)
        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        for key, mode in order[::3]:  # tables rebuild their columns on resize
            await pilot.press(key)
            await pilot.pause()
            assert_columns_fit(app, f"{mode} at 200×60")
            flex = [t for t in app.screen.query(KeyedTable) if t.size.width > 150]
            assert flex, mode  # tables follow the terminal width
        await pilot.press("2")
        await pilot.pause()
        assert isinstance(app.screen, PoolScreen)
        # the pool screen rendered the fixture's flavors, with the budget/reservation numbers
        inv = table(app, "#pool-inventory")
        assert inv.visible_keys() == ["taugrid-gpu-a100-80gb", "taugrid-gpu-h100-80gb", "taugrid-gpu-h200-141gb"]
        res = cell_texts(table(app, "#pool-reserved"), "taugrid-gpu-h200-141gb")
        assert res[2] == "12/8" and res[4] == "-4 ⚠"  # overcommitted: headroom negative, with a symbol


async def test_footer_click_navigates():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    messages: list = []
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        footer = app.screen.query_one(FooterBar)
        start, _end, name = next(s for s in footer._spans if s[2] == "profiles")
        await pilot.click(FooterBar, offset=(start + 2, 0))
        await pilot.pause()
        assert app.current_mode == "profiles"
        assert any(isinstance(m, Navigate) and m.screen == "profiles" for m in messages)


async def test_palette_opens_screen_and_object():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    messages: list = []
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"llm")
        await palette_results(pilot, "llm", expect="llm")
        await pilot.press("enter")
        await pilot.pause()
        opened = [m.ref for m in messages if isinstance(m, OpenObject)]
        assert opened and (opened[-1].kind, opened[-1].namespace, opened[-1].name) == ("RayService", "eval", "llm")
        assert isinstance(app.screen, ObjectDetailScreen)
        assert app.screen.ref.name == "llm"
        # its Workload is linked, and following the link opens it
        related = table(app, "#od-related")
        assert any("rayservice-llm-9f8e7" in k for k in related.visible_keys())

        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"go multik")
        await palette_results(pilot, "go multik", expect="MultiKueue")
        await pilot.press("enter")
        await pilot.pause()
        assert app.current_mode == "multikueue"


async def test_a_short_narrow_terminal_still_lists_findings_and_cuts_no_figure():
    """60×20: the Overview drops its explanatory lines (note, borrowing) so finding rows show, and the pool
    table drops the used column instead of cutting a node count; at 120×36 both are back."""
    app = dashboard_app(now=NOW)
    async with app.run_test(size=(60, 20)) as pilot:
        found = table(app, "#findings")
        assert await eventually(lambda: found.visible_keys() and found.region.height >= 3)
        pool = plain(app.screen.query_one("#ov-pool"))
        assert "18/18" in pool and "used" not in pool and "…" not in pool
        assert not app.screen.query_one("#ov-pool-note").display and not app.screen.query_one("#ov-borrow").display
        await pilot.resize_terminal(120, 36)
        assert await eventually(lambda: app.screen.query_one("#ov-borrow").display)
        assert await eventually(lambda: "used" in plain(app.screen.query_one("#ov-pool")))


async def test_a_severity_no_finding_has_is_said_not_silently_empty():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("8")
        found = table(app, "#all-findings")
        assert await eventually(lambda: len(found.visible_keys()) > 0)
        everything = found.visible_keys()
        await pilot.press("slash")
        app.screen.query_one(FilterBar).value = "sev:bogus"
        assert await eventually(lambda: found.visible_keys() == [])
        cells = " ".join(str(c) for c in found.get_row_at(0))
        assert "filter: unknown severity 'bogus' (one of critical, warning, info)" in cells
        app.screen.query_one(FilterBar).value = "sev:warn"  # a real one: its rows
        assert await eventually(lambda: found.visible_keys() != [])
        assert set(found.visible_keys()) < set(everything)


async def test_filter_terms_enter_keeps_escape_clears():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        ws = table(app, "#workspaces")
        assert ws.visible_keys() == ["eval", "notebooks", "train", "vision"]
        await pilot.press("slash")
        await pilot.pause()
        bar = app.screen.query_one(FilterBar)
        assert bar.is_open and app.focused is bar
        await pilot.press(*"tra")  # digits and q would go into the input too, never to the app
        await pilot.pause()
        assert ws.visible_keys() == ["train"]
        await pilot.press("enter")
        await pilot.pause()
        assert not bar.is_open and app.focused is ws and ws.visible_keys() == ["train"]
        title = plain(app.screen.query_one(".section-title"))
        assert "1 of 4" in title and "tra" in title
        await pilot.press("escape")  # first esc clears the filter, the next one would go back
        await pilot.pause()
        assert ws.visible_keys() == ["eval", "notebooks", "train", "vision"]

        # kind:/ns:/label: terms on the sources screen
        await pilot.press("5")
        await pilot.pause()
        src = table(app, "#sources")
        await pilot.press("slash")
        bar = app.screen.query_one(FilterBar)
        bar.value = "kind:rayservice,job ns:eval"  # as if typed: Input.Changed drives the filter
        await pilot.pause()
        assert src.visible_keys() == ["Job|eval|prep-4", "RayService|eval|llm"]
        bar.value = "label:kueue.x-k8s.io/queue-name=burst"
        await pilot.pause()
        assert src.visible_keys() == ["RayJob|train|sweep-9"]
        await pilot.press("escape")
        await pilot.pause()
        assert len(src.visible_keys()) == 6


async def test_drill_down_and_back():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        assert table(app, "#workspaces").selected_key() == "eval"
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WorkspaceDetailScreen) and screen.ws_name == "eval"
        conds = table(app, "#wsd-conditions")
        assert cell_texts(conds, "WorkloadIdentityReady")[1:3] == ["✖ False", "ServiceAccountNotReady"]
        assert cell_texts(conds, "DriftDetected")[1] == "✓ False"  # False is the healthy value here
        blockers = table(app, "#wsd-blockers")
        assert "RayService|eval|llm" in blockers.visible_keys()
        assert "delete RayService eval/llm" in plain(app.screen.query_one("#wsd-steps"))
        assert "deployments.apps (Forbidden)" in plain(app.screen.query_one("#wsd-title"))
        # drill from a blocker to the object, then back twice
        blockers.focus()
        blockers.move_cursor(row=blockers.get_row_index("RayService|eval|llm"))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ObjectDetailScreen) and app.screen.ref.kind == "RayService"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, WorkspaceDetailScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, WorkspacesScreen)
        assert table(app, "#workspaces").selected_key() == "eval"  # selection kept
        # the number of the current screen returns to its top from any depth
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")  # the workspace detail's key for the TauWorkspace object and its YAML (o sorts)
        await pilot.pause()
        assert isinstance(app.screen, ObjectDetailScreen) and app.screen.ref.kind == "TauWorkspace"
        await pilot.press("4")
        await pilot.pause()
        assert isinstance(app.screen, WorkspacesScreen)


async def test_finding_jumps_to_its_object():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(120, 36)) as pilot:
        findings = table(app, "#findings")
        key = next(k for k in findings.visible_keys() if k.startswith("POOL-OVERCOMMITTED"))
        findings.move_cursor(row=findings.get_row_index(key))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ObjectDetailScreen)
        assert (app.screen.ref.kind, app.screen.ref.name) == ("ResourceFlavor", "taugrid-gpu-h200-141gb")
        mine = table(app, "#od-findings")
        assert any("POOL-OVERCOMMITTED" in k for k in mine.visible_keys())
        yaml_text = plain(app.screen.query_one("#od-yaml"))
        assert "nodeLabels" in yaml_text and "h200-141gb" in yaml_text


async def test_an_object_without_a_raw_copy_shows_the_fields_taudash_reads():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    store = app.session.store
    wl = next(w for w in store.list("Workload") if w.status.admission is not None)
    store.upsert(wl, raw=None)  # as a live source keeps Workloads: no raw copy
    async with app.run_test(size=(120, 36)):
        app.screen.post_message(OpenObject(ObjRef(kind="Workload", namespace=wl.namespace, name=wl.name)))
        # the detail draws its panes after it mounts: wait for the title, not for one pause (a busy machine)
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen)
                                and plain(app.screen.query_one("#od-yaml-title")).strip())
        title = plain(app.screen.query_one("#od-yaml-title"))
        yaml_text = plain(app.screen.query_one("#od-yaml"))
        assert "the fields taudash reads" in title and "not available" not in title
        assert wl.name in yaml_text and "clusterQueue" in yaml_text and "QuotaReserved" in yaml_text
        assert "podSets" in yaml_text and "resourceUsage" in yaml_text


async def test_help_shows_this_screens_keys_and_closes():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("8", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "Findings" in plain(app.screen.query_one(".help-title"))
        body = plain(app.screen.query_one("#help-screen-text"))
        assert "cycle the severity filter" in body
        assert "palette" in plain(app.screen.query_one("#help-global-text"))
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen) and app.current_mode == "findings"
        await pilot.press("s")  # the findings screen's own key: critical only
        await pilot.pause()
        keys = table(app, "#all-findings").visible_keys()
        assert (keys
                and all(app.screen.query_one("#all-findings", KeyedTable).meta(k).severity == "critical" for k in keys))


async def test_header_shows_mode_read_only_and_unknown_kinds():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(120, 36)):
        header = app.screen.query_one(HeaderBar)
        left, right = plain(header.query_one("#hb-left")), plain(header.query_one("#hb-right"))
        assert "SNAPSHOT" in left and "aks-eastus-prod" in left and "TauCluster gen 12" in left
        assert "captured 5 min ago" in left
        assert "READ-ONLY" in right
        problems = plain(header.query_one("#hb-problems"))
        assert "unknown" in problems and "deployments.apps forbidden" in problems


async def test_refresh_chain_updates_rows_in_place_and_keeps_selection():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False, tick=0.05)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4", "down", "down")  # select "train"
        await pilot.pause()
        ws = table(app, "#workspaces")
        assert ws.selected_key() == "train"
        frames = FrameCount(app)
        # a live source adds a workspace that sorts before "train" (under the session lock)
        from taudash.engine.sources.snapshot import load_documents
        doc = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
               "metadata": {"name": "aardvark", "namespace": "tau-system", "generation": 1},
               "status": {"phase": "Pending", "observedGeneration": 1}}
        with app.session.writing() as store:
            load_documents([(None, doc)], store=store)
        await eventually(lambda: "aardvark" in ws.visible_keys())
        assert ws.visible_keys() == ["aardvark", "eval", "notebooks", "train", "vision"]
        assert ws.selected_key() == "train"  # the cursor followed its row
        assert frames.n > 0
        # hidden screens are not rendered: the overview kept its older frame
        overview = app._screen_stacks["overview"][0]
        assert overview.frame is not app.session.last_frame
        await pilot.press("1")
        await pilot.pause()
        assert overview.frame is app.session.last_frame  # caught up on resume


async def test_hostile_strings_are_shown_literally():
    app = dashboard_app(FIXTURES / "ui-hostile.yaml", now=NOW, demo=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        ws = table(app, "#workspaces")
        assert ws.visible_keys() == ["[bold]evil[/bold]"]
        name = ws.get_row("[bold]evil[/bold]")[0]
        assert name.plain == "[bold]evil[/bold]"
        await pilot.press("enter")
        await pilot.pause()
        conds = table(app, "#wsd-conditions")
        reason, message = cell_texts(conds, "QueueReady")[2:4]
        assert reason == "[/]"
        assert "[link=https://evil.example]click[/link]" in message
        assert "\x1b" not in message and "\a" not in message and "\u202e" not in message and "\n" not in message
        assert "\\x1b[2J" in message and "\\u202e" in message
        # nothing from the cluster became a style: every span in the rendered row is ours
        row = conds.get_row("QueueReady")
        assert all(not span.style or "link" not in str(span.style) for c in row for span in c.spans)
        header = plain(app.screen.query_one(HeaderBar).query_one("#hb-left"))
        assert "[bold red]ctx[/]" in header
        await pilot.press("5")
        await pilot.pause()
        src = table(app, "#sources")
        why = cell_texts(src, src.visible_keys()[0])[4]
        assert "[bold magenta]quota[/]" in why and "\\x1b[31m" in why
        # the palette shows such names literally too
        await pilot.press("ctrl+p", *"evil")
        await palette_results(pilot, "evil", expect="evil")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, WorkspaceDetailScreen) and app.screen.ws_name == "[bold]evil[/bold]"
        # and the whole screen exports without a markup error
        assert "[bold]evil[/bold]" in app.export_screenshot()


async def test_writes_are_refused_in_read_only_mode_and_tiles_are_clickable():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    messages: list = []
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        app.post_message(RequestOperation("HoldAndDrain tau-ws-train", ["ClusterQueue tau-ws-train"], True))
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)  # snapshot sessions never ask to write
        assert any("read-only" in n.message for n in app._notifications)
        await pilot.click("#ov-pool")
        await pilot.pause()
        assert app.current_mode == "pool"


# --- the screen registry: a screen past the ninth -----------------------------------------------


class _HistoryScreen(DashScreen):
    HELP = "History: what changed over the last hours (a screen registered without a number key)."

    def compose_body(self):
        yield Static("history body", id="history-body")


async def test_a_tenth_screen_is_one_registry_line_reached_from_the_palette(monkeypatch):
    """A screen registered with key=None gets a mode, a palette entry, `?` help and Navigate — and
    neither a number key nor a footer entry (the footer keeps 1–9)."""
    import taudash.app

    tenth = ScreenEntry(None, "history", "History", "Hist", _HistoryScreen)
    registry = Registry(*REGISTRY.keyed(), tenth)
    monkeypatch.setattr(taudash.app, "REGISTRY", registry)  # the app's registry; it hands it to the rest
    assert len(registry) == 10 and registry.keyed() == REGISTRY.keyed()
    with pytest.raises(ValueError):  # a name listed twice is refused
        Registry(*REGISTRY.keyed(), ScreenEntry(None, "pool", "Pool again", "P", _HistoryScreen))

    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(160, 36)) as pilot:
        footer = app.screen.query_one(FooterBar)
        assert [s[2] for s in footer._spans] == [e.name for e in REGISTRY.keyed()]  # history has no footer entry
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"go hist")
        await palette_results(pilot, "go hist", expect="History")
        await pilot.press("enter")
        assert await eventually(lambda: app.current_mode == "history")
        assert isinstance(app.screen, _HistoryScreen) and app.screen.nav == "history"
        assert app.screen.query_one(FooterBar).active == "history"
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert plain(app.screen.query_one(".help-title")).strip() == "History — help"
        assert "registered without a number key" in plain(app.screen.query_one("#help-screen-text"))
        global_keys = plain(app.screen.query_one("#help-global-text"))
        assert "Findings · Workflows (the current" in global_keys and "History" not in global_keys
        await pilot.press("escape", "9")
        await pilot.pause()
        assert app.current_mode == "workflows"  # the number keys are still the first nine
        app.post_message(Navigate("history"))
        assert await eventually(lambda: app.current_mode == "history")
        app.post_message(Navigate("no-such-screen"))  # an unknown name changes nothing
        await pilot.pause()
        assert app.current_mode == "history"


async def test_a_frame_shown_before_the_header_is_composed_waits_for_it_and_is_shown_then():
    """A screen composed in the background, or one closing while the app exits, may be told a frame before its
    header has children: nothing raises, and the frame is what the header shows once composed."""
    app = dashboard_app(now=NOW)
    async with app.run_test(size=(120, 36)) as pilot:
        assert await eventually(lambda: app.session.last_frame is not None)
        frame = app.session.last_frame
        header = HeaderBar(id="late-header")
        header.show(frame)  # not mounted: no children to update yet
        await app.screen.mount(header)
        await pilot.pause()
        assert "aks-eastus-prod-demo" in plain(header.query_one("#hb-left"))
