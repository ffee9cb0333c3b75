"""The kubeconfig's contexts as the dashboard's context list shows them, and whether each one answers.

`contexts()` reads the kubeconfig only (kubectl's merge of a colon-separated list: kubeconfig.py); nothing
is sent. `probe()` connects the way the dashboard would and sends one GET /version: any 2xx is reachable,
anything else — a kubeconfig problem, a refused or hung connection, TLS, an HTTP error — is unreachable with
its one-line reason. A probe never raises.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import aiohttp

from .client import ApiStatusError, ConfigError, connect, kubeconfig_path, why
from .kubeconfig import read

CHECKING, REACHABLE, UNREACHABLE = "checking", "reachable", "unreachable"
PROBE_TIMEOUT = 5.0  # seconds for the connection and the answer: a hung server reads as unreachable


@dataclass(frozen=True)
class ContextEntry:
    """One context of the kubeconfig: what it names (its cluster's server, its user and namespace)."""

    name: str
    cluster: str
    server: str  # "" when its cluster is missing or has none (the probe then says why)
    user: str
    namespace: str
    current: bool  # the kubeconfig's current-context


@dataclass(frozen=True)
class Reach:
    state: str  # CHECKING | REACHABLE | UNREACHABLE
    error: str = ""  # why unreachable, in one line
    seconds: float | None = None  # how long the answer took

    @staticmethod
    def checking() -> Reach:
        return Reach(CHECKING)


def contexts(kubeconfig: str | None) -> list[ContextEntry]:
    """Every context of the kubeconfig (`None`: $KUBECONFIG, else ~/.kube/config), in file order;
    ConfigError when the file cannot be read as a kubeconfig."""
    kc = read(kubeconfig_path(kubeconfig))
    out = []
    for name, (ctx, _) in kc.contexts.items():
        cluster = ctx.get("cluster") if isinstance(ctx.get("cluster"), str) else ""
        body = kc.clusters.get(cluster or "", ({}, None))[0]
        server = body.get("server") if isinstance(body.get("server"), str) else ""
        user, ns = ctx.get("user"), ctx.get("namespace")
        out.append(ContextEntry(name, cluster or "", server or "", user if isinstance(user, str) else "",
                                ns if isinstance(ns, str) else "", name == kc.current))
    return out


async def probe(context: str, kubeconfig: str | None, within: float = PROBE_TIMEOUT) -> Reach:
    """Whether `context`'s API server answers GET /version within `within` s, on a connection of its own."""
    started = time.monotonic()
    try:
        target = await connect(context, kubeconfig)
    except ConfigError as exc:
        return Reach(UNREACHABLE, str(exc))
    except Exception as exc:  # noqa: BLE001 - a probe says why, it never raises into the screen
        return Reach(UNREACHABLE, why(exc))
    try:
        async with asyncio.timeout(within):
            await target.get_bytes("/version", None, within)
    except TimeoutError:
        return Reach(UNREACHABLE, f"no answer within {within:g} s from {target.server}")
    except ApiStatusError as exc:
        return Reach(UNREACHABLE, f"{target.server} answered {exc}")
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        return Reach(UNREACHABLE, f"{target.server}: {why(exc)}")
    finally:
        await target.close()
    return Reach(REACHABLE, seconds=time.monotonic() - started)
