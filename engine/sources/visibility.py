"""Kueue's visibility API for one queue, on demand (KubeSource.pending_workloads delegates here), read
through the source's cluster client (client.py).

`pending_workloads(source, cq=… | lq=(ns, name))` asks
`/apis/visibility.kueue.x-k8s.io/{v1beta2,v1beta1}/…/pendingworkloads` for the queue on screen — never
all queues, never on a timer — and answers a `rules.queue_order.QueuePositions`:

- served: Kueue's items (source `visibility`, access Synced);
- not served (404 and no discovery document): queue_order's estimate over the store (`estimated`, Absent);
- 5xx, timeout, unreadable body: the same estimate (`estimated`, Error, the failure in the message);
- 401/403: `unknown` (Forbidden), items None — never an empty list;
- 404 with the group served: `unknown` (NotFound).

Work that grows with the queue stays off the event loop the dashboard shares: a large answer
(10k Workloads are megabytes) is decoded in a thread, and the estimate (it walks every Workload)
runs in a thread under the source's store lock.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import aiohttp
from orjson import loads

from ..rules.base import RuleContext
from ..rules.queue_order import (
    FROM_API,
    UNKNOWN,
    VISIBILITY_GROUP,
    VISIBILITY_VERSIONS,
    QueuePositions,
    clamp_limit,
    estimated_positions,
)
from ..store import AccessState, Store
from .client import ApiStatusError, ClusterTarget, why

THREAD_DECODE_BYTES = 256 * 1024  # smaller answers decode inline (a thread hop costs more than they do)


class LiveSource(Protocol):
    """What the visibility reader uses of the live source (kube.KubeSource): its client and timeout for
    the GETs, its store, lock and clock for the estimate."""

    target: ClusterTarget
    store: Store
    lock: Any
    clock: Callable[[], float]
    request_timeout: float


async def pending_workloads(source: LiveSource, *, cq: str | None = None, lq: tuple[str, str] | None = None,
                            limit: int = 1000, offset: int = 0) -> QueuePositions:
    """The pending Workloads of ClusterQueue `cq` or LocalQueue `lq` = (namespace, name) with Kueue's
    positions (see the module docstring for every outcome)."""
    if (cq is None) == (lq is None):
        raise ValueError("pending_workloads: give exactly one of cq and lq")
    if cq is not None:
        tail, what = f"clusterqueues/{cq}", f"ClusterQueue {cq}"
    else:
        assert lq is not None
        tail, what = f"namespaces/{lq[0]}/localqueues/{lq[1]}", f"LocalQueue {lq[0]}/{lq[1]}"
    query: list[tuple[str, Any]] = [("limit", clamp_limit(limit)), ("offset", max(0, offset))]

    def estimate_now(access: str, why: str) -> QueuePositions:
        lock = source.lock if source.lock is not None else contextlib.nullcontext()
        with lock:
            ctx = RuleContext(source.store, datetime.fromtimestamp(source.clock(), UTC))
            return estimated_positions(ctx, cq=cq, lq=lq, limit=limit, offset=offset, access=access, why=why)

    async def estimate(access: str, why: str) -> QueuePositions:
        return await asyncio.to_thread(estimate_now, access, why)

    for version in VISIBILITY_VERSIONS:
        base = f"/apis/{VISIBILITY_GROUP}/{version}"
        try:
            raw = await source.target.get_bytes(f"{base}/{tail}/pendingworkloads", query, source.request_timeout)
            body = await asyncio.to_thread(loads, raw) if len(raw) > THREAD_DECODE_BYTES else loads(raw)
        except ApiStatusError as exc:
            if exc.status in (401, 403):
                return QueuePositions(cq, lq, UNKNOWN, AccessState.FORBIDDEN.value, None,
                                      f"visibility API forbidden ({exc})")
            if exc.status != 404:
                return await estimate(AccessState.ERROR.value, f"visibility API failed: {exc}")
            try:  # 404: this version is not served, or the queue is unknown; discovery tells which
                await source.target.get_bytes(base, None, source.request_timeout)
            except ApiStatusError as d:
                if d.status == 404:
                    continue
                return await estimate(AccessState.ERROR.value, f"visibility API discovery failed: {d}")
            except (aiohttp.ClientError, TimeoutError, OSError) as d:
                return await estimate(AccessState.ERROR.value, f"visibility API discovery failed: {why(d)}")
            return QueuePositions(cq, lq, UNKNOWN, "NotFound", None, f"{what} not found by the visibility API")
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            return await estimate(AccessState.ERROR.value, f"visibility API failed: {why(exc)}")
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            return await estimate(AccessState.ERROR.value, "visibility API answered no items list")
        return QueuePositions(cq, lq, FROM_API, AccessState.SYNCED.value, tuple(items))
    return await estimate(AccessState.ABSENT.value, "visibility API not served")


__all__ = ["pending_workloads"]
