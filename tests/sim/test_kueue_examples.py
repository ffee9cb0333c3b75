"""Kueue's own examples (site/static/examples, kueueviz examples: ../shared/kueue/examples) load
into taudash as a plain Kueue cluster: no load issue, no critical finding that TauGrid's absence
causes, TauGrid said to be absent once.

The examples are manifests for `kubectl create`: the snapshot built from them here is what the API
server would store — a namespaced object without a namespace lands in `default`, a `generateName`
gets a suffix. Nothing else is added."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import yaml
from tools import kueue_data

from taudash.engine.incremental import derive
from taudash.engine.model.kinds import lookup
from taudash.engine.rules.base import RuleConfig
from taudash.engine.sources.snapshot import load_snapshot

KUEUE = "kueue.x-k8s.io"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _as_created(doc: dict, n: int) -> dict:
    """What the API server stores for `kubectl create -f`: a namespace and a name."""
    obj = dict(doc)
    meta = dict(obj.get("metadata") or {})
    info = lookup(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if info is not None and info.namespaced and not meta.get("namespace"):
        meta["namespace"] = "default"
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = f"{meta['generateName']}x{n:04d}"
    obj["metadata"] = meta
    return obj


def manifests(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind")]


def kueue_files() -> list[Path]:
    return sorted(p for p in kueue_data.examples().glob("*.yaml")
                  if any(str(d.get("apiVersion", "")).startswith(KUEUE + "/") for d in manifests(p)))


def write_snapshot(tmp_path: Path, files: list[Path], name: str) -> Path:
    docs, n = [], 0
    for p in files:
        for d in manifests(p):
            n += 1
            docs.append(_as_created(d, n))
    out = tmp_path / name
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return out


def _load_and_check(path: Path, label: str):
    result = load_snapshot(path)
    assert result.issues == [], f"{label}: {[str(i) for i in result.issues]}"
    assert result.objects > 0
    view = derive(result.store, NOW, RuleConfig(), None)
    absent = [f for f in view.findings if f.rule == "TAUGRID-ABSENT"]
    assert len(absent) == 1 and absent[0].severity.value == "info", label
    assert not view.profiles.applicable
    for f in view.findings:
        text = f"{f.rule} {f.message}"
        # Nothing TauGrid-only may fail on a cluster without TauGrid.
        taugrid_only = "TauCluster" in text or "TauGrid" in text or f.rule.startswith(("PROFILE", "WS-", "POOL"))
        assert not (f.severity.value in ("critical", "warning") and taugrid_only), \
            f"{label}: {text}"
        if f.severity.value == "critical":
            # The only critical the raw manifests may raise: MultiKueue wired but never reconciled
            # (no Active conditions in a manifest) — a Kueue fact, judged on M1/M3 alone.
            assert f.rule == "MK-NOT-READY", f"{label}: {text}"
            assert "M2" not in f.message and "M4" not in f.message and "M5" not in f.message, text
    return result, view


def test_examples_are_present():
    files = kueue_files()
    assert len(files) >= 20, [p.name for p in files]


def test_each_example_with_kueue_objects_loads_alone(tmp_path):
    files = kueue_files()
    for i, p in enumerate(files):
        _load_and_check(write_snapshot(tmp_path, [p], f"{i}.yaml"), p.name)


def test_all_examples_load_together(tmp_path):
    files = sorted(kueue_data.examples().glob("*.yaml"))
    result, view = _load_and_check(write_snapshot(tmp_path, files, "all.yaml"), "all examples")
    # The Kueue kinds taudash reads are all there and show in the view.
    for kind in ("ClusterQueue", "LocalQueue", "Cohort", "ResourceFlavor", "AdmissionCheck", "Topology",
                 "MultiKueueConfig", "MultiKueueCluster", "WorkloadPriorityClass"):
        assert result.store.list(kind), kind
    assert {q.name for q in view.cluster_queues} >= {"cluster-queue"}


def test_all_examples_with_the_taugrid_apis_not_served(tmp_path):
    """A live plain Kueue cluster: the TauGrid APIs are Absent (not merely empty)."""
    files = sorted(kueue_data.examples().glob("*.yaml"))
    objs = list(yaml.safe_load_all(write_snapshot(tmp_path, files, "objs.yaml").read_text()))
    env = {"apiVersion": "taudash/v1", "kind": "ClusterSnapshot", "metadata": {"context": "kueue-examples"},
           "access": [{"resource": r, "state": "Absent"}
                      for r in ("clusters.tau.azure.com", "teams.tau.azure.com", "workspaces.tau.azure.com")],
           "objects": objs}
    path = tmp_path / "absent.yaml"
    path.write_text(yaml.safe_dump(env, sort_keys=False))
    _, view = _load_and_check(path, "TauGrid APIs absent")
    assert view.pool.mode == "None" and not [f for f in view.findings if f.rule.startswith("POOL")]
    assert "not served" in next(f.message for f in view.findings if f.rule == "TAUGRID-ABSENT")


def test_healthy_multikueue_setup_without_taugrid_is_ready(tmp_path):
    """The MultiKueue example as Kueue reconciles it (the check and the worker Active) is Ready —
    no TauCluster needed; M2/M4/M5 are not applicable rather than failing."""
    docs = [_as_created(d, i)
            for i, d in enumerate(manifests(kueue_data.examples() / "multikueue__multikueue-setup.yaml"))]
    active = {"type": "Active", "status": "True", "reason": "Active", "message": "ok",
              "lastTransitionTime": "2026-12-01T11:00:00Z"}
    for d in docs:
        if d["kind"] in ("AdmissionCheck", "MultiKueueCluster"):
            d["status"] = {"conditions": [active]}
    path = tmp_path / "mk.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    _, view = _load_and_check(path, "healthy multikueue")
    mk = view.multikueue
    assert mk.state == "Ready", mk.checks
    assert {c.id: (c.ok, c.applicable) for c in mk.checks} == {
        "M1": (True, True), "M2": (True, False), "M3": (True, True), "M4": (True, False), "M5": (True, False)}
    assert [f.rule for f in view.findings if f.severity.value != "info"] == []

    # Negative: the same setup with the worker not Active is not Ready, for a Kueue reason (M3).
    for d in docs:
        if d["kind"] == "MultiKueueCluster":
            d["status"] = {"conditions": [{**active, "status": "False", "reason": "ClientConnectionFailed"}]}
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    view = derive(load_snapshot(path).store, NOW, RuleConfig(), None)
    assert view.multikueue.state == "NotReady"
    crit = [f for f in view.findings if f.severity.value == "critical"]
    assert [f.rule for f in crit] == ["MK-NOT-READY"] and "M3" in crit[0].message and "M2" not in crit[0].message


def test_taugrid_present_but_unreadable_still_fails_closed(tmp_path):
    """Forbidden is not absent: with the TauCluster API unreadable the TauGrid checks stay judged."""
    from taudash.engine.store import AccessState

    result = load_snapshot(write_snapshot(tmp_path, [kueue_data.examples() / "multikueue__multikueue-setup.yaml"],
                                          "f.yaml"))
    result.store.set_access("TauCluster", AccessState.FORBIDDEN)
    view = derive(result.store, NOW, RuleConfig(), None)
    assert not [f for f in view.findings if f.rule == "TAUGRID-ABSENT"]
    assert view.profiles.applicable
    assert any(c.id == "M2" and not c.ok and c.applicable for c in view.multikueue.checks)
