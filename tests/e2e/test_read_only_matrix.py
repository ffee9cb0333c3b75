"""Read-only mode from every source (the flag before or after the command, TAUDASH_READ_ONLY, the
config file globally or per context) over every command that can write: zero write requests at
the simulator, each refusal one line naming who asked, exit 2 and no journal. The dashboard and
the demo open read-only with the reason on their actions and on the header badge. Read-only
always wins: no source turns it off again."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from tools.paths import DEMO

import taudash.app
from taudash.cli import main
from taudash.config import ReadOnly, load_config, resolve_read_only
from taudash.engine.actions import WriteRefused
from taudash.engine.workflows import Journal, new_id
from taudash.errors import UsageError
from taudash.live import LiveCluster
from taudash.screens.widgets.header_bar import HeaderBar

CONTEXT = "taudash-sim"  # the context name the simulator writes into its kubeconfig


pytestmark = pytest.mark.usefixtures("cli_env")


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "xdg" / "taudash" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class Source:
    """One way to ask for read-only mode: arranges it and says how refusals must name it."""

    def __init__(self, name: str):
        self.name = name

    def arrange(self, argv: list[str], monkeypatch, tmp_path) -> tuple[list[str], str, str]:
        """(the command line, the source's name in a refusal, its name on the badge)."""
        if self.name == "flag before":
            return ["--read-only", *argv], "--read-only flag", "--read-only"
        if self.name == "flag after":
            return [*argv, "--read-only"], "--read-only flag", "--read-only"
        if self.name == "env":
            monkeypatch.setenv("TAUDASH_READ_ONLY", "yes")
            return argv, "TAUDASH_READ_ONLY", "TAUDASH_READ_ONLY"
        if self.name == "config global":
            path = config_file(tmp_path, "readOnly: true\n")
            return argv, f"config file {path}", "config file"
        if self.name == "config context":
            path = config_file(tmp_path, f"contexts:\n  other: {{readOnly: false}}\n  {CONTEXT}:\n    readOnly: true\n")
            return argv, f"config file {path} (context {CONTEXT})", f"config file: context {CONTEXT}"
        if self.name == "TAUDASH_CONFIG":
            path = tmp_path / "elsewhere.yaml"
            path.write_text("readOnly: true\n")
            monkeypatch.setenv("TAUDASH_CONFIG", str(path))
            return argv, f"config file {path}", "config file"
        raise AssertionError(self.name)


SOURCES = [Source(n) for n in ("flag before", "flag after", "env", "config global", "config context",
                               "TAUDASH_CONFIG")]

WORKFLOWS = {
    "workflow start hold": ["workflow", "start", "hold", "--cq", "tau-ws-train", "--yes"],
    "workflow start release": ["workflow", "start", "release", "--cq", "tau-ws-train", "--yes"],
    "workflow start catalog": ["workflow", "start", "catalog", "--catalog", "catalog.yaml", "--yes"],
    "workflow start rollback": ["workflow", "start", "rollback", "--from", "abc123", "--yes"],
    "workflow start drain": ["workflow", "start", "drain", "--workspace", "train", "--yes"],
    "workflow resume": ["workflow", "resume", "JOURNAL", "--yes"],
}


def total(writes) -> int:
    return sum(dict(writes).values())


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
@pytest.mark.parametrize("cmd", list(WORKFLOWS))
def test_workflows_refuse_up_front_with_zero_writes(demo_sim, capsys, monkeypatch, tmp_path, cmd, source):
    journal = Journal.create(new_id(), "hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"}, CONTEXT)
    before_journal = journal.path.read_text()
    argv = [journal.id if a == "JOURNAL" else a for a in WORKFLOWS[cmd]] + ["--kubeconfig", str(demo_sim.kubeconfig)]
    argv, named, _ = source.arrange(argv, monkeypatch, tmp_path)
    before = total(demo_sim.api.writes)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"taudash: {cmd} ") and "refused" in line
    assert f"asked by {named}" in line and "no journal was created" in line
    assert total(demo_sim.api.writes) == before  # counted on receipt: not a single write request
    assert sorted(p.name for p in journal.path.parent.iterdir()) == [journal.path.name]
    assert journal.path.read_text() == before_journal  # resume appended nothing


@pytest.fixture
def opened(monkeypatch):
    """Run the app headless for one paint instead of the terminal UI; keep it and its header."""
    apps: list = []

    async def run_async(self, *a, **kw):
        async with self.run_test(size=(160, 40)) as pilot:
            await pilot.pause()
            right = self.screen.query_one(HeaderBar).query_one("#hb-right")
            console = Console(width=200, record=True, file=io.StringIO())
            console.print(right.content)
            apps.append((self, console.export_text()))

    monkeypatch.setattr(taudash.app.TaudashApp, "run_async", run_async)
    return apps


def hold_patch(current):
    return {"spec": {"stopPolicy": "Hold"}}


def assert_read_only_session(app, badge_text: str, named: str, short: str) -> None:
    s = app.session
    assert s.read_only and not s.actions.writable
    assert f"asked by {named}" in s.actions.why_read_only
    assert "READ-ONLY" in badge_text and short in badge_text
    with pytest.raises(WriteRefused, match=re.escape(f"refused: read-only mode (asked by {named}")):
        asyncio.run(s.actions.patch("ClusterQueue", "tau-ws-train", None, hold_patch, "test"))


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_dashboard_opens_read_only_naming_the_source(demo_sim, opened, monkeypatch, tmp_path, source):
    argv, named, short = source.arrange(["--kubeconfig", str(demo_sim.kubeconfig)], monkeypatch, tmp_path)
    before = total(demo_sim.api.writes)
    assert main(argv) == 0
    ((app, badge),) = opened
    assert app.session.mode == "LIVE"
    assert_read_only_session(app, badge, named, short)
    assert total(demo_sim.api.writes) == before


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_demo_opens_read_only_naming_the_source(opened, monkeypatch, tmp_path, source):
    argv, named, short = source.arrange(["demo"], monkeypatch, tmp_path)
    assert main(argv) == 0
    ((app, badge),) = opened
    assert app.session.mode == "DEMO"
    assert_read_only_session(app, badge, named, short)


def test_without_any_source_the_dashboard_writes_and_the_counter_sees_it(demo_sim, opened):
    """The control: the same path, nobody asked for read-only, and a write reaches the simulator."""
    assert main(["--kubeconfig", str(demo_sim.kubeconfig)]) == 0
    ((app, badge),) = opened
    assert not app.session.read_only and app.session.actions.writable and "read/write" in badge

    async def write_once():
        async with LiveCluster(None, str(demo_sim.kubeconfig)) as live:
            assert live.actions.writable
            await live.actions.patch("ClusterQueue", "tau-ws-train", None,
                                     lambda cur: {"metadata": {"labels": {"taudash-test": "control"}}}, "control")

    before = total(demo_sim.api.writes)
    asyncio.run(write_once())
    assert total(demo_sim.api.writes) > before


def test_a_per_context_setting_only_covers_its_context(demo_sim, opened, tmp_path):
    config_file(tmp_path, "contexts:\n  prod:\n    readOnly: true\n")
    assert main(["--kubeconfig", str(demo_sim.kubeconfig)]) == 0
    ((app, _),) = opened
    assert not app.session.read_only and app.session.actions.writable


def test_sources_combine_and_read_only_always_wins(demo_sim, capsys, monkeypatch, tmp_path):
    path = config_file(tmp_path, f"readOnly: false\ncontexts:\n  {CONTEXT}: {{readOnly: true}}\n")
    monkeypatch.setenv("TAUDASH_READ_ONLY", "1")
    code = main(["--read-only", "workflow", "start", "hold", "--cq", "tau-ws-train", "--yes",
                 "--kubeconfig", str(demo_sim.kubeconfig), "--context", CONTEXT])
    line = capsys.readouterr().err.strip()
    assert code == 2
    assert f"asked by --read-only flag, TAUDASH_READ_ONLY, config file {path} (context {CONTEXT})" in line
    # "0" or "readOnly: false" elsewhere does not undo a source that asked
    monkeypatch.setenv("TAUDASH_READ_ONLY", "0")
    assert resolve_read_only(False, CONTEXT).sources == (f"config file {path} (context {CONTEXT})",)
    assert resolve_read_only(False, "other") == ReadOnly()
    assert bool(resolve_read_only(True, "other"))


@pytest.mark.parametrize("value", ["1", "true", "YES", " yes "])
def test_env_values_that_ask(monkeypatch, value):
    monkeypatch.setenv("TAUDASH_READ_ONLY", value)
    assert resolve_read_only().sources == ("TAUDASH_READ_ONLY",)


@pytest.mark.parametrize("value", ["", "0", "false", "no"])
def test_env_values_that_do_not_ask(monkeypatch, value):
    monkeypatch.setenv("TAUDASH_READ_ONLY", value)
    assert not resolve_read_only()


@pytest.mark.parametrize("text,why", [
    ("readOnly: [unclosed\n", "invalid YAML"),
    ("- a list\n", "expected a mapping"),
    ("readOnly: yes please\n", "readOnly must be true or false"),
    ("contexts: [prod]\n", "contexts must be a mapping"),
    ("contexts:\n  prod: true\n", "contexts.prod must be a mapping"),
    ("contexts:\n  prod: {readOnly: 1}\n", "contexts.prod.readOnly must be true or false"),
])
@pytest.mark.parametrize("argv", [["status", "--snapshot", str(DEMO)], ["workflow", "list"]])
def test_a_malformed_config_file_is_exit_2_naming_it(capsys, tmp_path, text, why, argv):
    path = config_file(tmp_path, text)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert f"config file {path}: {why}" in err


def test_a_named_config_file_that_is_missing_or_a_bad_env_value_is_exit_2(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TAUDASH_CONFIG", str(tmp_path / "missing.yaml"))
    assert main(["workflow", "list"]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    monkeypatch.delenv("TAUDASH_CONFIG")
    monkeypatch.setenv("TAUDASH_READ_ONLY", "maybe")
    assert main(["workflow", "list"]) == 2
    assert "TAUDASH_READ_ONLY='maybe'" in capsys.readouterr().err


def test_no_config_file_is_fine_and_empty_means_nothing(tmp_path):
    assert load_config().path is None and not resolve_read_only(False, "prod")
    config_file(tmp_path, "")
    assert not resolve_read_only(False, "prod")
    with pytest.raises(UsageError):
        config_file(tmp_path, "readOnly: 'true'\n")  # a string is not a boolean: refuse, do not guess
        resolve_read_only(False, "prod")


def test_abort_only_writes_the_local_journal_and_stays_allowed(capsys, monkeypatch):
    monkeypatch.setenv("TAUDASH_READ_ONLY", "1")
    journal = Journal.create(new_id(), "hold", {"cqs": ["q"], "mode": "Hold"}, CONTEXT)
    assert main(["workflow", "abort", journal.id, "--read-only", "--yes"]) == 0
    assert Journal.open(journal.id).state == "Aborted"
    assert main(["--read-only", "workflow", "list"]) == 0
    assert journal.id in capsys.readouterr().out
