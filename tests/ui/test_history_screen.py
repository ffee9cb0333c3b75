"""The History screen over a recorded fixture (tests/tools/history_fixture.py): SVG snapshots, range
keys, drill-down from a preemption to its victim and preemptor, and the no-history state."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from tools.history_fixture import NOW, T, build, demo_session
from tools.waiting import eventually, palette_results

from taudash.app import TaudashApp
from taudash.engine.history.reader import HistoryReader
from taudash.screens.history import NO_HISTORY, HistoryScreen
from taudash.screens.kit.messages import Navigate
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.registry import REGISTRY
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.screens.widgets.plot import Plot

SIZE = (120, 36)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return build(tmp_path_factory.mktemp("history") / "fixture.sqlite3")


def history_app(path=None, reader=None) -> TaudashApp:
    """The demo dashboard over a history file; the other screens are not composed in the background (these
    tests show the History screen only: factories.dashboard_app's precompose)."""
    session = demo_session(reader if reader is not None else HistoryReader(path) if path is not None else None)
    return TaudashApp(session, clock=lambda: NOW, tick=3600, precompose=False)


async def to_history(pilot) -> HistoryScreen:
    pilot.app.post_message(Navigate("history"))
    assert await eventually(lambda: isinstance(pilot.app.screen, HistoryScreen) and pilot.app.screen.frame is not None)
    return await settled(pilot)


async def settled(pilot) -> HistoryScreen:
    """Until the screen shows the current range's data (it is read on a thread)."""
    screen = pilot.app.screen
    assert await eventually(lambda: screen.loaded or screen.session.history_reader is None)
    await pilot.pause()
    return screen


def plain(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


# --- snapshots -------------------------------------------------------------------------------------------


def test_history_last_hour(snap_compare, recorded):
    assert snap_compare(history_app(recorded), run_before=to_history, terminal_size=SIZE)


def test_history_week(snap_compare, recorded):
    async def week(pilot):
        await to_history(pilot)
        await pilot.press("right_square_bracket", "right_square_bracket")
        await settled(pilot)

    assert snap_compare(history_app(recorded), run_before=week, terminal_size=SIZE)


def test_history_preemption_log(snap_compare, recorded):
    async def log(pilot):
        await to_history(pilot)
        await pilot.press("right_square_bracket", "right_square_bracket")
        await settled(pilot)
        await pilot.press("l")
        await pilot.pause()

    assert snap_compare(history_app(recorded), run_before=log, terminal_size=SIZE)


def test_history_none_recorded(snap_compare):
    assert snap_compare(history_app(None), run_before=to_history, terminal_size=SIZE)


# --- the registry ----------------------------------------------------------------------------------------


def test_history_is_registered_without_a_number_key():
    entry = REGISTRY.get("history")
    assert entry is not None and entry.cls is HistoryScreen and entry.key is None
    assert entry not in REGISTRY.keyed() and "Preemption" not in entry.help.splitlines()[0]
    assert "[ shorter, ] longer" in entry.help


async def test_history_opens_from_the_palette_and_its_help_names_its_keys(recorded):
    from taudash.screens.kit.help import HelpScreen

    app = history_app(recorded)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"go hist")
        await palette_results(pilot, "go hist", expect="History")
        await pilot.press("enter")
        assert await eventually(lambda: app.current_mode == "history" and isinstance(app.screen, HistoryScreen))
        await pilot.press("question_mark")
        assert await eventually(lambda: isinstance(app.screen, HelpScreen))
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(app.screen.query_one("#help-screen-text").content)
        text = console.export_text()
        assert "p opens the preemptor" in text and "[ shorter, ] longer" in text


# --- range keys ------------------------------------------------------------------------------------------


async def test_range_keys_step_through_1h_24h_7d_and_stop_at_the_ends(recorded):
    app = history_app(recorded)
    async with app.run_test(size=SIZE) as pilot:
        screen = await to_history(pilot)
        assert screen.range_label == "1h" and screen.data.step == 30
        assert "[1h]" in plain(app, "#hist-range")
        await pilot.press("left_square_bracket")  # already the shortest
        assert screen.range_label == "1h"
        await pilot.press("right_square_bracket")
        assert await eventually(lambda: screen.loaded and screen.data.step == 720)
        assert screen.range_label == "24h" and "[24h]" in plain(app, "#hist-range")
        assert screen.data.start == T - 86400 and screen.data.end == T
        # the hour nobody recorded is a gap (None), not zeros, in the 24-hour buckets
        a100 = next(f for f in screen.data.flavors if f.name == "taugrid-gpu-a100-80gb")
        gap = [v for ts, v in a100.reserved if T - 3 * 3600 <= ts and ts + 720 <= T - 2 * 3600]
        assert gap and all(v is None for v in gap)
        assert all(v is not None for ts, v in a100.reserved if ts >= T - 3600)
        await pilot.press("right_square_bracket", "right_square_bracket")  # 7d, then nothing longer
        assert await eventually(lambda: screen.loaded and screen.data.step == 5040)
        assert screen.range_label == "7d"
        # the week's preemptions are listed, newest first; the hour only had one
        log = app.screen.query_one("#hist-log", KeyedTable)
        names = [r.name for r in screen.data.preemptions]
        assert names[0] == "job-sam2-finetune-549d1" and "job-probe-linear-1x-e7474" in names
        assert await eventually(lambda: log.row_count == 4)
        assert "4 preemptions" in str(app.screen.query_one("#hist-evictions", Plot).title)
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert await eventually(lambda: screen.loaded and screen.data.step == 30)
        assert await eventually(lambda: log.row_count == 1)


# --- drill-down ------------------------------------------------------------------------------------------


async def test_enter_opens_the_preempted_workload_and_p_its_preemptor(recorded):
    app = history_app(recorded)
    async with app.run_test(size=SIZE) as pilot:
        await to_history(pilot)
        await pilot.press("l")
        assert await eventually(lambda: app.screen.focused is app.screen.query_one("#hist-log"))
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        ref = app.screen.ref
        assert (ref.kind, ref.namespace, ref.name) == ("Workload", "vision", "job-sam2-finetune-549d1")
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("p")
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        ref = app.screen.ref
        assert (ref.kind, ref.namespace, ref.name) == ("Workload", "train", "job-llama-pretrain-34b-31d4a")


async def test_p_on_a_preemption_whose_preemptor_is_gone_says_so_and_opens_nothing(recorded):
    app = history_app(recorded)
    async with app.run_test(size=SIZE) as pilot:
        screen = await to_history(pilot)
        await pilot.press("right_square_bracket")  # 24h: the third row's preemptor was gone
        assert await eventually(lambda: screen.loaded and screen.data.step == 720)
        await pilot.press("l")
        log = app.screen.query_one("#hist-log", KeyedTable)
        assert await eventually(lambda: log.row_count == 3)
        # the demo's own preemption (recorded from the snapshot) is the second row
        assert screen._records[log.visible_keys()[1]].name == "job-ctx-ablation-32k-bc6fa"
        await pilot.press("down", "down")
        assert screen._records[log.selected_key()].name == "job-mmlu-sweep-17-def97"
        notes = []
        app.notify = lambda text, **kw: notes.append(text)
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen)
        assert notes and "UID uid-gone" in notes[0]


# --- no history ------------------------------------------------------------------------------------------


async def test_without_a_recorder_the_screen_says_so_and_draws_no_plot():
    app = history_app(None)
    async with app.run_test(size=SIZE) as pilot:
        await to_history(pilot)
        assert NO_HISTORY in plain(app, "#hist-none")
        assert not app.screen.query_one("#hist-data").display
        await pilot.press("l")  # nothing to jump to
        assert app.screen.focused is not app.screen.query_one("#hist-log")


async def test_a_file_not_created_yet_reads_as_no_history(tmp_path):
    app = history_app(tmp_path / "never.sqlite3")
    async with app.run_test(size=SIZE) as pilot:
        await to_history(pilot)
        assert NO_HISTORY in plain(app, "#hist-none")
        assert not (tmp_path / "never.sqlite3").exists()  # a reader never creates the file


async def test_a_range_with_nothing_recorded_says_so_not_zero(recorded, tmp_path):
    # the same file, read a month later: nothing in the last hour
    session = demo_session(HistoryReader(recorded))
    later = NOW.replace(month=12, day=30)
    app = TaudashApp(session, clock=lambda: later, tick=3600, precompose=False)
    async with app.run_test(size=SIZE) as pilot:
        await to_history(pilot)
        text = plain(app, "#hist-none")
        assert "nothing recorded in the last 1h" in text
        assert not app.screen.query_one("#hist-data").display


class SlowReader:
    """A reader whose read waits for the test (a big file): the screen must not wait with it."""

    def __init__(self, path, fail: bool = False) -> None:
        import threading

        self.inner = HistoryReader(path)
        self.go = threading.Event()
        self.fail = fail

    def window(self, now, seconds, buckets):
        self.go.wait(30)
        if self.fail:
            raise OSError("disk I/O error")
        return self.inner.window(now, seconds, buckets)


async def test_a_slow_read_runs_off_the_ui_and_the_screen_says_it_is_reading(recorded):
    app = history_app(reader=(reader := SlowReader(recorded)))
    async with app.run_test(size=SIZE) as pilot:
        pilot.app.post_message(Navigate("history"))
        assert await eventually(lambda: isinstance(app.screen, HistoryScreen) and app.screen.frame is not None)
        screen = app.screen
        await pilot.press("right_square_bracket")  # keys still work while the read waits
        assert await eventually(lambda: "reading the last 24h" in plain(app, "#hist-none"))
        assert not screen.loaded and not app.screen.query_one("#hist-data").display
        reader.go.set()
        assert await eventually(lambda: screen.loaded and screen.data is not None and screen.data.step == 720)
        assert await eventually(lambda: app.screen.query_one("#hist-data").display)


async def test_an_unreadable_file_is_said_on_the_screen(recorded):
    app = history_app(reader=(reader := SlowReader(recorded, fail=True)))
    reader.go.set()
    async with app.run_test(size=SIZE) as pilot:
        await to_history(pilot)
        assert "history unreadable: OSError: disk I/O error" in plain(app, "#hist-none")


# --- what-if predictions beside what happened --------------------------------------------------------------


def iso(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat()


@pytest.fixture
def predicted(recorded, tmp_path):
    """The recorded fixture with three predictions kept for its cluster in the last hour — one that came true
    (train/probe-linear-1x: a100, started at once), one whose flavor was wrong (train/nccl-allreduce-check ran on
    the gb200), one not submitted yet — and one from two hours ago."""
    from factories import whatif_prediction

    from taudash.engine.history import whatif

    key = "demo-key"
    for pid, obj, at, flavor in (("a1b2c3", "probe-linear-1x", T - 2100, "taugrid-gpu-a100-80gb"),
                                 ("d4e5f6", "nccl-allreduce-check", T - 3300, "taugrid-gpu-h100-80gb"),
                                 ("0a0b0c", "not-submitted-yet", T - 60, "taugrid-gpu-h100-80gb"),
                                 ("0ld000", "tokenizer-probe-gb200", T - 7200, "taugrid-gpu-gb200-186gb")):
        whatif.record(whatif_prediction(pid, ("Job", "train", obj), created=iso(at), flavor=flavor), key, tmp_path)
    reader = HistoryReader(recorded, key, tmp_path)
    yield reader
    reader.close()


def whatif_rows(app) -> dict[str, str]:
    table = app.screen.query_one("#hist-whatif", KeyedTable)
    # a cell may wrap onto a second line when the terminal is narrow: the words are what is asserted
    return {str(k.value): " | ".join(" ".join(str(c).split()) for c in table.get_row(k)) for k in table.rows}


def test_history_whatif_predictions(snap_compare, predicted):
    async def run(pilot):
        screen = await to_history(pilot)
        screen.query_one("#hist-whatif-section").scroll_visible(animate=False, top=True)
        await pilot.pause()

    assert snap_compare(history_app(reader=predicted), run_before=run, terminal_size=SIZE)


async def test_predictions_of_the_range_are_shown_beside_what_happened(predicted):
    app = history_app(reader=predicted)
    async with app.run_test(size=SIZE) as pilot:
        await to_history(pilot)
        assert app.screen.query_one("#hist-whatif-section").display
        rows = whatif_rows(app)
        assert set(rows) == {"wi:a1b2c3", "wi:d4e5f6", "wi:0a0b0c"}  # the one two hours old is not in the last 1h
        assert "taugrid-gpu-a100-80gb → taugrid-gpu-a100-80gb ✓" in rows["wi:a1b2c3"]
        assert "yes → yes ✓" in rows["wi:a1b2c3"]
        assert "taugrid-gpu-h100-80gb → taugrid-gpu-gb200-186gb ✗" in rows["wi:d4e5f6"]
        assert "→ …" in rows["wi:0a0b0c"] and "✓" not in rows["wi:0a0b0c"]  # not seen yet: never a guess
        await pilot.press("right_square_bracket")  # 24h: the older one too
        assert await eventually(lambda: "wi:0ld000" in whatif_rows(app))


async def test_without_predictions_the_section_is_hidden(recorded, tmp_path):
    app = history_app(reader=(reader := HistoryReader(recorded, "no-predictions", tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await to_history(pilot)
        assert app.screen.query_one("#hist-data").display
        assert not app.screen.query_one("#hist-whatif-section").display
    reader.close()
