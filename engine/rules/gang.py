"""Gang slots: how many gangs of one shape fit at once in free GPUs, and where (docs/capacity.md).

A worker needs `gpus_per_worker` free GPUs on one host. `same-host` puts every worker on one host;
`same-<level>` keeps every worker inside one domain of that level (site, network-domain, accelerator-domain);
`unconstrained` places workers anywhere in the flavor. Gangs do not share a worker slot, so a host with room
for k workers gives k slots, and a domain holds ⌊slots / workers⌋ gangs. The older placements map as TauGrid's
CLI renders them: `independent` → unconstrained, `single-node-nvlink` → same-host, `multi-node-nccl` →
same-network-domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

UNCONSTRAINED = "unconstrained"
SAME_HOST = "same-host"
# placement -> the domain level it keeps a gang in (None: the whole flavor; "host": one node)
PLACEMENT_LEVELS: dict[str, str | None] = {
    UNCONSTRAINED: None,
    SAME_HOST: "host",
    "same-accelerator-domain": "accelerator-domain",
    "same-network-domain": "network-domain",
    "same-site": "site",
}
OLDER_PLACEMENTS = {"independent": UNCONSTRAINED, "single-node-nvlink": SAME_HOST,
                    "multi-node-nccl": "same-network-domain"}
PLACEMENTS = (*PLACEMENT_LEVELS, *OLDER_PLACEMENTS)


class ShapeError(ValueError):
    """A shape that names no placement taudash knows, or sizes below one."""


@dataclass(frozen=True)
class Shape:
    gpus_per_worker: int
    workers: int = 1
    placement: str = UNCONSTRAINED  # canonical (the older spellings mapped)

    @property
    def level(self) -> str | None:
        return PLACEMENT_LEVELS[self.placement]

    @property
    def gpus(self) -> int:
        return self.gpus_per_worker * self.workers


def shape(gpus_per_worker: int, workers: int = 1, placement: str = "") -> Shape:
    """A checked shape; "" means unconstrained. Raises ShapeError naming what is wrong."""
    name = OLDER_PLACEMENTS.get(placement, placement or UNCONSTRAINED)
    if name not in PLACEMENT_LEVELS:
        raise ShapeError(f"unknown placement {placement!r} (one of {', '.join(PLACEMENTS)})")
    if gpus_per_worker < 1:
        raise ShapeError(f"gpus per worker must be at least 1 (got {gpus_per_worker})")
    if workers < 1:
        raise ShapeError(f"workers must be at least 1 (got {workers})")
    return Shape(gpus_per_worker, workers, name)


@dataclass(frozen=True)
class HostRoom:
    """A placeable node's free GPUs and its domains (level -> value; a missing label: not in any domain)."""

    name: str
    free: int
    domains: Mapping[str, str]


@dataclass(frozen=True)
class Where:
    level: str  # "flavor", "host", or a domain level
    domain: str
    count: int  # gangs that fit there at once
    free: int  # free GPUs there


def domain_of(host: HostRoom, level: str | None) -> str | None:
    if level is None:
        return ""
    if level == "host":
        return host.name
    return host.domains.get(level) or None


def slots(hosts: Iterable[HostRoom], sh: Shape) -> tuple[int, list[Where]]:
    """(gangs that fit at once, where — domains with at least one, most first, then by name)."""
    level = sh.level
    workers: dict[str, int] = {}
    free: dict[str, int] = {}
    for h in hosts:
        d = domain_of(h, level)
        if d is None:
            continue
        workers[d] = workers.get(d, 0) + h.free // sh.gpus_per_worker
        free[d] = free.get(d, 0) + h.free
    where = [Where(level or "flavor", d, n // sh.workers, free[d]) for d, n in workers.items() if n >= sh.workers]
    where.sort(key=lambda w: (-w.count, w.domain))
    return sum(w.count for w in where), where


def slots_gained(host: HostRoom, gpus: int, domain_workers: int, sh: Shape) -> int:
    """How many more gangs fit in `host`'s domain once `gpus` more are free on it (the domain held
    `domain_workers` worker slots)."""
    before = host.free // sh.gpus_per_worker
    after = (host.free + gpus) // sh.gpus_per_worker
    total = domain_workers + after - before
    return total // sh.workers - domain_workers // sh.workers


def worker_slots(hosts: Iterable[HostRoom], sh: Shape) -> dict[str, int]:
    """Worker slots per domain of the shape's level."""
    out: dict[str, int] = {}
    for h in hosts:
        d = domain_of(h, sh.level)
        if d is not None:
            out[d] = out.get(d, 0) + h.free // sh.gpus_per_worker
    return out


__all__ = ["PLACEMENTS", "HostRoom", "Shape", "ShapeError", "Where", "shape", "slots", "slots_gained",
           "worker_slots"]
