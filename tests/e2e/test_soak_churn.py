"""The soak's churn holds the cluster's size and shape (taudash/bench/soak_sim.py `SteadyMutator`): memory that
grows over a soak is then a leak, not a cluster that grew or drifted to all-pending."""

from __future__ import annotations

from collections import Counter

from taudash.bench.generate import QUEUE, generate
from taudash.bench.soak_sim import SteadyMutator
from taudash.bench.stream import Mutator
from taudash.sim.objects import ObjectDB


def shape(db: ObjectDB) -> Counter:
    """Workloads by state, as the views tell them apart: finished, admitted, pending."""
    out: Counter = Counter()
    for wl in db.list(db.resource("Workload")):
        conds = {c["type"]: c["status"] for c in (wl.get("status") or {}).get("conditions") or ()}
        out["finished" if conds.get("Finished") == "True" else
            "admitted" if conds.get("Admitted") == "True" else "pending"] += 1
    return out


def churned(mutator_type: type[Mutator], changes: int) -> tuple[Counter, Counter]:
    db = ObjectDB()
    db.seed(generate("S", 0))
    before = shape(db)
    mutator = mutator_type(db, seed=0, queue=QUEUE)
    for _ in range(changes):
        mutator.one()
    return before, shape(db)


def test_the_steady_churn_keeps_every_workload_state_within_a_tenth_of_its_start():
    before, after = churned(SteadyMutator, 12_000)  # ten minutes of the soak at S (20 changes/s)
    assert sum(after.values()) == sum(before.values())
    for state in ("admitted", "pending"):
        assert abs(after[state] - before[state]) <= 0.1 * before[state], (before, after)


def test_the_benchs_own_churn_drifts_which_is_why_the_soak_does_not_use_it():
    """Negative control: the bench's write mix grows the cluster and turns admitted Workloads into pending ones."""
    before, after = churned(Mutator, 12_000)
    assert sum(after.values()) > 1.1 * sum(before.values())
    assert after["admitted"] < 0.9 * before["admitted"], (before, after)
