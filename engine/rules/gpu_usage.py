"""What the utilisation rule reads besides the store: its settings and the latest reading of the GPUs' DCGM metrics
from Prometheus (engine/sources/prometheus.py takes the readings; docs/rules.md#utilisation).

A reading is one immutable value with the time Prometheus evaluated it: the rule judges it at the time it is given,
never reads a clock, and calls an old reading unknown rather than trusting it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"  # percent
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"  # ratio: preferred where the exporter has profiling on


@dataclass(frozen=True)
class GpuSample:
    """One allocated GPU as DCGM reports it: the Pod it is mapped to, how busy it is now, how long it has been idle."""

    namespace: str
    pod: str
    node: str  # the exporter's Hostname
    gpu: str  # its index on the node
    uuid: str
    util: float  # percent, now
    idle_seconds: float  # below the idle threshold for this long (0: busy now), as far as the lookback shows
    metric: str = GPU_UTIL
    container: str = ""


@dataclass(frozen=True)
class UtilisationReading:
    """What one query round found: the samples, or why none can be trusted (`known` False)."""

    at: datetime  # Prometheus's evaluation time
    known: bool
    reason: str = ""  # why not known
    samples: tuple[GpuSample, ...] = ()
    series: int = 0  # DCGM series seen, allocated or not
    lookback_seconds: float = 0.0  # the longest idle time a reading can show


class ReadingFeed(Protocol):
    """The latest reading, or None before the first one (the feed's I/O runs on its own cadence)."""

    url: str
    rounds: int  # query rounds so far: moves with every new reading

    def latest(self) -> UtilisationReading | None: ...


@dataclass(frozen=True)
class UtilisationConfig:
    """The `utilisation:` settings (with `capacity.idleMinutes`: how long below `idle_below_percent` is idle) and,
    when Prometheus is configured, the feed of its readings. No feed: utilisation is off."""

    feed: ReadingFeed | None = None
    idle_below_percent: float = 5.0
    interval_seconds: float = 60.0
    timeout_seconds: float = 10.0

    def revision(self) -> int:
        """Moves with every new reading: a view cached by the store's revision must be derived again."""
        return self.feed.rounds if self.feed is not None else 0

    @property
    def stale_after_seconds(self) -> float:
        """A reading older than this is not trusted: three query rounds missed."""
        return 3 * self.interval_seconds + self.timeout_seconds
