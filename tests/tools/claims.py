"""Telling a workflow's claim writes (engine/workflows/claims.py) from its steps' own: tests that count a
step's writes leave the claims out; the claims tests count them."""

from __future__ import annotations

from typing import Any

from taudash.engine.workflows.claims import CLAIM_MANAGER

LEASES = "leases.coordination.k8s.io"


def claim_request(r: Any) -> bool:
    """A simulator request (RequestRecord) that writes a claim: a Lease, or the held-by mark on a target."""
    return r.resource == LEASES or f"fieldManager={CLAIM_MANAGER}" in (r.query or "")


def claim_record(rec: dict) -> bool:
    """An audit record of a claim write."""
    return rec.get("kind") == "Lease" or rec.get("fieldManager") == CLAIM_MANAGER
