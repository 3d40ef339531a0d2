"""FederatedResourceQuota: a namespace's quota across all members, optionally split per cluster.

Role: Karmada's quota kind under `policy.karmada.io/v1alpha1`, accepted verbatim. `overall`
is the namespace total; each `staticAssignments` entry becomes a plain ResourceQuota in
that member. Fed by `policies.loading` and the REST API; feeds quota accounting (admission
against `overall`) and the propagator (member ResourceQuotas).

Why the rules are checked here: Karmada's webhook demands that every assigned resource
appears in `overall` and that assignments add up to no more than it. Names are compared
after normalisation (`requests.nvidia.com/gpu` is `nvidia.com/gpu`), because quota YAML
uses both spellings and a mismatch must not slip through.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from federation.resources import ResourceList
from policies.models.base import FrozenModel, KubeObject
from policies.models.common import Notice, RuleError, RuleErrors

__all__ = ["FederatedResourceQuota", "FederatedResourceQuotaSpec", "StaticClusterAssignment"]


class StaticClusterAssignment(FrozenModel):
    """The hard limits written as a ResourceQuota into one member cluster."""

    cluster_name: str = Field(min_length=1, description="The member cluster.")
    hard: ResourceList = Field(description="Limits of the ResourceQuota written there.")


class FederatedResourceQuotaSpec(FrozenModel):
    """`overall` (required) and the optional per-cluster static split."""

    overall: ResourceList = Field(description="The namespace's total across all members.")
    static_assignments: list[StaticClusterAssignment] = Field(
        default_factory=list,
        description="Per-cluster limits; each resource must be in overall, sums within it.",
    )

    @model_validator(mode="after")
    def _assignments_fit(self) -> FederatedResourceQuotaSpec:
        """Every broken rule, reported together (the loader gives each its own line)."""
        problems: list[RuleError] = []
        seen: dict[str, int] = {}
        for index, assignment in enumerate(self.static_assignments):
            if assignment.cluster_name in seen:
                problems.append(
                    RuleError(
                        f"cluster {assignment.cluster_name!r} is assigned twice"
                        f" (also staticAssignments[{seen[assignment.cluster_name]}])",
                        at=("staticAssignments", index, "clusterName"),
                    )
                )
            seen.setdefault(assignment.cluster_name, index)
            problems.extend(
                RuleError(
                    f"resource {name!r} is assigned but not present in overall",
                    at=("staticAssignments", index, "hard", name),
                )
                for name in assignment.hard
                if name not in self.overall
            )
        total = ResourceList()
        for assignment in self.static_assignments:
            total = total + assignment.hard
        for name, amount in total.items():
            limit = self.overall.amount(name)
            if name in self.overall and amount > limit:
                problems.append(
                    RuleError(
                        f"static assignments of {name!r} add up to"
                        f" {_show(name, amount)}, more than overall {_show(name, limit)}",
                        at=("overall", name),
                    )
                )
        if len(problems) == 1:
            raise problems[0]
        if problems:
            raise RuleErrors(problems)
        return self


def _show(name: str, milli: int) -> str:
    return ResourceList({name: milli}).to_wire()[name]


def counted_at_admission(name: str) -> bool:
    """Whether admission can hold `overall.<name>`: it charges what pods request (cpu,
    memory, ephemeral storage, hugepages, devices), not object counts or limits."""
    if name in ("cpu", "memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return True
    return "/" in name and not name.startswith(("count/", "limits."))


class FederatedResourceQuota(KubeObject):
    """Namespaced quota across the federation."""

    api_version: Literal["policy.karmada.io/v1alpha1"] = "policy.karmada.io/v1alpha1"
    kind: Literal["FederatedResourceQuota"] = "FederatedResourceQuota"
    spec: FederatedResourceQuotaSpec

    def warnings(self) -> list[Notice]:
        """`overall` entries admission does not count: silently unenforced otherwise (a
        `pods: 2` let four pods in)."""
        assigned = {n for a in self.spec.static_assignments for n in a.hard}
        out = []
        for name in sorted(self.spec.overall):
            if counted_at_admission(name):
                continue
            members = (
                "; each member still enforces its staticAssignments share"
                if name in assigned
                else "; give it in staticAssignments to have members enforce it"
            )
            out.append(
                Notice(
                    ("spec", "overall", name),
                    f"{name} is not counted at admission (fedctl counts what pods request:"
                    f" cpu, memory, ephemeral-storage, hugepages and devices){members}",
                )
            )
        return out
