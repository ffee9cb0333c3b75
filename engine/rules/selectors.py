"""Label selection shared by every rule: ResourceFlavor nodeLabels and namespace selectors."""

from __future__ import annotations

from collections.abc import Mapping

from ..model.base import LabelSelector


def labels_match(required: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Every required key/value is present. An empty requirement selects everything
    (ResourceFlavor nodeLabels semantics)."""
    return all(labels.get(k) == v for k, v in required.items())


class SelectorError(ValueError):
    """An operator the rules do not understand: callers fail closed."""


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: None matches nothing, an empty selector everything."""
    if selector is None:
        return False
    if not labels_match(selector.match_labels, labels):
        return False
    for req in selector.match_expressions:
        op = req.operator
        present = req.key in labels
        if op == "In":
            if not (present and labels[req.key] in req.values):
                return False
        elif op == "NotIn":
            if present and labels[req.key] in req.values:
                return False
        elif op == "Exists":
            if not present:
                return False
        elif op == "DoesNotExist":
            if present:
                return False
        else:
            raise SelectorError(f"unsupported label selector operator {op!r}")
    return True
