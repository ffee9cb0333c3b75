"""Kubernetes resource quantities with exact decimal arithmetic.

Parsing follows apimachinery's grammar: a signed decimal number followed by an optional
binary suffix (Ki..Ei), decimal suffix (n u m "" k M G T P E) or decimal exponent (e3, E-2).
Arithmetic is exact (Decimal with a wide context); formatting is canonical: the largest
suffix of the quantity's format that keeps the mantissa an integer.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Context, Decimal, DecimalException, InvalidOperation
from functools import total_ordering
from typing import Any

_CTX = Context(prec=60)
# Larger magnitudes are not resources but bad input (10^30 is a million Ei); within it, every
# value keeps nano precision inside _CTX, so arithmetic and formatting stay exact.
_LIMIT = Decimal(10) ** 30

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {v: k for k, v in _DECIMAL.items()}
_BINARY_BY_EXP = {v: k for k, v in _BINARY.items()}

_RE = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

_NANO = Decimal("1e-9")
_D0 = Decimal(0)

_PARSED: dict[str, Quantity] = {}  # parse cache (see Quantity.parse)
_PARSED_MAX = 4096


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def _short(text: object) -> str:
    s = repr(text) if isinstance(text, str) else str(text) if not isinstance(text, int) or text.bit_length() < 200 \
        else f"{'-' if text < 0 else ''}<{text.bit_length()}-bit integer>"
    return s if len(s) <= 40 else s[:37] + "..."


def _bounded(value: Decimal, text: object) -> Decimal:
    """`value`, unless it is NaN, infinite or too large to be a resource quantity."""
    if not value.is_finite():
        raise QuantityError(f"quantity {_short(text)} is not a finite number")
    if abs(value) >= _LIMIT:
        raise QuantityError(f"quantity {_short(text)} is out of range")
    return value


_oset = object.__setattr__
_onew = object.__new__
# Bound once: sums over a fleet's queues and nodes run these hundreds of thousands of times per
# derivation, and the attribute lookups cost as much as the Decimal arithmetic.
_cadd = _CTX.add
_csub = _CTX.subtract


def _make(value: Decimal, fmt: str) -> Quantity:
    q = _onew(Quantity)
    _set_value(q, value)
    _set_format(q, fmt)
    return q


@total_ordering
class Quantity:
    """An immutable, exact Kubernetes quantity."""

    __slots__ = ("value", "format")
    value: Decimal
    format: str

    def __init__(self, value: Decimal | int | str = 0, fmt: str = DECIMAL_SI) -> None:
        if isinstance(value, str):
            parsed = Quantity.parse(value)
            value, fmt = parsed.value, parsed.format
        object.__setattr__(self, "value", Decimal(value))
        object.__setattr__(self, "format", fmt)

    def __setattr__(self, name: str, value: Any) -> None:  # immutable
        raise AttributeError("Quantity is immutable")

    def __reduce__(self) -> tuple[Any, tuple[Decimal, str]]:  # pickling goes around the immutability guard
        return (_make, (self.value, self.format))

    @classmethod
    def parse(cls, text: str | int | float | Decimal | Quantity) -> Quantity:
        if isinstance(text, Quantity):
            return text
        if isinstance(text, bool):
            raise QuantityError(f"quantity {text!r} is not a number")
        if isinstance(text, (int, float, Decimal)):
            return cls(_bounded(Decimal(repr(text)) if isinstance(text, float) else Decimal(text), text))
        if not isinstance(text, str):
            raise QuantityError(f"quantity {_short(text)} is not a string")
        # Quantities are immutable and a cluster uses few distinct strings ("8", "1600Gi", ...):
        # parsing each once takes Decimal work off the ingest path of every object.
        hit = _PARSED.get(text)
        if hit is not None:
            return hit
        q = cls._parse_str(text)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = q
        return q

    @classmethod
    def _parse_str(cls, text: str) -> Quantity:
        m = _RE.match(text.strip())
        if not m:
            raise QuantityError(f"invalid quantity {_short(text)}")
        try:
            num = Decimal(m.group("num"))
        except InvalidOperation as exc:  # pragma: no cover - regex guards this
            raise QuantityError(f"invalid quantity {text!r}") from exc
        suffix = m.group("suffix") or ""
        try:
            if suffix in _BINARY:
                value = _CTX.multiply(num, Decimal(2) ** _BINARY[suffix])
                fmt = BINARY_SI
            elif suffix in _DECIMAL:
                value = _CTX.multiply(num, Decimal(10) ** _DECIMAL[suffix])
                fmt = DECIMAL_SI
            else:
                value = _CTX.multiply(num, _CTX.power(10, int(suffix[1:])))
                fmt = DECIMAL_EXPONENT
        except (DecimalException, ValueError):  # an exponent beyond any context, or too many digits
            raise QuantityError(f"quantity {_short(text)} is out of range") from None
        return cls(_bounded(value, text), fmt)

    # arithmetic -------------------------------------------------------------------------
    def _fmt_with(self, other: Quantity) -> str:
        return self.format if self.value != 0 or other.value == 0 else other.format

    def __add__(self, other: object) -> Quantity:
        o = other if type(other) is Quantity else _coerce(other)
        a, b = self.value, o.value
        # Sums over thousands of nodes and queues: skip the constructor's parsing and re-wrapping
        # (_make inlined; `a or not b` is `a != 0 or b == 0`: quantities are finite).
        q = _onew(Quantity)
        _set_value(q, _cadd(a, b))
        _set_format(q, self.format if a or not b else o.format)
        return q

    __radd__ = __add__

    def __sub__(self, other: object) -> Quantity:
        o = other if type(other) is Quantity else _coerce(other)
        a, b = self.value, o.value
        q = _onew(Quantity)  # as __add__
        _set_value(q, _csub(a, b))
        _set_format(q, self.format if a or not b else o.format)
        return q

    def __rsub__(self, other: object) -> Quantity:
        return _coerce(other) - self

    def __mul__(self, k: int) -> Quantity:
        if not isinstance(k, int):
            return NotImplemented
        return Quantity(_CTX.multiply(self.value, Decimal(k)), self.format)

    __rmul__ = __mul__

    def __neg__(self) -> Quantity:
        return Quantity(_CTX.minus(self.value), self.format)  # unary minus would round to 28 digits

    def __eq__(self, other: object) -> bool:
        try:
            return self.value == _coerce(other).value
        except QuantityError:
            return NotImplemented

    def __lt__(self, other: object) -> bool:
        return self.value < _coerce(other).value

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return self.value != 0

    def is_zero(self) -> bool:
        return self.value == 0

    @property
    def negative(self) -> bool:
        return self.value < 0

    def max0(self) -> Quantity:
        return self if self.value >= 0 else _make(_D0, self.format)

    def as_float(self) -> float:
        return float(self.value)

    # formatting -------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def canonical(self) -> str:
        value = self.value
        # Sub-nano precision is rounded up to the nearest nano, as Kubernetes does.
        rounded = value.quantize(_NANO, rounding=ROUND_CEILING, context=_CTX)
        if value != rounded:
            value = rounded
        if value == 0:
            return "0"
        sign = "-" if value < 0 else ""
        mag = _CTX.abs(value)  # abs() rounds to the default context's 28 digits
        if self.format == BINARY_SI and mag == mag.to_integral_value() and mag >= 1024:
            n = int(mag)
            exp = 0
            while exp < 60 and n % 1024 == 0:
                n //= 1024
                exp += 10
            return f"{sign}{n}{_BINARY_BY_EXP.get(exp, '')}"
        # Decimal: find the largest multiple-of-3 exponent keeping an integer mantissa.
        best_exp = -9
        for exp in range(18, -10, -3):
            mant = _CTX.multiply(mag, Decimal(10) ** -exp)
            if mant == mant.to_integral_value():
                best_exp = exp
                break
        imant = int(_CTX.multiply(mag, Decimal(10) ** -best_exp))
        if self.format == DECIMAL_EXPONENT:
            return f"{sign}{imant}" + (f"e{best_exp}" if best_exp else "")
        return f"{sign}{imant}{_DECIMAL_BY_EXP[best_exp]}"

    def human(self) -> str:
        """A short display form: binary units for byte-like quantities, plain numbers otherwise
        (`287.07` rather than `287070m`); exact values stay available through `canonical()`."""
        mag = abs(self.value)
        if self.format == BINARY_SI:
            for suffix, exp in (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
                unit = Decimal(2) ** exp
                if mag >= unit:
                    v = self.value / unit
                    return f"{v:.0f}{suffix}" if v == v.to_integral_value() else f"{v:.1f}{suffix}"
        if mag >= 1 and mag < 10**6:
            if self.value == self.value.to_integral_value():
                return f"{int(self.value)}"
            return f"{self.value:.2f}".rstrip("0").rstrip(".")
        if mag >= 10**6 and self.format != BINARY_SI:
            for suffix, exp in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6)):
                if mag >= Decimal(10) ** exp:
                    v = self.value / Decimal(10) ** exp
                    return f"{v:.0f}{suffix}" if v == v.to_integral_value() else f"{v:.1f}{suffix}"
        return self.canonical()


_set_value = Quantity.__dict__["value"].__set__  # the slots' own setters: no name lookup per call
_set_format = Quantity.__dict__["format"].__set__


def _coerce(other: object) -> Quantity:
    if isinstance(other, Quantity):
        return other
    if isinstance(other, (int, str, Decimal)):
        return Quantity.parse(other)
    raise QuantityError(f"cannot use {other!r} as a quantity")


ZERO = Quantity(0)


def qsum(items: Any) -> Quantity:
    total = ZERO
    for q in items:
        total = total + q
    return total
