"""What if I submit this? A Job, RayJob, Deployment or Workload predicted on a simulated fork of the
cluster before it is submitted (docs/whatif.md).

    m = parse(text)                                   # one object, or ManifestError (one line)
    doc = whatif(fork_store(store, now), m)           # the WhatIfPrediction; nothing is written anywhere

Uses the simulator and the rehearsal fork, so it lives in the program layer.
"""

from __future__ import annotations

from .document import whatif
from .manifest import Manifest, ManifestError, from_object, parse
from .predict import DEFAULT_HORIZON, DEFAULT_STEP, predict

__all__ = ["DEFAULT_HORIZON", "DEFAULT_STEP", "Manifest", "ManifestError", "from_object", "parse", "predict", "whatif"]
