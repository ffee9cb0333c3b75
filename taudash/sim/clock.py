"""The simulated clock: epoch seconds that move only when the world steps.

Every timestamp a simulated controller writes (and, once the world owns the ObjectDB's clock,
every creationTimestamp) comes from here, so a run is a pure function of the seed, the snapshot
and the steps taken. `speed` is simulated seconds per wall-clock second; only the real-time
runner uses it.
"""

from __future__ import annotations

from datetime import UTC, datetime

# When nothing dates the seed (no capturedAt, no timestamps): a fixed, reproducible instant.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


def parse_rfc3339(value: str | None) -> float | None:
    """Epoch seconds of a Kubernetes timestamp, or None when absent or unreadable."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def rfc3339(epoch: float) -> str:
    """Seconds precision, like metav1.Time."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SimClock:
    def __init__(self, start: float = DEFAULT_START, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be greater than 0, got {speed}")
        self.start = float(start)
        self.speed = float(speed)
        self._now = float(start)

    def now(self) -> float:
        """Epoch seconds (a `() -> float` clock, as ObjectDB expects)."""
        return self._now

    @property
    def elapsed(self) -> float:
        return self._now - self.start

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("the simulated clock never goes back")
        self._now += seconds
        return self._now

    def datetime(self) -> datetime:
        return datetime.fromtimestamp(self._now, UTC)

    def stamp(self) -> str:
        return rfc3339(self._now)
