"""Deactivations are exact: what a run lists as deactivated is what is still deactivated.

One source of truth per Workload: the journal, and the `taudash.io/deactivated-by: <run id>` annotation
stamped in the very patch that deactivates it and removed in the patch that reactivates it. A
reactivation — by the run itself (a rollback's last step, a catalog change's), or by a later release
`--reactivate-from` — subtracts; a completed catalog change leaves nothing deactivated.
"""

from __future__ import annotations

import asyncio

import pytest
from tools.workflows import WL, harness

from taudash.cli import main
from taudash.engine.workflows import Journal, Runner, build, new_id, status
from taudash.engine.workflows.journal import deactivated_by
from taudash.engine.workflows.params import release_params, rollback_params
from taudash.engine.workflows.steps import DEACTIVATED_BY

pytestmark = pytest.mark.usefixtures("state_dir")


@pytest.fixture
async def h():
    async with harness() as it:
        yield it


async def run(h, kind: str, params: dict, decline: str = "") -> tuple[Journal, str]:
    journal = Journal.create(new_id(), kind, params, h.live.target.context, cluster=h.live.identity)

    async def confirm(step, plan, op):
        return step.id != decline

    state = await Runner(build(kind, params), h.ctx(journal), journal, confirm, poll=0.0, sleep=h.sleep).run()
    return Journal.open(str(journal.path)), state


def annotated(h, wid: str) -> set[tuple[str, str]]:
    """Workloads the cluster says are deactivated by run `wid`."""
    return {(w["metadata"]["namespace"], w["metadata"]["name"]) for w in h.sim.db.list(WL)
            if (w["metadata"].get("annotations") or {}).get(DEACTIVATED_BY) == wid
            and not w["spec"].get("active", True)}


def ever_deactivated(journal: Journal) -> set[tuple[str, str]]:
    """Every Workload the run's journal says it deactivated (the server changed it), reactivated since or not."""
    out = set()
    for r in journal.records:
        op, result = (r.get("data") or {}).get("op"), (r.get("data") or {}).get("result") or {}
        if r["event"] == "executed" and isinstance(op, dict) and op.get("kind") == "Workload" \
                and result.get("changed") \
                and ((op.get("patch") or {}).get("spec") or {}).get("active") is False:
            out.add((op["namespace"], op["name"]))
    return out


async def test_a_completed_catalog_change_leaves_no_workload_deactivated(h, tmp_path):
    journal, state = await run(h, "catalog", h.eval_placement_change(tmp_path))
    assert state == "Completed"
    ever = ever_deactivated(journal)
    assert ever  # HoldAndDrain evicted running jobs and the drain deactivated them as they came back pending
    assert annotated(h, journal.id) == set()
    assert deactivated_by(journal) == [] and status(journal)["deactivated"] == []
    assert not [it for it in status(journal).get("leftovers", []) if it["kind"] == "workloads-deactivated"]
    for ns, name in ever:
        wl = h.sim.db.get(WL, name, ns)
        assert wl is None or DEACTIVATED_BY not in (wl["metadata"].get("annotations") or {})


async def test_status_of_a_hold_after_its_release_lists_nothing_deactivated(h, capsys):
    hold, state = await run(h, "hold", {"cqs": ["tau-ws-eval"], "mode": "HoldAndDrain"})
    assert state == "Completed"
    before = set(map(tuple, deactivated_by(hold)))
    assert before and before == annotated(h, hold.id)  # stamped in the patch that deactivated each
    _, state = await run(h, "release", release_params([], hold.id, ctx=h.context()))
    assert state == "Completed" and annotated(h, hold.id) == set()
    assert deactivated_by(hold) == [] and status(hold)["deactivated"] == [] and status(hold).get("leftovers") == []
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["workflow", "status", hold.id]) == 0
    out = capsys.readouterr().out
    assert "deactivated" not in out.split("what this run leaves", 1)[1].split("journal:")[0]
    assert not any(f"{ns}/{name}" in out.split("what this run leaves", 1)[1] for ns, name in before)
    # a second release of the same hold has nothing left to reactivate
    assert release_params([], hold.id, ctx=h.context())["reactivate"] == []


async def test_a_completed_rollback_lists_nothing_it_reactivated_and_advises_no_release(h, tmp_path, capsys):
    change, state = await run(h, "catalog", h.eval_placement_change(tmp_path))
    assert state == "Completed"
    _, state = await run(h, "release", release_params([], change.id, ctx=h.context()))  # whatever the change left
    assert state == "Completed" and annotated(h, change.id) == set()
    for _ in range(4):  # the work is admitted again: the rollback's HoldAndDrain evicts it
        await h.sleep(0)
    rb, state = await run(h, "rollback", rollback_params(h.context(), change.id))
    assert state == "Completed"
    assert ever_deactivated(rb)  # its own drain deactivated the work its HoldAndDrain evicted; its last step undid it
    assert annotated(h, rb.id) == set() and annotated(h, change.id) == set()
    assert deactivated_by(rb) == [] and deactivated_by(change) == []
    doc = status(rb)
    assert doc["deactivated"] == [] and not [it for it in doc.get("leftovers", []) if "release" in (it["undo"] or "")]
    from taudash.commands.workflow import _print_end

    _print_end(doc)
    assert "release" not in capsys.readouterr().err


async def test_a_workload_reactivated_by_hand_is_not_listed_once_the_cluster_is_read(h):
    hold, state = await run(h, "hold", {"cqs": ["tau-ws-eval"], "mode": "HoldAndDrain"})
    assert state == "Completed"
    ns, name = deactivated_by(hold)[0]
    h.sim.db.patch_merge(WL, name, {"spec": {"active": True}}, ns)  # an operator's kubectl patch
    await h.settle()
    assert (ns, name) in deactivated_by(hold)  # the journal alone cannot know
    assert (ns, name) not in deactivated_by(hold, store=h.live.store)  # the live object says otherwise
    item = next(it for it in status(hold, store=h.live.store)["leftovers"] if it["kind"] == "workloads-deactivated")
    assert f"{ns}/{name}" not in item["objects"] and item["checked"] == "cluster"
