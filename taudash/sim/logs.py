"""Container logs of the simulated Pods (`GET /api/v1/namespaces/NS/pods/NAME/log`), as the kubelet serves them
through the API server.

A container writes one line every `every` seconds from when it started until it ended (or now): a banner,
then training steps whose numbers come from a hash of the Pod, container and line number, so the same Pod
gives the same lines in every run; a finished container's last line says how it exited. The kubelet keeps
the newest KEEP lines (log rotation). Errors are the API server's own words: a Pod with no node is
"does not have a host assigned", a container that never ran "is waiting to start: <reason>" (both 400), a
container that never restarted has no "previous terminated container" (400), a Pod with several containers
needs `container=` (400).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from taudash.sim.clock import parse_rfc3339
from taudash.sim.errors import BadRequest

Obj = dict[str, Any]
EVERY = 5.0  # seconds between two lines of one container
KEEP = 10_000  # lines the kubelet keeps per container (older ones rotated away)
BANNER = 2  # lines before the first step


@dataclass(frozen=True)
class LogSource:
    """One container's log: where its lines start and, once it ended, where they stop."""

    pod: str
    container: str
    node: str
    started: float
    finished: float | None  # None: still running
    exit_code: int | None
    every: float = EVERY

    def count(self, now: float) -> int:
        """How many lines the container has written by `now` (the exit line included once it ended)."""
        end = now if self.finished is None else min(now, self.finished)
        if end < self.started:
            return 0
        n = int((end - self.started) // self.every) + 1
        return n + (1 if self.finished is not None and now >= self.finished else 0)

    def at(self, i: int) -> tuple[float, str]:
        """Line i (0-based): when it was written and its text."""
        steps = int(((self.finished or 0) - self.started) // self.every) + 1 if self.finished is not None else None
        if steps is not None and i >= steps:
            return self.finished or self.started, f"process exited with code {self.exit_code or 0}"
        when = self.started + i * self.every
        if i == 0:
            return when, f"starting {self.container} of {self.pod} on {self.node or 'its node'}"
        if i == 1:
            return when, "found 8 GPUs, NCCL initialised, world size 1"
        h = hashlib.sha1(f"{self.pod}\x00{self.container}\x00{i}".encode()).digest()
        step = i - BANNER + 1
        loss = 4.0 / (1 + step / 200) + h[0] / 2550
        return when, f"step {step} loss {loss:.4f} gpu_util {80 + h[1] % 20}% tokens/s {9000 + h[2] * 8}"

    def lines(self, start: int, stop: int, *, timestamps: bool) -> list[str]:
        out = []
        for i in range(start, stop):
            when, text = self.at(i)
            out.append(f"{stamp(when)} {text}" if timestamps else text)
        return out


def stamp(epoch: float) -> str:
    """RFC 3339 with nanoseconds, as the kubelet prefixes a line with timestamps=true."""
    whole = datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{int(round((epoch % 1) * 1e9)):09d}Z"


def log_source(pod: Obj, container: str | None, previous: bool, every: float = EVERY) -> LogSource:
    """The log a request for `pod` names, or BadRequest in the API server's words."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    name = meta.get("name", "")
    names = [c.get("name", "") for c in spec.get("containers") or ()]
    if not container:
        if len(names) != 1:
            raise BadRequest(f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]")
        container = names[0]
    elif container not in names:
        raise BadRequest(f"container {container} is not valid for pod {name}")
    if not spec.get("nodeName"):
        raise BadRequest(f"pod {name} does not have a host assigned")
    cs: Obj = next((c for c in status.get("containerStatuses") or () if c.get("name") == container), {})
    if previous:
        # The simulated kubelet never restarts a container: there is no terminated one before this.
        raise BadRequest(f'previous terminated container "{container}" in pod "{name}" not found')
    state = cs.get("state") or {}
    running, ended = state.get("running"), state.get("terminated")
    if not running and not ended:
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        raise BadRequest(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    info = running or ended or {}
    started = parse_rfc3339(info.get("startedAt")) or parse_rfc3339(status.get("startTime")) or 0.0
    finished = parse_rfc3339(ended.get("finishedAt")) if ended else None
    return LogSource(name, container, spec.get("nodeName", ""), started,
                     None if finished is None else max(finished, started),
                     int(ended.get("exitCode") or 0) if ended else None, every)


def window(src: LogSource, now: float, *, tail: int | None, since: float | None) -> tuple[int, int]:
    """The line numbers a request shows: the kept lines, from `since` seconds ago, the last `tail` of them."""
    end = src.count(now)
    start = max(0, end - KEEP)
    if since is not None:
        first = int(max(0.0, now - since - src.started) // src.every)
        start = max(start, min(first, end))
    if tail is not None:
        start = max(start, end - max(0, tail))
    return start, end
