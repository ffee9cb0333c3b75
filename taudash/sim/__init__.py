"""The simulated TauGrid cluster: state (ObjectDB), a Kubernetes API server on loopback, faults.

See docs/simulator.md. `SimServer` is the one entry point most callers need.
"""

from taudash.sim.apiserver import ApiServer, RequestRecord
from taudash.sim.errors import ApiError
from taudash.sim.faults import Faults
from taudash.sim.objects import ObjectDB, Subscription, WatchEvent
from taudash.sim.server import SimOptions, SimServer, default_snapshot

__all__ = [
    "ApiError",
    "ApiServer",
    "Faults",
    "ObjectDB",
    "RequestRecord",
    "SimOptions",
    "SimServer",
    "Subscription",
    "WatchEvent",
    "default_snapshot",
]
