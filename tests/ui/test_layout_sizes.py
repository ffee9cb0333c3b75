"""Every numbered screen, Capacity and Fleet at 60×20, 100×30, 120×36 and 200×60, read from the screen as drawn:

- names whole on one line: every row a table draws whole on screen shows its identifying name (the
  object's name: a queue, flavor, profile, workload, node) unbroken on one line of the rendered screen —
  never folded onto two lines, never cut with "…";
- no empty list where rows exist: the table a screen is about draws at least one of its rows, and it holds
  the names the store has.

One app walks every screen at each size in turn (the terminal resized, as an operator's is): each screen is
composed once, on its first visit, and the demo loaded once.
A negative control narrows the Queues name column until names are cut and shrinks its table to its header:
both checks then fail.
"""

from __future__ import annotations

from datetime import UTC, datetime

from factories import dashboard_app
from tools.waiting import eventually

from taudash.screens.kit.format import ref_text
from taudash.screens.kit.messages import Navigate
from taudash.screens.widgets.keyed_table import EMPTY_KEY, MORE_KEY, Col, KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZES = [(60, 20), (100, 30), (120, 36), (200, 60)]
# The table each screen is about, and the names the store gives it (the view's): it must draw some of them.
PRIMARY = {
    "overview": ("findings", lambda v: [ref_text(f.object).plain for f in v.findings]),
    "pool": ("pool-inventory", lambda v: [f.name for f in v.pool.flavors]),
    "queues": ("queues", lambda v: [q.name for q in v.cluster_queues] + [c.name for c in v.cohorts]),
    "workspaces": ("workspaces", lambda v: [w.name for w in v.workspaces]),
    "sources": ("sources", lambda v: [f"{w.namespace}/{w.owner_name or w.name}" for w in v.waiting]),
    "multikueue": ("mk-workers", lambda v: [w.name for w in v.multikueue.workers]),
    "profiles": ("pr-profiles", lambda v: [p.name for p in v.profiles.profiles]),
    "findings": ("all-findings", lambda v: [ref_text(f.object).plain for f in v.findings]),
    "workflows": None,  # no journals in the test's state folder: nothing to list
    "capacity": ("cap-nodes", lambda v: [n.name for f in v.capacity.flavors for n in f.nodes]),
    "fleet": ("fleet", lambda v: ["aks-eastus-prod-demo"]),
}


def screen_lines(screen) -> list[str]:
    """The screen as drawn: one string per terminal line."""
    update = screen._compositor.render_full_update(simplify=True)
    return ["".join(seg.text for strip in line for seg in strip) for line in update.strips]


def ident_text(table: KeyedTable, key: str) -> str:
    """A row's identifying cell (its first, in a table that marks none)."""
    at = next((i for i, c in enumerate(table.spec) if c.ident), 0)
    cells = table.row(key).cells
    value = (cells() if callable(cells) else cells)[at]
    return value.plain if hasattr(value, "plain") else str(value)


def name_of(text: str) -> str:
    """The object's name in an identifying cell: its longest word (past a tree branch, a ▶ or a kind)."""
    words = text.split()
    return max(words, key=len) if words else ""


def rows_on_screen(screen, table: KeyedTable) -> list[str]:
    """The keys of the rows the table draws whole within the screen (not scrolled away, not clipped)."""
    geo = screen.find_widget(table)
    seen = geo.region.intersection(geo.clip)
    if not seen.height:
        return []
    first = seen.y - geo.region.y  # the table's lines clipped away above
    header = table.header_height if table.show_header else 0
    offsets = table._y_offsets  # each data line: (row key, line within the row)
    lines: dict[str, int] = {}
    for line in range(first, first + seen.height):
        data = line - header + int(table.scroll_y)
        if line >= header and 0 <= data < len(offsets):
            key = offsets[data][0].value
            lines[key] = lines.get(key, 0) + 1
    return [k for k, n in lines.items() if k not in (EMPTY_KEY, MORE_KEY) and n == table.rows[k].height]


def layout_problems(screen, primary) -> list[str]:
    where = type(screen).__name__
    lines = screen_lines(screen)
    problems = []
    named = primary[0] if primary is not None else None
    for table in screen.query(KeyedTable):
        if not any(c.ident for c in table.spec) and table.id != named:
            continue
        for key in rows_on_screen(screen, table):
            name = name_of(ident_text(table, key))
            if name and not any(name in line for line in lines):
                problems.append(f"{where} #{table.id}: {name!r} is not whole on one line")
    if primary is not None:
        table_id, expected = primary
        table = screen.query_one(f"#{table_id}", KeyedTable)
        wanted = [name_of(n) for n in expected(screen.frame.view)]
        held = " ".join(ident_text(table, k) for k in table.visible_keys())
        assert wanted, f"{where}: the demo has rows for #{table_id}"
        missing = [n for n in wanted if n not in held]
        if missing:
            problems.append(f"{where} #{table_id}: the store's {missing[:3]} are not listed")
        if not rows_on_screen(screen, table):
            problems.append(f"{where} #{table_id}: no row drawn although the store has {len(wanted)}")
    return problems


async def show(pilot, name: str, size: tuple[int, int]) -> None:
    app = pilot.app
    app.post_message(Navigate(name))
    assert await eventually(lambda: app.current_mode == name and app.screen.frame is not None
                            and tuple(app.screen.size) == size
                            and all(t.size.width and t._built_width == t.size.width
                                    for t in app.screen.query(KeyedTable) if t.display))
    await pilot.pause()


async def test_names_whole_and_lists_drawn_at_every_size():
    app = dashboard_app(now=NOW)
    problems = []
    async with app.run_test(size=SIZES[0]) as pilot:
        for w, h in SIZES:
            await pilot.resize_terminal(w, h)
            for name, primary in PRIMARY.items():
                await show(pilot, name, (w, h))
                # A busy machine can draw the screen a tick after the table is built: the layout must
                # settle right within the deadline, and what it still shows then is what is reported.
                await eventually(lambda primary=primary: not layout_problems(app.screen, primary), within=10)
                problems += [f"{w}x{h} {p}" for p in layout_problems(app.screen, primary)]
    assert not problems, "\n".join(problems)


async def test_the_checks_catch_a_cut_name_and_an_empty_list(monkeypatch):
    """Negative control: a name column held narrow and not identifying cuts the queue names ("…"), and the
    Queues table shrunk to its header draws no row: each check reports it."""
    narrow = [Col("name", "cohort / cluster queue", 8, max_width=8)]
    from taudash.screens import queues

    monkeypatch.setattr(queues, "COLS", narrow + queues.COLS[1:])
    app = dashboard_app(now=NOW)
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, "queues", (100, 30))
        cut = layout_problems(app.screen, PRIMARY["queues"])
        assert any("'research-multikueue' is not whole" in p for p in cut), cut
        assert not any("no row drawn" in p for p in cut)
        app.screen.query_one("#queues", KeyedTable).styles.max_height = 1  # the header only
        await pilot.pause()
        assert await eventually(lambda: any("no row drawn" in p for p in layout_problems(app.screen,
                                                                                          PRIMARY["queues"])))
