"""Work, WorkloadStatus and QuotaStatus: what the propagator writes about a workload.

Role: a `Work` is the manifest rendered for one member cluster plus what happened when it
was applied there (stored under `/fedctl/works/<cluster>/<ns>/<kind>/<name>`); a
`WorkloadStatus` folds every Work of one workload into per-cluster readiness and an overall
health (`/fedctl/workloadstatus/...`); a `QuotaStatus` is the aggregated hard/used of a
FederatedResourceQuota's member ResourceQuotas (`/fedctl/policystatus/...`). Fed by the
propagator's workers; feeds `fedctl get/describe workloads`, failover (is the new
placement ready yet?) and the scheduler (a finished job releases its queue usage).

Why the manifest is kept in the Work: after a restart the propagator compares what it
would render now with what it applied last, so an unchanged Work costs no member call, and
`fedctl describe` can show exactly what a member was asked to run.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import AwareDatetime, Field

from federation.resources import ResourceList
from policies.models.base import FrozenModel, KubeObject
from policies.models.binding import WorkloadReference

__all__ = [
    "FINISHED_PHASES",
    "ClusterQuota",
    "ClusterWorkloadStatus",
    "Event",
    "Health",
    "Observed",
    "QuotaStatus",
    "Work",
    "WorkCondition",
    "WorkSpec",
    "WorkStatus",
    "WorkloadStatus",
]

Health = Literal["Healthy", "Progressing", "Unhealthy", "Completed", "Failed", "Unknown"]


class WorkCondition(FrozenModel):
    """A condition, Kubernetes style: a Work's Applied / Healthy, or a job's Complete,
    Succeeded or Failed as its member reports it (`Observed.conditions`)."""

    type: str = Field(min_length=1)
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    last_transition_time: AwareDatetime | None = None


class Observed(FrozenModel):
    """What the member says about one applied object, read through the kind's interpreter."""

    health: Health = "Unknown"
    replicas: int | None = Field(default=None, description="Desired replicas or pods there.")
    ready_replicas: int | None = Field(default=None, description="Ready replicas there.")
    phase: str | None = Field(default=None, description="Phase of a job or pod.")
    running: int = Field(default=0, ge=0, description="Job pods running.")
    succeeded: int = Field(default=0, ge=0, description="Job pods that succeeded.")
    failed: int = Field(default=0, ge=0, description="Job pods that failed.")
    message: str = ""
    start_time: AwareDatetime | None = Field(
        default=None,
        description="A job's status.startTime there; across members the earliest, as"
        " Karmada aggregates a Job's.",
    )
    completion_time: AwareDatetime | None = Field(
        default=None,
        description="A job's status.completionTime there; across members the latest, and"
        " only once every copy completed (Karmada's rule for a Job).",
    )
    conditions: list[WorkCondition] = Field(
        default_factory=list,
        description="A job's finishing conditions there that are True (a Job's Complete or"
        " Failed, a PyTorchJob's Succeeded or Failed) with the member's reason; across"
        " members, Failed once any copy failed (its reason, or JobFailed when copies failed"
        " for different ones) and Complete or Succeeded once every copy did.",
    )


class WorkSpec(FrozenModel):
    """The rendered manifest for one member and where it came from."""

    cluster: str = Field(min_length=1, description="Member cluster the manifest goes to.")
    workload: WorkloadReference
    binding_revision: int = Field(ge=0, description="Registry revision of the Binding used.")
    manifest: dict[str, Any] = Field(description="The object applied to the member.")
    preserve_on_deletion: bool = Field(
        default=False,
        description="Keep the member copy, released from fedctl, when the template is"
        " deleted: the claiming policy's preserveResourcesOnDeletion.",
    )
    propagate_deps: bool = Field(
        default=False,
        description="The claiming policy's propagateDeps: the copy's dependencies go where"
        " it is. Kept, with the fields beside it, for a workload no policy claims any more,"
        " whose copies go on as they were (Karmada's ResourceBinding keeps them too).",
    )
    suspend_dispatching: bool = Field(
        default=False,
        description="The claiming policy suspends dispatching to this cluster"
        " (`spec.suspension`): the member's copy is left as it is (not created, updated,"
        " restored or removed) until the suspension is lifted; the manifest is what it"
        " will be given then.",
    )


class WorkStatus(FrozenModel):
    """Whether the manifest is applied and what the member reports about it."""

    applied: bool = False
    applied_revision: int | None = Field(
        default=None, description="binding_revision of the manifest last applied successfully."
    )
    applied_hash: str | None = Field(default=None, description="Digest of that manifest.")
    applied_state: str | None = Field(
        default=None,
        description="Digest of the labels, annotations and data entries the last apply"
        " gave the copy (and, for a kind without a generation, its spec fields), as the"
        " member showed them; a different one seen there means they were changed there.",
    )
    applied_generation: int | None = Field(
        default=None,
        description="The copy's metadata.generation once that manifest was applied; a higher"
        " one seen in the member means its spec was edited there, and the manifest is applied"
        " again.",
    )
    resource_version: str | None = Field(default=None, description="Member resourceVersion.")
    conditions: list[WorkCondition] = Field(
        default_factory=list, description="The Work's Applied and Healthy conditions."
    )
    observed: Observed = Field(default_factory=Observed)
    error: str = Field(default="", description="Why the last apply failed or was refused.")


class Work(KubeObject):
    """`fedctl.io/v1alpha1` Work."""

    api_version: Literal["fedctl.io/v1alpha1"] = "fedctl.io/v1alpha1"
    kind: Literal["Work"] = "Work"
    spec: WorkSpec
    status: WorkStatus = Field(default_factory=WorkStatus)


class ClusterWorkloadStatus(Observed):
    """One member's share of a workload.

    Every Work is listed, but two kinds of row stay out of the workload's totals (see
    `propagation.status.aggregate`): a copy on a member the placement no longer targets
    (`leaving`: a graceful eviction keeps it running until the new placement is ready),
    which would count the same replicas twice, and a copy on a member that is not Ready
    (`stale`), whose last report nobody can confirm.
    """

    cluster: str = Field(min_length=1)
    applied: bool = False
    error: str = ""
    leaving: bool = Field(
        default=False,
        description="The Binding no longer targets this member: the copy stays only until"
        " its eviction task ends (or its removal there succeeds). Listed, never counted.",
    )
    stale: bool = Field(
        default=False,
        description="The member is not Ready, so its last report may no longer hold:"
        " health Unknown and nothing counted ready or running until it reports again.",
    )
    suspended: bool = Field(
        default=False,
        description="Dispatching to this member is suspended by the claiming policy: its"
        " copy (if any) is left as it is, so it may run an older manifest.",
    )

    @property
    def up(self) -> bool:
        """Serving, done, or (a batch job, which reports Progressing until it ends) with its
        pods running: what failover and drills wait for on a workload's new cluster."""
        if self.stale:
            return False
        return self.health in ("Healthy", "Completed") or self.running > 0


FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
"""Job phases after which nothing of the workload runs any more."""


class WorkloadStatus(FrozenModel):
    """The workload across every member it was propagated to."""

    workload: WorkloadReference
    health: Health = "Unknown"
    replicas: int | None = None
    ready_replicas: int | None = None
    phase: str | None = None
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    start_time: AwareDatetime | None = None
    completion_time: AwareDatetime | None = None
    conditions: list[WorkCondition] = Field(
        default_factory=list,
        description="The job's finishing condition across its copies (`Observed.conditions`).",
    )
    binding_revision: int = 0
    clusters: list[ClusterWorkloadStatus] = Field(default_factory=list)
    required_by: list[str] = Field(
        default_factory=list,
        description="The workloads (ns/Kind.group/name) whose policy propagates this object"
        " as a dependency (propagateDeps): it goes to the clusters they run on.",
    )
    missing_dependencies: list[str] = Field(
        default_factory=list,
        description="Objects the pod template references (ns/Kind/name) that the federation"
        " does not hold, so propagateDeps cannot send them: each member must have its own.",
    )


class ClusterQuota(FrozenModel):
    """One member ResourceQuota written for a FederatedResourceQuota."""

    cluster: str = Field(min_length=1)
    hard: ResourceList = Field(default_factory=ResourceList)
    used: ResourceList = Field(default_factory=ResourceList)
    applied: bool = False
    error: str = ""


class QuotaStatus(FrozenModel):
    """A FederatedResourceQuota's status: member quotas and their sum."""

    overall: ResourceList = Field(default_factory=ResourceList)
    overall_used: ResourceList = Field(default_factory=ResourceList)
    aggregated_status: list[ClusterQuota] = Field(default_factory=list)


class Event(FrozenModel):
    """Why something happened to a workload or its copy in a member (kept about an hour)."""

    type: Literal["Normal", "Warning"] = "Normal"
    reason: str = Field(
        min_length=1, description="CamelCase, e.g. Applied, ApplyFailed, Preempted, Evicted."
    )
    message: str = ""
    cluster: str | None = None
    object: str = Field(description="The workload, ns/Kind.group/name.")
    source: str = Field(
        default="propagator",
        description="The controller that wrote it: propagator, scheduler or failover.",
    )
    time: AwareDatetime = Field(description="When it first happened (firstTimestamp).")
    count: int = Field(
        default=1,
        ge=1,
        description=(
            "How many times it happened: a failure the propagator meets again at each retry"
            " (same reason and message) counts here, as a Kubernetes event's count does,"
            " instead of reading as a one-off from long ago."
        ),
    )
    last_time: AwareDatetime | None = Field(
        default=None,
        description="When it last happened (lastTimestamp); unset while it happened once.",
    )

    def last_seen(self) -> dt.datetime:
        """When it last happened: what orders events, as kubectl orders them."""
        return self.last_time or self.time
