"""Capacity a cycle starts from: the monitor's free amounts, less what admitted workloads
hold that the monitor does not show yet, so a status that lags never lets the federation
place the same room twice, and pods it already shows are never counted twice."""

from __future__ import annotations

import random

import numpy as np
import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Admission, Usage
from federation.registry import keys
from federation.resources import ResourceList
from federation.scheduler import framework as fw
from federation.scheduler import held as held_mod
from federation.scheduler import reconcile
from federation.settings import SchedulerSettings
from policies.models.base import ObjectMeta
from policies.models.binding import Binding, BindingSpec, BindingStatus, TargetCluster
from policies.models.binding import WorkloadReference as Ref
from policies.models.cluster import Cluster, NodeFlavor
from tests.unit.scheduler.fleet import GPU, cluster, flavor, job, placed, queue, rl, run, workload

SETTINGS = SchedulerSettings()
CPU, DEV = snap.CPU, snap.DEVICES
CORE, GIB = 1000, 1000 * 1024**3


def held(
    name: str, placement: dict[str, int], *, pod: ResourceList, chips: dict[str, str] | None = None
) -> Admission:
    """An admission as `reconcile` rebuilds it from a Scheduled Binding."""
    replicas = sum(placement.values())
    return Admission(
        ref=keys.WorkloadRef("team", "Job.batch", name),
        queue="default",
        namespace="team",
        priority=0,
        seq=1,
        charge=pod.scaled(replicas),
        placement=placement,
        pod=pod,
        chips=chips or {},
    )


def showing(f: NodeFlavor, used: ResourceList) -> NodeFlavor:
    """The flavor as a monitor reports it once `used` runs there."""
    return f.model_copy(update={"free": (f.free - used).nonnegative()})


def start(clusters: list[Cluster], *admissions: Admission) -> tuple[snap.Snapshot, fw.CycleState]:
    s = snap.build(clusters)
    return s, fw.CycleState(s, Usage(admissions), SETTINGS)


POD = rl(cpu="4", memory="1Gi")
ONE_POD = rl(cpu="4", memory="1Gi", pods="1")
CPU16 = flavor(nodes=2)  # 2 nodes x 16 cores, 64Gi, 110 pods


def test_pods_the_status_does_not_show_yet_are_taken_from_free() -> None:
    _, state = start([cluster("a", CPU16)], held("w", {"a": 3}, pod=POD))
    assert state.free[0, 0].tolist() == [
        32 * CORE - 12 * CORE,
        128 * GIB - 3 * GIB,
        0,
        220_000 - 3_000,
    ]
    assert state.largest[0, 0, CPU] == 16 * CORE  # 20 cores left: a whole node may be empty
    assert state.free_total.tolist() == state.free.sum(axis=1).tolist()
    assert state.version.tolist() == [0]

    _, full = start([cluster("a", CPU16)], held("w", {"a": 7}, pod=POD))
    assert full.free[0, 0, CPU] == 4 * CORE
    assert full.largest[0, 0, CPU] == 4 * CORE  # no node can have more than is left


@pytest.mark.parametrize(
    ("shown", "foreign", "cores_free"),
    [
        pytest.param(0, 0, 20, id="status not updated yet: all three subtracted"),
        pytest.param(2, 0, 20, id="status shows two of three: only the third subtracted"),
        pytest.param(3, 0, 20, id="status shows all three: nothing counted twice"),
        pytest.param(3, 2, 12, id="others' pods the status shows still count"),
        pytest.param(0, 4, 16, id="others' usage beyond ours: the status decides"),
    ],
)
def test_pods_the_status_already_shows_are_not_counted_twice(
    shown: int, foreign: int, cores_free: int
) -> None:
    used = ONE_POD.scaled(shown) + ONE_POD.scaled(foreign)
    _, state = start([cluster("a", showing(CPU16, used))], held("w", {"a": 3}, pod=POD))
    assert state.free[0, 0, CPU] == cores_free * CORE


def test_others_usage_unlike_ours_does_not_hide_pods_not_shown_yet() -> None:
    """20 cores used by others' pods (no memory: not pods of ours), three pods of ours (12
    cores) not shown yet: 32 - 20 - 12 leaves nothing, though allocatable less ours
    alone would leave 20."""
    others = showing(CPU16, rl(cpu="20", pods="1"))
    _, state = start([cluster("a", others)], held("w", {"a": 3}, pod=POD))
    assert state.free[0, 0, CPU] == 0
    _, two = start([cluster("a", others)], held("w", {"a": 2}, pod=POD))
    assert two.free[0, 0, CPU] == 4 * CORE


def gpu_cluster() -> Cluster:
    return cluster(
        "g",
        flavor(cpu="8", nodes=1),
        flavor(chip="nvidia-a100-80gb", devices=8, cpu="96", memory="1Ti", nodes=1),
        flavor(chip="nvidia-h100-80gb", devices=8, cpu="96", memory="1Ti", nodes=1),
    )


def gpu_pod(gpus: int) -> ResourceList:
    return ResourceList.from_wire({"cpu": "8", "memory": "16Gi", GPU: str(gpus)})


def flavor_of(s: snap.Snapshot, chip: str | None) -> int:
    want = s.chips.index(chip) if chip else -1
    return int(np.flatnonzero(s.flavor_chip[0] == want)[0])


@pytest.mark.parametrize(
    "chip",
    [pytest.param("nvidia-a100-80gb", id="a100"), pytest.param("nvidia-h100-80gb", id="h100")],
)
def test_accelerator_pods_are_held_only_on_their_chips_flavors(chip: str) -> None:
    pod = gpu_pod(2)
    s, state = start([gpu_cluster()], held("t", {"g": 3}, pod=pod, chips={"g": chip}))
    mine = flavor_of(s, chip)
    assert state.free[0, mine, DEV] == 8_000 - 6_000
    assert state.free[0, mine, CPU] == 96 * CORE - 24 * CORE
    others = [f for f in range(3) if f != mine]
    assert (state.free[0, others] == s.free[0, others]).all()


def test_cpu_pods_are_never_held_on_accelerator_flavors() -> None:
    s, state = start([gpu_cluster()], held("svc", {"g": 5}, pod=rl(cpu="2", memory="1Gi")))
    cpu = flavor_of(s, None)
    assert state.free[0, cpu, CPU] == 0  # 10 cores held on an 8-core flavor: clipped at 0
    gpus = [f for f in range(3) if f != cpu]
    assert (state.free[0, gpus] == s.free[0, gpus]).all()


def test_held_pods_go_first_where_the_status_shows_usage() -> None:
    amd = flavor(nodes=1)
    arm = showing(flavor(arch="arm64", nodes=1), ONE_POD.scaled(2))
    s, state = start([cluster("a", amd, arm)], held("w", {"a": 2}, pod=POD))
    assert (state.free == s.free).all()  # both are the arm pods the status already shows


def test_a_recorded_arch_keeps_cpu_pods_on_that_arch() -> None:
    amd, arm = flavor(nodes=1), flavor(arch="arm64", nodes=1)
    s, state = start([cluster("a", amd, arm)], held("w", {"a": 2}, pod=POD, chips={"a": "arm64"}))
    arm_index = int(np.flatnonzero(s.flavor_arch[0] == s.arches.index("arm64"))[0])
    assert state.free[0, arm_index, CPU] == 8 * CORE
    assert state.free[0, 1 - arm_index, CPU] == 16 * CORE


def test_unpinned_cpu_pods_are_held_in_the_room_pinned_ones_leave() -> None:
    """On a cluster of both arches, pods pinned to an arch can be on its nodes only; pods
    that took both arches (no arch recorded) can be on either, so they are counted in
    what the pinned ones leave, not first where the most room is."""
    amd, arm = flavor(nodes=1), flavor(arch="arm64", cpu="32", nodes=1)
    s, state = start(
        [cluster("a", amd, arm)],
        held("loose", {"a": 4}, pod=POD),
        held("pinned", {"a": 6}, pod=POD, chips={"a": "arm64"}),
    )
    arm_index = int(np.flatnonzero(s.flavor_arch[0] == s.arches.index("arm64"))[0])
    assert state.free[0, arm_index, CPU] == 8 * CORE  # 32 less the six pinned pods
    assert state.free[0, 1 - arm_index, CPU] == 0  # the four loose pods
    assert state.debt is None  # nothing counted beyond a flavor's room


def test_two_cycles_against_a_status_that_lags_never_place_the_same_room_twice() -> None:
    fleet = [cluster("a", flavor(nodes=2, cpu="8"))]
    first = run(fleet, [job(workload(f"j{i}", cpu="6")) for i in range(2)])
    assert sorted(placed(first)) == ["j0", "j1"]
    # The monitor has not reported them: the same snapshot again, with what is now bound.
    second = run(fleet, [job(workload("late", cpu="6"))], usage=first.usage)
    assert second.admitted == []
    assert "no eligible cluster has a node with 6 free cpu" in second.reasons["team/Job.batch/late"]
    small = run(fleet, [job(workload("small", cpu="2"))], usage=first.usage)
    assert placed(small) == {"small": {"a": 1}}


def test_a_preempted_victims_room_is_given_back_within_the_cycle() -> None:
    fleet = [cluster("a", flavor(nodes=1, cpu="8"))]
    q = [queue("q")]
    first = run(fleet, [job(workload("low", cpu="8", queue="q", priority=1))], queues=q)
    assert placed(first) == {"low": {"a": 1}}
    high = job(workload("high", cpu="8", queue="q", priority=100))
    result = run(fleet, [high], queues=q, usage=first.usage)
    assert placed(result) == {"high": {"a": 1}}
    assert [v.ref.name for v, _ in result.evicted] == ["low"]


def binding_of(name: str, target: str, *, phase: str, reason: str = "") -> Binding:
    return Binding(
        metadata=ObjectMeta(name=name, namespace="team"),
        spec=BindingSpec(
            workload=Ref(api_version="batch/v1", kind="Job", namespace="team", name=name),
            clusters=[TargetCluster(name=target, replicas=1, chip="amd64")],
        ),
        status=BindingStatus(phase=phase, reason=reason),
    )


@pytest.mark.parametrize(
    ("bound", "cores_free"),
    [
        pytest.param(binding_of("w", "a", phase="Scheduled"), 26, id="scheduled: held"),
        pytest.param(
            binding_of("w", "a", phase="Pending", reason="Evicted from a: NotReady"),
            32,
            id="evicted: not held",
        ),
    ],
)
def test_usage_rebuilt_from_bindings_holds_only_what_stands(
    bound: Binding, cores_free: int
) -> None:
    w = workload("w", cpu="6")
    key = str(reconcile.ref_of(w))
    work = reconcile.reconcile(
        workloads={key: reconcile.Entry(w, 3)},
        bindings={key: bound},
        phases={},
        policies=[],
        clusters=["a"],
        fingerprints={},
        settings=SETTINGS,
    )
    _, state = start([cluster("a", CPU16)], *work.admitted)
    assert state.free[0, 0, CPU] == cores_free * CORE


def test_a_released_admission_holds_nothing() -> None:
    usage = Usage([held("w", {"a": 3}, pod=POD), held("v", {"a": 2}, pod=POD)])
    usage.release(keys.WorkloadRef("team", "Job.batch", "v"))
    s = snap.build([cluster("a", CPU16)])
    state = fw.CycleState(s, usage, SETTINGS)
    assert state.free[0, 0, CPU] == 20 * CORE


@pytest.mark.parametrize(
    "admissions",
    [
        pytest.param([], id="nothing admitted"),
        pytest.param([held("gone", {"left-the-fleet": 4}, pod=POD)], id="cluster no longer known"),
        pytest.param(
            [held("t", {"g": 2}, pod=gpu_pod(1), chips={"g": "tpu-v5"})],
            id="chip no flavor carries",
        ),
    ],
)
def test_without_anything_held_the_snapshots_arrays_are_used_as_they_are(
    admissions: list[Admission],
) -> None:
    s, state = start([gpu_cluster(), cluster("a", CPU16)], *admissions)
    for mine, theirs in ((state.free, s.free), (state.largest, s.largest)):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
        assert mine.flags.writeable and not np.shares_memory(mine, theirs)
    assert np.array_equal(state.free_total, s.free.sum(axis=1))


def test_device_pods_without_a_recorded_chip_are_held_where_their_resource_is() -> None:
    pod = gpu_pod(4)
    s, state = start([gpu_cluster()], held("t", {"g": 3}, pod=pod))
    devices_held = (s.free[0, :, DEV] - state.free[0, :, DEV]).tolist()
    assert sum(devices_held) == 12_000
    assert devices_held[flavor_of(s, None)] == 0
    assert GPU in s.device_resources


def test_a_change_to_the_admitted_set_is_seen_by_the_next_cycle_not_a_stale_grouping() -> None:
    s = snap.build([cluster("a", CPU16)])
    usage = Usage([held("w", {"a": 3}, pod=POD)])
    first = fw.CycleState(s, usage.copy(), SETTINGS)
    again = fw.CycleState(s, usage.copy(), SETTINGS)  # same admissions: same start
    assert again.free.tolist() == first.free.tolist()
    usage.admit(held("v", {"a": 2}, pod=POD))
    grown = fw.CycleState(s, usage.copy(), SETTINGS)
    assert first.free[0, 0, CPU] - grown.free[0, 0, CPU] == 8 * CORE
    usage.release(keys.WorkloadRef("team", "Job.batch", "v"))
    usage.release(keys.WorkloadRef("team", "Job.batch", "w"))
    assert fw.CycleState(s, usage, SETTINGS).free.tolist() == s.free.tolist()


@pytest.mark.parametrize("seed", range(4))
def test_the_kept_tally_counts_what_a_fresh_one_counts_through_random_changes(seed: int) -> None:
    rng = random.Random(seed)
    s = snap.build([gpu_cluster(), cluster("b", CPU16), cluster("c", CPU16)])
    pods = [POD, ONE_POD, gpu_pod(1), gpu_pod(4)]
    usage = Usage()
    for step in range(200):
        name = f"w{rng.randrange(25)}"
        if rng.random() < 0.3:
            usage.release(keys.WorkloadRef("team", "Job.batch", name))
        else:
            pod = rng.choice(pods)
            where = {c: rng.randint(0, 3) for c in rng.sample(["g", "b", "c", "gone"], 2)}
            chips = {"g": "nvidia-a100-80gb"} if pod.amount(GPU) and "g" in where else None
            usage.admit(held(name, where, pod=pod, chips=chips))
        if step % 3:
            continue  # several changes between two cycles, as a busy cycle makes
        kept = held_mod._groups(s, usage)
        fleet = tuple(c.name for c in s.clusters)
        fresh = held_mod._Tally(fleet, s.device_resources).groups(s, usage)
        assert {k: v.tolist() for k, v in kept.items()} == {k: v.tolist() for k, v in fresh.items()}
        assert all(v.any() for v in kept.values())  # a group nothing holds any more is gone
    for ref in list(usage.by_ref()):
        usage.release(usage.by_ref()[ref].ref)
    assert held_mod._groups(s, usage) == {}
