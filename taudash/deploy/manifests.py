"""The manifests that run `taudash serve` in a cluster under a least-privilege ServiceAccount (docs/deploy.md).

`build(options)` answers the documents in apply order; `render()` prints them as one YAML stream
(`taudash deploy manifests`). The ClusterRole is derived from engine/sources/reads.py — every kind of
the registry plus the reads made on demand — so a new kind cannot be read without being granted, and
nothing but get/list/watch is ever granted. The Kustomize base under deploy/base/ is written from the
same builder: `python -m taudash.deploy.manifests --regen` rewrites it, and a test fails while it is
stale.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from ..engine.sources.reads import ApiRead, all_reads

NAME = "taudash"
DEFAULT_NAMESPACE = "taudash"
DEFAULT_IMAGE = f"taudash:{__version__}"
METRICS_PORT = 9090
WEB_PORT = 8080
STATE_DIR = "/var/lib/taudash"  # history (SQLite) lives on an emptyDir: the root filesystem is read-only
WEB_TOKEN_SECRET = "taudash-web"  # created by the operator (docs/deploy.md); the kubelet reads it, taudash never
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "serve"}
REPO_BASE = Path(__file__).resolve().parents[2] / "deploy"


@dataclass(frozen=True)
class Options:
    namespace: str = DEFAULT_NAMESPACE
    web: bool = False
    image: str = DEFAULT_IMAGE


Doc = dict[str, Any]


def _meta(name: str, namespace: str | None = None, **extra: Any) -> Doc:
    meta: Doc = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = dict(LABELS)
    meta.update(extra)
    return meta


def role_rules(reads: Iterable[ApiRead] | None = None) -> list[Doc]:
    """The ClusterRole's rules: one per API group and verb set, resources sorted (a stable diff)."""
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for read in all_reads() if reads is None else reads:
        grouped.setdefault((read.group, read.verbs), []).append(read.resource)
    return [{"apiGroups": [group], "resources": sorted(set(resources)), "verbs": list(verbs)}
            for (group, verbs), resources in sorted(grouped.items())]


def namespace(o: Options) -> Doc:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(o.namespace)}


def service_account(o: Options) -> Doc:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, o.namespace)}


def cluster_role(o: Options) -> Doc:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": _meta(f"{NAME}-read", annotations={
                "taudash.io/grants": "get, list and watch on what taudash reads (engine/sources/reads.py); "
                                     "never Secrets, never a write"}),
            "rules": role_rules()}


def cluster_role_binding(o: Options) -> Doc:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": _meta(f"{NAME}-read-{o.namespace}" if o.namespace != DEFAULT_NAMESPACE else f"{NAME}-read"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{NAME}-read"},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": o.namespace}]}


def _container(o: Options) -> Doc:
    args = ["serve", "--metrics", f"0.0.0.0:{METRICS_PORT}"]
    ports: list[Doc] = [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}]
    env: list[Doc] = [{"name": "XDG_STATE_HOME", "value": STATE_DIR}, {"name": "HOME", "value": "/tmp"}]
    if o.web:
        args += ["--web", f"0.0.0.0:{WEB_PORT}"]
        ports.append({"name": "web", "containerPort": WEB_PORT, "protocol": "TCP"})
        # Off loopback the wallboard needs a token; it comes from a Secret the kubelet reads into the
        # environment (taudash's ServiceAccount reads no Secret).
        env.append({"name": "TAUDASH_WEB_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": WEB_TOKEN_SECRET, "key": "token"}}})
    else:
        # The agent's /api/v1/status (a fleet reads it) is answered only with a token off loopback: the same
        # Secret when the operator creates it (optional: without it, metrics only; the status answers 403).
        env.append({"name": "TAUDASH_WEB_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": WEB_TOKEN_SECRET, "key": "token", "optional": True}}})

    def probe(path: str, period: int) -> Doc:
        return {"httpGet": {"path": path, "port": "metrics"}, "periodSeconds": period, "timeoutSeconds": 5,
                "failureThreshold": 3}

    return {
        "name": NAME, "image": o.image, "imagePullPolicy": "IfNotPresent", "args": args, "ports": ports, "env": env,
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
        "livenessProbe": probe("/healthz", 20),
        # Ready once the first sync is done: before it, /metrics describes an empty cluster.
        "readinessProbe": probe("/readyz", 5),
        "startupProbe": {**probe("/healthz", 5), "failureThreshold": 60},
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "state", "mountPath": STATE_DIR}, {"name": "tmp", "mountPath": "/tmp"}],
    }


def deployment(o: Options) -> Doc:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(NAME, o.namespace),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(LABELS)},
            "template": {
                "metadata": {"labels": dict(LABELS), "annotations": {
                    # Prometheus' kubernetes_sd pod role reads these (docs/deploy.md).
                    "prometheus.io/scrape": "true", "prometheus.io/port": str(METRICS_PORT),
                    "prometheus.io/path": "/metrics"}},
                "spec": {"serviceAccountName": NAME, "automountServiceAccountToken": True,
                         "securityContext": {"runAsNonRoot": True, "fsGroup": 10001},
                         "containers": [_container(o)],
                         "volumes": [{"name": "state", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]},
            },
        },
    }


def service(o: Options) -> Doc:
    ports: list[Doc] = [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"}]
    if o.web:
        ports.append({"name": "web", "port": WEB_PORT, "targetPort": "web", "protocol": "TCP"})
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": _meta(NAME, o.namespace, annotations={
                "prometheus.io/scrape": "true", "prometheus.io/port": str(METRICS_PORT)}),
            "spec": {"selector": dict(LABELS), "ports": ports}}


def service_monitor(o: Options) -> Doc:
    """For the Prometheus Operator (optional: its CRD must be installed; not part of `build`)."""
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": _meta(NAME, o.namespace),
            "spec": {"selector": {"matchLabels": dict(LABELS)}, "namespaceSelector": {"matchNames": [o.namespace]},
                     "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}]}}


PARTS = (("namespace", namespace), ("serviceaccount", service_account), ("clusterrole", cluster_role),
         ("clusterrolebinding", cluster_role_binding), ("deployment", deployment), ("service", service))


def build(o: Options | None = None) -> list[Doc]:
    o = o or Options()
    return [make(o) for _, make in PARTS]


def dump(docs: Iterable[Doc]) -> str:
    return "---\n".join(yaml.safe_dump(d, sort_keys=False, default_flow_style=False) for d in docs)


def render(o: Options | None = None, *, service_monitor_doc: bool = False) -> str:
    docs = build(o)
    if service_monitor_doc:
        docs.append(service_monitor(o or Options()))
    return dump(docs)


HEADER = "# Generated by `python -m taudash.deploy.manifests --regen` from taudash/deploy/manifests.py: do not edit.\n"


def base_files() -> dict[str, str]:
    """deploy/'s files, relative path → text: the Kustomize base and the optional ServiceMonitor."""
    o = Options()
    files = {f"base/{part}.yaml": HEADER + dump([make(o)]) for part, make in PARTS}
    files["base/kustomization.yaml"] = HEADER + yaml.safe_dump(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
         "resources": [f"{part}.yaml" for part, _ in PARTS]}, sort_keys=False)
    files["optional/servicemonitor.yaml"] = HEADER + dump([service_monitor(o)])
    return files


def regen(root: Path = REPO_BASE) -> list[Path]:
    written = []
    for rel, text in base_files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m taudash.deploy.manifests")
    p.add_argument("--regen", action="store_true", help="rewrite deploy/ from the builder")
    args = p.parse_args(argv)
    if args.regen:
        for path in regen():
            print(f"wrote {path}")
        return 0
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
