"""The API-UNREACHABLE finding's words (rules/cluster.py access_findings) on hand-built access states."""

from __future__ import annotations

from factories import NOW, rule_context

from taudash.engine.rules.cluster import access_findings
from taudash.engine.store import AccessState


def outage_text(lost_seconds: float | None) -> list[str]:
    ctx = rule_context([])
    since = None if lost_seconds is None else NOW.timestamp() - lost_seconds
    for kind in ctx.store.access_states():  # every kind lost
        ctx.store.set_access(kind, AccessState.ERROR, "connection refused", since=since)
    return [f.message for f in access_findings(ctx) if f.rule == "API-UNREACHABLE"]


def test_an_outage_says_for_how_long_in_words():
    [msg] = outage_text(125)
    assert "since 08:57:55Z (for 2m)" in msg and "connection refused" in msg


def test_the_first_second_of_an_outage_is_just_now_never_zero_seconds():
    [msg] = outage_text(0.2)
    assert "(just now)" in msg and "0 s" not in msg and "0s" not in msg


def test_an_outage_of_unknown_start_names_no_time():
    [msg] = outage_text(None)
    assert msg.startswith("the Kubernetes API is unreachable:") and "since" not in msg


def test_one_kind_still_synced_is_no_outage():
    ctx = rule_context([])
    for kind in ctx.store.access_states():
        ctx.store.set_access(kind, AccessState.ERROR, "refused", since=NOW.timestamp())
    ctx.store.set_access("Node", AccessState.SYNCED)
    assert not [f for f in access_findings(ctx) if f.rule == "API-UNREACHABLE"]
