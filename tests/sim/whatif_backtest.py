"""Back-test of `taudash whatif` on a seeded hour of the simulator (docs/whatif.md, "How often is it right?").

Every `every` simulated seconds of the hour, a Job shaped like the simulator's latest arrival (a copy of its
spec under a new name) is predicted on a fork of the world, then really created in the world, which runs on
with its arrivals, completions and admissions. Scored: the flavor it got (when admitted), starts now (quota
reserved before any simulated time passes), whether the estimator's interval covered its actual wait, and
the fork's own admission time against the actual one. Run: `python tests/sim/whatif_backtest.py`."""

from __future__ import annotations

import copy
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from factories import sim_world  # noqa: E402

from taudash.rehearse.fork import Fork  # noqa: E402
from taudash.whatif import from_object, predict  # noqa: E402

SETTLE = 4  # the steps with no time passing a prediction settles with, done the same in the world


@dataclass
class Case:
    name: str
    predicted: dict
    uid: str = ""
    created: float = 0.0
    starts_now: bool = False
    admitted_at: float | None = None
    flavor: dict | None = None


@dataclass
class Result:
    seed: int
    arrivals_per_hour: float
    cases: list[Case] = field(default_factory=list)

    def _scored(self):
        return [c for c in self.cases if c.predicted["admissible"]]

    @property
    def starts_now_right(self) -> tuple[int, int]:
        s = self._scored()
        return sum(c.predicted["startsNow"] == c.starts_now for c in s), len(s)

    @property
    def flavor_right(self) -> tuple[int, int]:
        s = [c for c in self._scored() if c.flavor is not None and c.predicted["flavors"]]
        return sum(c.predicted["flavors"][0]["flavors"] == c.flavor for c in s), len(s)

    @property
    def eta_covered(self) -> tuple[int, int]:
        """Of the Jobs predicted to wait, with an interval, and admitted in the run: within the interval."""
        n = hit = 0
        for c in self._scored():
            est = (c.predicted.get("eta") or {}).get("estimate") or {}
            if c.predicted["startsNow"] or not est.get("known") or c.admitted_at is None:
                continue
            n += 1
            wait = c.admitted_at - c.created
            hit += est["low"] - STEP <= wait <= est["high"] + STEP
        return hit, n

    @property
    def fork_errors(self) -> list[float]:
        """|fork's admission time − actual| seconds, for the waiting Jobs admitted on both sides."""
        out = []
        for c in self._scored():
            fork = ((c.predicted.get("eta") or {}).get("fork") or {}).get("simulatedAdmissionSeconds")
            if not c.predicted["startsNow"] and fork is not None and c.admitted_at is not None:
                out.append(abs(fork - (c.admitted_at - c.created)))
        return out


STEP = 60.0


def _objects(w) -> list[dict]:
    return [copy.deepcopy(o) for r in w.db.registry.all for o in w.db.list(r)]


def _latest_job(w) -> dict:
    jobs = [j for j in w.db.list("Job") if (j["metadata"].get("labels") or {}).get("kueue.x-k8s.io/queue-name")
            and (j.get("spec") or {}).get("template")]
    return max(jobs, key=lambda j: (j["metadata"]["creationTimestamp"], j["metadata"]["name"]))


def _manifest(w, i: int) -> dict:
    src = _latest_job(w)
    m = src["metadata"]
    spec = copy.deepcopy(src["spec"])
    spec["suspend"] = True
    spec.pop("selector", None)
    (spec.get("template") or {}).get("metadata", {}).get("labels", {}).pop("controller-uid", None)
    (spec.get("template") or {}).get("metadata", {}).get("labels", {}).pop("batch.kubernetes.io/controller-uid", None)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"whatif-{i:03d}", "namespace": m["namespace"], "labels": dict(m.get("labels") or {})},
            "spec": spec}


def _state(w, case: Case) -> None:
    for wl in w.db.list("Workload"):
        owner = (wl["metadata"].get("ownerReferences") or [{}])[0]
        if owner.get("uid") != case.uid:
            continue
        conds = {c["type"]: c for c in (wl.get("status") or {}).get("conditions") or []}
        qr = conds.get("QuotaReserved") or {}
        if case.admitted_at is None and qr.get("status") == "True":
            case.admitted_at = w.clock.now()
            psa = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or [{}]
            case.flavor = dict(psa[0].get("flavors") or {})


def run(seed: int, arrivals_per_hour: float = 20.0, hours: float = 1.0, every: float = 300.0,
        tail_hours: float = 6.0, horizon: float = 6 * 3600.0) -> Result:
    w = sim_world(seed, arrivalsPerHour=arrivals_per_hour, failureProbability=0, retryProbability=0)
    res = Result(seed, arrivals_per_hour)
    try:
        w.step(0)
        i = 0
        t_end, next_at = w.clock.now() + hours * 3600, w.clock.now()
        while w.clock.now() < t_end + tail_hours * 3600:
            if w.clock.now() >= next_at and w.clock.now() < t_end:
                manifest = _manifest(w, i)
                p = predict(Fork(_objects(w), w.clock.now()), from_object(manifest), horizon=horizon, seed=seed)
                created = w.db.create(copy.deepcopy(manifest))
                case = Case(manifest["metadata"]["name"], p, created["metadata"]["uid"], w.clock.now())
                for _ in range(SETTLE):
                    w.step(0)
                _state(w, case)
                case.starts_now = case.admitted_at is not None
                res.cases.append(case)
                i += 1
                next_at += every
            w.step(STEP)
            for c in res.cases:
                _state(w, c)
    finally:
        w.close()
    return res


def _pct(pair: tuple[int, int]) -> str:
    hit, n = pair
    return f"{hit}/{n} ({hit / n:.0%})" if n else "–"


if __name__ == "__main__":
    print("| seed | arrivals | predictions | inadmissible | starts now right | flavor right | ETA interval "
          "covers | fork admission time, median error |")
    print("|---|---|---|---|---|---|---|---|")
    for rate in (0.0, 20.0):
        for seed in (1, 2, 3):
            r = run(seed, rate)
            err = r.fork_errors
            med = f"{statistics.median(err) / 60:.0f} min ({len(err)})" if err else "–"
            print(f"| {seed} | {rate:g}/h | {len(r.cases)} | {sum(not c.predicted['admissible'] for c in r.cases)} "
                  f"| {_pct(r.starts_now_right)} | {_pct(r.flavor_right)} | {_pct(r.eta_covered)} | {med} |",
                  flush=True)
