"""The simulated fleet (docs/fleet.md): a manager and workers, each its own API server, and MultiKueue dispatch."""

from __future__ import annotations

import yaml
from factories import workload_holding_gpus

from taudash.sim.fleet import ORIGIN_LABEL, SimFleet

PENDING = ("job-remote-pretrain-b-50b9e", "train")  # the demo's Workload waiting for a worker
RUNNING = ("job-remote-pretrain-a-7c9e3", "train")  # the demo's Workload running on eastus-2


def cond(o: dict, type_: str) -> str | None:
    return next((c["status"] for c in (o.get("status") or {}).get("conditions") or () if c["type"] == type_), None)


async def test_fleet_serves_every_cluster_in_one_kubeconfig():
    async with SimFleet(2, interval=None) as fleet:
        kc = yaml.safe_load(fleet.kubeconfig.read_text())
        assert [c["name"] for c in kc["contexts"]] == ["taudash-manager", "taudash-worker-1", "taudash-worker-2"]
        servers = [c["cluster"]["server"] for c in kc["clusters"]]
        assert len(set(servers)) == 3  # own API server and port each
        uids = {s.db.get("namespaces", "kube-system")["metadata"]["uid"] for s in (fleet.manager, *fleet.workers)}
        assert len(uids) == 3  # own cluster identity each
        assert oct(fleet.kubeconfig.stat().st_mode & 0o777) == "0o600"
        # The manager's MultiKueueClusters map onto the workers, which serve the manager's MultiKueue queues.
        assert {n: w.context for n, w in fleet.mk_names.items()} == {"westus-2": "taudash-worker-1",
                                                                      "eastus-2": "taudash-worker-2"}
        w1 = fleet.workers[0].db
        assert w1.get("clusterqueues", "research-multikueue") is not None
        assert w1.get("localqueues", "multikueue", "train")["spec"]["clusterQueue"] == "research-multikueue"
        assert fleet.manager.db.get("workloads", *PENDING) is not None
        assert w1.get("workloads", *PENDING) is None  # nothing dispatched before the controller runs


async def test_first_worker_to_admit_wins_and_other_mirrors_are_removed():
    async with SimFleet(2, interval=None) as fleet:
        fleet.dispatch()
        m = fleet.manager.db.get("workloads", *PENDING)
        st = m["status"]
        assert st["clusterName"] == "westus-2"
        assert "nominatedClusterNames" not in st
        assert [(c["name"], c["state"]) for c in st["admissionChecks"]] == [("multikueue", "Ready")]
        assert cond(m, "Admitted") == "True"
        mirror = fleet.workers[0].db.get("workloads", *PENDING)
        assert mirror["metadata"]["labels"][ORIGIN_LABEL] == "taudash-manager"
        assert cond(mirror, "Admitted") == "True"
        assert mirror["status"]["admission"]["clusterQueue"] == "research-multikueue"
        assert fleet.workers[1].db.get("workloads", *PENDING) is None  # the loser's mirror is gone
        # the worker's ClusterQueue publishes what it admitted, as its Kueue would
        cq = fleet.workers[0].db.get("clusterqueues", "research-multikueue")["status"]
        assert (cq["pendingWorkloads"], cq["reservingWorkloads"], cq["admittedWorkloads"]) == (0, 1, 1)
        gpus = {r["name"]: r["total"] for r in cq["flavorsReservation"][0]["resources"]}["nvidia.com/gpu"]
        assert (gpus != "0" and gpus
                == {r["name"]: r["total"] for r in cq["flavorsUsage"][0]["resources"]}["nvidia.com/gpu"])
        east = fleet.workers[1].db.get("clusterqueues", "research-multikueue")["status"]
        assert east["admittedWorkloads"] == 1  # eastus-2 runs the demo's other remote Workload
        # The Workload the demo shows running on eastus-2 has its admitted mirror there.
        assert cond(fleet.workers[1].db.get("workloads", *RUNNING), "Admitted") == "True"
        # All MultiKueueClusters reachable → Active (the demo's westus-2 was failing).
        mcs = {mc["metadata"]["name"]: cond(mc, "Active") for mc in fleet.manager.db.list("multikueueclusters")}
        assert mcs == {"westus-2": "True", "eastus-2": "True"}


async def test_no_room_anywhere_keeps_nominations_until_a_worker_admits():
    async with SimFleet(2, gpus=8, interval=None) as fleet:
        w1, w2 = (w.db for w in fleet.workers)
        # worker-1 full; worker-2 is full with the running Workload
        w1.create(workload_holding_gpus(8), with_status=True)
        fleet.dispatch()
        st = fleet.manager.db.get("workloads", *PENDING)["status"]
        assert "clusterName" not in st
        assert st["nominatedClusterNames"] == ["westus-2", "eastus-2"]
        assert cond(w1.get("workloads", *PENDING), "QuotaReserved") is None
        assert cond(w2.get("workloads", *PENDING), "QuotaReserved") is None
        w1.delete("workloads", "local-job", "train")
        fleet.dispatch()
        st = fleet.manager.db.get("workloads", *PENDING)["status"]
        assert st["clusterName"] == "westus-2"
        assert "nominatedClusterNames" not in st
        assert w2.get("workloads", *PENDING) is None


async def test_a_stopped_worker_is_skipped_and_marked_inactive():
    async with SimFleet(2, interval=None) as fleet:
        await fleet.down("taudash-worker-1")
        fleet.dispatch()
        assert fleet.manager.db.get("workloads", *PENDING)["status"]["clusterName"] == "eastus-2"
        assert fleet.workers[0].db.get("workloads", *PENDING) is None
        mc = fleet.manager.db.get("multikueueclusters", "westus-2")
        assert cond(mc, "Active") == "False"
        assert (next(c for c in mc["status"]["conditions"] if c["type"] == "Active")["reason"]
                == "ClientConnectionFailed")
        await fleet.restore("taudash-worker-1")
        fleet.dispatch()
        assert cond(fleet.manager.db.get("multikueueclusters", "westus-2"), "Active") == "True"


async def test_workers_beyond_the_managers_clusters_get_their_own_multikueue_cluster():
    async with SimFleet(3, interval=None) as fleet:
        assert fleet.mk_names["taudash-worker-3"] is fleet.workers[2]
        cfg = fleet.manager.db.get("multikueueconfigs", "mk-config")
        assert cfg["spec"]["clusters"] == ["westus-2", "eastus-2", "taudash-worker-3"]
        assert fleet.manager.db.get("multikueueclusters", "taudash-worker-3") is not None


def test_fleet_of_no_workers_is_bad_input(capsys):
    from taudash.cli import main

    assert main(["sim", "serve", "--fleet", "0"]) == 2
    assert "--fleet 0" in capsys.readouterr().err


async def test_the_control_file_read_between_a_truncate_and_its_write_changes_nothing():
    # `echo worker-1=hang > file` empties the file, then writes it: a read of the moment in between must not
    # count as "every cluster healthy" (it would restore a cluster the operator only meant to fault otherwise).
    from taudash.sim.faults import parse_fault_lines

    async with SimFleet(1, interval=None) as fleet:
        fleet._control_task.cancel()  # the reads are made here, one by one
        await fleet.set_faults(parse_fault_lines("worker-1=down\n", fleet.manager.db.registry))
        changes: list[str] = []
        fleet.on_control = changes.append
        fleet.control.write_text("")  # the truncate, read once
        pending = await fleet.poll_control(None)
        fleet.control.write_text("worker-1=hang\n")  # the write
        pending = await fleet.poll_control(pending)
        assert changes == [] and [str(f) for f in fleet.faults] == ["worker-1=down"]
        assert "taudash-worker-1" in fleet._stopped  # never restored in between
        assert await fleet.poll_control(pending) is None  # read the same twice: applied
        assert changes == ["applied: worker-1=hang"] and [str(f) for f in fleet.faults] == ["worker-1=hang"]
        assert await fleet.poll_control(None) is None and len(changes) == 1  # the normalised file: no change
        fleet.control.write_text("")  # a file that stays empty is a real change: every cluster healthy
        assert await fleet.poll_control(await fleet.poll_control(None)) is None
        assert changes[1] == "applied: every cluster healthy" and fleet.faults == []
