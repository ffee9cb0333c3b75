"""Paged lists: the next page is requested while the current one decodes, every object arrives once,
and a page the fast decoder refuses (one malformed object) still loads the rest."""

import copy

import orjson
from test_kube_source import Live, db_state, store_state

from taudash.engine.sources.kube import LIST_PAGE, _peek_continue

WL = "workloads.kueue.x-k8s.io"


def test_peek_reads_the_token_before_the_items():
    page = orjson.dumps({"kind": "WorkloadList", "metadata": {"resourceVersion": "5", "continue": "abc"},
                         "items": [{"metadata": {"name": "x", "annotations": {"continue": "no"}}}]})
    assert _peek_continue(page) == "abc"
    last = orjson.dumps({"kind": "WorkloadList", "metadata": {"resourceVersion": "5"}, "items": []})
    assert _peek_continue(last) is None
    # Items before metadata: the peek cannot tell without decoding, and says so.
    odd = orjson.dumps({"items": [{"metadata": {"continue": "inner"}}], "metadata": {"continue": "abc"}})
    assert _peek_continue(odd) is None
    assert _peek_continue(b'{"metadata":{"continue":') is None
    assert _peek_continue(b"") is None


async def test_many_pages_arrive_whole_even_with_a_malformed_object(sim_server):
    template = sim_server.db.list(WL)[0]
    for i in range(2 * LIST_PAGE + 37):
        obj = copy.deepcopy(template)
        obj["metadata"] = {"name": f"bulk-{i:05d}", "namespace": template["metadata"]["namespace"],
                           "labels": {"bulk": "yes"}}
        if i == LIST_PAGE + 3:
            obj["status"] = {"conditions": None}  # null list: the fast path refuses this page
        sim_server.db.create(obj)
    async with Live(sim_server) as live:
        expected = db_state(sim_server)
        assert store_state(live.store, ["Workload"]) == {"Workload": expected["Workload"]}
        assert live.source.status["Workload"].decode_errors == 0
        odd = live.store.get("Workload", f"bulk-{LIST_PAGE + 3:05d}", template["metadata"]["namespace"])
        assert odd.status.conditions == [] and odd.derived_status == "pending"
