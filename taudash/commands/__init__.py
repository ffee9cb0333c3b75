"""The sub-commands, one module each; each exposes `register(sub)`, called in the order below (the order
`taudash --help` lists them). The options they share live in options.py."""

from __future__ import annotations


def register_all(sub) -> None:
    from . import (
        bench,
        capacity,
        dashboard,
        deploy,
        export,
        history,
        profiles,
        rehearse,
        serve,
        sim,
        status,
        whatif,
        why,
        workflow,
    )

    for module in (status, dashboard, profiles, sim, export, workflow, bench, history, serve, why, capacity, whatif,
                   rehearse, deploy):
        module.register(sub)
