"""Validation of Kueue writes against the real Kueue CRDs, the way the API server applies them.

The CRDs are another project's files (test data in `<repo>/../shared/kueue`, or `$TAUDASH_KUEUE_CRDS`
pointing at that `kueue` folder) and are read at run time, never copied here. `SchemaSet.load()`
indexes every CRD of one version folder by (group, kind, version); a version's schema is compiled
on first use (`structural.compile_schema`) and cached. Without the folder the simulator runs
unvalidated and says so once (docs/decisions.md).

What a write goes through (`SchemaSet.check`), in the API server's order: nulls of non-nullable
fields dropped, unknown fields pruned (refused with `fieldValidation=Strict`), `default`s applied,
then structural validation (`type`, `nullable`, `x-kubernetes-int-or-string`, `enum`, `format`
int32/int64/date-time, `minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems`,
`minProperties`/`maxProperties`, `pattern`, `required`, `additionalProperties`,
`x-kubernetes-list-type` set/map uniqueness; `x-kubernetes-preserve-unknown-fields` and
`x-kubernetes-embedded-resource` keep what they keep) and the CEL rules.

CEL rules (`x-kubernetes-validations`) of the Workload, ClusterQueue, LocalQueue, Cohort,
ResourceFlavor, AdmissionCheck, Topology and MultiKueue CRDs of v0.15.8 and main-ff69552, both
versions — every one of them is evaluated (`cel.py` implements the subset they use):
- Workload: `status.clusterName` only without `nominatedClusterNames`; `clusterName` immutable once set
  (transition); `minCount <= count`; `priorityClassName`/`priorityClassRef` needs `priority`;
  priorityClassRef group/kind pairs; immutability of queueName, priorityClassSource/Name/Ref and
  maximumExecutionTimeSeconds while quota is reserved / admitted (transition rules on the root);
  podSetAssignments count equals podSets count once admitted; topologyAssignment slice shapes;
  podSetUpdates toleration rules.
- ClusterQueue: borrowingLimit needs a cohort; flavorFungibility preference needs TryNextFlavor;
  preemption reclaim/borrow pairing; each flavor covers exactly the coveredResources. Cohort: the last one.
- LocalQueue `spec.clusterQueue` and AdmissionCheck `spec.controllerName` immutable (transition).
- ResourceFlavor: topologyName needs nodeLabels and is immutable (transition); taint/toleration effects
  and operators.
- Topology: levels immutability (transition), hostname last, no duplicates.
- MultiKueueCluster: exactly one cluster source. MultiKueueConfig: no duplicate clusters.
Deliberately skipped: a rule outside the subset (a function or construct `cel.py` does not know,
`messageExpression`, `optionalOldSelf`, `fieldPath`) is never evaluated; it is counted in
`Outcome.rules_skipped` / `SchemaSet.skipped` and listed by `SchemaSet.skipped_rules()` — none of
the rules in the two CRD folders above is skipped today. Transition rules run only on an update
whose old value correlates (object fields, map keys, list-type=map items), as in the API server.
An update ratchets like the API server (CRDValidationRatcheting, on by default since 1.30): a
value equal to the stored one is left as stored and not validated again, unless a transition rule
lies at or below it. Not done: ObjectMeta validation beyond what ObjectDB checks, CEL cost limits,
`messageExpression`, defaulting on read (seeded objects are stored as the snapshot has them).
"""

from __future__ import annotations

import copy
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from taudash.sim.kueue_versions import kueue_version
from taudash.sim.schema.structural import Cause, Node, Outcome, compile_schema, validate

log = logging.getLogger(__name__)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader reads the 3 MB of CRDs ~10x faster

ENV_VAR = "TAUDASH_KUEUE_CRDS"
# The CRD folder of the default Kueue release (taudash/sim/kueue_versions.py picks the folder per
# release: one setting, `SimServer(kueue_version=...)`, drives what is served and what validates).
DEFAULT_CRD_VERSION = kueue_version().crd_folder

__all__ = ["ENV_VAR", "DEFAULT_CRD_VERSION", "Cause", "Outcome", "SchemaSet", "crd_root", "repo_root"]


def repo_root() -> Path:
    """The checkout this package runs from: taudash/sim/schema/ sits three levels below it (an
    installed wheel has no such root beside shared/, so the default finds nothing there)."""
    return Path(__file__).resolve().parents[3]


def crd_root() -> Path:
    """The `kueue` test-data folder: $TAUDASH_KUEUE_CRDS, else `<repo root>/../shared/kueue`."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else repo_root().parent / "shared" / "kueue"


_SHARED: dict[tuple[str, str], SchemaSet | None] = {}


@dataclass
class _Crd:
    group: str
    kind: str
    plural: str
    storage: str
    schemas: dict[str, dict[str, Any]]  # version → openAPIV3Schema


@dataclass
class SchemaSet:
    """The CRDs of one Kueue release folder, compiled on demand."""

    folder: Path
    crds: dict[tuple[str, str], _Crd]  # (group, kind) → CRD
    _compiled: dict[tuple[str, str, str], Node] = field(default_factory=dict)
    skipped: int = 0  # CEL rules not evaluated (outside the subset), summed over every check

    @classmethod
    def load(cls, folder: str | Path | None = None, version: str = DEFAULT_CRD_VERSION) -> SchemaSet:
        """Every CRD under `<folder>/crds/<version>/`; `folder` defaults to `crd_root()`.

        Raises FileNotFoundError when the folder is absent."""
        root = Path(folder) if folder is not None else crd_root()
        path = root / "crds" / version
        if not path.is_dir():
            raise FileNotFoundError(f"Kueue CRDs not found: {path} (set ${ENV_VAR} to the kueue folder)")
        crds: dict[tuple[str, str], _Crd] = {}
        for file in sorted(path.glob("*.yaml")):
            doc = yaml.load(file.read_text(), Loader=_LOADER)  # noqa: S506 - a safe loader
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            schemas = {v["name"]: v["schema"]["openAPIV3Schema"] for v in spec["versions"] if v.get("served", True)}
            storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
            crds[(spec["group"], spec["names"]["kind"])] = _Crd(spec["group"], spec["names"]["kind"],
                                                                 spec["names"]["plural"], storage, schemas)
        if not crds:
            raise FileNotFoundError(f"no CustomResourceDefinition in {path}")
        return cls(path, crds)

    @classmethod
    def shared(cls, folder: str | Path | None = None, version: str = DEFAULT_CRD_VERSION) -> SchemaSet | None:
        """One SchemaSet per (folder, version) for the process (compiled schemas are reused by
        every simulator started in it); None when the folder is absent, logged once."""
        root = (Path(folder) if folder is not None else crd_root()).resolve()
        key = (str(root), version)
        if key not in _SHARED:
            try:
                _SHARED[key] = cls.load(root, version)
            except FileNotFoundError as exc:
                log.warning("%s: the simulator runs without schema validation", exc)
                _SHARED[key] = None
        return _SHARED[key]

    def describe(self) -> str:
        return f"Kueue writes validated against the CRDs in {self.folder}"

    def covers(self, group: str, kind: str) -> bool:
        return (group, kind) in self.crds

    def versions(self, group: str, kind: str) -> tuple[str, ...]:
        crd = self.crds.get((group, kind))
        return tuple(crd.schemas) if crd else ()

    def storage_version(self, group: str, kind: str) -> str | None:
        crd = self.crds.get((group, kind))
        return crd.storage if crd else None

    def node(self, group: str, kind: str, version: str) -> Node | None:
        key = (group, kind, version)
        node = self._compiled.get(key)
        if node is None:
            crd = self.crds.get((group, kind))
            if crd is None or version not in crd.schemas:
                return None
            node = self._compiled[key] = compile_schema(crd.schemas[version])
        return node

    def check(self, group: str, kind: str, version: str, obj: dict[str, Any],
              old: dict[str, Any] | None = None) -> Outcome | None:
        """Prune, default and validate `obj` in place; None when no CRD covers (group, kind, version)."""
        node = self.node(group, kind, version)
        if node is None:
            return None
        out = validate(node, obj, old)
        self.skipped += out.rules_skipped
        return out

    def unknown_fields(self, group: str, kind: str, version: str, obj: dict[str, Any]) -> list[str]:
        """The fields `obj` has that version's schema does not know (nothing is changed)."""
        node = self.node(group, kind, version)
        if node is None:
            return []
        return validate(node, copy.deepcopy(obj)).unknown

    def skipped_rules(self) -> list[tuple[str, str, str, str]]:
        """(kind, version, rule, why) of every rule of the folder that is not evaluated."""
        out = []
        for crd in self.crds.values():
            for version in crd.schemas:
                node = self.node(crd.group, crd.kind, version)
                for rule, why in _walk_rules(node):
                    out.append((crd.kind, version, rule, why))
        return out


def _walk_rules(node: Node | None):
    if node is None:
        return
    for r in node.rules:
        if r.program is None:
            yield r.source, r.skip_reason
    for child in (node.properties or {}).values():
        yield from _walk_rules(child)
    yield from _walk_rules(node.items)
    yield from _walk_rules(node.additional)
