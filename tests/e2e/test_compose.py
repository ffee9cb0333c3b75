"""The composition root against a simulated cluster: LiveCluster's write path follows who asked for read-only
mode (and holds no client for a program that never writes), and each program's Session is built whole from it
(taudash/live.py, taudash/compose.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from taudash import compose
from taudash.engine.rules.base import RuleConfig
from taudash.errors import UsageError
from taudash.live import LiveCluster


async def test_a_dashboard_nobody_asked_to_be_read_only_writes_and_knows_its_cluster(sim_server, cli_env):
    async with LiveCluster(None, str(sim_server.kubeconfig)) as live:
        session = compose.dashboard_session(live, RuleConfig(), demo=False, source_type="sim", history_reader=None,
                                            now=datetime.now(UTC))
        assert session.actions is live.actions and session.actions.writable and not session.read_only
        assert session.cluster == live.identity and session.cluster is not None
        assert session.lock is live.lock and session.store is live.store
        assert session.queue_positions == live.source.pending_workloads and session.on_demand is not None
        assert (session.source.context, session.source.path) == (live.target.context, live.target.server)


async def test_the_flag_makes_the_write_path_hold_no_client_and_the_badge_say_who(sim_server, cli_env):
    async with LiveCluster(None, str(sim_server.kubeconfig), read_only=True) as live:
        session = compose.dashboard_session(live, RuleConfig(), demo=False, source_type="sim", history_reader=None,
                                            now=datetime.now(UTC))
        assert not live.actions.writable and live.actions.api_client is None
        assert session.read_only and session.read_only_why == "--read-only"
        assert "asked by" in session.actions.why_read_only


async def test_a_program_that_never_writes_gets_no_client_even_when_nobody_asked(sim_server, cli_env):
    live = LiveCluster(None, str(sim_server.kubeconfig), never_writes="serve is read-only by construction")
    await live.connect()
    try:
        await live.start()
        assert await live.wait_synced()
        assert live.actions.api_client is None and live.actions.why_read_only == "serve is read-only by construction"
        session = compose.serve_session(live, RuleConfig(), demo=True, source_type="sim", badge="web")
        assert session.read_only and session.read_only_why == "web" and session.actions is live.actions
    finally:
        await live.close()


async def test_serve_refuses_a_cluster_opened_with_a_write_path(sim_server, cli_env):
    async with LiveCluster(None, str(sim_server.kubeconfig)) as live:
        assert live.actions.writable
        with pytest.raises(ValueError, match="read-only session only"):
            compose.serve_session(live, RuleConfig(), demo=False, source_type="sim")


async def test_a_context_the_kubeconfig_lacks_is_bad_input_before_anything_is_sent(sim_server, cli_env):
    with pytest.raises(UsageError, match="no-such-context"):
        async with LiveCluster("no-such-context", str(sim_server.kubeconfig)):
            pass
