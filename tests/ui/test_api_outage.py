"""The whole API lost vs. some kinds unreadable: one API-UNREACHABLE finding, or one DATA-UNREADABLE each."""

from __future__ import annotations

from datetime import UTC, datetime

from taudash.engine.model import KINDS
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.cluster import access_findings, api_outage
from taudash.engine.store import AccessState, Store

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def store_with(state: AccessState, **overrides: AccessState) -> Store:
    s = Store()
    for i, k in enumerate(KINDS):
        st = overrides.get(k.kind, state)
        since = NOW.timestamp() - 30 + i if st in (AccessState.ERROR, AccessState.FORBIDDEN) else None
        s.set_access(k.kind, st, "connection refused" if st is AccessState.ERROR else "", since)
    return s


def test_every_kind_failing_is_one_outage_since_the_first_failure():
    s = store_with(AccessState.ERROR, RayJob=AccessState.ABSENT)
    since, why = api_outage(s.access_states())
    assert since == NOW.timestamp() - 30
    assert why == "connection refused"
    found = access_findings(RuleContext(store=s, now=NOW))
    assert [f.rule for f in found] == ["API-UNREACHABLE"]
    assert found[0].severity == "critical"
    assert "since 11:59:30Z (for 30s)" in found[0].message


def test_a_readable_or_answering_kind_means_the_api_is_there():
    for other in (AccessState.SYNCED, AccessState.SYNCING, AccessState.FORBIDDEN):
        s = store_with(AccessState.ERROR, Node=other)
        assert api_outage(s.access_states()) is None, other
        rules = [f.rule for f in access_findings(RuleContext(store=s, now=NOW))]
        assert "API-UNREACHABLE" not in rules
        assert rules.count("DATA-UNREADABLE") == len(KINDS) - (0 if other is AccessState.FORBIDDEN else 1)


def test_nothing_failing_is_no_outage():
    assert api_outage(store_with(AccessState.SYNCED).access_states()) is None
    assert api_outage(store_with(AccessState.ABSENT).access_states()) is None
    assert access_findings(RuleContext(store=store_with(AccessState.SYNCED), now=NOW)) == []


def test_header_says_since_when_in_the_clock_zone():
    from datetime import timedelta, timezone

    from taudash.screens.widgets.header_bar import stale_since

    assert stale_since(NOW.timestamp() - 90, NOW) == "stale since 11:58:30Z (90 s)"
    cet = NOW.astimezone(timezone(timedelta(hours=1)))
    assert stale_since(NOW.timestamp() - 90, cet) == "stale since 12:58:30 (90 s)"
    assert stale_since(None, NOW) == "stale"
