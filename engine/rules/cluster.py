"""TauCluster and TauTeam condition summaries, and findings for data that cannot be read."""

from collections.abc import Iterable
from datetime import datetime

from ..model import BY_KIND, Condition, TauCluster, TauTeam
from ..store import Access, AccessState
from .base import Finding, RuleContext, Severity, ViewModel, finding
from .eta import human
from .workspaces import ConditionRow


class ClusterSummary(ViewModel):
    name: str
    generation: int = 0
    observed_generation: int = 0
    phase: str = ""
    management_mode: str = ""
    capacity_team: str | None = None
    conditions: list[ConditionRow] = []


class TeamSummary(ViewModel):
    name: str
    phase: str = ""
    cohort: str | None = None
    quota_declared: bool = False
    conditions: list[ConditionRow] = []


def _rows(conds: Iterable[Condition]) -> list[ConditionRow]:
    return [ConditionRow(type=c.type, status=c.status, reason=c.reason, message=c.message) for c in conds]


def derive_cluster(ctx: RuleContext) -> tuple[ClusterSummary | None, list[Finding]]:
    tc = ctx.store.get(TauCluster, "cluster")
    if tc is None:
        return None, []
    findings: list[Finding] = []
    for c in tc.status.conditions:
        if c.type in ("NodesReady", "QueuesReady") and c.is_false:
            findings.append(
                finding(
                    Severity.WARNING,
                    "CLUSTER-NOT-READY",
                    "TauCluster",
                    tc.name,
                    None,
                    f"{c.type}=False {c.reason}: {c.message}",
                    "start from the condition reason and message",
                )
            )
    return (
        ClusterSummary(
            name=tc.name,
            generation=tc.metadata.generation,
            observed_generation=tc.status.observed_generation,
            phase=tc.status.phase,
            management_mode=tc.spec.management_mode,
            capacity_team=tc.capacity_team,
            conditions=_rows(tc.status.conditions),
        ),
        findings,
    )


def derive_teams(ctx: RuleContext) -> list[TeamSummary]:
    return [
        TeamSummary(
            name=t.name,
            phase=t.status.phase,
            cohort=t.status.cohort or None,
            quota_declared=bool(t.spec.quota),
            conditions=_rows(t.status.conditions),
        )
        for t in ctx.store.list(TauTeam, ctx.config.system_namespace)
    ]


def api_outage(states: dict[str, Access]) -> tuple[float | None, str] | None:
    """(since, why) when the whole API is lost: some kind is in Error and none is Synced, Syncing or
    Forbidden (a Forbidden answer means the server answered). None otherwise. `since` is the earliest
    moment a kind went stale (epoch seconds), `why` the first failing kind's message."""
    errors = [a for _, a in sorted(states.items()) if a.state is AccessState.ERROR]
    if not errors or any(a.state in (AccessState.SYNCED, AccessState.SYNCING, AccessState.FORBIDDEN)
                         for a in states.values()):
        return None
    stamps = [a.since for a in errors if a.since is not None]
    return (min(stamps) if stamps else None), next((a.message for a in errors if a.message), "")


def access_findings(ctx: RuleContext) -> list[Finding]:
    """One finding per kind that is forbidden or failing: verdicts that need it are Unknown. While the
    whole API is unreachable, one API-UNREACHABLE finding instead of one per kind."""
    outage = api_outage(ctx.store.access_states())
    if outage is not None:
        since, why = outage
        when = ""
        if since is not None:
            at = datetime.fromtimestamp(since, tz=ctx.now.tzinfo or datetime.now().astimezone().tzinfo)
            zone = "Z" if at.utcoffset() is not None and not at.utcoffset() else ""
            lost = ctx.now.timestamp() - since
            # "(0 s)" reads as "no time at all": the first second of an outage is "just now"
            when = f" since {at.strftime('%H:%M:%S')}{zone} ({'just now' if lost < 1 else 'for ' + human(lost)})"
        return [
            finding(
                Severity.CRITICAL,
                "API-UNREACHABLE",
                "Resource",
                "every resource",
                None,
                f"the Kubernetes API is unreachable{when}: every kind is stale, every verdict that needs "
                "fresh data is Unknown" + (f" — {why}" if why else ""),
                "check the API server, the network path and the kubeconfig; taudash reconnects on its own",
            )
        ]
    out = []
    for kind, acc in ctx.store.access_states().items():
        if acc.state not in (AccessState.FORBIDDEN, AccessState.ERROR):
            continue
        info = BY_KIND[kind]
        stale = ""
        if acc.since is not None:
            age = ctx.now.timestamp() - acc.since
            stale = f" (stale for {int(age)} s)"
        out.append(
            finding(
                Severity.WARNING,
                "DATA-UNREADABLE",
                "Resource",
                info.resource,
                None,
                f"{info.resource} is {acc.state.value}{stale}: verdicts that need it are Unknown"
                + (f" — {acc.message}" if acc.message else ""),
                "grant get/list/watch on it to the identity taudash uses, or check the API server",
            )
        )
    return out


class AccessEntry(ViewModel):
    resource: str
    state: str
    since: str | None = None
    message: str = ""


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def access_entries(ctx: RuleContext) -> list[AccessEntry]:
    """Each kind's access state, by resource name (the view's `access` list)."""
    access = [
        AccessEntry(resource=BY_KIND[k].resource, state=a.state.value, since=_iso(a.since), message=a.message)
        for k, a in ctx.store.access_states().items()
    ]
    return sorted(access, key=lambda a: a.resource)
