"""`/metrics` families: component-reported values and gauges derived from the registry."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import pytest
from prometheus_client.parser import text_string_to_metric_families

from federation import clock, errors
from federation.api import metrics as metrics_mod
from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.resources import ResourceList
from federation.scheduler import queue_view
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.base import ObjectMeta
from policies.models.binding import Binding, BindingSpec, TargetCluster, WorkloadReference
from policies.models.cluster import ClusterStatus, Condition, NodeFlavor
from policies.models.work import WorkloadStatus
from tests.unit.scheduler import fleet
from tests.waiting import background, wait_for

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


def test_capacity_counts_the_cpu_of_accelerator_nodes_under_their_architecture() -> None:
    """The A100 nodes' 128 cores appeared in no series (only their GPUs did), while
    `fedctl cluster list` counted them: every node's CPU now counts under its arch."""
    assert metrics_mod._capacity(status(ready=True)) == {
        ("nvidia-a100-80gb", "allocatable"): 16,
        ("nvidia-a100-80gb", "free"): 5,
        ("amd64", "allocatable"): 128,
        ("amd64", "free"): 100,
        ("arm64", "allocatable"): 48,
        ("arm64", "free"): 40,
    }


def binding(name: str, queue: str, phase: str, *, pods: bool = True) -> Binding:
    """A Job's Binding; without `pods`, one that records no pod, as a Namespace's does."""
    ref = WorkloadReference(api_version="batch/v1", kind="Job", namespace="ml", name=name)
    requests = {"cpu": "1"} if pods else {}
    return Binding.model_validate(
        {
            "metadata": ObjectMeta(name=name, namespace="ml"),
            "spec": BindingSpec(workload=ref, queue=queue, pod_requests=requests),
            "status": {"phase": phase},
        }
    )


def test_component_reported_families() -> None:
    m = metrics_mod.Metrics()
    m.observe_decision(0.003)
    m.observe_decision(0.2)
    m.propagation_error("eu", "apply", "Rejected")
    m.eviction("eu", "NoExecuteTaint", replicas=3)
    m.set_leader(True)
    got = samples(m)
    assert got[("fedctl_scheduling_decision_seconds_count", ())] == 2
    assert got[("fedctl_scheduling_decision_seconds_bucket", (("le", "0.005"),))] == 1
    rejected = (("cluster", "eu"), ("operation", "apply"), ("reason", "Rejected"))
    assert got[("fedctl_propagation_errors_total", rejected)] == 1
    assert got[("fedctl_evictions_total", (("cluster", "eu"), ("reason", "NoExecuteTaint")))] == 3
    assert got[("fedctl_leader", ())] == 1


def test_decision_buckets_tell_tens_of_microseconds_from_seconds() -> None:
    """Decisions take tens to hundreds of µs; the lowest bucket was 1 ms, so every one
    fell in it and p50 could not be told from p99."""
    m = metrics_mod.Metrics()
    for seconds in (0.00002, 0.00009, 0.0003, 2.0):
        m.observe_decision(seconds)
    got = samples(m)

    def under(le: str) -> float:
        return got[("fedctl_scheduling_decision_seconds_bucket", (("le", le),))]

    assert [under(le) for le in ("2.5e-05", "0.0001", "0.0005", "1.0", "2.5")] == [1, 2, 3, 3, 4]


def test_a_step_down_and_re_election_between_scrapes_is_counted() -> None:
    """`fedctl_leader` read 1 before and after: the term that ended was invisible."""
    m = metrics_mod.Metrics()

    def moves() -> tuple[float, float, float]:
        got = samples(m)
        return (
            got[("fedctl_leader", ())],
            got[("fedctl_leader_transitions_total", (("to", "leader"),))],
            got[("fedctl_leader_transitions_total", (("to", "follower"),))],
        )

    assert moves() == (0, 0, 0)
    m.set_leader(False)  # a follower told it does not lead: no change of role
    m.set_leader(True)
    assert moves() == (1, 1, 0)
    m.set_leader(False)
    m.set_leader(True)
    assert moves() == (1, 2, 1)


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
    # Bound like work, but nobody queued it: not admitted work of any queue.
    namespace = keys.WorkloadRef("ml", "Job.batch", "ns")
    await bindings.put(keys.binding_key(namespace), binding("ns", "cpu", "Scheduled", pods=False))
    # Held at admission, a Binding records no pods: a Job waits all the same (a follower
    # read 0 pending beside 40 Pending Bindings); a ConfigMap does not wait for room.
    held = keys.WorkloadRef("ml", "Job.batch", "held")
    await bindings.put(keys.binding_key(held), binding("held", "gpu", "Pending", pods=False))
    config = binding("cfg", "gpu", "Pending", pods=False)
    cm = config.spec.workload.model_copy(update={"api_version": "v1", "kind": "ConfigMap"})
    config = config.model_copy(update={"spec": config.spec.model_copy(update={"workload": cm})})
    await bindings.put(keys.binding_key(keys.WorkloadRef("ml", "ConfigMap", "cfg")), config)
    m = metrics_mod.Metrics()
    cache = asyncio.create_task(m.cache.run(store))
    try:
        await wait_for(lambda: len(m.cache.bindings) == 6, message="bindings cached")
        got = samples(m)
        assert got[("fedctl_cluster_ready", (("cluster", "eu"),))] == 1
        a100 = (("chip", "nvidia-a100-80gb"), ("cluster", "eu"))
        assert got[("fedctl_cluster_capacity", (*a100, ("state", "allocatable")))] == 16
        assert got[("fedctl_cluster_capacity", (*a100, ("state", "free")))] == 5
        arm = (("chip", "arm64"), ("cluster", "eu"))
        assert got[("fedctl_cluster_capacity", (*arm, ("state", "allocatable")))] == 48
        assert got[("fedctl_queue_admitted_workloads", (("queue", "gpu"),))] == 1
        assert got[("fedctl_queue_pending_workloads", (("queue", "gpu"),))] == 2
        assert got[("fedctl_queue_admitted_workloads", (("queue", "cpu"),))] == 1

        await statuses.put(keys.cluster_status_key("eu"), status(ready=False))
        await bindings.delete(keys.binding_key(keys.WorkloadRef("ml", "Job.batch", "c")))
        await wait_for(
            lambda: not m.cache.statuses["eu"].ready() and len(m.cache.bindings) == 5,
            message="changes followed",
        )
        got = samples(m)
        assert got[("fedctl_cluster_ready", (("cluster", "eu"),))] == 0
        assert ("fedctl_queue_admitted_workloads", (("queue", "cpu"),)) not in got
    finally:
        cache.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cache


async def test_what_placed_work_costs_is_a_gauge_until_the_job_finishes() -> None:
    store = MemoryStore()
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    results = codec.TypedStore(store, codec.Codec(WorkloadStatus))
    targets = {
        "a": [("eu", 2, "1.5"), ("us", 1, "0.25")],
        "b": [("eu", 1, "0.5")],
        "c": [("us", 4, None)],  # a cluster with no price: no cost to add
    }
    for name, placed in targets.items():
        ref = keys.WorkloadRef("ml", "Job.batch", name)
        clusters = [
            TargetCluster(name=c, replicas=n, hourly_cost=Decimal(v) if v else None)
            for c, n, v in placed
        ]
        bound = binding(name, "gpu", "Scheduled")
        spec = bound.spec.model_copy(update={"clusters": clusters, "pod_requests": {"cpu": "1"}})
        await bindings.put(keys.binding_key(ref), bound.model_copy(update={"spec": spec}))
    m = metrics_mod.Metrics()
    cache = asyncio.create_task(m.cache.run(store))

    def cost(cluster: str) -> float | None:
        labels = (("chip", "-"), ("cluster", cluster), ("namespace", "ml"), ("queue", "gpu"))
        return samples(m).get(("fedctl_hourly_cost", labels))

    try:
        await wait_for(lambda: len(m.cache.bindings) == 3, message="bindings cached")
        assert cost("eu") == 2.0 and cost("us") == 0.25
        assert samples(m)[("fedctl_queue_admitted_workloads", (("queue", "gpu"),))] == 3
        workload = WorkloadReference(api_version="batch/v1", kind="Job", namespace="ml", name="a")
        ref = keys.WorkloadRef("ml", "Job.batch", "a")
        await results.put(
            keys.workload_status_key(ref), WorkloadStatus(workload=workload, phase="Succeeded")
        )
        await wait_for(lambda: cost("eu") == 0.5, message="the finished job's cost dropped")
        assert cost("us") is None
        assert samples(m)[("fedctl_queue_admitted_workloads", (("queue", "gpu"),))] == 2
    finally:
        cache.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cache


async def test_a_cost_summed_over_many_workloads_is_exported_without_float_noise() -> None:
    """22 workloads at 0.0418 an hour on one cluster were exported as the float sum
    0.9195999999999994, while `fedctl cost` said 0.9196."""
    store = MemoryStore()
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    for i in range(22):
        ref = keys.WorkloadRef("ml", "Job.batch", f"w{i}")
        bound = binding(f"w{i}", "gpu", "Scheduled")
        target = TargetCluster(name="eu", replicas=1, hourly_cost=Decimal("0.0418"))
        spec = bound.spec.model_copy(update={"clusters": [target]})
        await bindings.put(keys.binding_key(ref), bound.model_copy(update={"spec": spec}))
    m = metrics_mod.Metrics()
    async with background(m.cache.run(store)):
        await wait_for(lambda: len(m.cache.bindings) == 22, message="bindings cached")
        exported = [
            line
            for line in m.exposition().decode().splitlines()
            if line.startswith("fedctl_hourly_cost{")
        ]
    assert [line.rpartition(" ")[2] for line in exported] == ["0.9196"]


async def test_cost_sums_by_region_and_chip_through_cluster_info() -> None:
    """The docs promised sums of `fedctl_hourly_cost` by region or chip, but no series
    named a cluster's region or a placement's chip. The cost carries its chip, and
    `fedctl_cluster_info` names each cluster's region, zone and provider to join on."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    for member in (fleet.cluster("eu", region="eu-west", zone="eu-west-1a"),
                   fleet.cluster("us", region="us-east", provider=None)):  # fmt: skip
        await objs.put(keys.cluster_key(member.name), member.model_copy(update={"status": None}))
    ref = keys.WorkloadRef("ml", "Job.batch", "a")
    targets = [
        TargetCluster(name="eu", replicas=2, chip="nvidia-a100-80gb", hourly_cost=Decimal("6")),
        TargetCluster(name="us", replicas=1, chip="amd64", hourly_cost=Decimal("0.5")),
    ]
    bound = binding("a", "gpu", "Scheduled")
    spec = bound.spec.model_copy(update={"clusters": targets})
    await bindings.put(keys.binding_key(ref), bound.model_copy(update={"spec": spec}))
    m = metrics_mod.Metrics()
    async with background(m.cache.run(store)):
        await wait_for(lambda: len(m.cache.clusters) == 2 and m.cache.bindings, message="cached")
        got = samples(m)
        eu = (("cluster", "eu"), ("provider", "aws"), ("region", "eu-west"),
              ("zone", "eu-west-1a"))  # fmt: skip
        assert got[("fedctl_cluster_info", eu)] == 1
        us = (("cluster", "us"), ("provider", ""), ("region", "us-east"), ("zone", ""))
        assert got[("fedctl_cluster_info", us)] == 1
        a100 = (("chip", "nvidia-a100-80gb"), ("cluster", "eu"), ("namespace", "ml"),
                ("queue", "gpu"))  # fmt: skip
        assert got[("fedctl_hourly_cost", a100)] == 6
        await objs.delete(keys.cluster_key("us"))
        await wait_for(
            lambda: ("fedctl_cluster_info", us) not in samples(m), message="unjoined: no info"
        )


def queues(m: metrics_mod.Metrics) -> dict[str, tuple[float, float]]:
    """Per queue of `/metrics`: (admitted, pending)."""
    got = samples(m)
    out: dict[str, tuple[float, float]] = {}
    for (name, labels), value in got.items():
        if name in ("fedctl_queue_admitted_workloads", "fedctl_queue_pending_workloads"):
            queue = dict(labels)["queue"]
            admitted, pending = out.get(queue, (-1.0, -1.0))
            if name == "fedctl_queue_admitted_workloads":
                out[queue] = (value, pending)
            else:
                out[queue] = (admitted, value)
    return out


async def test_a_defined_queue_without_bindings_is_a_series_of_zeros() -> None:
    """Before, `/metrics` knew a queue only from the Bindings naming it, while `fedctl get
    queues` listed every defined one: a new team's queue had no series to alert on."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    idle = fleet.queue("idle", capability={"cpu": "4"})
    await objs.put(objects.key_for(idle), idle)
    await objs.put(objects.key_for(fleet.queue("gpu")), fleet.queue("gpu"))
    ref = keys.WorkloadRef("ml", "Job.batch", "a")
    await bindings.put(keys.binding_key(ref), binding("a", "gpu", "Scheduled"))
    m = metrics_mod.Metrics()
    async with background(m.cache.run(store)):
        await wait_for(lambda: queues(m) == {"idle": (0, 0), "gpu": (1, 0)}, message="both queues")
        await objs.delete(objects.key_for(idle))
        await wait_for(lambda: queues(m) == {"gpu": (1, 0)}, message="the deleted queue gone")


async def test_the_leading_scheduler_s_tally_feeds_the_queue_gauges() -> None:
    """qa holds one of three 4-core jobs and the others wait; idle is defined and holds
    nothing. The counts are the scheduler's, as `fedctl get queues` shows them on the
    leader: here no cache runs, so no Binding is counted. Before, `set_queue_depth`
    existed but no component called it."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    member = fleet.cluster("a")
    assert member.status is not None
    await objs.put(keys.cluster_key("a"), member.model_copy(update={"status": None}))
    await statuses.put(keys.cluster_status_key("a"), member.status)
    for q in (fleet.queue("qa", capability={"cpu": "4"}), fleet.queue("idle")):
        await objs.put(objects.key_for(q), q)
    for name in ("one", "two", "three"):
        w = fleet.workload(name, cpu="4", queue="qa")
        await objs.put(objects.key_for(w), w)
    published = queue_view.Published()
    m = metrics_mod.Metrics(queue_view=published)
    loop = SchedulerLoop(
        store, settings=SchedulerSettings(), clock=clock.real, debounce=0.01, queue_view=published
    )
    async with background(loop.run()):
        await wait_for(
            lambda: queues(m) == {"qa": (1, 2), "idle": (0, 0)},
            message="the scheduler's counts",
        )
    assert published.latest() is None, "withdrawn as the term ended"
    assert queues(m) == {}, "a replica that does not lead counts the Bindings it follows"


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
