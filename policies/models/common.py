"""Karmada's shared selector and placement vocabulary, accepted verbatim from policy YAML.

Role: the building blocks that PropagationPolicy, OverridePolicy and the static weight list
share (resource selectors, label and field selectors, cluster affinity, tolerations, spread
constraints, replica scheduling). Field names and enum values follow
`karmada-io/karmada pkg/apis/policy/v1alpha1` exactly, so a Karmada user's YAML loads as is.
Fed by `policies.loading` (YAML) and the REST API (JSON); feeds the scheduler's affinity,
taint, spread and division steps, and the propagator's override rules.

Why the cross-field rules live here and raise `RuleError`: Karmada's webhook refuses these
combinations at admission; fedctl refuses them at load time instead, and `RuleError.at`
lets the loader point at the offending field rather than at the whole mapping.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import Field, ValidationInfo, model_validator

from policies.models.base import FrozenModel
from policies.models.rules import (
    Labels,
    PathPart,
    RuleError,
    RuleErrors,
    key_value_problems,
    label_value_problem,
    qualified_name_problem,
    raise_all,
    stored,
)

__all__ = [
    "ClusterAffinity",
    "ClusterAffinityTerm",
    "ClusterPreferences",
    "FieldSelector",
    "FieldSelectorRequirement",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Notice",
    "PathPart",
    "ReplicaSchedulingStrategy",
    "ResourceSelector",
    "RuleError",
    "RuleErrors",
    "SpreadConstraint",
    "StaticClusterWeight",
    "Toleration",
    "label_value_problem",
    "qualified_name_problem",
    "raise_all",
]


@dataclass(frozen=True)
class Notice:
    """A warning about a valid document: `path` is relative to the document root."""

    path: tuple[PathPart, ...]
    message: str


class LabelSelectorRequirement(FrozenModel):
    """One `matchExpressions` entry of a Kubernetes label selector."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_match_operator(self, info: ValidationInfo) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise RuleError(f"operator {self.operator} needs at least one value", at=("values",))
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise RuleError(f"operator {self.operator} takes no values", at=("values",))
        if stored(info):
            return self
        # A key or value no label can have matches nothing: Karmada's webhook refuses it.
        problems: list[RuleError] = []
        problem = qualified_name_problem(self.key)
        if problem:
            message = f"label key {self.key!r} is not a qualified name: {problem}"
            problems.append(RuleError(message, at=("key",)))
        for i, value in enumerate(self.values):
            problem = label_value_problem(value)
            if problem:
                message = f"label value {value!r} of {self.key!r} is not valid: {problem}"
                problems.append(RuleError(message, at=("values", i)))
        raise_all(problems)
        return self


class LabelSelector(FrozenModel):
    """Kubernetes `metav1.LabelSelector`: every label and every expression must match."""

    match_labels: Labels = Field(
        default_factory=dict,
        description="Labels that must all be present with these values (Kubernetes label"
        " keys and values).",
    )
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class FieldSelectorRequirement(FrozenModel):
    """A cluster field match; Karmada allows only provider/region/zone with In/NotIn."""

    key: Literal["provider", "region", "zone"]
    operator: Literal["In", "NotIn"]
    values: list[str] = Field(min_length=1)


class FieldSelector(FrozenModel):
    """Select member clusters by their provider, region or zone."""

    match_expressions: list[FieldSelectorRequirement] = Field(default_factory=list)


class ResourceSelector(FrozenModel):
    """Which resource templates a policy applies to; `name` wins over `labelSelector`."""

    api_version: str = Field(min_length=1)
    kind: str = Field(min_length=1)
    namespace: str | None = None
    name: str | None = None
    label_selector: LabelSelector | None = None


COMMON_KINDS: Final = frozenset(
    {
        *("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "CronJob", "Pod"),
        *("PyTorchJob", "Namespace", "ConfigMap", "Secret", "Service", "ServiceAccount"),
        *("PersistentVolumeClaim", "Ingress", "NetworkPolicy", "PodDisruptionBudget"),
        *("HorizontalPodAutoscaler", "Role", "RoleBinding", "ClusterRole"),
        *("ClusterRoleBinding", "ResourceQuota", "LimitRange", "CustomResourceDefinition"),
    }
)
"""Kinds selectors commonly name: the workloads fedctl reads and what teams propagate
with them. Any other kind is allowed (a custom resource); one close to these is warned."""

_BY_LOWER = {kind.lower(): kind for kind in COMMON_KINDS}


def selector_notices(selectors: Sequence[ResourceSelector]) -> list[Notice]:
    """A selector whose kind looks like a misspelt common kind (`Deploymnet`,
    `deployment`): valid, since members may serve a custom resource of any name, but
    such a policy silently selects nothing, so it is said where the policy is edited."""
    found: list[Notice] = []
    for i, selector in enumerate(selectors):
        kind = selector.kind
        if kind in COMMON_KINDS:
            continue
        close = _BY_LOWER.get(kind.lower()) or next(
            iter(difflib.get_close_matches(kind, sorted(COMMON_KINDS), n=1, cutoff=0.8)), None
        )
        if close is not None:
            found.append(
                Notice(
                    ("spec", "resourceSelectors", i, "kind"),
                    f"{kind!r} is not a kind fedctl knows (did you mean {close!r}?): it selects"
                    " nothing unless the members serve a custom resource of that name",
                )
            )
    return found


class ClusterAffinity(FrozenModel):
    """A filter over member clusters; every set part must match, `exclude` removes names."""

    label_selector: LabelSelector | None = Field(
        default=None, description="Clusters whose labels match."
    )
    field_selector: FieldSelector | None = Field(
        default=None, description="Clusters whose provider, region or zone match."
    )
    cluster_names: list[str] = Field(
        default_factory=list, description="Only these clusters (empty: any cluster)."
    )
    exclude: list[str] = Field(default_factory=list, description="Never these clusters.")


class ClusterAffinityTerm(ClusterAffinity):
    """One named group of the ordered `clusterAffinities` fallback list."""

    affinity_name: str = Field(min_length=1, max_length=32)

    @model_validator(mode="after")
    def _qualified_name(self) -> ClusterAffinityTerm:
        problem = qualified_name_problem(self.affinity_name)
        if problem:
            raise RuleError(
                f"affinityName {self.affinity_name!r} is not a qualified name: {problem}",
                at=("affinityName",),
            )
        return self


class Toleration(FrozenModel):
    """Kubernetes `corev1.Toleration`, matched against cluster taints."""

    key: str | None = Field(
        default=None,
        description="The taint key; Karmada's cluster.karmada.io/not-ready and"
        " cluster.karmada.io/unreachable match fedctl's cluster.fedctl.io/ taints of the"
        " same name.",
    )
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    toleration_seconds: int | None = None

    @model_validator(mode="after")
    def _exists_has_no_value(self, info: ValidationInfo) -> Toleration:
        if self.operator == "Exists" and self.value:
            raise RuleError("operator Exists takes no value", at=("value",))
        if not self.key and self.operator != "Exists":
            raise RuleError("an empty key needs operator Exists", at=("operator",))
        if not stored(info):
            raise_all(key_value_problems("toleration", self.key, self.value))
        return self


class SpreadConstraint(FrozenModel):
    """Spread over groups of clusters formed by a cluster field or a cluster label."""

    spread_by_field: Literal["cluster", "region", "zone", "provider"] | None = Field(
        default=None, description="Group clusters by this field (default: cluster)."
    )
    spread_by_label: str | None = Field(
        default=None, description="Group clusters by this label key instead of a field."
    )
    max_groups: int = Field(default=0, ge=0, description="At most this many groups (0: no cap).")
    min_groups: int = Field(default=1, ge=0, description="At least this many groups.")

    @model_validator(mode="after")
    def _one_grouping(self, info: ValidationInfo) -> SpreadConstraint:
        problems: list[RuleError] = []
        if self.spread_by_label and not stored(info):
            problems += key_value_problems(
                "spreadByLabel", self.spread_by_label, None, key_at="spreadByLabel"
            )
        if self.spread_by_field and self.spread_by_label:
            problems.append(
                RuleError(
                    "spreadByField and spreadByLabel cannot both be set", at=("spreadByLabel",)
                )
            )
        if self.max_groups and self.min_groups > self.max_groups:
            problems.append(
                RuleError(
                    f"minGroups ({self.min_groups}) must not exceed maxGroups ({self.max_groups})",
                    at=("minGroups",),
                )
            )
        raise_all(problems)
        return self

    @property
    def grouping(self) -> str:
        """The effective grouping: the field, `label:<key>`, or Karmada's default `cluster`."""
        if self.spread_by_label:
            return f"label:{self.spread_by_label}"
        return self.spread_by_field or "cluster"


class StaticClusterWeight(FrozenModel):
    """Weight for the clusters a target matches; the highest matching weight wins."""

    target_cluster: ClusterAffinity = Field(description="The clusters this weight applies to.")
    weight: int = Field(gt=0, description="Relative share of the replicas (> 0).")


class ClusterPreferences(FrozenModel):
    """Static weights, or a dynamic weight factor (which overrides the static list)."""

    static_weight_list: list[StaticClusterWeight] = Field(default_factory=list)
    dynamic_weight: Literal["AvailableReplicas"] | None = None


class ReplicaSchedulingStrategy(FrozenModel):
    """How replicas are given to the selected clusters (Karmada's default type is Divided)."""

    replica_scheduling_type: Literal["Duplicated", "Divided"] = Field(
        default="Divided",
        description="Duplicated: every cluster gets all replicas; Divided: they are shared.",
    )
    replica_division_preference: Literal["Aggregated", "Weighted"] | None = Field(
        default=None,
        description="Aggregated: as few clusters as possible; Weighted (default): by weight.",
    )
    weight_preference: ClusterPreferences | None = Field(
        default=None, description="Static weights or a dynamic weight factor."
    )

    @property
    def division(self) -> Literal["Aggregated", "Weighted"]:
        """The effective preference: Karmada's webhook defaults Divided to Weighted."""
        return self.replica_division_preference or "Weighted"

    @property
    def steady(self) -> bool:
        """Divided aggregated or by dynamic weights: Karmada's Steady division, which keeps
        the replicas where they stand, so a member coming back gets no share by itself
        (drills judge such a service by it; the scheduler's `division` says the same)."""
        weights = self.weight_preference
        return self.replica_scheduling_type == "Divided" and (
            self.division == "Aggregated" or (weights is not None and bool(weights.dynamic_weight))
        )

    def notices(self) -> list[Notice]:
        """Settings that load but have no effect, said aloud rather than dropped."""
        found: list[Notice] = []
        if self.replica_scheduling_type == "Duplicated" and (
            self.replica_division_preference or self.weight_preference
        ):
            found.append(
                Notice(
                    ("replicaDivisionPreference",),
                    "ignored: replicas are not divided when replicaSchedulingType is Duplicated",
                )
            )
        prefs = self.weight_preference
        if prefs is not None and prefs.dynamic_weight and prefs.static_weight_list:
            found.append(
                Notice(
                    ("weightPreference", "staticWeightList"),
                    "ignored: dynamicWeight is set, so the static weight list has no effect",
                )
            )
        return found
