"""Resource amounts in an operator's units: GPUs, cores, GiB — never `105520m` or `2429332384Ki`.

Kueue and the JSON contracts keep exact Kubernetes quantities; what a person reads (the `why` text, the
wait report in the dashboard) says the same amounts in the unit the resource is thought of in. Amounts
shown together (requested / available / most ever of one resource) share one unit so they compare at a
glance.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from .model.quantity import Quantity, QuantityError

_GIB = Decimal(2) ** 30
_BYTES = ("memory", "ephemeral-storage", "storage")


def unit_of(resource: str) -> tuple[str, str, Decimal]:
    """(singular, plural, size in the resource's base unit) the resource is counted in."""
    if resource == "cpu":
        return "core", "cores", Decimal(1)
    if resource in _BYTES or resource.startswith("hugepages-"):
        return "GiB", "GiB", _GIB
    if resource == "pods":
        return "Pod", "Pods", Decimal(1)
    if "gpu" in resource.rsplit("/", 1)[-1]:
        return "GPU", "GPUs", Decimal(1)
    return "", "", Decimal(1)  # an extended resource (RDMA, host slots): a plain count


def _number(v: Decimal) -> str:
    if v == v.to_integral_value():
        return f"{int(v):,}"
    return f"{v:,.1f}" if abs(v) >= 1 else f"{v:.2f}"


def amount(resource: str, value: str | Quantity | None, unknown: str = "unknown") -> str:
    """One amount with its unit: ("cpu", "105520m") → "105.5 cores"; ("memory", "-1235497264Ki") →
    "-1,178.3 GiB"; ("nvidia.com/gpu", "8") → "8 GPUs". `unknown` when the value is None or unreadable."""
    return amounts(resource, [value], unknown)[0]


def amounts(resource: str, values: Sequence[str | Quantity | None], unknown: str = "unknown") -> list[str]:
    """Several amounts of one resource, each with the unit (see `amount`)."""
    one, many, size = unit_of(resource)
    out = []
    for value in values:
        try:
            q = value if isinstance(value, Quantity) else None if value is None else Quantity.parse(value)
        except QuantityError:
            q = None
        if q is None:
            out.append(unknown)
            continue
        v = q.value / size
        word = one if abs(v) == 1 and one != "GiB" else many
        out.append(f"{_number(v)} {word}".rstrip())
    return out


__all__ = ["amount", "amounts", "unit_of"]
