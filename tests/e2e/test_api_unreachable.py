"""The API server goes away under a live dashboard: one cluster-level "API unreachable — stale since"
banner, derived overview figures read "?" with the reason (never 0, ✖ or a count), and one
API-UNREACHABLE finding instead of one DATA-UNREADABLE per kind; all of it goes once the server is back."""

from __future__ import annotations

import io

from rich.console import Console
from textual.widgets import Static
from tools.livedash import close, dashboard, eventually, live_session
from tools.waiting import next_renders

from taudash.engine.store import AccessState
from taudash.screens.widgets.header_bar import HeaderBar
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.sim.server import SimServer


def text_of(renderable) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def header(app) -> str:
    bar = app.screen.query_one(HeaderBar)
    return "".join(text_of(bar.query_one(p).content) for p in ("#hb-left", "#hb-problems"))


def overview(app) -> str:
    return "".join(text_of(app.screen.query_one(f"#{w}", Static).content)
                   for w in ("ov-pool-title", "ov-borrow", "ov-status"))


def finding_rules(app) -> list[str]:
    t = app.screen.query_one("#findings", KeyedTable)
    return [t.get_row_at(i)[1].plain.strip() for i in range(t.row_count)]


def all_failing(session) -> bool:
    return all(a.state in (AccessState.ERROR, AccessState.ABSENT) for a in session.store.access_states().values())


async def test_api_unreachable_shows_one_banner_and_question_marks_then_recovers():
    async with SimServer() as sim:
        session, source = await live_session(sim)
        app = dashboard(session, 0.3)
        async with app.run_test(size=(160, 40)):
            await next_renders(app)
            # Reachable: figures are shown, no banner, no outage finding.
            assert "API unreachable" not in header(app)
            before = overview(app)
            assert "PROFILES ✓ usable" in before and "? unknown" not in before
            assert "API-UNREACHABLE" not in finding_rules(app)

            await sim.api.stop()
            assert await eventually(lambda: all_failing(session), within=20)
            assert await eventually(lambda: "API-UNREACHABLE" in finding_rules(app), within=10)
            await next_renders(app)
            head = header(app)
            assert "✖ API unreachable — stale since " in head
            assert "unknown: " not in head  # no per-kind list
            ov = overview(app)
            for line in ("BORROWING ? unknown — API unreachable", "WORKSPACES ? unknown — API unreachable",
                         "PROFILES ? unknown — API unreachable", "MULTIKUEUE ? unknown — API unreachable"):
                assert line in ov, ov
            assert "0/0" not in ov and "not usable" not in ov and "failing M" not in ov and "Ready" not in ov
            rules = finding_rules(app)
            assert rules.count("API-UNREACHABLE") == 1
            assert "DATA-UNREADABLE" not in rules

            await sim.api.restart()
            assert await eventually(lambda: "API-UNREACHABLE" not in finding_rules(app), within=30)
            assert await eventually(lambda: "API unreachable" not in header(app), within=10)
            assert await eventually(lambda: "PROFILES ✓ usable" in overview(app), within=10)
        await close(source)
