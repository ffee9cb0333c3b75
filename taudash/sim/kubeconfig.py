"""A kubeconfig for the simulated cluster, usable unchanged by kubectl and kubernetes-asyncio."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from taudash.engine.paths import write_atomic

DEFAULT_CONTEXT = "taudash-sim"


def user_context(context: str, user: str) -> str:
    """The context (and kubeconfig user entry) of one more operator of the simulated cluster."""
    return f"{context}-{user}"


def kubeconfig_dict(server: str, token: str, context: str = DEFAULT_CONTEXT, namespace: str | None = None,
                    ca_pem: bytes | None = None, users: dict[str, str] | None = None) -> dict:
    """`ca_pem` pins the server certificate for an https server (kubectl sends tokens only over TLS).
    `users` (name → token): one more context per operator, `<context>-<name>`, on the same cluster."""
    entries = [(context, token)] + [(user_context(context, u), t) for u, t in (users or {}).items()]
    contexts = []
    for name, _ in entries:
        ctx: dict = {"cluster": context, "user": name}
        if namespace:
            ctx["namespace"] = namespace
        contexts.append({"name": name, "context": ctx})
    cluster: dict = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": t}} for name, t in entries],
        "contexts": contexts,
        "current-context": context,
    }


def write_kubeconfig(path: str | Path, server: str, token: str, context: str = DEFAULT_CONTEXT,
                     namespace: str | None = None, ca_pem: bytes | None = None,
                     users: dict[str, str] | None = None) -> Path:
    """Write atomically with mode 0600 (it holds bearer tokens): a temp file in the same
    directory, created 0600 from the start, then renamed over the target."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(server, token, context, namespace, ca_pem, users), sort_keys=False)
    write_atomic(target, text, mode=0o600)
    return target
