"""Preemption and reclaim make room where a job fits, over random fleets whose members are
single nodes, so what evicting frees on a member is exact.

Reclaim: queue `a` borrows the whole fleet while `b` has no guarantee; then `b` is
guaranteed part of the fleet (an edited Queue) and asks for it back with 1- and 2-CPU
jobs, all within that guarantee. `a`'s jobs take one core each, so what reclaim can free on
a member is `a`'s cores there, up to what `a` holds beyond its own guarantee. A job of `b`
may wait only when no member has that much room for it.

Preemption: one queue fills the fleet with priority-0 one-core jobs, placed round the
members so that the latest arrivals sit one per member (the order victims are taken in);
higher-priority jobs of 1-3 cores follow. One may wait only when no member's free cores
and lower-priority cores together hold it.

Every eviction must be by a job admitted in the same cycle, of the kind expected.
"""

from __future__ import annotations

import random

import pytest

from federation.cache import snapshot as snap
from federation.queue.pending import PendingStore
from federation.quota.accounting import Usage
from federation.scheduler import cycle
from federation.settings import SchedulerSettings
from tests.unit.scheduler.fleet import DYNAMIC_WEIGHT, NOW, cluster, flavor, job, queue, workload
from tests.unit.scheduler.test_invariants import _check_reclaim, _check_victims


@pytest.mark.parametrize("seed", range(150))
def test_a_queue_under_its_guarantee_gets_it_back_wherever_a_member_can_make_room(
    seed: int,
) -> None:
    rng = random.Random(seed)
    cores = {f"c{i}": rng.choice([4, 8]) for i in range(rng.randint(2, 5))}
    fleet = [cluster(name, flavor(cpu=str(n), nodes=1)) for name, n in cores.items()]
    total = sum(cores.values())
    mine = rng.randint(total // 5, total // 2)  # a's guarantee
    theirs = rng.randint(2, total - mine)  # b's, once given
    scheduler = cycle.Scheduler(SchedulerSettings())
    before = [queue("a", guarantee={"cpu": str(mine)}), queue("b")]
    pending = PendingStore(
        job(workload(f"a{i}", cpu="1", queue="a", priority=rng.randint(0, 2)), seq=i + 1)
        for i in range(total + 4)
    )
    first = scheduler.run_cycle(snap.build(fleet, queues=before), pending, Usage(), NOW)
    assert first.usage.queue_used("a").amount("cpu") == total * 1000  # a borrows it all

    asked, wanted = [], 0
    while True:
        size = rng.choice([1, 2])
        if wanted + size > theirs:
            break
        wanted += size
        asked.append(job(workload(f"b{len(asked)}", cpu=str(size), queue="b"), seq=1000 + wanted))
    for j in asked:
        first.pending.add(j)
    after = [queue("a", guarantee={"cpu": str(mine)}), queue("b", guarantee={"cpu": str(theirs)})]
    held = {q.metadata.name: first.usage.queue_used(q.metadata.name) for q in after}
    result = scheduler.run_cycle(snap.build(fleet, queues=after), first.pending, first.usage, NOW)

    _check_victims(result)
    _check_reclaim(result, after, held)
    assert all(why.startswith("reclaimed by") for _, why in result.evicted)
    usage = result.usage
    spare = usage.queue_used("a").amount("cpu") // 1000 - mine
    assert spare >= 0
    for j in asked:
        if str(j.ref) in {str(a.ref) for a in usage.admissions()}:
            continue
        size = j.workload.pod_requests().amount("cpu") // 1000
        for name, n in cores.items():
            on = [a for a in usage.admissions() if name in a.placement]
            free = n - sum(a.pod.amount("cpu") // 1000 for a in on)
            a_here = sum(1 for a in on if a.queue == "a")
            assert free + min(a_here, spare) < size, (
                f"{j.ref} waits, but {name} has {free} free and {a_here} of a's cores, "
                f"{spare} of them beyond a's guarantee: {result.reasons.get(str(j.ref))}"
            )


@pytest.mark.parametrize("seed", range(100))
def test_a_higher_priority_job_preempts_wherever_a_member_can_make_room(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"m{i:02d}" for i in range(rng.choice([5, 20, 40, 60]))]
    fleet = [cluster(name, flavor(cpu=str(rng.choice([2, 4])), nodes=1)) for name in names]
    cores = {
        c.metadata.name: int(c.status.flavors[0].allocatable.amount("cpu")) // 1000 for c in fleet
    }
    scheduler = cycle.Scheduler(SchedulerSettings(cycle_batch=1000))
    low = [
        job(
            workload(f"low{i:03d}", cpu="1", priority=0),
            placement={"clusterAffinity": {"clusterNames": [names[i % len(names)]]}},
            seq=i + 1,
        )
        for i in range(sum(cores.values()) + len(names))
    ]
    first = scheduler.run_cycle(snap.build(fleet), PendingStore(low), Usage(), NOW)
    high = [
        job(
            workload(f"high{i}", cpu=str(rng.randint(1, 3)), priority=rng.randint(1, 3)),
            seq=1000 + i,
        )
        if rng.random() < 0.6
        else job(  # a service divided by free room: replicas on as many members as it takes
            workload(
                f"web{i}",
                kind="Deployment",
                cpu=str(rng.randint(1, 2)),
                replicas=rng.randint(2, 4),
                priority=rng.randint(1, 3),
            ),
            placement={"replicaScheduling": DYNAMIC_WEIGHT},
            seq=1000 + i,
        )
        for i in range(rng.randint(1, 6))
    ]
    for j in high:
        first.pending.add(j)

    result = scheduler.run_cycle(snap.build(fleet), first.pending, first.usage, NOW)

    _check_victims(result)
    assert all(why.startswith("preempted by") for _, why in result.evicted)
    admitted = {str(a.ref) for a in result.usage.admissions()}
    for j in high:
        if str(j.ref) in admitted:
            continue
        size = j.workload.pod_requests().amount("cpu") // 1000
        room = {}  # per member: replicas its free and lower-priority cores would hold
        for name, n in cores.items():
            on = [a for a in result.usage.admissions() if name in a.placement]
            free = n - sum(a.pod.amount("cpu") * a.placement[name] // 1000 for a in on)
            lower = sum(
                a.pod.amount("cpu") * a.placement[name] // 1000
                for a in on
                if a.priority < j.priority
            )
            room[name] = (free + lower) // size
        replicas = j.workload.replicas
        whole = j.placement is None  # a Job: all its replicas on one member
        could = max(room.values()) >= replicas if whole else sum(room.values()) >= replicas
        assert not could, (
            f"{j.ref} waits, though members hold {room}: {result.reasons.get(str(j.ref))}"
        )
