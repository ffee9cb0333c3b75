"""The `taudash/v1 WhatIfPrediction` document (docs/whatif.md, "The contract") and its table."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from taudash.engine.rules.base import RuleConfig
from taudash.engine.text import clean
from taudash.rehearse.fork import Fork

from .manifest import Manifest
from .predict import DEFAULT_HORIZON, DEFAULT_STEP, predict


def whatif(fork: Fork, manifest: Manifest, *, config: RuleConfig | None = None, horizon: float = DEFAULT_HORIZON,
           step: float = DEFAULT_STEP, seed: int = 0, source: str = "live") -> dict[str, Any]:
    body = predict(fork, manifest, config=config, horizon=horizon, step=step, seed=seed)
    return {
        "apiVersion": "taudash/v1",
        "kind": "WhatIfPrediction",
        "metadata": {"id": secrets.token_hex(3), "createdAt": datetime.now(UTC).isoformat(timespec="seconds"),
                     "forkedAt": datetime.fromtimestamp(fork.now, UTC).isoformat(timespec="seconds"),
                     "source": source, "context": fork.context, "cluster": fork.cluster},
        "spec": {"object": body.pop("object"), "horizonSeconds": horizon, "stepSeconds": step, "seed": seed,
                 "fork": {"objects": len(fork.objects), "partialKinds": list(fork.partial),
                          "access": dict(fork.access)}},
        "prediction": body,
        "writesToCluster": 0,
    }


def render_table(doc: dict[str, Any]) -> list[str]:
    p, o = doc["prediction"], doc["spec"]["object"]
    lines = [f"what if {o['kind']} {o['namespace']}/{o['name']} is submitted "
             f"(fork of {doc['metadata'].get('context') or doc['metadata']['source']}, "
             f"{doc['spec']['fork']['objects']} objects; nothing written to the cluster)"]
    if p["admissible"] is None:
        lines.append(f"  admissible:  unknown — {p['reason']['message']}")
    elif not p["admissible"]:
        lines.append(f"  admissible:  no — {p['reason']['code']}: {p['reason']['message']}")
    else:
        lines.append("  admissible:  yes")
    lines.append(f"  queue:       LocalQueue {p['localQueue'] or '-'} → ClusterQueue {p['clusterQueue'] or '-'}")
    prof = p.get("profile")
    if prof is not None:
        lines.append(f"  profile:     {prof['name'] or '-'} ({prof['selectedBy']}): {prof['message']}")
    if p["admissible"]:
        if p["flavors"]:
            for f in p["flavors"]:
                fl = ", ".join(f"{r} → {v}" for r, v in sorted(f["flavors"].items())) or "-"
                lines.append(f"  flavors:     {f['podSet']} ×{f['count']}: {fl}")
        lines.append(f"  starts now:  {'yes' if p['startsNow'] else 'no'}")
        pos = p.get("position")
        if pos:
            lines.append(f"  position:    {pos['localQueue']} in LocalQueue {p['localQueue']}, "
                         f"{pos['clusterQueue']} of {pos['of']} in ClusterQueue {p['clusterQueue']}")
        if p.get("eta"):
            lines.append(f"  eta:         {p['eta']['text']}")
        when = "    " if p["startsNow"] else " (once admitted)"
        for b in p["borrows"]:
            who = ", ".join(f"{x['name']} ({x['unused']} unused)" for x in b["from"]) or "the cohort"
            lines.append(f"  borrows{when}: {b['amount']} {b['resource']} of {b['flavor']} from {who}")
        lines.append(f"  preempts:    {len(p['preempts']) or 'nothing'}")
        for v in p["preempts"]:
            own = f" ({v['owner']['kind']} {v['owner']['name']})" if v.get("owner") else ""
            lines.append(f"    - {v['namespace']}/{v['name']}{own} {v['reason']}")
        if p.get("waiting"):
            w = p["waiting"]
            lines.append(f"  waiting:     {w['reason']}: {w['message']}")
    sim = p.get("simulation") or {}
    lines.append(f"  simulated {sim.get('simulatedSeconds', 0):.0f} s in {sim.get('wallSeconds', 0):.1f} s "
                 f"({sim.get('worldSteps', 0)} steps); writes to the cluster: {doc['writesToCluster']}")
    return [clean(x) for x in lines]
