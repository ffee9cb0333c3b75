"""A kubeconfig for the simulated cluster, usable unchanged by kubectl and kubernetes-asyncio."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from taudash.engine.paths import write_atomic

DEFAULT_CONTEXT = "taudash-sim"


def kubeconfig_dict(server: str, token: str, context: str = DEFAULT_CONTEXT, namespace: str | None = None,
                    ca_pem: bytes | None = None) -> dict:
    """`ca_pem` pins the server certificate for an https server (kubectl sends tokens only over TLS)."""
    ctx: dict = {"cluster": context, "user": context}
    if namespace:
        ctx["namespace"] = namespace
    cluster: dict = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [{"name": context, "context": ctx}],
        "current-context": context,
    }


def write_kubeconfig(path: str | Path, server: str, token: str, context: str = DEFAULT_CONTEXT,
                     namespace: str | None = None, ca_pem: bytes | None = None) -> Path:
    """Write atomically with mode 0600 (it holds a bearer token): a temp file in the same
    directory, created 0600 from the start, then renamed over the target."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(server, token, context, namespace, ca_pem), sort_keys=False)
    write_atomic(target, text, mode=0o600)
    return target
