"""RBAC as the simulated API server enforces it with `--rbac` (SimServer(rbac=True)): Roles, ClusterRoles
and their bindings, stored like any object, decide every request of a user who is not an administrator.

The rules are Kubernetes' own (RBAC is additive; there is no deny): a ClusterRoleBinding grants its
ClusterRole's rules everywhere, a RoleBinding grants its Role's (or a ClusterRole's) rules in its own
namespace. A rule matches when its verbs, apiGroups and resources (`plural`, `plural/subresource`, or
`*`) name the request, and its resourceNames (if any) name the object. Subjects are a User by name, a
Group the user is in, or a ServiceAccount (`system:serviceaccount:NS:NAME`). Every authenticated user
may read discovery and ask who it is and what it may do (Kubernetes' system:discovery and
system:basic-user); members of system:masters (the simulator's kubeconfig administrator) may do all.
SelfSubjectAccessReview and SelfSubjectRulesReview are answered from the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taudash.sim.errors import Forbidden
from taudash.sim.objects import ObjectDB

MASTERS = "system:masters"
SA_PREFIX = "system:serviceaccount:"
# What every authenticated user may do (Kubernetes' system:basic-user), listed by SelfSubjectRulesReview.
BASIC_RULES: tuple[dict[str, Any], ...] = (
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]},
)
DISCOVERY_RULES: tuple[dict[str, Any], ...] = (
    {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/version", "/healthz",
                                           "/livez", "/readyz", "/openapi", "/openapi/*"]},
)


@dataclass(frozen=True)
class Attributes:
    """One request as RBAC sees it."""

    verb: str
    group: str
    resource: str  # the plural
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def forbidden(self, user: str) -> Forbidden:
        """403 in the API server's words."""
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        qualified = f"{what}.{self.group}" if self.group else what
        obj = f'{qualified} "{self.name}"' if self.name else qualified
        scope = f' in the namespace "{self.namespace}"' if self.namespace else " at the cluster scope"
        details: dict[str, Any] = {"kind": self.resource}
        if self.group:
            details["group"] = self.group
        if self.name:
            details["name"] = self.name
        return Forbidden(f'{obj} is forbidden: User "{user}" cannot {self.verb} resource "{what}" in API group '
                         f'"{self.group}"{scope}', details=details)


def service_account_user(namespace: str, name: str) -> tuple[str, tuple[str, ...]]:
    """The user name and groups a ServiceAccount's token authenticates as."""
    return (f"{SA_PREFIX}{namespace}:{name}",
            ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"))


def _subject_matches(subject: dict[str, Any], user: str, groups: tuple[str, ...], binding_ns: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name == user)
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        return user == f"{SA_PREFIX}{subject.get('namespace') or binding_ns}:{name}"
    return False


def _rule_matches(rule: dict[str, Any], a: Attributes) -> bool:
    def has(values: Any, value: str) -> bool:
        return isinstance(values, list) and ("*" in values or value in values)

    if not has(rule.get("verbs"), a.verb) or not has(rule.get("apiGroups"), a.group):
        return False
    resources = rule.get("resources") or []
    if a.subresource:
        wanted = {f"{a.resource}/{a.subresource}", f"*/{a.subresource}", f"{a.resource}/*", "*"}
    else:
        wanted = {a.resource, "*"}
    if not wanted & set(resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or a.name in names


class Authorizer:
    """Decides requests from the Roles, ClusterRoles and bindings stored in the ObjectDB, as they are now."""

    def __init__(self, db: ObjectDB) -> None:
        self.db = db

    def _role_rules(self, ref: dict[str, Any], binding_ns: str) -> list[dict[str, Any]]:
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "ClusterRole":
            role = self.db.peek("clusterroles", name)
        elif kind == "Role" and binding_ns:
            role = self.db.peek("roles", name, binding_ns)
        else:
            role = None
        rules = (role or {}).get("rules") or []
        return [r for r in rules if isinstance(r, dict)]

    def rules(self, user: str, groups: tuple[str, ...], namespace: str) -> list[dict[str, Any]]:
        """The rules that apply to the user in `namespace` ("" = the cluster scope only)."""
        out: list[dict[str, Any]] = []
        bindings = [(b, "") for b in self.db.list("clusterrolebindings")]
        if namespace:
            bindings += [(b, namespace) for b in self.db.list("rolebindings", namespace)]
        for binding, ns in bindings:
            subjects = binding.get("subjects") or []
            if any(isinstance(s, dict) and _subject_matches(s, user, groups, ns) for s in subjects):
                out += self._role_rules(binding.get("roleRef") or {}, ns)
        return out

    def allowed(self, user: str, groups: tuple[str, ...], a: Attributes) -> bool:
        if MASTERS in groups:
            return True
        if a.group in ("authorization.k8s.io", "authentication.k8s.io") and a.verb == "create" and any(
                _rule_matches(r, a) for r in BASIC_RULES):
            return True
        return any(_rule_matches(r, a) for r in self.rules(user, groups, a.namespace))

    def check(self, user: str, groups: tuple[str, ...], a: Attributes) -> None:
        if not self.allowed(user, groups, a):
            raise a.forbidden(user)

    def rules_review(self, user: str, groups: tuple[str, ...], namespace: str) -> dict[str, Any]:
        """SelfSubjectRulesReview's status: what the user may do in `namespace`."""
        if MASTERS in groups:
            resource_rules: list[dict[str, Any]] = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
        else:
            resource_rules = [{k: list(r[k]) for k in ("verbs", "apiGroups", "resources", "resourceNames") if r.get(k)}
                              for r in (*BASIC_RULES, *self.rules(user, groups, namespace))
                              if r.get("resources")]
        return {"resourceRules": resource_rules, "nonResourceRules": [dict(r) for r in DISCOVERY_RULES],
                "incomplete": False}
