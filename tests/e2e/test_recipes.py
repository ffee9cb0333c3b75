"""ARCHITECTURE.md's recipes, walked as a newcomer would: in a copy of the package, a toy rule area, a toy kind, a
toy screen and a toy workflow are each added with exactly the files and registry lines the recipe names (no
monkeypatching: the files are written and the registries edited as text), and a fresh interpreter over the copy
shows each is picked up — the rule's view field and findings in `status -o json`, the kind synced by the live
source from the simulator and loaded from a snapshot, the screen reached from the ctrl+p palette (a tenth
screen has no number key), the workflow offered by `workflow start` with generated flags and its runs' targets
overlap-checked. The recipes' own file names
are checked too: every concrete path they cite exists, and every file a walk touches is named by its recipe."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tools.paths import DEMO, REPO

ARCHITECTURE = REPO / "ARCHITECTURE.md"
TESTS = REPO / "tests"

# --- what each recipe adds: new files (path -> text) and registry lines (path -> (anchor, line)) -------------
# A registry line goes right before the anchor: the closing bracket of the registry's list. Its import, when the
# entry names a new module, is the one other line, and goes after the file's last import.

RULE_AREA = "Add a rule area"
RULE_FILES = {
    "engine/rules/toyarea.py": '''\
        """A toy rule area: counts the Workloads and says so in one finding."""

        from __future__ import annotations

        from ..model import Workload
        from .base import Finding, RuleContext, Severity, ViewModel, finding


        class ToyView(ViewModel):
            workloads: int = 0


        def derive_toyarea(ctx: RuleContext) -> tuple[ToyView, list[Finding]]:
            n = len(ctx.store.list(Workload))
            return ToyView(workloads=n), [finding(Severity.INFO, "TOY-COUNTED", "Workload", "all", None,
                                                  f"{n} Workloads counted")]
        ''',
}
RULE_LINES = {
    "engine/registry.py": ("\n)\n\n__all__ = [\"RULES\"",
                           '    Rule("toyarea", frozenset({"Workload"}), (ViewField("toyarea", ToyView, ToyView()),),'
                           " derive=derive_toyarea),",
                           "from .rules.toyarea import ToyView, derive_toyarea"),
}

KIND = "Add a kind the engine reads"
KIND_FILES: dict[str, str] = {}
KIND_APPEND = {  # the model, appended to its module; its export
    "engine/model/core.py": '''\


        class ToyGadgetSpec(KModel):
            colour: str = ""


        class ToyGadget(KubeObject):
            spec: ToyGadgetSpec = ToyGadgetSpec()
        ''',
    "engine/model/__init__.py": '''\
        from .core import ToyGadget  # noqa: E402

        __all__ += ["ToyGadget"]
        ''',
}
KIND_LINES = {
    "engine/model/kinds.py": ("\n)\n\nBY_KIND",
                              '    ResourceKind("ToyGadget", "toys.example.com", ("v1",), "toygadgets", True,'
                              " core.ToyGadget, optional=True),", None),
}

SCREEN = "Add a screen"
SCREEN_FILES = {
    "screens/toyscreen.py": '''\
        """A toy screen: says how many findings the view holds."""

        from __future__ import annotations

        from textual.app import ComposeResult
        from textual.widgets import Static

        from taudash.engine.session import Frame

        from .kit.base import DashScreen


        class ToyScreen(DashScreen):
            HELP = "Toy: how many findings the view holds."

            def compose_body(self) -> ComposeResult:
                yield Static(id="toy-count")

            def render_frame(self, frame: Frame) -> None:
                self.query_one("#toy-count", Static).update(f"toy screen: {len(frame.view.findings)} findings")
        ''',
}
SCREEN_LINES = {
    "screens/registry.py": ("\n)\n",
                            '    ScreenEntry(None, "toyscreen", "Toy screen", "Toy", ToyScreen),',
                            "from .toyscreen import ToyScreen"),
}

WORKFLOW = "Add a workflow"
WORKFLOW_FILES = {
    "engine/workflows/toyflow.py": '''\
        """A toy workflow: checks that a ClusterQueue is there; its runs are declared to write that queue."""

        from __future__ import annotations

        from pathlib import Path
        from typing import Any

        from ..model import ClusterQueue
        from .base import Check, Context, Progress, Step, Workflow
        from .kind import Param, WorkflowKind, unknown_queues


        class Look(Step):
            def __init__(self, cq: str) -> None:
                self.id = "look"
                self.cq = cq
                self.title = f"Look at ClusterQueue {cq}"

            def progress(self, ctx: Context) -> Progress:
                return Progress(ctx.store.get(ClusterQueue, self.cq) is not None, f"ClusterQueue {self.cq}")

            def verify(self, ctx: Context) -> list[Check]:
                return [Check(ctx.store.get(ClusterQueue, self.cq) is not None, f"ClusterQueue {self.cq} is there")]


        def toyflow_params(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
            unknown_queues(ctx, [v["cq"]])
            return {"cq": v["cq"]}


        TOYFLOW = WorkflowKind(
            name="toyflow", label="Toy flow", help="a toy: look at a ClusterQueue",
            steps="1 look at the ClusterQueue",
            params=(Param("--cq", "the ClusterQueue", metavar="NAME", required=True),),
            make_params=toyflow_params,
            build=lambda p: Workflow("toyflow", f"Look at {p['cq']}", [Look(p["cq"])], p),
            targets=lambda p: {f"ClusterQueue {p['cq']}"},
            describe=lambda p: f"queue {p.get('cq', '?')}",
        )
        ''',
}
WORKFLOW_LINES = {
    "engine/workflows/registry.py": ("\n]\n", "    TOYFLOW,", "from .toyflow import TOYFLOW"),
}

WALKS = {
    RULE_AREA: (RULE_FILES, {}, RULE_LINES),
    KIND: (KIND_FILES, KIND_APPEND, KIND_LINES),
    SCREEN: (SCREEN_FILES, {}, SCREEN_LINES),
    WORKFLOW: (WORKFLOW_FILES, {}, WORKFLOW_LINES),
}


def recipes() -> dict[str, str]:
    """ARCHITECTURE.md's recipes by title: the paragraphs of its "Recipes" section that start with a bold title."""
    text = ARCHITECTURE.read_text()
    section = text.split("\n## Recipes\n", 1)[1].split("\n## ", 1)[0]
    found = {}
    for para in re.split(r"\n(?=\*\*)", section):
        m = re.match(r"\*\*(.+?)\.?\*\*", para)
        if m:
            found[m.group(1).split(" (")[0].rstrip(".")] = para
    return found


def cited_paths(paragraph: str) -> list[str]:
    """The repository paths a recipe cites in backquotes (`engine/registry.py`, `screens/<name>.py`)."""
    paths = []
    for quoted in re.findall(r"`([^`]+)`", paragraph):
        for word in quoted.split():
            word = word.strip("(),;:")
            if re.fullmatch(r"(engine|screens|taudash|tests|snapshots|docs)/[\w<>./-]*\w/?", word):
                paths.append(word)
    return paths


def named(paragraph: str, path: str) -> bool:
    """The recipe names `path`, literally or through its placeholder (`engine/rules/<area>.py`)."""
    for cited in cited_paths(paragraph):
        pattern = re.escape(cited).replace(re.escape("<"), "<").replace(re.escape(">"), ">")
        pattern = re.sub(r"<[^>]+>", r"\\w+", pattern)
        if re.fullmatch(pattern, path):
            return True
    return False


def test_every_concrete_path_the_recipes_cite_exists():
    found = recipes()
    assert set(WALKS) <= set(found), f"recipes in ARCHITECTURE.md: {sorted(found)}"
    missing = [(title, p) for title, para in found.items() for p in cited_paths(para)
               if "<" not in p and not (REPO / p).exists()]
    assert not missing


def test_every_file_a_walk_touches_is_named_by_its_recipe():
    found = recipes()
    for title, (files, appended, lines) in WALKS.items():
        touched = [*files, *appended, *lines]
        assert touched, title
        assert [p for p in touched if not named(found[title], p)] == [], title


def test_the_path_matcher_refuses_a_file_a_recipe_does_not_name():  # the negative control of the test above
    para = recipes()[RULE_AREA]
    assert named(para, "engine/rules/toyarea.py") and named(para, "engine/registry.py")
    assert not named(para, "engine/session.py") and not named(para, "screens/registry.py")  # other recipes' files
    assert not named(para, "engine/rules/sub/toyarea.py")  # a placeholder stands for one name, not a path


# --- the walk: a copy of the package with the four recipes applied -------------------------------------------

def _add_line(text: str, anchor: str, line: str, import_line: str | None) -> str:
    assert text.count(anchor) == 1, f"the registry's closing line {anchor!r} moved"
    text = text.replace(anchor, "\n" + line + anchor, 1)
    if import_line:
        imports = [m.end() for m in re.finditer(r"^from \S+ import (\([^)]*\)|.*)$", text, re.M)]
        text = text[:imports[-1]] + "\n" + import_line + text[imports[-1]:]
    return text


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("recipes")
    for top in ("engine", "screens", "taudash", "snapshots"):
        shutil.copytree(REPO / top, root / top, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for files, appended, lines in WALKS.values():
        for path, text in files.items():
            (root / path).write_text(textwrap.dedent(text))
        for path, text in appended.items():
            with (root / path).open("a") as fh:
                fh.write(textwrap.dedent(text))
        for path, (anchor, line, import_line) in lines.items():
            (root / path).write_text(_add_line((root / path).read_text(), anchor, line, import_line))
    return root


def run(tree: Path, tmp_path: Path, script: str) -> dict:
    """Run `script` in a fresh interpreter that imports taudash from the copy; it prints one JSON line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAUDASH_", "KUBECONFIG"))}
    env.update(PYTHONPATH=os.pathsep.join([str(tree), str(TESTS)]), HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path), TAUDASH_STATE_DIR=str(tmp_path / "state"))
    head = f"import json, sys\nimport taudash\nassert taudash.__file__.startswith({str(tree)!r}), taudash.__file__\n"
    proc = subprocess.run([sys.executable, "-c", head + textwrap.dedent(script)], env=env, cwd=tree,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_rule_area_is_derived_into_the_view_and_its_findings(tree, tmp_path):
    out = run(tree, tmp_path, f"""
        import contextlib, io
        from taudash.cli import main
        from taudash.engine.view import ClusterView
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main(["status", "--snapshot", {str(DEMO)!r}, "-o", "json"])
        doc = json.loads(buf.getvalue())
        print(json.dumps({{"rc": rc, "fields": list(ClusterView.model_fields), "toyarea": doc.get("toyarea"),
                          "keys": list(doc), "findings": [f for f in doc["findings"] if f["rule"] == "TOY-COUNTED"]}}))
    """)
    assert out["rc"] == 0
    assert out["fields"][-2:] == ["toyarea", "findings"]  # in registry order, before the findings
    assert out["toyarea"]["workloads"] > 0
    assert [f["message"] for f in out["findings"]] == [f"{out['toyarea']['workloads']} Workloads counted"]
    assert out["keys"].index("toyarea") > out["keys"].index("waiting")


def test_a_rule_area_is_recomputed_when_a_kind_it_reads_changes(tree, tmp_path):
    out = run(tree, tmp_path, f"""
        from datetime import UTC, datetime
        from taudash.engine.incremental import IncrementalDeriver
        from taudash.engine.model import Workload
        from taudash.engine.sources.snapshot import load_snapshot
        store = load_snapshot({str(DEMO)!r}).store
        deriver = IncrementalDeriver(store)
        now = datetime(2026, 12, 1, tzinfo=UTC)
        before = deriver.view(now).toyarea.workloads
        wl = store.list(Workload)[0]
        store.delete("Workload", wl.metadata.name, wl.metadata.namespace)
        print(json.dumps({{"before": before, "after": deriver.view(now).toyarea.workloads}}))
    """)
    assert out["after"] == out["before"] - 1


def test_a_kind_is_synced_by_the_live_source_and_loaded_from_a_snapshot(tree, tmp_path):
    gadget = {"apiVersion": "toys.example.com/v1", "kind": "ToyGadget",
              "metadata": {"name": "g1", "namespace": "eval"}, "spec": {"colour": "red"}}
    out = run(tree, tmp_path, f"""
        import asyncio
        from taudash.engine.model import ToyGadget, lookup
        from taudash.engine.sources.snapshot import load_documents
        from taudash.live import LiveCluster
        from taudash.sim.server import SimServer
        gadget = {gadget!r}
        loaded = load_documents([(1, gadget)])

        async def live():
            async with SimServer({str(DEMO)!r}, objects=[gadget]) as sim:
                async with LiveCluster(sim.context, str(sim.kubeconfig), read_only=True) as cluster:
                    return [(g.metadata.name, g.spec.colour) for g in cluster.store.list(ToyGadget)]

        print(json.dumps({{"kind": lookup("toys.example.com/v1", "ToyGadget").model.__name__,
                          "snapshot": [(g.metadata.name, g.spec.colour) for g in loaded.store.list(ToyGadget)],
                          "unknown": dict(loaded.unknown_kinds), "live": asyncio.run(live())}}))
    """)
    assert out["kind"] == "ToyGadget"
    assert out["snapshot"] == [["g1", "red"]] and out["unknown"] == {}
    assert out["live"] == [["g1", "red"]]


def test_a_screen_is_reached_from_the_palette(tree, tmp_path):
    out = run(tree, tmp_path, f"""
        import asyncio
        from datetime import UTC, datetime
        from textual.widgets import Static
        from tools.waiting import eventually, palette_results
        from taudash.app import TaudashApp
        from taudash.engine.session import Session
        from taudash.engine.sources.snapshot import load_snapshot
        from taudash.engine.view import SourceInfo
        from taudash.screens.registry import REGISTRY
        from taudash.screens.toyscreen import ToyScreen
        r = load_snapshot({str(DEMO)!r})
        session = Session(r.store, SourceInfo(type="snapshot", context=r.context, path="demo.yaml"))
        app = TaudashApp(session, clock=lambda: datetime(2026, 12, 1, tzinfo=UTC), tick=3600.0)

        async def walk():
            async with app.run_test(size=(120, 36)) as pilot:
                await pilot.press("ctrl+p")
                await pilot.pause()
                await pilot.press(*"go toy")
                await palette_results(pilot, "go toy", expect="Toy screen")
                await pilot.press("enter")
                assert await eventually(lambda: isinstance(app.screen, ToyScreen))
                shown = lambda: str(app.screen.query_one("#toy-count", Static).render())
                assert await eventually(lambda: "findings" in shown())
                return app.current_mode, shown()

        mode, shown = asyncio.run(walk())
        print(json.dumps({{"mode": mode, "shown": shown,
                          "names": [e.name for e in REGISTRY]}}))
    """)
    assert out["mode"] == "toyscreen" and out["names"][-1] == "toyscreen"
    assert re.fullmatch(r"toy screen: \d+ findings", out["shown"])


def test_a_workflow_is_listed_and_its_targets_are_overlap_checked(tree, tmp_path):
    out = run(tree, tmp_path, f"""
        import contextlib, io
        from pathlib import Path
        from taudash.cli import main
        from taudash.engine.workflows import Journal, overlap_refusal, registry
        journals = Path({str(tmp_path / "journals")!r})
        journals.mkdir()
        run = Journal.create("a1b2c3", "toyflow", {{"cq": "tau-ws-train"}}, "demo", journals)

        def helped(*args):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
                main(["workflow", "start", *args, "--help"])
            return buf.getvalue()

        print(json.dumps({{"names": list(registry.names()), "run": run.id, "start": helped(),
                          "flags": helped("toyflow"),
                          "same": overlap_refusal("hold", {{"cqs": ["tau-ws-train"]}}, "demo", None, journals),
                          "other": overlap_refusal("hold", {{"cqs": ["tau-ws-eval"]}}, "demo", None, journals)}}))
    """)
    assert out["names"][-1] == "toyflow"
    assert "toyflow" in out["start"] and "a toy: look at a ClusterQueue" in out["start"]  # `workflow start`
    assert "--cq NAME" in out["flags"] and "--rehearse" in out["flags"]  # its flags, generated from its Params
    assert f"ClusterQueue tau-ws-train: workflow {out['run']} (toyflow, InProgress)" in out["same"]
    assert out["other"] is None
