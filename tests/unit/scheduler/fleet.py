"""Builders for scheduler tests: clusters with node flavors, workloads, queues, pending jobs,
Bindings, and a store whose transactions fail on cue."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from federation import errors
from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob, PendingStore
from federation.quota.accounting import Usage
from federation.registry import keys
from federation.registry import store as st
from federation.resources import ResourceList
from federation.scheduler import cycle
from federation.settings import SchedulerSettings
from policies.models.base import ObjectMeta
from policies.models.binding import (
    Binding,
    BindingSpec,
    BindingStatus,
    EvictionTask,
    TargetCluster,
    WorkloadReference,
)
from policies.models.cluster import (
    APIEnablement,
    APIResource,
    Cluster,
    ClusterSpec,
    ClusterStatus,
    Condition,
    NodeFlavor,
    Prices,
    PriceTable,
    Taint,
)
from policies.models.frq import FederatedResourceQuota
from policies.models.placement_ext import FedctlPlacement
from policies.models.propagation import Placement
from policies.models.queue import Queue
from policies.models.workload import Workload

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
GPU = "nvidia.com/gpu"
NPU = "huawei.com/Ascend910"


def rl(**amounts: str) -> ResourceList:
    return ResourceList.from_wire({k.replace("_", "/"): v for k, v in amounts.items()})


def flavor(
    *,
    arch: str = "amd64",
    chip: str | None = None,
    resource: str | None = None,
    cpu: str = "16",
    memory: str = "64Gi",
    devices: int = 0,
    nodes: int = 2,
    largest_devices: int | None = None,
    free_devices: int | None = None,
) -> NodeFlavor:
    res = resource or (GPU if chip and chip.startswith("nvidia") else NPU if chip else None)
    one: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": "110"}
    if res:
        one[res] = str(devices)
    alloc = ResourceList.from_wire(one)
    free = alloc.scaled(nodes)
    largest = alloc
    if res and free_devices is not None:
        free = (
            free - ResourceList({res: free.amount(res)}) + ResourceList({res: free_devices * 1000})
        )
    if res and largest_devices is not None:
        largest = (
            largest
            - ResourceList({res: largest.amount(res)})
            + ResourceList({res: largest_devices * 1000})
        )
    return NodeFlavor(
        arch=arch,
        accelerator_model=chip,
        accelerator_resource=res,
        allocatable=alloc,
        node_count=nodes,
        free=free,
        largest_free=largest,
    )


def cluster(
    name: str,
    *flavors: NodeFlavor,
    region: str = "us-east",
    zone: str | None = None,
    provider: str | None = "aws",
    labels: dict[str, str] | None = None,
    taints: list[Taint] | None = None,
    ready: bool = True,
    cpu_price: str = "0.05",
    gpu_prices: dict[str, str] | None = None,
    spot: dict[str, Any] | None = None,
    apis: list[tuple[str, str]] | None = None,
) -> Cluster:
    prices = Prices(
        on_demand=PriceTable(
            cpu=Decimal(cpu_price),
            memory=Decimal("0.005"),
            accelerators={k: Decimal(v) for k, v in (gpu_prices or {}).items()},
        ),
        spot=PriceTable(**spot) if spot else None,
    )
    status = ClusterStatus(
        conditions=[
            Condition(type="Ready", status="True" if ready else "False", last_transition_time=NOW)
        ],
        flavors=list(flavors or (flavor(),)),
        api_enablements=[
            APIEnablement(group_version=gv, resources=[APIResource(name=k.lower(), kind=k)])
            for gv, k in (apis or [])
        ],
    )
    return Cluster(
        metadata=ObjectMeta(name=name, labels=labels or {}),
        spec=ClusterSpec(
            region=region, zone=zone, provider=provider, taints=taints or [], prices=prices
        ),
        status=status,
    )


def workload(
    name: str,
    *,
    kind: str = "Job",
    namespace: str = "team",
    cpu: str = "1",
    memory: str = "1Gi",
    gpus: int = 0,
    resource: str = GPU,
    replicas: int = 1,
    chips: str = "",
    queue: str | None = None,
    priority: int | str | None = None,
    duration: str | None = None,
    uid: str | None = None,
) -> Workload:
    annotations = {}
    if chips:
        annotations["fedctl.io/chips"] = chips
    if queue:
        annotations["fedctl.io/queue"] = queue
    if priority is not None:
        annotations["fedctl.io/priority"] = str(priority)
    if duration:
        annotations["fedctl.io/expected-duration"] = duration
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests[resource] = str(gpus)
    pod = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    api, spec = ("batch/v1", {"parallelism": replicas, "template": {"spec": pod}})
    if kind == "Deployment":
        api, spec = ("apps/v1", {"replicas": replicas, "template": {"spec": pod}})
    return Workload.model_validate(
        {
            "apiVersion": api,
            "kind": kind,
            "metadata": {
                "name": name,
                "namespace": namespace,
                "annotations": annotations,
                "uid": uid,
            },
            "spec": spec,
        }
    )


def respec(w: Workload, **fields: Any) -> Workload:
    """`w` re-applied with `fields` set in its spec (`suspend=True`: suspended)."""
    raw: dict[str, Any] = w.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw["spec"] = {**raw["spec"], **fields}
    return Workload.model_validate(raw)


def job(
    w: Workload,
    *,
    placement: dict[str, Any] | None = None,
    fedctl: dict[str, Any] | None = None,
    seq: int = 0,
    default_queue: str = "default",
) -> PendingJob:
    ref = keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.metadata.name)
    return PendingJob(
        ref=ref,
        workload=w,
        queue=w.queue or default_queue,
        priority=w.priority or 0,
        priority_class=w.priority_class or "",
        seq=seq,
        placement=Placement.model_validate(placement) if placement is not None else None,
        fedctl=FedctlPlacement.model_validate(fedctl) if fedctl is not None else None,
    )


def queue(name: str, **spec: Any) -> Queue:
    return Queue.model_validate({"metadata": {"name": name}, "spec": spec})


def frq(namespace: str, **overall: str) -> FederatedResourceQuota:
    return FederatedResourceQuota.model_validate(
        {
            "metadata": {"name": "quota", "namespace": namespace},
            "spec": {"overall": {k.replace("_", "/"): v for k, v in overall.items()}},
        }
    )


DYNAMIC_WEIGHT = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {"dynamicWeight": "AvailableReplicas"},
}
"""Karmada's replica scheduling that divides replicas by free room."""


def run(
    clusters: list[Cluster],
    jobs: list[PendingJob],
    *,
    queues: list[Queue] = (),  # type: ignore[assignment]
    quotas: list[FederatedResourceQuota] = (),  # type: ignore[assignment]
    usage: Usage | None = None,
    settings: SchedulerSettings | None = None,
    snapshot: snap.Snapshot | None = None,
) -> cycle.CycleResult:
    pending = PendingStore()
    for j in jobs:
        pending.add(j)
    snapshot = snapshot or snap.build(clusters, queues=queues, quotas=quotas)
    scheduler = cycle.Scheduler(settings or SchedulerSettings())
    return scheduler.run_cycle(snapshot, pending, usage or Usage(), NOW)


def placed(result: cycle.CycleResult) -> dict[str, dict[str, int]]:
    return {a.ref.name: dict(a.placement) for a in result.admitted}


def bound(namespace: str, name: str, *, cluster: str = "a", replicas: int = 1) -> Binding:
    """A Job's Binding, Scheduled on `cluster`."""
    return Binding(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=BindingSpec(
            workload=WorkloadReference(
                api_version="batch/v1", kind="Job", namespace=namespace, name=name
            ),
            clusters=[TargetCluster(name=cluster, replicas=replicas)],
        ),
        status=BindingStatus(phase="Scheduled", last_scheduled_time=NOW),
    )


def evicted(
    binding: Binding, reason: str = "preempted by team/urgent (priority 10, queue qa)"
) -> Binding:
    """`binding` as a preemption leaves it: Pending, each cluster's copy purged at once."""
    tasks = [
        EvictionTask(
            cluster=t.name,
            reason=reason,
            creation_time=NOW,
            replicas=t.replicas,
            purge_mode="Directly",
        )
        for t in binding.spec.clusters
    ]
    return binding.model_copy(
        update={
            "spec": binding.spec.model_copy(update={"clusters": [], "eviction_tasks": tasks}),
            "status": BindingStatus(phase="Pending", reason=reason),
        }
    )


class FailingCommits:
    """A store whose transactions fail before they apply, as while etcd restarts, wherever
    `fails` says so (it gets the operations); every other call goes to `store`."""

    def __init__(self, store: Any, fails: Callable[[Sequence[st.Op]], bool]) -> None:
        self.store, self.fails, self.refused = store, fails, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def commit(self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()) -> Any:
        if self.fails(ops):
            self.refused += 1
            raise errors.Unavailable("etcd restarting")
        return await self.store.commit(ops, guards=guards)
