"""Shared cell builders: quantities, object names, verdict marks. All return literal `Text`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from rich.style import Style
from rich.table import Table
from rich.text import Text

from taudash.engine.model import Quantity
from taudash.engine.model.quantity import BINARY_SI
from taudash.engine.rules.base import Finding, ObjRef
from taudash.engine.session import gpu_resource
from taudash.engine.text import kube_duration
from taudash.engine.text import plural as plural  # defined once, in the engine

from .filtering import RowMeta
from .text import MARK, PHASE_TONE, SEVERITY_MARK, SEVERITY_TONE, Tones, lit, span

UNKNOWN = "unknown"


def kube_age(then: datetime | str | None, now: datetime) -> str:
    """An age as kubectl prints it: 45s, 3m20s, 95m, 5h2m, 30h, 3d4h, 120d, 2y30d; "?" when unknown."""
    if isinstance(then, str):
        try:
            then = datetime.fromisoformat(then.replace("Z", "+00:00"))
        except ValueError:
            return "?"
    if then is None:
        return "?"
    return kube_duration((now - then).total_seconds())


def qty(m: Mapping[str, Quantity] | None, res: str | None) -> str:
    """A quantity for display; a missing entry is "–" (absent), never "0"."""
    if m is None or res is None:
        return "–"
    q = m.get(res)
    return "–" if q is None else q.human()


_BINARY_UNITS = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))
_DECIMAL_UNITS = (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6))


def unit_for(values: Iterable[Quantity | None]) -> tuple[str, Decimal] | None:
    """One unit for quantities shown together (a column, or one resource's row): the unit the largest of
    them reads in, one smaller when that would show another as 0.0 — so "5.2Ti" never stands beside
    "1012.2Gi". None: plain numbers (counts, cores), or nothing to show."""
    qs = [q for q in values if q is not None and q.value != 0]
    if not qs:
        return None
    binary = any(q.format == BINARY_SI for q in qs)
    top = max(abs(q.value) for q in qs)
    low = min(abs(q.value) for q in qs)
    units = ([(s, Decimal(2) ** e) for s, e in _BINARY_UNITS] if binary
             else [(s, Decimal(10) ** e) for s, e in _DECIMAL_UNITS])
    for i, (suffix, size) in enumerate(units):
        if top >= size:
            if low / size < Decimal("0.05") and i + 1 < len(units) and top / units[i + 1][1] < 10_000:
                return units[i + 1]
            return suffix, size
    return None


def in_unit(q: Quantity | None, unit: tuple[str, Decimal] | None) -> str:
    """`q` in `unit` (see `unit_for`); "–" for a missing entry, its own short form without a unit."""
    if q is None:
        return "–"
    if unit is None or q.value == 0:
        return q.human()
    v = q.value / unit[1]
    if v == v.to_integral_value():
        return f"{v:.0f}{unit[0]}"
    return (f"{v:.2f}" if abs(v) < 1 else f"{v:.1f}") + unit[0]


def column_of(maps: Sequence[Mapping[str, Quantity] | None],
              res: str | None) -> Callable[[Mapping[str, Quantity] | None], str]:
    """A formatter for resource `res` read from each of `maps` (the rows of one column): one unit for all."""
    unit = unit_for((m or {}).get(res) for m in maps) if res is not None else None

    def show(m: Mapping[str, Quantity] | None) -> str:
        if m is None or res is None:
            return "–"
        return in_unit(m.get(res), unit)

    return show


def qfloat(m: Mapping[str, Quantity] | None, res: str | None) -> float | None:
    if m is None or res is None:
        return None
    q = m.get(res)
    return None if q is None else q.as_float()


def gpu_of(*maps: Mapping[str, Quantity]) -> str | None:
    keys: set[str] = set()
    for m in maps:
        keys |= set(m)
    return gpu_resource(keys)


def short_flavor(name: str) -> str:
    return name[len("taugrid-gpu-") :] if name.startswith("taugrid-gpu-") else name


def objname(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


# TauGrid honours these only in its system namespace: naming it in every row is noise.
SYSTEM_SCOPED = ("TauWorkspace", "TauTeam")


def ref_text(ref: ObjRef) -> Text:
    t = span(f"{ref.kind} ", "dim")
    t.append(lit(ref.name if ref.kind in SYSTEM_SCOPED else objname(ref.namespace, ref.name)))
    return t


def kv_grid(rows: Sequence[tuple[str, Text | str]], label_style: Style | str = "dim") -> Table:
    """Label/value lines whose values wrap under themselves (not under the label)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style=label_style)
    grid.add_column(overflow="fold")
    for label, value in rows:
        grid.add_row(label, value if isinstance(value, Text) else lit(value))
    return grid


def ref_meta(ref: ObjRef, *extra: str, severity: str = "", rule: str = "") -> RowMeta:
    return RowMeta(kind=ref.kind, namespace=ref.namespace, name=ref.name, text=" ".join(extra), severity=severity,
                   rule=rule)


def severity_cell(sev: str, tones: Tones) -> Text:
    tone = SEVERITY_TONE.get(sev, "unknown")
    return Text(f"{SEVERITY_MARK.get(sev, '?')} {sev}", style=tones.of(tone), end="")


def finding_meta(f: Finding) -> RowMeta:
    return ref_meta(f.object, f.message, f.hint, f.rule, severity=f.severity.value, rule=f.rule)


def phase_cell(phase: str, tones: Tones) -> Text:
    if not phase:
        return Text("? none", style=tones.unknown, end="")
    tone = PHASE_TONE.get(phase, "unknown")
    return tones.mark(tone, phase)


def tri(value: bool | None, tones: Tones, yes: str = "yes", no: str = "no", unknown: str = UNKNOWN) -> Text:
    """True/False/None as ✓ word / ✖ word / ? unknown."""
    if value is None:
        return tones.mark("unknown", unknown)
    return tones.mark("ok", yes) if value else tones.mark("bad", no)


# Conditions whose True is the problem (Kubernetes "abnormal-true" polarity).
ABNORMAL_TRUE = frozenset({"DriftDetected", "OwnershipConflict", "DeletionBlocked", "ObserveOnly", "ReconcilePaused",
                           "Stalled", "Failed", "Evicted", "Preempted", "Degraded", "UpgradeInProgress", "Suspended",
                           "Requeued", "Terminating", "DisruptionTarget", "MemoryPressure", "DiskPressure",
                           "PIDPressure", "NetworkUnavailable"})


def condition_cell(status: str, tones: Tones, ctype: str = "") -> Text:
    good, bad = ("False", "True") if ctype in ABNORMAL_TRUE else ("True", "False")
    if status == good:
        return tones.mark("ok", status)
    if status == bad:
        return tones.mark("bad", status)
    return tones.mark("unknown", status or "Unknown")


def drain_cell(state: str, tones: Tones, blockers: int = 0) -> Text:
    tone = {"NotDraining": "muted", "Clear": "ok", "Blocked": "warn", "Unknown": "bad"}.get(state, "unknown")
    if tone == "muted":
        return Text("– not draining", style=tones.muted, end="")
    mark = {"ok": MARK["ok"], "warn": MARK["warn"], "bad": MARK["unknown"]}.get(tone, "?")
    t = Text(f"{mark} {state}", style=tones.of(tone), end="")
    if blockers:
        t.append(f" ({blockers})", style=tones.of(tone))
    return t


