"""Move a snapshot's timestamps so that it reads as captured at another instant (the simulator's real
clock: the capture time becomes "now" at start, so ages read as kubectl shows them).

Every string that is a whole RFC3339 timestamp is moved by the same amount — creation and deletion
times, condition transitions, heartbeats, Lease renewals, Events, requeue times, annotations that hold a
time — so every interval between two of them stays what it was. The text keeps its form: `Z` or the
offset it had, and as many fractional digits (metav1.MicroTime has six).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})")


def shift_stamp(text: str, seconds: float) -> str:
    """`text` moved by `seconds` when it is a whole RFC3339 timestamp; any other string unchanged."""
    m = _STAMP.fullmatch(text)
    if m is None:
        return text
    date, clock, frac, zone = m.groups()
    try:
        when = datetime.fromisoformat(f"{date}T{clock}{(frac or '')[:7]}{'+00:00' if zone == 'Z' else zone}")
    except ValueError:
        return text
    moved = when + timedelta(seconds=seconds)
    if zone == "Z":
        moved = moved.astimezone(UTC)
    out = moved.strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        digits = len(frac) - 1
        out += "." + f"{moved.microsecond:06d}"[:digits].ljust(digits, "0")
    return out + ("Z" if zone == "Z" else moved.strftime("%z")[:3] + ":" + moved.strftime("%z")[3:])


def shift_times(value: Any, seconds: float) -> Any:
    """A copy of a raw object (dicts, lists, strings) with every timestamp in it moved by `seconds`."""
    if isinstance(value, str):
        return shift_stamp(value, seconds)
    if isinstance(value, dict):
        return {k: shift_times(v, seconds) for k, v in value.items()}
    if isinstance(value, list):
        return [shift_times(v, seconds) for v in value]
    return value
