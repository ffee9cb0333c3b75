"""Fingerprints (Rule.fingerprints) are computed lazily: a build prints nothing, an update prints only the
objects that changed (their state at the build, then their new state), and a rule is recomputed exactly when a
print moved or an object came or went."""

from __future__ import annotations

from datetime import UTC, datetime

from factories import workload

from taudash.engine.incremental import IncrementalDeriver, derive
from taudash.engine.model import lookup
from taudash.engine.rules.base import Rule, ViewField
from taudash.engine.store import AccessState, Store

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
WORKLOAD = lookup("kueue.x-k8s.io/v1beta2", "Workload").model


class Printer:
    """A toy rule's fingerprint (a Workload's queue) that counts which objects it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, wl) -> tuple[str]:
        self.asked.append(wl.name)
        return (wl.spec.queue_name,)


def _setup(n: int = 50) -> tuple[Store, IncrementalDeriver, Printer]:
    store = Store()
    for i in range(n):
        _put(store, f"w{i:02d}")
    store.set_access("Workload", AccessState.SYNCED)
    printer = Printer()
    queues = Rule("queues_seen", frozenset({"Workload"}), (ViewField("queues_seen", list, []),),
                  derive=lambda ctx: (sorted({w.spec.queue_name for w in ctx.store.list("Workload")}), []),
                  fingerprints={"Workload": printer})
    return store, IncrementalDeriver(store, rules=(queues,)), printer


def _put(store: Store, name: str, queue: str = "jobqueue", message: str = "m") -> None:
    store.upsert(WORKLOAD.model_validate(workload(name, "team-a", queue=queue, message=message)))


def test_a_build_prints_nothing_and_an_update_prints_only_what_changed():
    store, inc, printer = _setup()
    inc.view(NOW)
    assert printer.asked == []
    _put(store, "w07", message="another")
    inc.view(NOW)
    assert printer.asked == ["w07", "w07"]  # its new state, and its state at the build
    printer.asked.clear()
    _put(store, "w07", message="a third")
    inc.view(NOW)
    assert printer.asked == ["w07"]  # the print kept from the last update


def test_an_unchanged_print_leaves_the_rule_and_its_value_as_they_were():
    store, inc, _ = _setup()
    first = inc.view(NOW)
    runs = inc.recomputed["queues_seen"]
    _put(store, "w03", message="only the message moved")
    second = inc.view(NOW)
    assert inc.recomputed["queues_seen"] == runs
    assert second.queues_seen is first.queues_seen  # type: ignore[attr-defined]


def test_a_moved_print_recomputes_the_rule_as_a_build_would():
    store, inc, _ = _setup()
    inc.view(NOW)
    runs = inc.recomputed["queues_seen"]
    _put(store, "w03", queue="elsewhere")
    view = inc.view(NOW)
    assert inc.recomputed["queues_seen"] == runs + 1
    fresh = IncrementalDeriver(store, rules=inc.rules).view(NOW)
    assert view.queues_seen == fresh.queues_seen == ["elsewhere", "jobqueue"]  # type: ignore[attr-defined]


def test_an_object_that_goes_and_comes_back_counts_each_time():
    store, inc, _ = _setup()
    inc.view(NOW)
    runs = inc.recomputed["queues_seen"]
    store.delete("Workload", "w05", "team-a")
    inc.view(NOW)
    assert inc.recomputed["queues_seen"] == runs + 1
    _put(store, "w05")  # the same print as at the build: it still came back
    inc.view(NOW)
    assert inc.recomputed["queues_seen"] == runs + 2
    # Gone and back within one update, its print as before: nothing the rule reads moved.
    store.delete("Workload", "w06", "team-a")
    _put(store, "w06")
    inc.view(NOW)
    assert inc.recomputed["queues_seen"] == runs + 2


def test_a_new_object_and_a_rebuild_print_from_the_store_of_the_rebuild():
    store, inc, printer = _setup(5)
    inc.view(NOW)
    _put(store, "w99", queue="new")
    assert inc.view(NOW).queues_seen == ["jobqueue", "new"]  # type: ignore[attr-defined]
    assert printer.asked == ["w99"]  # new: nothing to compare with
    store.set_access("Workload", AccessState.SYNCED, since=1.0)  # an access change: the view is built again
    inc.view(NOW)
    printer.asked.clear()
    _put(store, "w99", queue="jobqueue")
    assert inc.view(NOW).queues_seen == ["jobqueue"]  # type: ignore[attr-defined]
    assert printer.asked == ["w99", "w99"]  # its state at the rebuild, then now


def test_the_registry_after_lazy_prints_equals_a_full_derivation():
    store, _, _ = _setup()
    for r in ("Namespace", "LocalQueue", "ClusterQueue", "Pod", "Node"):
        store.set_access(r, AccessState.SYNCED)
    inc = IncrementalDeriver(store)
    inc.view(NOW)
    for i in range(0, 50, 7):
        _put(store, f"w{i:02d}", message=f"m{i}")
    store.delete("Workload", "w10", "team-a")
    assert inc.view(NOW).to_contract() == derive(store, NOW).to_contract()
