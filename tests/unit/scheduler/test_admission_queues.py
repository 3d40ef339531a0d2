"""Admission across queues over whole cycles: the implicit default queue, reclaim after
preemption, reclaim against other queues' guarantees, victims' room and chips, fewest
victims."""

from __future__ import annotations

import dataclasses

import numpy as np

from federation.cache import snapshot as snap
from federation.quota.accounting import Admission, Usage
from federation.registry import keys
from federation.resources import ResourceList
from federation.scheduler import admission, cycle
from federation.scheduler import framework as fw
from federation.settings import SchedulerSettings
from policies.models.cluster import Cluster, NodeFlavor
from policies.models.queue import Queue
from tests.unit.scheduler.fleet import cluster, flavor, job, placed, queue, run, workload


def _evicted(result: cycle.CycleResult) -> list[str]:
    return sorted(victim.ref.name for victim, _ in result.evicted)


def _later(fleet: list[Cluster], first: cycle.CycleResult, queues: list[Queue]) -> snap.Snapshot:
    """The next cycle's snapshot once `queues` are written."""
    return snap.build(fleet, queues=queues, bindings=first.bindings)


_GUARANTEED = [queue("team-a", guarantee={"cpu": "8"})]


def test_the_implicit_default_queue_may_not_borrow_another_queues_guarantee() -> None:
    """Without a Queue object the default queue is guaranteed nothing, so team-a's unused
    guarantee is not lent to it."""
    fleet = [cluster("c", flavor(nodes=1, cpu="8"))]
    idle = run(fleet, [job(workload(f"d{i}", cpu="4")) for i in range(2)], queues=_GUARANTEED)
    assert placed(idle) == {}
    assert idle.reasons["team/Job.batch/d0"] == (
        "queue default cannot borrow cpu: 0 in use and 8 guaranteed to other queues, of 8 (needs 4)"
    )


def test_what_the_implicit_default_queue_holds_is_reclaimed() -> None:
    """Work the default queue took before team-a's guarantee was written is borrowed."""
    fleet = [cluster("c", flavor(nodes=1, cpu="8"))]
    first = run(fleet, [job(workload(f"d{i}", cpu="4"), seq=i + 1) for i in range(2)])
    assert sorted(placed(first)) == ["d0", "d1"]
    mine = job(workload("a0", cpu="4", queue="team-a"), seq=5)
    snapshot = _later(fleet, first, _GUARANTEED)
    result = run(fleet, [mine], usage=first.usage, snapshot=snapshot)
    assert placed(result) == {"a0": {"c": 1}} and _evicted(result) == ["d1"]
    [(_, reason)] = result.evicted
    assert reason == "reclaimed by queue team-a for team/Job.batch/a0"


def test_a_queue_reclaims_when_its_own_lower_priority_work_cannot_make_room() -> None:
    fleet = [cluster("c", flavor(nodes=1, cpu="8"))]
    jobs = [job(workload("a-small", cpu="1", queue="a", priority=0), seq=1)]
    jobs += [job(workload(f"b{i}", cpu="3", queue="b"), seq=2 + i) for i in range(2)]
    first = run(fleet, jobs, queues=[queue("a"), queue("b")])
    assert sorted(placed(first)) == ["a-small", "b0", "b1"]
    # a is now guaranteed the fleet; b borrows 6 of it. Evicting a-small frees 1 of the 4.
    snapshot = _later(fleet, first, [queue("a", guarantee={"cpu": "8"}), queue("b")])
    big = job(workload("a-big", cpu="4", queue="a", priority=5), seq=10)
    result = run(fleet, [big], usage=first.usage, snapshot=snapshot)
    assert placed(result) == {"a-big": {"c": 1}}
    assert _evicted(result) == ["b1"]  # a-small is spared: it was never the answer
    off = SchedulerSettings(reclaim=False)
    alone = run(fleet, [big], usage=first.usage, snapshot=snapshot, settings=off)
    assert placed(alone) == {} and alone.evicted == []


def test_reclaim_leaves_other_queues_unused_guarantees_kept() -> None:
    """c's idle guarantee is kept while a reclaims: one of b's jobs would free the room
    on the cluster, but lending would still refuse a, so two go."""
    fleet = [cluster("c", flavor(nodes=1, cpu="12"))]
    loose = [queue("a"), queue("b"), queue("c")]
    jobs = [job(workload(f"b{i}", cpu="4", queue="b"), seq=i + 1) for i in range(3)]
    first = run(fleet, jobs, queues=loose)
    assert sorted(placed(first)) == ["b0", "b1", "b2"]
    queues = [queue("a", guarantee={"cpu": "4"}), queue("b"), queue("c", guarantee={"cpu": "4"})]
    mine = job(workload("a0", cpu="4", queue="a"), seq=10)
    result = run(fleet, [mine], usage=first.usage, snapshot=_later(fleet, first, queues))
    assert placed(result) == {"a0": {"c": 1}}
    assert _evicted(result) == ["b1", "b2"]  # latest arrivals first
    assert result.usage.queue_totals("b")["cpu"] == 4000  # c's 4 stay free


def test_reclaim_passes_over_a_victim_that_would_take_its_queue_below_its_guarantee() -> None:
    fleet = [cluster("c", flavor(nodes=1, cpu="8"))]
    jobs = [
        job(workload("b-small", cpu="2", queue="b"), seq=1),
        job(workload("b-big", cpu="4", queue="b"), seq=2),
    ]
    first = run(fleet, jobs, queues=[queue("a"), queue("b", guarantee={"cpu": "4"})])
    assert sorted(placed(first)) == ["b-big", "b-small"]
    queues = [queue("a", guarantee={"cpu": "4"}), queue("b", guarantee={"cpu": "4"})]
    mine = job(workload("a0", cpu="4", queue="a"), seq=10)
    result = run(fleet, [mine], usage=first.usage, snapshot=_later(fleet, first, queues))
    assert placed(result) == {"a0": {"c": 1}}
    # b-big arrived last, but evicting it would leave b 2 of its guaranteed 4.
    assert _evicted(result) == ["b-small"]
    assert result.usage.queue_totals("b")["cpu"] == 4000


def _small_and_big() -> list[Cluster]:
    return [cluster("c", flavor(nodes=1, cpu="8"), flavor(nodes=1, cpu="32", memory="128Gi"))]


def test_a_preempted_workload_gives_its_room_back_to_the_flavor_it_ran_on() -> None:
    """low (20 cpu) can only run on the 32-cpu nodes; evicting it must free room there, not
    on the 8-cpu flavor, whose node could never have held it."""
    fleet = _small_and_big()
    jobs = [
        job(workload("keep", cpu="8", queue="q", priority=50), seq=1),
        job(workload("low", cpu="20", queue="q", priority=0), seq=2),
    ]
    first = run(fleet, jobs, queues=[queue("q")])
    assert sorted(placed(first)) == ["keep", "low"]
    high = job(workload("high", cpu="20", queue="q", priority=9), seq=3)
    snapshot = _later(fleet, first, [queue("q")])
    # As recorded by the cycle that admitted them, and as read back from their Bindings.
    read_back = Usage([dataclasses.replace(a, flavors=()) for a in first.usage.admissions()])
    for usage in (first.usage, read_back):
        result = run(fleet, [high], usage=usage, snapshot=snapshot)
        assert placed(result) == {"high": {"c": 1}} and _evicted(result) == ["low"]


def test_release_uses_the_flavor_the_admitting_cycle_took() -> None:
    """Two 8-cpu pods, one on each flavor: which one a victim held is not a guess."""
    fleet = _small_and_big()
    state = fw.CycleState(snap.build(fleet, queues=[]), Usage(), SchedulerSettings())
    pod = ResourceList.from_wire({"cpu": "8", "memory": "1Gi"})
    vector = np.array([8000, 1024**3 * 1000, 0, 1000], dtype=np.int64)

    def held(name: str, flavor_index: int) -> Admission:
        state.take(0, flavor_index, 1, vector)
        ref = keys.WorkloadRef("team", "Job.batch", name)
        made = Admission(
            ref, "q", "team", 0, 1, pod, {"c": 1}, pod, flavors=(("c", flavor_index, 1),)
        )
        state.usage.admit(made)
        return made

    small, _ = held("on-small", 0), held("on-big", 1)
    before = state.free.copy()
    admission.release(state, small)
    assert state.free[0, 0, snap.CPU] == 8000  # back on the small node it ran on
    assert (state.free[0, 1] == before[0, 1]).all()


def _gpu(chip: str, nodes: int) -> NodeFlavor:
    return flavor(chip=chip, devices=8, cpu="64", memory="512Gi", nodes=nodes)


def test_preemption_makes_room_on_the_chip_the_job_can_get() -> None:
    """The queue is capped on H100s only; the job prefers A100s, but those are taken by
    another queue, so only preempting on H100 lets it in."""
    fleet = [
        cluster("ga", _gpu("nvidia-a100-80gb", 1)),
        cluster("gh", _gpu("nvidia-h100-80gb", 2)),
    ]
    queues = [queue("q", capability={"accelerator/nvidia-h100-80gb": "8"}), queue("other")]
    jobs = [
        job(workload("fill", gpus=8, chips="nvidia-a100-80gb", queue="other"), seq=1),
        job(workload("low", gpus=8, chips="nvidia-h100-80gb", queue="q", priority=0), seq=2),
    ]
    first = run(fleet, jobs, queues=queues)
    assert placed(first) == {"fill": {"ga": 1}, "low": {"gh": 1}}
    high = job(
        workload("high", gpus=8, chips="nvidia-a100-80gb,nvidia-h100-80gb", queue="q", priority=9),
        seq=3,
    )
    result = run(fleet, [high], usage=first.usage, snapshot=_later(fleet, first, queues))
    assert placed(result) == {"high": {"gh": 1}} and _evicted(result) == ["low"]


def test_preemption_for_room_evicts_only_what_the_job_needs() -> None:
    fleet = [cluster("c", flavor(nodes=1, cpu="8"))]
    jobs = [
        job(workload("low0", cpu="1", queue="q", priority=0), seq=1),
        job(workload("low1", cpu="7", queue="q", priority=1), seq=2),
    ]
    first = run(fleet, jobs, queues=[queue("q")])
    high = job(workload("high", cpu="7", queue="q", priority=9), seq=3)
    result = run(fleet, [high], usage=first.usage, snapshot=_later(fleet, first, [queue("q")]))
    assert placed(result) == {"high": {"c": 1}}
    assert _evicted(result) == ["low1"]  # low0 goes first in order, but frees too little


def test_preemption_for_room_spares_work_on_clusters_the_job_does_not_land_on() -> None:
    fleet = [cluster("x", flavor(nodes=1, cpu="8")), cluster("y", flavor(nodes=1, cpu="8"))]
    on_x = {"clusterAffinity": {"clusterNames": ["x"]}}
    on_y = {"clusterAffinity": {"clusterNames": ["y"]}}
    jobs = [
        job(workload("peer", cpu="6", queue="q", priority=50), seq=1, placement=on_x),
        job(workload("low0", cpu="2", queue="q", priority=0), seq=2, placement=on_x),
        job(workload("low1", cpu="8", queue="q", priority=1), seq=3, placement=on_y),
    ]
    first = run(fleet, jobs, queues=[queue("q")])
    assert placed(first) == {"peer": {"x": 1}, "low0": {"x": 1}, "low1": {"y": 1}}
    high = job(workload("high", cpu="8", queue="q", priority=9), seq=4)
    result = run(fleet, [high], usage=first.usage, snapshot=_later(fleet, first, [queue("q")]))
    assert placed(result) == {"high": {"y": 1}}
    assert _evicted(result) == ["low1"]  # evicting low0 frees 2 on x, where high cannot fit


def test_a_queue_reclaims_on_the_clusters_it_can_use_while_others_have_room() -> None:
    """q (guaranteed 8 cpu) may only use cluster a, full of r's borrowed work, while b is
    empty. Reclaim used to ask whether the whole fleet was short, found it was not, and
    never started: q waited behind work it is owed room for."""
    fleet = [cluster("a", flavor(nodes=1, cpu="8")), cluster("b", flavor(nodes=1, cpu="8"))]
    only_a = {"clusterAffinity": {"clusterNames": ["a"]}}
    queues = [queue("q", guarantee={"cpu": "8"}), queue("r")]
    borrowed = [
        job(workload(f"r{i}", cpu="4", queue="r"), placement=only_a, seq=i + 1) for i in range(2)
    ]
    first = run(fleet, borrowed, queues=queues)
    assert placed(first) == {"r0": {"a": 1}, "r1": {"a": 1}}
    mine = job(workload("q1", cpu="4", queue="q"), placement=only_a, seq=10)
    result = run(fleet, [mine], usage=first.usage, snapshot=_later(fleet, first, queues))
    assert placed(result) == {"q1": {"a": 1}}
    assert _evicted(result) == ["r1"]  # the latest arrival, and only what q1 needs


def test_a_gpu_guarantee_is_given_back_to_a_job_pinned_to_one_chip_model() -> None:
    """gold is guaranteed 4 `nvidia.com/gpu`; its jobs ask for A100s, which loq borrowed
    all of while L4s stood idle. The fleet was short of A100s, not of GPUs, and nobody is
    guaranteed `accelerator/nvidia-a100-80gb`, so gold was never entitled and waited
    behind borrowed work for good."""
    a100, l4 = "nvidia-a100-80gb", "nvidia-l4"
    fleet = [
        cluster("east-a100", flavor(chip=a100, devices=4, cpu="32", nodes=1)),
        cluster("east-l4", flavor(chip=l4, devices=8, cpu="32", nodes=1)),
    ]
    queues = [queue("gold", guarantee={"nvidia.com/gpu": "4"}), queue("loq")]
    borrowed = [
        job(workload(f"loq{i}", gpus=1, chips=a100, queue="loq"), seq=i + 1) for i in range(4)
    ]
    first = run(fleet, borrowed, queues=queues)
    assert {c for p in placed(first).values() for c in p} == {"east-a100"}
    mine = job(workload("gold0", gpus=1, chips=a100, queue="gold"), seq=10)
    result = run(fleet, [mine], usage=first.usage, snapshot=_later(fleet, first, queues))
    assert placed(result) == {"gold0": {"east-a100": 1}}, result.reasons
    assert _evicted(result) == ["loq3"]


def test_a_chip_model_reclaim_keeps_the_lender_s_own_gpu_guarantee() -> None:
    """Judged by the GPU guarantees, reclaim still takes nothing a lender is guaranteed:
    loq is guaranteed 4 GPUs and holds just those 4 A100s, so gold waits. A guard: it
    passed before the change too (no reclaim was tried at all then)."""
    a100 = "nvidia-a100-80gb"
    fleet = [
        cluster("east-a100", flavor(chip=a100, devices=4, cpu="32", nodes=1)),
        cluster("east-l4", flavor(chip="nvidia-l4", devices=8, cpu="32", nodes=1)),
    ]
    queues = [
        queue("gold", guarantee={"nvidia.com/gpu": "4"}),
        queue("loq", guarantee={"nvidia.com/gpu": "4"}),
    ]
    held = [job(workload(f"loq{i}", gpus=1, chips=a100, queue="loq"), seq=i + 1) for i in range(4)]
    first = run(fleet, held, queues=queues)
    assert len(placed(first)) == 4
    mine = job(workload("gold0", gpus=1, chips=a100, queue="gold"), seq=10)
    result = run(fleet, [mine], usage=first.usage, snapshot=_later(fleet, first, queues))
    assert placed(result) == {} and _evicted(result) == []
