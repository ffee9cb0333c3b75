"""`taudash deploy manifests`: the ClusterRole grants exactly what the engine reads and nothing else, the
Deployment runs serve least-privileged, and deploy/ (the Kustomize base) is what the builder writes."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from taudash.deploy import manifests as mf
from taudash.engine.model import kinds
from taudash.engine.sources.reads import ON_DEMAND, ApiRead, all_reads


def granted(role: dict) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def doc(kind: str, o: mf.Options | None = None) -> dict:
    return next(d for d in mf.build(o) if d["kind"] == kind)


def missing_rules(role: dict, wanted: tuple[ApiRead, ...]) -> list[str]:
    have = granted(role)
    return [f"apiGroups: [{r.group!r}], resources: [{r.resource}], verbs: {list(r.verbs)}"
            for r in wanted if not all((r.group, r.resource, v) in have for v in r.verbs)]


def test_the_cluster_role_grants_get_list_watch_on_every_kind_the_engine_reads():
    role = doc("ClusterRole")
    wanted = tuple(ApiRead(k.group, k.plural) for k in kinds.KINDS)
    assert missing_rules(role, wanted) == []
    assert missing_rules(role, ON_DEMAND) == []  # Events and Kueue's pending workloads


def test_a_kind_added_to_the_registry_without_a_rule_is_named(monkeypatch):
    extra = replace(kinds.BY_KIND["Job"], kind="CronJob", plural="cronjobs")
    role = doc("ClusterRole")  # built before the kind exists: what a stale role looks like
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, extra))
    from taudash.engine.sources import reads

    assert missing_rules(role, reads.kind_reads()) == ["apiGroups: ['batch'], resources: [cronjobs], "
                                                       "verbs: ['get', 'list', 'watch']"]
    assert missing_rules(doc("ClusterRole"), reads.kind_reads()) == []  # derived: the rebuilt role has it


def test_the_role_grants_nothing_beyond_the_reads_no_write_no_secret_no_wildcard():
    role = doc("ClusterRole")
    wanted = {(r.group, r.resource, v) for r in all_reads() for v in r.verbs}
    assert granted(role) == wanted
    assert {v for _, _, v in granted(role)} == {"get", "list", "watch"}
    assert not any(r == "secrets" or "*" in (g, r, v) for g, r, v in granted(role))
    assert all("resourceNames" not in rule and "nonResourceURLs" not in rule for rule in role["rules"])


def test_secrets_in_the_reads_are_refused(monkeypatch):
    from taudash.engine.sources import reads

    monkeypatch.setattr(reads, "ON_DEMAND", (*reads.ON_DEMAND, ApiRead("", "secrets")))
    with pytest.raises(AssertionError, match="never reads Secrets"):
        reads.all_reads()


def test_the_binding_gives_the_role_to_the_service_account_of_the_namespace():
    o = mf.Options(namespace="ops")
    binding, sa = doc("ClusterRoleBinding", o), doc("ServiceAccount", o)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": doc("ClusterRole", o)["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": "ops"}]
    assert {d["metadata"].get("namespace") for d in mf.build(o) if d["kind"] not in
            ("Namespace", "ClusterRole", "ClusterRoleBinding")} == {"ops"}
    assert doc("Namespace", o)["metadata"]["name"] == "ops"


def test_the_deployment_runs_serve_non_root_read_only_with_limits_and_probes_on_the_metrics_port():
    d = doc("Deployment", mf.Options(image="example/taudash:9"))
    pod = d["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["image"] == "example/taudash:9"
    assert c["args"][:3] == ["serve", "--metrics", f"0.0.0.0:{mf.METRICS_PORT}"] and "--web" not in c["args"]
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] and sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"]
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert set(c["resources"]) == {"requests", "limits"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert {p["name"] for p in c["ports"]} == {"metrics"}
    assert pod["serviceAccountName"] == doc("ServiceAccount")["metadata"]["name"]
    # the only writable places are volumes (history in the state folder)
    assert {m["mountPath"] for m in c["volumeMounts"]} == {mf.STATE_DIR, "/tmp"}
    assert {"name": "XDG_STATE_HOME", "value": mf.STATE_DIR} in c["env"]
    assert d["spec"]["template"]["metadata"]["annotations"]["prometheus.io/scrape"] == "true"


def test_web_adds_the_wallboard_its_port_and_a_token_from_a_secret_the_kubelet_reads():
    o = mf.Options(web=True)
    (c,) = doc("Deployment", o)["spec"]["template"]["spec"]["containers"]
    assert c["args"][-2:] == ["--web", f"0.0.0.0:{mf.WEB_PORT}"]
    token = next(e for e in c["env"] if e["name"] == "TAUDASH_WEB_TOKEN")
    assert token["valueFrom"]["secretKeyRef"]["name"] == mf.WEB_TOKEN_SECRET
    assert {p["name"] for p in doc("Service", o)["spec"]["ports"]} == {"metrics", "web"}
    assert granted(doc("ClusterRole", o)) == granted(doc("ClusterRole"))  # the role reads no Secret for it


def test_the_rendered_stream_parses_back_to_the_documents():
    assert list(yaml.safe_load_all(mf.render())) == mf.build()
    with_sm = list(yaml.safe_load_all(mf.render(service_monitor_doc=True)))
    assert with_sm[-1]["kind"] == "ServiceMonitor" and with_sm[:-1] == mf.build()


def test_deploy_base_is_what_the_builder_writes():
    stale = [rel for rel, text in mf.base_files().items()
             if not (mf.REPO_BASE / rel).exists() or (mf.REPO_BASE / rel).read_text() != text]
    assert stale == [], f"deploy/ is stale ({stale}): run `python -m taudash.deploy.manifests --regen`"
    listed = yaml.safe_load((mf.REPO_BASE / "base/kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in (mf.REPO_BASE / "base").glob("*.yaml")
                                    if p.name != "kustomization.yaml")


def test_regen_writes_only_what_changed(tmp_path):
    assert len(mf.regen(tmp_path)) == len(mf.base_files())
    (tmp_path / "base/service.yaml").write_text("edited\n")
    assert mf.regen(tmp_path) == [tmp_path / "base/service.yaml"]
    assert mf.regen(tmp_path) == []
