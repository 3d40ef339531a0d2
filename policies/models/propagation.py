"""PropagationPolicy and ClusterPropagationPolicy: which templates go to which clusters.

Role: the Karmada policy kinds under `policy.karmada.io/v1alpha1`, accepted verbatim, and
the same kinds under `fedctl.io/v1alpha1`, which may also carry `spec.fedctl` (acceptable
chips and arches, expected duration, maximum hourly cost — what Karmada cannot say).
Fed by `policies.loading` and the REST API; feeds the scheduler (placement, replica
scheduling, priority) and the propagator and failover controllers.

Why warnings: some Karmada fields are parsed but not yet acted on by fedctl. Dropping
them in silence would let a user believe they work, so `warnings()` names each one that
is set to a non-default value. `NOT_ACTED_ON` is that list; the scheduler, propagator and
failover controllers shrink it as they learn the fields.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, model_validator

from policies.models.base import FrozenModel, KubeObject
from policies.models.common import (
    ClusterAffinity,
    ClusterAffinityTerm,
    Notice,
    ReplicaSchedulingStrategy,
    ResourceSelector,
    RuleError,
    SpreadConstraint,
    Toleration,
    raise_all,
    selector_notices,
)
from policies.models.placement_ext import FedctlPlacement
from policies.models.workload import BATCH_KINDS

__all__ = [
    "KARMADA_POLICY_API",
    "NOT_ACTED_ON",
    "ClusterPropagationPolicy",
    "FailoverBehavior",
    "FedctlClusterPropagationPolicy",
    "FedctlPropagationPolicy",
    "FedctlPropagationSpec",
    "Placement",
    "PropagationPolicy",
    "PropagationSpec",
]

KARMADA_POLICY_API: Final = "policy.karmada.io/v1alpha1"
FEDCTL_API: Final = "fedctl.io/v1alpha1"

# Spec fields (camelCase path below `spec`) that load but that fedctl does not act on yet,
# with the reason shown to the user. Remove an entry when a controller implements it.
NOT_ACTED_ON: dict[tuple[str, ...], str] = {
    ("association",): "deprecated in Karmada in favour of propagateDeps",
    ("dependentOverrides",): "fedctl does not wait for dependent overrides yet",
    ("schedulerName",): "fedctl has a single scheduler",
    ("activationPreference",): "lazy activation is not implemented yet",
    ("schedulePriority",): "use a queue or the fedctl.io/priority annotation instead",
    ("placement", "workloadAffinity"): "workload affinity is not implemented yet",
    ("failover", "application", "statePreservation"): "state preservation is not implemented",
    ("failover", "cluster", "statePreservation"): "state preservation is not implemented",
}


class DecisionConditions(FrozenModel):
    """When an unhealthy application is failed over (Karmada default 300 s)."""

    toleration_seconds: int | None = Field(default=None, ge=0)


class StatePreservationRule(FrozenModel):
    """A status field carried to the new cluster as a label on failover."""

    alias_label_name: str = Field(min_length=1)
    json_path: str = Field(min_length=1)


class StatePreservation(FrozenModel):
    """The status fields to keep across a failover."""

    rules: list[StatePreservationRule] = Field(min_length=1)


PurgeMode = Literal["Immediately", "Graciously", "Never", "Directly", "Gracefully"]


class ApplicationFailoverBehavior(FrozenModel):
    """Move an application away from a member where it stays Unhealthy for
    `decisionConditions.tolerationSeconds` (default 300).

    Karmada renamed the purge modes (Immediately/Graciously became Directly/Gracefully);
    both spellings are accepted.

    Only services are moved: batch work (Job, Volcano Job, PyTorchJob) reports Running,
    Succeeded or Failed, never Unhealthy, and a failed job is its outcome, not a member's.
    A workload Unhealthy on every one of two or more members stays where it is: the same
    failure everywhere is the workload's own.
    """

    decision_conditions: DecisionConditions = Field(default_factory=DecisionConditions)
    purge_mode: PurgeMode = "Graciously"
    grace_period_seconds: int | None = Field(
        default=None,
        gt=0,
        description="How long the old copy waits for the new placement to be ready"
        " (Gracefully only; default: the controller's graceful timeout, 600 s).",
    )
    state_preservation: StatePreservation | None = None

    @model_validator(mode="after")
    def _grace_only_when_graceful(self) -> ApplicationFailoverBehavior:
        if self.purge_mode == "Never":
            raise RuleError(
                "purgeMode Never is not supported yet: fedctl would have to keep the old copy"
                " until someone confirms its deletion; use Gracefully with gracePeriodSeconds",
                at=("purgeMode",),
            )
        graceful = self.purge_mode in ("Graciously", "Gracefully")
        if self.grace_period_seconds is not None and not graceful:
            raise RuleError(
                f"gracePeriodSeconds applies only to purgeMode Gracefully, not {self.purge_mode}",
                at=("gracePeriodSeconds",),
            )
        return self


class ClusterFailoverBehavior(FrozenModel):
    """How copies on a failed cluster are purged once the workload moved.

    Why `Never` is refused: a cluster failover that never removes the old copy would leave
    it running beside the new one for good (or, for a job, run it twice), and the copy
    could not be told apart from stale work when the member returns. Karmada's API refuses
    it here too; it exists only for application failover.
    """

    purge_mode: PurgeMode = "Gracefully"
    state_preservation: StatePreservation | None = None

    @model_validator(mode="after")
    def _never_is_for_applications(self) -> ClusterFailoverBehavior:
        if self.purge_mode == "Never":
            raise RuleError(
                "purgeMode Never applies only to application failover; a cluster failover"
                " purges the old copy Directly (at once) or Gracefully (once the workload is"
                " ready elsewhere)",
                at=("purgeMode",),
            )
        return self


class FailoverBehavior(FrozenModel):
    """Application- and cluster-level failover. Absent, cluster failover still evicts
    from a NoExecute-tainted cluster with purge mode Gracefully, as Karmada does."""

    application: ApplicationFailoverBehavior | None = None
    cluster: ClusterFailoverBehavior | None = None


class SuspendClusters(FrozenModel):
    """Clusters to which dispatching is paused."""

    cluster_names: list[str] = Field(default_factory=list)


class Suspension(FrozenModel):
    """Pause dispatching everywhere, or only to the named clusters (not both)."""

    dispatching: bool | None = None
    dispatching_on_clusters: SuspendClusters | None = None

    @model_validator(mode="after")
    def _all_or_some(self) -> Suspension:
        if self.dispatching and self.dispatching_on_clusters is not None:
            raise RuleError(
                "dispatching and dispatchingOnClusters cannot both be set",
                at=("dispatchingOnClusters",),
            )
        return self


class SchedulePriority(FrozenModel):
    """Where the scheduling priority of selected templates comes from."""

    priority_class_source: Literal[
        "KubePriorityClass", "PodPriorityClass", "FederatedPriorityClass"
    ]
    priority_class_name: str = ""


class Placement(FrozenModel):
    """Which clusters may run the template and how its replicas are shared among them."""

    cluster_affinity: ClusterAffinity | None = Field(
        default=None, description="Which clusters may be chosen (not with clusterAffinities)."
    )
    cluster_affinities: list[ClusterAffinityTerm] = Field(
        default_factory=list,
        description="Ordered fallback groups: the first group that can hold the workload wins.",
    )
    cluster_tolerations: list[Toleration] = Field(
        default_factory=list, description="Cluster taints this workload tolerates."
    )
    spread_constraints: list[SpreadConstraint] = Field(
        default_factory=list,
        description=(
            "Spread over clusters, regions, zones, providers or a label: a cluster"
            " constraint and at most one other (more warn, and leave workloads Pending)."
            " A group spread with no `spreadByField: cluster` beside it is a fedctl"
            " extension: Karmada refuses it."
        ),
    )
    replica_scheduling: ReplicaSchedulingStrategy | None = Field(
        default=None, description="How replicas are shared (absent: every cluster gets all)."
    )
    workload_affinity: dict[str, Any] | None = Field(
        default=None, description="Karmada alpha; accepted, not acted on yet."
    )

    @model_validator(mode="after")
    def _placement_rules(self) -> Placement:
        problems: list[RuleError] = []
        if self.cluster_affinity is not None and self.cluster_affinities:
            problems.append(
                RuleError(
                    "clusterAffinity and clusterAffinities cannot both be set",
                    at=("clusterAffinities",),
                )
            )
        seen: set[str] = set()
        for index, term in enumerate(self.cluster_affinities):
            if term.affinity_name in seen:
                problems.append(
                    RuleError(
                        f"duplicate affinityName {term.affinity_name!r}",
                        at=("clusterAffinities", index, "affinityName"),
                    )
                )
            seen.add(term.affinity_name)
        problems.extend(_repeated_spread_fields(self.spread_constraints))
        raise_all(problems)
        return self

    def notices(self) -> list[Notice]:
        """Spread constraints that load but will not do what they say, said at apply time
        rather than found later on a Pending workload or an unexpected placement."""
        constraints = self.spread_constraints
        if not constraints:
            return []
        if self.spread_ignored:
            weights = self.scheduling.weight_preference
            if weights is not None and weights.static_weight_list:
                how = "by static weights, which spread constraints do not bound (as in Karmada)"
            else:  # the user wrote no weights: naming "static weights" sent them looking
                how = (
                    "as Karmada divides without a weightPreference (equal static weights),"
                    " which ignores spread constraints"
                )
            return [Notice(("spreadConstraints",), f"ignored: replicas are divided {how}")]
        groups = [i for i, c in enumerate(constraints) if c.grouping != "cluster"]
        found = [
            Notice(
                ("spreadConstraints", i),
                "workloads this policy places stay Pending: fedctl spreads by one of region,"
                f" zone, provider or a label at a time, and spreadConstraints[{groups[0]}]"
                f" spreads by {_spread_words(constraints[groups[0]].grouping)[0]}",
            )
            for i in groups[1:]
        ]
        by_cluster = [i for i, c in enumerate(constraints) if c.grouping == "cluster"]
        if groups and by_cluster:
            group, cap = constraints[groups[0]], constraints[by_cluster[0]].max_groups
            if cap and group.min_groups > cap:
                found.append(
                    Notice(
                        ("spreadConstraints", by_cluster[0], "maxGroups"),
                        f"exceeded: as in Karmada, the best cluster of each of at least"
                        f" {group.min_groups} {_spread_words(group.grouping)[1]}"
                        f" (spreadConstraints[{groups[0]}]) is taken, more than {cap}",
                    )
                )
        return found

    @property
    def spread_ignored(self) -> bool:
        """Whether the scheduler ignores the spread constraints (Karmada's
        `shouldIgnoreSpreadConstraint`): replicas divided by weight and no dynamic weight,
        which fedctl, like Karmada, divides by static weights (equal ones when none are
        given). Every check of what a spread constraint does asks this first: a warning
        that one leaves work Pending, where none applies, contradicts the notice."""
        scheduling = self.scheduling
        weights = scheduling.weight_preference
        return (
            bool(self.spread_constraints)
            and scheduling.replica_scheduling_type == "Divided"
            and scheduling.division == "Weighted"
            and not (weights is not None and weights.dynamic_weight)
        )

    @property
    def scheduling(self) -> ReplicaSchedulingStrategy:
        """The effective strategy: Karmada duplicates replicas when none is given."""
        return self.replica_scheduling or ReplicaSchedulingStrategy(
            replica_scheduling_type="Duplicated"
        )

    @property
    def affinity_terms(self) -> list[ClusterAffinity]:
        """The affinities in the order the scheduler tries them (one term, or the list)."""
        if self.cluster_affinities:
            return list(self.cluster_affinities)
        return [self.cluster_affinity or ClusterAffinity()]


def _spread_words(grouping: str) -> tuple[str, str]:
    """How a grouping reads: ("region", "regions"), ("label rack", "values of label rack")."""
    if grouping.startswith("label:"):
        key = grouping.removeprefix("label:")
        return f"label {key}", f"values of label {key}"
    return grouping, f"{grouping}s"


def _repeated_spread_fields(constraints: list[SpreadConstraint]) -> list[RuleError]:
    """Karmada's webhook allows one constraint per spreadByField (one with neither field
    nor label counts as `cluster`, its default); fedctl's scheduler would otherwise refuse
    the policy at plan time, long after validation said it was fine."""
    first: dict[str, int] = {}
    problems: list[RuleError] = []
    for index, constraint in enumerate(constraints):
        if constraint.spread_by_label:
            continue
        by = constraint.spread_by_field or "cluster"
        if by not in first:
            first[by] = index
            continue
        where: tuple[str | int, ...] = ("spreadConstraints", index)
        if constraint.spread_by_field:
            where = (*where, "spreadByField")
        problems.append(
            RuleError(
                f"a second spread constraint by {by} (the first is spreadConstraints"
                f"[{first[by]}]): only one constraint per spreadByField is allowed",
                at=where,
            )
        )
    return problems


class PropagationSpec(FrozenModel):
    """Karmada's `PropagationSpec`, field for field."""

    resource_selectors: list[ResourceSelector] = Field(
        min_length=1, description="The resource templates this policy propagates (one or more)."
    )
    association: bool = Field(default=False, description="Deprecated: use propagateDeps.")
    propagate_deps: bool = Field(
        default=False,
        description="Also send the ConfigMaps, Secrets, PersistentVolumeClaims and"
        " ServiceAccounts its pods reference (those the federation holds) to the clusters"
        " it runs on, and take them off with it.",
    )
    placement: Placement = Field(
        default_factory=Placement, description="Where the templates go and how replicas split."
    )
    priority: int = Field(
        default=0, description="Higher wins when several policies match one template."
    )
    preemption: Literal["Always", "Never"] = Field(
        default="Never", description="Whether this policy may take over claimed templates."
    )
    dependent_overrides: list[str] = Field(
        default_factory=list, description="OverridePolicies that must exist first."
    )
    scheduler_name: str = Field(default="default-scheduler", description="Scheduler to use.")
    failover: FailoverBehavior | None = Field(
        default=None,
        description="How work leaves a failed cluster (absent: evicted from a NoExecute"
        " cluster, purge mode Gracefully).",
    )
    conflict_resolution: Literal["Abort", "Overwrite"] = Field(
        default="Abort",
        description="When the object already exists in a member: Abort, or Overwrite (adopt).",
    )
    activation_preference: Literal["Lazy"] | None = Field(
        default=None, description="Lazy: policy changes apply when a template next changes."
    )
    suspension: Suspension | None = Field(
        default=None,
        description="Pause dispatching to all or some clusters: their copies are left as"
        " they are (not created, updated or removed) until it is lifted.",
    )
    preserve_resources_on_deletion: bool | None = Field(
        default=None,
        description="Keep member copies when the template is deleted: they stay running,"
        " without fedctl's labels (copies leaving a cluster for other reasons still go).",
    )
    schedule_priority: SchedulePriority | None = Field(
        default=None, description="Where scheduling priority comes from (Karmada alpha)."
    )

    @model_validator(mode="after")
    def _failover_needs_deps(self) -> PropagationSpec:
        if self.failover is not None and self.failover.application and not self.propagate_deps:
            raise RuleError(
                "failover.application is set, so propagateDeps must be true",
                at=("propagateDeps",),
            )
        return self


class FedctlPropagationSpec(PropagationSpec):
    """Karmada's spec plus `fedctl`: chip, arch, duration and cost preferences."""

    fedctl: FedctlPlacement | None = Field(
        default=None, description="fedctl's chip, arch, duration and cost preferences."
    )


_DEFAULTS: dict[str, Any] = {
    "association": False,
    "dependentOverrides": [],
    "schedulerName": "default-scheduler",
    "preserveResourcesOnDeletion": False,
}


def _spec_notices(spec: PropagationSpec) -> list[Notice]:
    wire = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    found: list[Notice] = []
    for path, reason in NOT_ACTED_ON.items():
        value: Any = wire
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None or (len(path) == 1 and _DEFAULTS.get(path[0]) == value):
            continue
        field = ".".join(path)
        found.append(Notice(("spec", *path), f"{field} is accepted but not acted on: {reason}"))
    found.extend(
        Notice(("spec", "placement", *n.path), n.message) for n in spec.placement.notices()
    )
    found.extend(_gang_spread_notices(spec))
    scheduling = spec.placement.replica_scheduling
    if scheduling is not None:
        found.extend(
            Notice(("spec", "placement", "replicaScheduling", *n.path), n.message)
            for n in scheduling.notices()
        )
    return found


class _PropagationBase(KubeObject):
    spec: PropagationSpec

    def warnings(self) -> list[Notice]:
        """Fields set here that fedctl accepts but does not act on yet, and selectors of
        kinds that look misspelt."""
        return [*selector_notices(self.spec.resource_selectors), *_spec_notices(self.spec)]


class PropagationPolicy(_PropagationBase):
    """Namespaced policy: selects templates in its own namespace."""

    api_version: Literal["policy.karmada.io/v1alpha1"] = KARMADA_POLICY_API
    kind: Literal["PropagationPolicy"] = "PropagationPolicy"


class ClusterPropagationPolicy(_PropagationBase):
    """Cluster-scoped policy: may select cluster-scoped kinds and any namespace."""

    api_version: Literal["policy.karmada.io/v1alpha1"] = KARMADA_POLICY_API
    kind: Literal["ClusterPropagationPolicy"] = "ClusterPropagationPolicy"


class FedctlPropagationPolicy(_PropagationBase):
    """PropagationPolicy under fedctl.io, with the `spec.fedctl` placement extension."""

    api_version: Literal["fedctl.io/v1alpha1"] = FEDCTL_API
    kind: Literal["PropagationPolicy"] = "PropagationPolicy"
    spec: FedctlPropagationSpec


class FedctlClusterPropagationPolicy(_PropagationBase):
    """ClusterPropagationPolicy under fedctl.io, with `spec.fedctl`."""

    api_version: Literal["fedctl.io/v1alpha1"] = FEDCTL_API
    kind: Literal["ClusterPropagationPolicy"] = "ClusterPropagationPolicy"
    spec: FedctlPropagationSpec


def _gang_spread_notices(spec: PropagationSpec) -> list[Notice]:
    """A `minGroups` above 1 on a policy that selects a batch kind by name and does not
    divide it by weight: such a job goes whole to one cluster (a gang), so the constraint
    cannot hold for it and is passed over, which a user reading the policy would not
    guess. Said at apply time; the policy's other workloads still spread."""
    batch = [s.kind for s in spec.resource_selectors if (s.api_version, s.kind) in BATCH_KINDS]
    scheduling = spec.placement.scheduling
    if not batch or (
        scheduling.replica_scheduling_type == "Divided" and scheduling.division == "Weighted"
    ):
        return []
    return [
        Notice(
            ("spec", "placement", "spreadConstraints", i, "minGroups"),
            f"not applied to the {batch[0]}s this policy selects: a job goes whole to one"
            f" cluster unless its replicas are divided by weight, so it runs in one"
            f" {_spread_words(c.grouping)[0]}, not {c.min_groups}",
        )
        for i, c in enumerate(spec.placement.spread_constraints)
        if c.min_groups > 1
    ]
