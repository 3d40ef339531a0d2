"""Small builders for failover tests: statuses, bindings, tasks at readable times."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from federation.registry import codec, events, keys
from federation.registry import store as st
from policies.models.base import ObjectMeta
from policies.models.binding import (
    Binding,
    BindingSpec,
    BindingStatus,
    EvictionTask,
    TargetCluster,
    WorkloadReference,
)
from policies.models.cluster import ClusterStatus, Condition, Taint
from policies.models.work import Event

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    """T0 plus `seconds`."""
    return T0 + dt.timedelta(seconds=seconds)


def status(
    ready: Literal["True", "False", "Unknown"] | None,
    *,
    reason: str = "ReadyzFailed",
    since: float = 0.0,
    taints: list[Taint] | None = None,
) -> ClusterStatus:
    conditions = (
        []
        if ready is None
        else [Condition(type="Ready", status=ready, reason=reason, last_transition_time=at(since))]
    )
    return ClusterStatus(conditions=conditions, taints=taints or [])


def taint(key: str, effect: str = "NoExecute", *, added: float | None = 0.0) -> Taint:
    return Taint.model_validate(
        {"key": key, "effect": effect, "time_added": at(added) if added is not None else None}
    )


def binding(
    name: str = "web", *, clusters: dict[str, int], tasks: list[EvictionTask] | None = None
) -> Binding:
    return Binding(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=BindingSpec(
            workload=WorkloadReference(
                api_version="apps/v1", kind="Deployment", namespace="default", name=name
            ),
            clusters=[TargetCluster(name=c, replicas=r) for c, r in clusters.items()],
            eviction_tasks=tasks or [],
        ),
        status=BindingStatus(phase="Scheduled"),
    )


def namespace_binding(name: str, *, clusters: dict[str, int]) -> Binding:
    """The Binding of the cluster-scoped Namespace `name`."""
    plain = binding(name, clusters=clusters)
    workload = plain.spec.workload.model_copy(
        update={"api_version": "v1", "kind": "Namespace", "namespace": "_"}
    )
    return plain.model_copy(update={"spec": plain.spec.model_copy(update={"workload": workload})})


def task(
    cluster: str, *, created: float = 0.0, mode: str = "Gracefully", replicas: int = 1
) -> EvictionTask:
    return EvictionTask.model_validate(
        {
            "cluster": cluster,
            "creation_time": at(created),
            "replicas": replicas,
            "purge_mode": mode,
        }
    )


class Counted:
    """Failover's metrics, kept: (cluster, cause, replicas) per `eviction` call."""

    def __init__(self) -> None:
        self.evictions: list[tuple[str, str, int]] = []

    def eviction(self, cluster: str, reason: str, *, replicas: int = 1) -> None:
        self.evictions.append((cluster, reason, replicas))


async def events_of(store: st.Store, ref: keys.WorkloadRef) -> list[Event]:
    """The events recorded on a workload, oldest first."""
    listed = await codec.TypedStore(store, events.EVENTS).list(events.event_prefix(ref))
    return [i.obj for i in listed.items]
