from decimal import Context, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taudash.engine.model.quantity import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, Quantity, QuantityError, qsum

# (text, exact value, canonical form)
CASES = [
    ("0", "0", "0"),
    ("1", "1", "1"),
    ("1500m", "1.5", "1500m"),
    ("1.5", "1.5", "1500m"),
    ("100n", "0.0000001", "100n"),
    ("5u", "0.000005", "5u"),
    ("250m", "0.25", "250m"),
    ("2k", "2000", "2k"),
    ("2000", "2000", "2k"),
    ("3M", "3000000", "3M"),
    ("4G", "4000000000", "4G"),
    ("5T", "5e12", "5T"),
    ("6P", "6e15", "6P"),
    ("7E", "7e18", "7E"),
    ("1Ki", "1024", "1Ki"),
    ("1Mi", str(2**20), "1Mi"),
    ("1Gi", str(2**30), "1Gi"),
    ("1.5Gi", str(3 * 2**29), "1536Mi"),
    ("0.5Gi", str(2**29), "512Mi"),
    ("1Ti", str(2**40), "1Ti"),
    ("2Pi", str(2 * 2**50), "2Pi"),
    ("1Ei", str(2**60), "1Ei"),
    ("1e3", "1000", "1e3"),
    ("12e-3", "0.012", "12e-3"),
    ("1E6", "1000000", "1e6"),
    ("-2", "-2", "-2"),
    ("+3", "3", "3"),
    (".5", "0.5", "500m"),
]


@pytest.mark.parametrize("text,value,canonical", CASES)
def test_parse_every_suffix(text, value, canonical):
    q = Quantity.parse(text)
    assert q.value == Decimal(value)
    assert q.canonical() == canonical
    # canonical form parses back to the same value
    assert Quantity.parse(q.canonical()).value == q.value


@pytest.mark.parametrize("bad", ["12Q", "", "Gi", "1.2.3", "1 Gi", "abc", "1ki", "--1", "1e", "0x10"])
def test_rejects_invalid(bad):
    with pytest.raises(QuantityError):
        Quantity.parse(bad)


def test_formats_follow_the_suffix():
    assert Quantity.parse("1Gi").format == BINARY_SI
    assert Quantity.parse("1G").format == DECIMAL_SI
    assert Quantity.parse("1e9").format == DECIMAL_EXPONENT


def test_mixed_sums_are_exact():
    assert Quantity.parse("1500m") + Quantity.parse("2") == Quantity.parse("3500m")
    assert str(Quantity.parse("1500m") + Quantity.parse("2")) == "3500m"
    assert str(Quantity.parse("512Mi") + Quantity.parse("1Gi")) == "1536Mi"
    assert str(Quantity.parse("1500m") * 3) == "4500m"
    assert str(Quantity.parse("1Ti") + Quantity.parse("512Gi")) == "1536Gi"
    assert str(qsum(Quantity.parse(x) for x in ["100m"] * 10)) == "1"
    # float arithmetic would give 0.30000000000000004 here
    assert qsum(Quantity.parse(x) for x in ["100m", "100m", "100m"]) == Quantity.parse("300m")


def test_subtraction_and_sign():
    d = Quantity.parse("24") - Quantity.parse("30")
    assert d.negative and str(d) == "-6"
    assert d.max0().is_zero()
    assert Quantity.parse("1Gi") - Quantity.parse("1024Mi") == Quantity.parse("0")


def test_comparison():
    assert Quantity.parse("1Gi") > Quantity.parse("1G")
    assert Quantity.parse("1000m") == Quantity.parse("1")
    assert sorted([Quantity.parse(x) for x in ["2", "1500m", "1k"]]) == [
        Quantity.parse("1500m"),
        Quantity.parse("2"),
        Quantity.parse("1k"),
    ]


def test_sub_nano_rounds_up_like_kubernetes():
    assert Quantity.parse("0.1n").canonical() == "1n"


def test_immutable():
    q = Quantity.parse("1")
    with pytest.raises(AttributeError):
        q.value = Decimal(2)


_suffix = st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "n", "u"])


@given(st.integers(min_value=-(10**12), max_value=10**12), _suffix)
def test_round_trip_property(n, suffix):
    q = Quantity.parse(f"{n}{suffix}")
    again = Quantity.parse(q.canonical())
    assert again == q
    assert again.canonical() == q.canonical()


@given(st.lists(st.tuples(st.integers(0, 10**9), _suffix), max_size=8))
def test_sum_is_order_independent(items):
    qs = [Quantity.parse(f"{n}{s}") for n, s in items]
    assert qsum(qs) == qsum(reversed(qs))
    exact = Decimal(0)
    for q in qs:
        exact = Context(prec=60).add(exact, q.value)
    assert qsum(qs).value == exact


@given(st.text(max_size=12))
def test_parse_never_crashes_unexpectedly(text):
    try:
        Quantity.parse(text)
    except QuantityError:
        pass


@pytest.mark.parametrize(
    "text,shown",
    [("287070m", "287.07"), ("5475389136Ki", "5.1Ti"), ("500m", "500m"), ("24", "24"), ("1536Mi", "1.5Gi"),
     ("2Gi", "2Gi"), ("1500000", "1.5M"), ("0", "0"), ("-8", "-8")],
)
def test_human_form(text, shown):
    assert Quantity.parse(text).human() == shown
