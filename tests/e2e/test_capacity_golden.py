"""`taudash capacity -o json` keeps its contract (docs/capacity.md, "What can start now") on a hand-built
fragmented cluster (tests/fixtures/capacity-fragmented.yaml): the stored output, byte for byte, and the
contract's names read one by one. Regenerate (only for an intended output change):

    python tests/e2e/test_capacity_golden.py --regen
"""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

if __name__ == "__main__":  # run as a script (--regen): tests/ holds the shared test tools
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.paths import REPO  # noqa: E402

FIXTURE = "tests/fixtures/capacity-fragmented.yaml"
GOLDEN = REPO / "tests" / "fixtures" / "golden" / "capacity-fragmented.capacity.json"
SHAPE = ["--gpus-per-worker", "8", "--workers", "2", "--placement", "same-accelerator-domain"]
GPU_KEYS = {"allocatable", "requested", "free", "unhealthy", "degraded", "unknownHealth", "cordoned", "notReady"}
NODE_KEYS = {"name", "allocatable", "requested", "free", "health", "reasons", "schedulable", "domains"}


def capacity(*args: str) -> tuple[int, str, str]:
    from taudash.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(REPO)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(["capacity", *args])
            except SystemExit as exc:  # argparse and usage errors
                code = int(exc.code or 0)
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def test_capacity_json_is_byte_identical_to_the_golden():
    code, out, _ = capacity("--snapshot", FIXTURE, "-o", "json", *SHAPE)
    assert code == 0
    assert out == GOLDEN.read_text(encoding="utf-8"), "regenerate with: python tests/e2e/test_capacity_golden.py --regen"


def test_the_contract_names_and_values():
    _, out, _ = capacity("--snapshot", FIXTURE, "-o", "json", *SHAPE)
    data = json.loads(out)
    names = [f["name"] for f in data["flavors"]]
    assert names == sorted(names) == ["taugrid-gpu-gb200", "taugrid-gpu-h100"]
    for fl in data["flavors"]:
        assert {"name", "gpuClass", "gpus", "nodes", "fits"} <= set(fl)
        assert GPU_KEYS <= set(fl["gpus"])
        for n in fl["nodes"]:
            assert NODE_KEYS <= set(n) and set(n["domains"]) == {"site", "network-domain", "accelerator-domain"}
        assert {"placement", "gpusPerWorker", "workers", "count", "where"} <= set(fl["fits"])
        assert [n["name"] for n in fl["nodes"]] == sorted(n["name"] for n in fl["nodes"])
    gb, h100 = data["flavors"]
    # H100: 6 hosts × 8; 1+1+1 GPU probes and an 8-GPU job on the XID-79 host; the finished and unbound Pods hold nothing.
    want = {"allocatable": 48, "requested": 11, "free": 37, "unhealthy": 8, "unknownHealth": 0, "cordoned": 0}
    assert {k: h100["gpus"][k] for k in want} == want
    assert (h100["fits"]["count"], h100["fits"]["placement"], h100["fits"]["bestFree"]) == (0, "same-accelerator-domain",
                                                                                          15)
    assert {b["name"] for b in h100["fits"]["blockers"]} == {"probe-a-0", "probe-b-0"}  # rack-c lost a host to XID 79
    # GB200: one degraded tray (placeable, 3 free), one unknown, one cordoned.
    assert (gb["gpus"]["free"], gb["gpus"]["degraded"], gb["gpus"]["unknownHealth"], gb["gpus"]["cordoned"]) == (
        7, 4, 4, 4)
    assert {f["rule"] for f in data["findings"]} == {"CAPACITY-GPU-HEALTH-UNKNOWN", "CAPACITY-WORKLOAD-ON-UNHEALTHY-NODE"}


def test_without_a_shape_there_is_no_fits_and_one_worker_fits_again_once_asked_smaller():
    _, out, _ = capacity("--snapshot", FIXTURE, "-o", "json")
    assert all("fits" not in fl for fl in json.loads(out)["flavors"])
    _, out, _ = capacity("--snapshot", FIXTURE, "-o", "json", "--gpus-per-worker", "7", "--workers", "2",
                         "--placement", "same-accelerator-domain")
    h100 = json.loads(out)["flavors"][1]["fits"]
    assert h100["count"] == 2 and [w["domain"] for w in h100["where"]] == ["rack-a", "rack-b"]


def test_a_bad_shape_is_exit_2_naming_it():
    code, out, err = capacity("--snapshot", FIXTURE, "--gpus-per-worker", "8", "--placement", "same-rack")
    assert code == 2 and out == "" and "same-rack" in err
    code, _, err = capacity("--snapshot", FIXTURE, "--gpus-per-worker", "0")
    assert code == 2 and "gpus per worker" in err
    code, _, err = capacity("--snapshot", FIXTURE, "--workers", "3")
    assert code == 2 and "--gpus-per-worker" in err


def test_the_table_reads_as_a_sentence_per_flavor():
    code, out, _ = capacity("--snapshot", FIXTURE, *SHAPE)
    assert code == 0
    assert "taugrid-gpu-h100: 37 free of 48 GPUs (11 requested)" in out
    assert "h100-c2" in out and "XIDError79" in out
    assert "fits: 2×8 GPUs same-accelerator-domain → 0 now; best domain has 15 free" in out
    assert "freeing train/probe-a-0 (1 GPU on h100-a1, rack-a) would add 1" in out


def test_the_config_files_capacity_section_reaches_the_rule(tmp_path, monkeypatch):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("capacity:\n  unknownConditions: []\n  drainConditions: [GPUThermalViolation]\n")
    monkeypatch.setenv("TAUDASH_CONFIG", str(cfg))
    _, out, _ = capacity("--snapshot", FIXTURE, "-o", "json")
    gb = json.loads(out)["flavors"][0]["gpus"]
    # The silent exporter no longer makes t3 unknown (4 more free); the throttled tray is now unhealthy (3 fewer).
    assert (gb["free"], gb["unknownHealth"], gb["unhealthy"], gb["degraded"]) == (8, 0, 4, 0)



def test_serve_takes_the_config_files_capacity_section_like_every_command(tmp_path, monkeypatch):
    from taudash.cli import main
    from taudash.serve.service import Serve

    seen = []

    async def started(self):  # the command as a user runs it, stopped where serving would begin
        seen.append(self.config.capacity.drain_conditions)
        return 0

    monkeypatch.setattr(Serve, "main", started)
    cfg = tmp_path / "config.yaml"
    cfg.write_text("capacity:\n  drainConditions: [GPUThermalViolation]\n")
    monkeypatch.setenv("TAUDASH_CONFIG", str(cfg))
    assert main(["serve", "--snapshot", FIXTURE]) == 0
    monkeypatch.delenv("TAUDASH_CONFIG")
    assert main(["serve", "--snapshot", FIXTURE]) == 0
    # without the file, the defaults: a thermal violation is taint-class (degraded), not drain-class
    assert seen[0] == ("GPUThermalViolation",) and "GPUThermalViolation" not in seen[1] and len(seen[1]) > 1

if __name__ == "__main__" and "--regen" in sys.argv:
    _, text, _ = capacity("--snapshot", FIXTURE, "-o", "json", *SHAPE)
    GOLDEN.write_text(text, encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(REPO)}")
