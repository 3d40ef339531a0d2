"""Binding: where the scheduler placed a workload, and why.

Role: the record the scheduler writes (and failover amends) under
`/fedctl/bindings/<ns>/<kind>/<name>`: the target clusters with their replicas, the chip
chosen in each, the estimated cost per hour, an explanation of every cluster's verdict,
a status (Pending with the precise reason, or Scheduled) and the graceful-eviction tasks
failover adds later. Fed by the scheduling cycle and the binder; feeds the propagator
(what to render where), failover (what runs where) and `fedctl get`.

Why one document with an explanation inside: a user asking "why is my job on bj-npu-1" or
"why is it still pending" must get the answer from the object itself, not from logs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Literal

from pydantic import AwareDatetime, Field

from federation.resources import ResourceList
from policies.models.base import FrozenModel, KubeObject

__all__ = [
    "CLAIMED_BY",
    "Binding",
    "BindingSpec",
    "BindingStatus",
    "ClusterVerdict",
    "EvictionTask",
    "TargetCluster",
    "WorkloadReference",
    "handover",
    "hourly_total",
    "known_cost",
]

CLAIMED_BY = "fedctl.io/policy"
"""Annotation of a Binding: the policy that claimed its workload (`scheduler.plan.policy_id`),
which keeps it as in Karmada while it exists and selects it (`scheduler.plan.claimant`);
failover and the propagator read the policy's terms from it too. Empty: the policy that
claimed an admitted workload is gone and none has claimed it since; it stays where it is.
Absent: claimed by none, or written before claims were recorded."""


class WorkloadReference(FrozenModel):
    """The workload this binding places."""

    api_version: str = Field(min_length=1)
    kind: str = Field(min_length=1)
    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    uid: str | None = None


class TargetCluster(FrozenModel):
    """One member that runs replicas of the workload."""

    name: str = Field(min_length=1, description="Member cluster name.")
    replicas: int = Field(ge=0, description="Replicas placed there.")
    chip: str | None = Field(default=None, description="Chip model or arch chosen there.")
    hourly_cost: Decimal | None = Field(
        default=None, description="Estimated cost per hour of these replicas there."
    )


class ClusterVerdict(FrozenModel):
    """One cluster's outcome for this workload: filtered (by which plugin, why) or scored."""

    cluster: str
    verdict: Literal["ok", "unschedulable", "error"]
    plugin: str | None = Field(default=None, description="The filter that said no.")
    reasons: list[str] = Field(default_factory=list)
    score: int | None = Field(default=None, description="Weighted total, 0-100.")
    scores: dict[str, int] = Field(default_factory=dict, description="Per score plugin, 0-100.")
    selected: bool = False


class EvictionTask(FrozenModel):
    """A cluster the workload is leaving, or running fewer replicas on, kept until the new
    placement is ready."""

    cluster: str = Field(min_length=1)
    reason: str = ""
    creation_time: AwareDatetime
    replicas: int = Field(
        default=0,
        ge=0,
        description="The replicas its copy there runs while the task lasts: all it ran, or"
        " for a member the new placement keeps with fewer, the count it keeps until the"
        " replicas moved elsewhere are ready.",
    )
    purge_mode: Literal["Immediately", "Graciously", "Gracefully", "Directly", "Never"] = (
        "Gracefully"
    )
    producer: Literal["", "ApplicationFailover"] = Field(
        default="",
        description="ApplicationFailover: the workload was unhealthy there, so the scheduler"
        " keeps off the cluster for as long as the task lasts, which is past its copy's"
        " removal until the graceful timeout (or gracePeriodSeconds, if longer) has passed"
        " since the eviction; empty: a taint, preemption or fail-back evicted it.",
    )
    grace_period_seconds: int | None = Field(
        default=None, gt=0, description="How long the old copy may wait (else the global timeout)."
    )
    nowhere_since: AwareDatetime | None = Field(
        default=None,
        description="When failover found the workload placed nowhere else (the Binding's"
        " Pending reason says why). A Gracefully kept copy on a member that answers is then"
        " the workload's last: it stays past the graceful timeout until the workload is"
        " placed elsewhere and ready there, as a drain waits on a PodDisruptionBudget.",
    )

    @property
    def at_once(self) -> bool:
        """Purge mode Directly (or its old spelling): the old copy goes at once. Failover,
        the propagator and the scheduler's eviction bar all judge a task by it."""
        return self.purge_mode in ("Directly", "Immediately")

    @property
    def from_application(self) -> bool:
        """Left by application failover: the workload failed on that member."""
        return self.producer == "ApplicationFailover"

    def keeps(self, placed: int | None) -> bool:
        """Whether this task holds its copy at `replicas` on a member the new placement
        still targets with `placed` replicas (None: not a target): a graceful handover of
        a share that shrank. Scaled down at once, the member lost replicas before the ones
        moved elsewhere ran, and the workload served with fewer than it had."""
        return placed is not None and not self.at_once and placed < self.replicas


class BindingSpec(FrozenModel):
    """The placement decision."""

    workload: WorkloadReference
    queue: str = "default"
    priority: int = 0
    clusters: list[TargetCluster] = Field(default_factory=list)
    hourly_cost: Decimal | None = Field(default=None, description="All targets together.")
    explanation: list[ClusterVerdict] = Field(
        default_factory=list,
        description="Scheduled: the chosen clusters and the best three runners-up. Pending:"
        " the verdicts of up to 20 clusters, those that came nearest first (passed every"
        " filter, then turned down by the last filters).",
    )
    filtered_summary: dict[str, int] = Field(
        default_factory=dict, description="Clusters filtered out, counted by plugin."
    )
    eviction_tasks: list[EvictionTask] = Field(default_factory=list)
    replicas: int | None = Field(
        default=None,
        ge=0,
        description="The workload's replicas when it was placed, or those it waits to run"
        " while Pending, as Karmada's ResourceBinding records the template's (unset: not"
        " recorded): a workload kept where its deleted policy placed it is placed again"
        " once scaled.",
    )
    pod_requests: dict[str, str] = Field(
        default_factory=dict,
        description="One replica's requests when it was placed: the room each copy it runs"
        " holds, for placing it again after its pods are resized (empty: not recorded).",
    )

    def placed_pod(self) -> ResourceList | None:
        """`pod_requests` read, or None when not recorded or not readable (written by hand):
        the copies are then taken as the workload's current pods."""
        if not self.pod_requests:
            return None
        try:
            return ResourceList.from_wire(self.pod_requests)
        except ValueError:
            return None


class BindingStatus(FrozenModel):
    """Whether the workload is placed, and if not, exactly why."""

    phase: Literal["Pending", "Scheduled"] = "Pending"
    reason: str = ""
    last_scheduled_time: AwareDatetime | None = None
    scheduler_observing_affinity_name: str | None = Field(
        default=None,
        description="The `clusterAffinities` group the workload was placed in (unset: its"
        " policy has no such groups), as Karmada's ResourceBinding records it.",
    )


class Binding(KubeObject):
    """`fedctl.io/v1alpha1` Binding."""

    api_version: Literal["fedctl.io/v1alpha1"] = "fedctl.io/v1alpha1"
    kind: Literal["Binding"] = "Binding"
    spec: BindingSpec
    status: BindingStatus = Field(default_factory=BindingStatus)

    def placement(self) -> dict[str, int]:
        """Cluster name -> replicas."""
        return {t.name: t.replicas for t in self.spec.clusters}


def handover(
    old: Mapping[str, int], new: Mapping[str, int], *, reason: str, now: dt.datetime
) -> list[EvictionTask]:
    """Gracefully-purged tasks for a move from placement `old` to `new`: one for each
    member that drops out (its copy runs on as it is) or keeps fewer replicas (it keeps
    as many as it ran, up to its new share plus the replicas added elsewhere), so nothing
    it ran goes before the replicas that replace it are ready (`graceful.judge`).

    None when no member gains replicas: a scale-down moves nothing, and the replicas it
    sheds are not replaced anywhere to wait for.
    """
    added = sum(max(n - old.get(name, 0), 0) for name, n in new.items())
    if added <= 0:
        return []
    tasks = []
    for name, ran in sorted(old.items()):
        now_there = new.get(name, 0)
        if now_there >= ran:
            continue
        kept = ran if now_there == 0 else min(ran, now_there + added)
        tasks.append(
            EvictionTask(
                cluster=name,
                reason=reason,
                creation_time=now,
                replicas=kept,
                purge_mode="Gracefully",
            )
        )
    return tasks


def known_cost(targets: Sequence[TargetCluster]) -> Decimal:
    """What the targets whose cost is known cost together per hour: what a queue's budget
    counts for work already placed (an unpriced target counts nothing)."""
    return sum((t.hourly_cost for t in targets if t.hourly_cost is not None), Decimal(0))


def hourly_total(targets: Sequence[TargetCluster]) -> Decimal | None:
    """What the targets cost together per hour; unknown when any one's cost is.

    Recomputed whenever targets are dropped (an eviction, copies kept while the workload
    is placed again): the total copied from the Binding went on counting the cluster left.
    """
    if len(targets) == 1:
        return targets[0].hourly_cost
    costs = [t.hourly_cost for t in targets]
    if not costs or any(c is None for c in costs):
        return None
    return sum((c for c in costs if c is not None), Decimal(0))
