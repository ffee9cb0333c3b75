"""Which cluster a journal belongs to: the API server URL plus a stable fingerprint.

A context name says nothing about the cluster behind it (two kubeconfigs can both call theirs
`prod`; the simulator names every run's context the same). The fingerprint is the `kube-system`
Namespace UID: created with the cluster, never renamed, readable with a plain GET. When it cannot
be read (403/404/error) the identity is the server URL alone, and says so (docs/decisions.md, "Journals are
bound to a cluster identity").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ClusterIdentity:
    server: str
    uid: str | None = None  # kube-system Namespace UID; None when it could not be read
    note: str = ""  # why the UID is missing

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"server": self.server, "uid": self.uid}
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_dict(cls, data: Any) -> ClusterIdentity | None:
        if not isinstance(data, dict) or not data.get("server"):
            return None
        return cls(str(data["server"]), data.get("uid") or None, str(data.get("note") or ""))

    def describe(self) -> str:
        if self.uid:
            return f"{self.server} (kube-system uid {self.uid})"
        return f"{self.server} (server URL only{': ' + self.note if self.note else ''})"

    def same_cluster(self, other: ClusterIdentity) -> bool:
        """Both UIDs known: the UID decides (one cluster may be reached through several URLs, and one
        URL may front a rebuilt cluster). Otherwise only the server URL is left to compare."""
        if self.uid and other.uid:
            return self.uid == other.uid
        return self.server.rstrip("/") == other.server.rstrip("/")


def resume_refusal(header: dict[str, Any], context: str | None, here: ClusterIdentity | None) -> str | None:
    """Why a journal (its header) must not be resumed on this connection, or None when it may.

    Fail closed: a journal bound to a cluster resumes only on that cluster; an older journal that
    recorded only a context name resumes only where both the context and the server match, and it
    never recorded a server, so it is refused unless a `server` was written beside the context."""
    wid = header.get("id", "?")
    recorded = ClusterIdentity.from_dict(header.get("cluster"))
    if here is None:
        return f"workflow {wid}: this connection's cluster identity is unknown: refusing to resume"
    if recorded is not None:
        if recorded.same_cluster(here):
            return None
        return (f"workflow {wid} ran on cluster {recorded.describe()} (context {header.get('context') or '-'}); "
                f"this is cluster {here.describe()} (context {context or '-'}): resume it on its own cluster; "
                "nothing was written here")
    old_server = header.get("server")
    if header.get("context") == context and old_server and str(old_server).rstrip("/") == here.server.rstrip("/"):
        return None
    why = "it recorded no server URL" if not old_server else f"it ran against server {old_server}"
    return (f"workflow {wid} was journaled before cluster identities (context {header.get('context') or '-'} only; "
            f"{why}): it cannot be proven to belong to {here.describe()} (context {context or '-'}); "
            "nothing was written here — abort it and start a new workflow")
