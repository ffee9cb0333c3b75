"""Cluster strings are inert everywhere: object names, labels, annotations, condition reasons and
messages, profile names and the context carrying Rich markup, ANSI/OSC escape sequences, C1 controls
and bidi overrides. Every screen (each mode, every object's detail, workspace detail, help, palette,
confirmation, the notification of skipped objects) is rendered as the terminal would receive it: no
escape sequence from the cluster reaches the terminal (no OSC, BEL, clear-screen, C1 CSI), the
visible text holds no control or bidi character, and markup is shown as written. Table output of
`workflow status`/`workflow list` and `profiles select -o table` is checked the same way."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from factories import raw_object, snapshot_document
from rich.console import Console
from tools.mutate import demo_objects
from tools.paths import FIXTURES
from tools.waiting import palette_results

from taudash.app import SCREENS, TaudashApp
from taudash.engine.model.tau import ResolvedWorkloadProfile
from taudash.engine.rules.base import ObjRef
from taudash.engine.rules.profilehash import profile_set_hash
from taudash.engine.session import Session
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo
from taudash.screens.kit.confirm import ConfirmScreen
from taudash.screens.kit.messages import OpenObject

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
# Markup, CSI clear-screen, an OSC title set ended by BEL, a bidi override, a C1 CSI, a Rich link.
H = "[bold red]X[/]\x1b[2J\x1b]0;owned\x07\u202e\x9b31m[link=https://evil.example]L[/link]"
NAME = "n[bold]y[/]\x1b[2J\x07\u202e"
CONTEXT = "[bold red]ctx[/]\x1b]0;t\x07"


def hostile_cluster(path: Path) -> Path:
    objs = copy.deepcopy(demo_objects())
    node_renamed = cq_renamed = False
    for o in objs:
        meta = o["metadata"]
        meta.setdefault("labels", {})["evil"] = H
        meta.setdefault("annotations", {})["evil"] = H
        for c in (o.get("status") or {}).get("conditions") or []:
            c["message"] = H + " " + str(c.get("message", ""))
            c["reason"] = "[red]R[/]\x1b[31m"
        if o["kind"] in ("Workload", "Job", "RayJob", "RayService", "Deployment"):
            meta["name"] += NAME
        elif o["kind"] == "Node" and not node_renamed and "tau.azure.com/gpu-class" in meta["labels"]:
            meta["name"] += NAME  # its CSINode keeps the old name: a storage finding names it
            node_renamed = True
        elif o["kind"] == "ClusterQueue" and not cq_renamed and meta["name"] == "tau-ws-vision":
            meta["name"] += NAME  # the workspace's queue goes missing: findings name it
            cq_renamed = True
        elif o["kind"] == "TauCluster":
            for p in o["spec"].get("workloadProfiles") or []:
                p["name"] += NAME
                p["description"] = H
            resolved = o["status"]["workloadProfiles"]
            for p in resolved["profiles"]:
                p["name"] += NAME
            # a consistent revision, so `profiles select` picks (and prints) a hostile name
            resolved["profileSetHash"] = profile_set_hash(
                [ResolvedWorkloadProfile.model_validate(p) for p in resolved["profiles"]])
    objs += yaml.safe_load((FIXTURES / "ui-hostile.yaml").read_text())["objects"]
    objs.append(raw_object("Node", NAME, spec=7))  # a load issue
    doc = snapshot_document(objs, context=CONTEXT, captured_at="2026-11-30T09:00:00+00:00")
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return hostile_cluster(tmp_path_factory.mktemp("hostile") / "hostile.yaml")


def rendered(app) -> tuple[str, str]:
    """What the terminal would receive for the current screen, and its visible text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.file.getvalue(), console.export_text(styles=False)


def forbidden_in_text(text: str) -> list[str]:
    return sorted({repr(c) for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")})


class Seen:
    def __init__(self) -> None:
        self.text: list[str] = []

    def check(self, app, where: str) -> None:
        raw, text = rendered(app)
        # Our own styling uses CSI SGR sequences; nothing else may reach the terminal.
        for seq in ("\x1b]", "\x07", "\x1b[2J", "\x9b", "\u202e"):
            assert seq not in raw, (where, repr(seq))
        assert not forbidden_in_text(text), (where, forbidden_in_text(text))
        self.text.append(text)

    @property
    def all(self) -> str:
        return "\n".join(self.text)


async def test_every_screen_shows_hostile_strings_inert(hostile):
    r = load_snapshot(hostile)
    assert r.issues  # the bad Node: its issue (naming it) is notified on start
    session = Session(r.store,
                      SourceInfo(type="snapshot", context=r.context, path=str(hostile), observed_at=r.captured_at),
                      issues=tuple(str(i) for i in r.issues))
    app = TaudashApp(session, clock=lambda: NOW, tick=3600)
    seen = Seen()
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await pilot.pause()
        seen.check(app, "start (with the load-issue notification)")
        for name in SCREENS:
            app.action_go(name)
            await pilot.pause()
            seen.check(app, name)
        refs = []  # one hostile object of each kind (each detail costs a render)
        for k in ("Workload", "Job", "Node", "ClusterQueue", "TauCluster", "TauWorkspace", "RayService", "Deployment"):
            objs = [o for o in r.store.list(k) if NAME in o.name or "[" in o.name or k == "TauCluster"]
            refs += [ObjRef(kind=k, namespace=o.namespace, name=o.name) for o in objs[:1]]
        assert len(refs) >= 6
        for i, ref in enumerate(refs):
            app.post_message(OpenObject(ref, raw=True))
            await pilot.pause()
            seen.check(app, f"detail {ref.kind} {ref.name!r}")
            if i % 3 == 0:
                await pilot.press("y")  # the YAML, as observed
                await pilot.pause()
                seen.check(app, f"yaml {ref.kind} {ref.name!r}")
            await pilot.press("escape")
        for ws in r.store.list("TauWorkspace"):
            app.post_message(OpenObject(ObjRef(kind="TauWorkspace", namespace=ws.namespace, name=ws.name)))
            await pilot.pause()
            seen.check(app, f"workspace detail {ws.name!r}")
            await pilot.press("escape")
        await pilot.press("question_mark")
        await pilot.pause()
        seen.check(app, "help")
        await pilot.press("escape")
        await pilot.press("ctrl+p", *"bold")  # the palette lists hostile names
        await palette_results(pilot, "bold")
        seen.check(app, "palette")
        await pilot.press("escape")
        app.push_screen(ConfirmScreen(f"Hold {H}", [f"ClusterQueue {NAME}", H], reversible=True))
        await pilot.pause()
        seen.check(app, "confirm")
    text = seen.all
    for shown in ("[bold red]X[/]", "[bold]y[/]", "[link=https://evil.example]L[/link]", "[bold]evil[/bold]",
                  "\\x1b[2J", "\\u202e", "\\x9b"):
        assert shown in text, shown  # markup shown as written; escapes made visible


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "taudash.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", "TERM": "xterm-256color", **(env or {})}, timeout=120)


def assert_inert_output(out: str) -> None:
    assert not forbidden_in_text(out), forbidden_in_text(out)
    assert "\x1b" not in out and "\x9b" not in out


def test_profiles_select_table_is_inert(hostile):
    r = run_cli("profiles", "select", "--snapshot", str(hostile), "--namespace", "train", "--team", "research",
                "--lane", "training", "-o", "table")
    assert r.returncode == 2, r.stderr  # 2: the snapshot holds an unreadable object (reported)
    assert_inert_output(r.stdout + r.stderr)
    assert "profile:  azure.research.training.ln[bold]y[/]\\x1b" in r.stdout, r.stdout  # made visible


def test_workflow_status_and_list_tables_are_inert(tmp_path, monkeypatch, capsys):
    """A journal whose plan names hostile objects and whose failure quotes a hostile API message."""
    from taudash.cli import main
    from taudash.engine.workflows import Journal

    state = tmp_path / "state"
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(state))
    journal_dir = state / "workflows"
    journal_dir.mkdir(parents=True)
    j = Journal.create("abc123", "hold", {"cqs": [NAME], "mode": "HoldAndDrain"}, CONTEXT, directory=journal_dir)
    op = {"verb": "patch", "kind": "ClusterQueue", "namespace": None, "name": NAME, "description": H,
          "patch": {"spec": {"stopPolicy": "HoldAndDrain"}}, "destructive": False,
          "diff": f"~ ClusterQueue {NAME}: None → HoldAndDrain"}
    j.append("planned", "hold", {"operations": [op], "notes": [H], "destructive": False, "signature": [NAME]})
    j.append("failed", "hold", {"error": f"HTTP 422: {H}"})
    j.append("artifact", None, {"name": H, "path": f"/tmp/{NAME}"})
    for args in (["workflow", "status", "abc123"], ["workflow", "list"]):
        assert main(args) == 0
        out = capsys.readouterr()
        assert_inert_output(out.out + out.err)
        if args[1] == "status":
            assert "[bold]y[/]" in out.out and "\\x1b[2J" in out.out
    # JSON keeps the exact strings (escaped by JSON itself)
    assert main(["workflow", "status", "abc123", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["steps"][0]["error"] == f"HTTP 422: {H}"
