"""`/metrics` families: component-reported values and gauges derived from the registry."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from prometheus_client.parser import text_string_to_metric_families

from federation import errors
from federation.api import metrics as metrics_mod
from federation.registry import codec, keys
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.resources import ResourceList
from policies.models.base import ObjectMeta
from policies.models.binding import Binding, BindingSpec, WorkloadReference
from policies.models.cluster import ClusterStatus, Condition, NodeFlavor
from tests.waiting import wait_for

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def samples(m: metrics_mod.Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(m.exposition().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def status(ready: bool) -> ClusterStatus:
    gpu = NodeFlavor(
        arch="amd64",
        accelerator_model="nvidia-a100-80gb",
        accelerator_resource="nvidia.com/gpu",
        allocatable=ResourceList.from_wire({"nvidia.com/gpu": "8", "cpu": "64"}),
        node_count=2,
        free=ResourceList.from_wire({"nvidia.com/gpu": "5", "cpu": "100"}),
    )
    cpu = NodeFlavor(
        arch="arm64",
        allocatable=ResourceList.from_wire({"cpu": "16"}),
        node_count=3,
        free=ResourceList.from_wire({"cpu": "40"}),
    )
    cond = Condition(type="Ready", status="True" if ready else "False", last_transition_time=T0)
    return ClusterStatus(conditions=[cond], flavors=[gpu, cpu])


def binding(name: str, queue: str, phase: str) -> Binding:
    ref = WorkloadReference(api_version="batch/v1", kind="Job", namespace="ml", name=name)
    return Binding.model_validate(
        {
            "metadata": ObjectMeta(name=name, namespace="ml"),
            "spec": BindingSpec(workload=ref, queue=queue),
            "status": {"phase": phase},
        }
    )


def test_component_reported_families() -> None:
    m = metrics_mod.Metrics()
    m.observe_decision(0.003)
    m.observe_decision(0.2)
    m.propagation_error("eu", "Rejected")
    m.eviction("eu", "NoExecuteTaint", replicas=3)
    m.set_leader(True)
    m.set_queue_depth("gpu", 7)
    got = samples(m)
    assert got[("fedctl_scheduling_decision_seconds_count", ())] == 2
    assert got[("fedctl_scheduling_decision_seconds_bucket", (("le", "0.005"),))] == 1
    assert (
        got[("fedctl_propagation_errors_total", (("cluster", "eu"), ("reason", "Rejected")))] == 1
    )
    assert got[("fedctl_evictions_total", (("cluster", "eu"), ("reason", "NoExecuteTaint")))] == 3
    assert got[("fedctl_leader", ())] == 1
    assert got[("fedctl_queue_pending_workloads", (("queue", "gpu"),))] == 7


def test_two_instances_do_not_collide() -> None:
    a, b = metrics_mod.Metrics(), metrics_mod.Metrics()
    a.set_leader(True)
    assert samples(b)[("fedctl_leader", ())] == 0


async def test_cluster_and_queue_gauges_follow_the_registry() -> None:
    store = MemoryStore()
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    await statuses.put(keys.cluster_status_key("eu"), status(ready=True))
    for name, queue, phase in [("a", "gpu", "Scheduled"), ("b", "gpu", "Pending"),
                               ("c", "cpu", "Scheduled")]:  # fmt: skip
        ref = keys.WorkloadRef("ml", "Job.batch", name)
        await bindings.put(keys.binding_key(ref), binding(name, queue, phase))
    m = metrics_mod.Metrics()
    cache = asyncio.create_task(m.cache.run(store))
    try:
        await wait_for(lambda: len(m.cache.bindings) == 3, message="bindings cached")
        got = samples(m)
        assert got[("fedctl_cluster_ready", (("cluster", "eu"),))] == 1
        a100 = (("chip", "nvidia-a100-80gb"), ("cluster", "eu"))
        assert got[("fedctl_cluster_capacity", (*a100, ("state", "allocatable")))] == 16
        assert got[("fedctl_cluster_capacity", (*a100, ("state", "free")))] == 5
        arm = (("chip", "arm64"), ("cluster", "eu"))
        assert got[("fedctl_cluster_capacity", (*arm, ("state", "allocatable")))] == 48
        assert got[("fedctl_queue_admitted_workloads", (("queue", "gpu"),))] == 1
        assert got[("fedctl_queue_pending_workloads", (("queue", "gpu"),))] == 1
        assert got[("fedctl_queue_admitted_workloads", (("queue", "cpu"),))] == 1

        await statuses.put(keys.cluster_status_key("eu"), status(ready=False))
        await bindings.delete(keys.binding_key(keys.WorkloadRef("ml", "Job.batch", "c")))
        await wait_for(
            lambda: not m.cache.statuses["eu"].ready() and len(m.cache.bindings) == 2,
            message="changes followed",
        )
        got = samples(m)
        assert got[("fedctl_cluster_ready", (("cluster", "eu"),))] == 0
        assert ("fedctl_queue_admitted_workloads", (("queue", "cpu"),)) not in got
    finally:
        cache.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cache


class _Away(MemoryStore):
    """A registry whose first `failures` lists fail as an etcd restart makes them fail."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def list(self, prefix: str) -> st.ListResult:
        if self.failures > 0:
            self.failures -= 1
            raise errors.Unavailable("etcd at test: unavailable: connection refused")
        return await super().list(prefix)


async def test_the_cache_lists_again_when_the_registry_was_away_at_start() -> None:
    """A replica started while etcd restarted: the first lists fail. Before, the error
    ended the cache and the supervisor stopped the whole controller; now it lists again."""
    store = _Away(failures=3)
    await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
        keys.cluster_status_key("eu"), status(ready=True)
    )
    m = metrics_mod.Metrics()
    cache = asyncio.create_task(m.cache.run(store))
    try:
        await wait_for(lambda: "eu" in m.cache.statuses, timeout=20, message="listed again")
        assert store.failures == 0 and not cache.done()
    finally:
        cache.cancel()
