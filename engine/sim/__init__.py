"""The simulated TauGrid cluster: state (ObjectDB), a Kubernetes API server on loopback, faults.

See docs/simulator.md. `SimServer` is the one entry point most callers need.
"""

from .apiserver import ApiServer, RequestRecord
from .errors import ApiError
from .faults import Faults
from .objects import ObjectDB, Subscription, WatchEvent
from .server import SimOptions, SimServer, default_snapshot

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
