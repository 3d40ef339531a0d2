"""A workload being placed again keeps the copies it has until it is placed.

Its Binding stays Pending with the clusters it still runs on, those copies count in usage
(`reconcile` sorts them as waiting), and the cycle places it without their charge.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from federation.failover import eviction
from federation.quota.accounting import Admission, Usage
from federation.resources import ResourceList
from federation.scheduler import binder, queue_view, reconcile
from federation.settings import SchedulerSettings
from policies.models.binding import Binding, EvictionTask
from policies.models.cluster import Cluster, Taint
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import (
    GPU,
    NOW,
    cluster,
    flavor,
    frq,
    job,
    placed,
    queue,
    rl,
    run,
    workload,
)

DOWN = Taint(key="cluster.fedctl.io/not-ready", effect="NoExecute", time_added=NOW)
WEIGHTED = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }
}


def _snapshot(fleet: list[Cluster], bindings: list[Binding], **kw: Any) -> Any:
    from federation.cache import snapshot as snap

    return snap.build(fleet, bindings=bindings, **kw)


def _reconciled(
    web: Any, stored: Binding, clusters: list[str], *, edited: bool = False
) -> reconcile.Work:
    """What reconcile makes of `stored` for `web` (`edited`: its spec changed since)."""
    key = str(web.ref)
    work = reconcile.reconcile(
        workloads={key: reconcile.Entry(web.workload, 1)},
        bindings={key: stored},
        phases={},
        policies=[],
        clusters=clusters,
        fingerprints={key: "admitted under an older spec"} if edited else {},
        settings=SchedulerSettings(),
    )
    assert [str(j.ref) for j in work.pending] == [key]
    return work


def _waiting(web: Any, stored: Binding, fleet: list[Cluster]) -> list[Admission]:
    """What reconcile counts for `stored` (a Pending Binding naming clusters)."""
    work = _reconciled(web, stored, [c.name for c in fleet])
    assert work.admitted == []
    return work.waiting


def _resized(new: Any, stored: Binding, clusters: list[str]) -> reconcile.Work:
    """What reconcile makes of `stored` once its workload changed to `new`'s spec."""
    return _reconciled(new, stored, clusters, edited=True)


def test_a_failed_re_placement_keeps_the_copies_on_members_never_evicted() -> None:
    spread = {**WEIGHTED, "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2}]}
    web = job(workload("web", kind="Deployment", replicas=4), placement=spread)
    first = run([cluster("a"), cluster("b")], [web])
    assert placed(first) == {"web": {"a": 2, "b": 2}}
    evicted = eviction.evict(
        first.bindings[0], "a", now=NOW, reason="cluster not ready", purge_mode="Gracefully"
    )
    down = [cluster("a", taints=[DOWN]), cluster("b")]

    again = run(down, [web], snapshot=_snapshot(down, [evicted]))

    (out,) = again.bindings
    written = binder._merged(evicted, out)
    assert written.status.phase == "Pending"
    assert written.placement() == {"b": 2}  # written with none, b's copy was removed
    assert "minGroups" in written.status.reason or "at least 2" in written.status.reason
    assert written.status.reason.endswith("(still running on b)")
    assert [t.cluster for t in written.spec.eviction_tasks] == ["a"]
    assert written.spec.pod_requests == {"cpu": "1", "memory": "1Gi"}  # what b's copy holds
    (b,) = written.spec.clusters
    assert b.hourly_cost is not None and written.spec.hourly_cost == b.hourly_cost


def test_a_scale_up_with_no_room_keeps_the_running_replicas() -> None:
    small = [cluster("a", flavor(cpu="2", nodes=1))]
    web = job(workload("web", kind="Deployment", replicas=2), placement=WEIGHTED)
    first = run(small, [web])
    (stored,) = first.bindings
    bigger = job(workload("web", kind="Deployment", replicas=8), placement=WEIGHTED)
    full = [cluster("a", flavor(cpu="0", nodes=1))]  # the member counts the 2 running pods

    again = run(full, [bigger], snapshot=_snapshot(full, [stored]))

    assert again.admitted == []
    (out,) = again.bindings
    assert out.status.phase == "Pending"
    assert out.placement() == {"a": 2}
    # The replicas it waits to run, as Karmada's ResourceBinding keeps the template's.
    assert out.spec.replicas == 8


def test_the_copies_of_a_waiting_workload_hold_their_queue_share() -> None:
    """web (4 CPUs) lost a; its 2 copies on b still run. Queue capability 4 CPUs: a job
    asking 3 CPUs must wait, although the queue's usage without those copies reads 0."""
    capped = queue("team", capability={"cpu": "4"})
    only_b = {**WEIGHTED, "clusterAffinity": {"clusterNames": ["a", "b"]}}
    web = job(workload("web", kind="Deployment", replicas=4, queue="team"), placement=only_b)
    fleet = [cluster("a", flavor(cpu="2", nodes=1)), cluster("b", flavor(cpu="2", nodes=1))]
    first = run(fleet, [web], queues=[capped])
    assert placed(first) == {"web": {"a": 2, "b": 2}}
    evicted = eviction.evict(
        first.bindings[0], "a", now=NOW, reason="cluster not ready", purge_mode="Directly"
    )
    down = [
        cluster("a", flavor(cpu="2", nodes=1), taints=[DOWN]),
        fleet[1],
        cluster("c", flavor(cpu="8", nodes=1)),
    ]
    waiting = _waiting(web, evicted, down)
    assert [dict(a.placement) for a in waiting] == [{"b": 2}]
    other = job(
        workload("other", kind="Deployment", replicas=3, queue="team"),
        placement={"clusterAffinity": {"clusterNames": ["c"]}},
        seq=5,
    )

    both = run(
        down,
        [web, other],
        queues=[capped],
        usage=Usage(waiting),
        snapshot=_snapshot(down, [evicted], queues=[capped]),
    )

    assert placed(both) == {}
    assert "capability" in both.reasons[str(other.ref)]
    assert [dict(a.placement) for a in both.usage.admissions()] == [{"b": 2}]


def test_a_waiting_workload_is_placed_without_competing_with_its_own_copies() -> None:
    capped = queue("team", capability={"cpu": "4"})
    web = job(workload("web", kind="Deployment", replicas=4, queue="team"), placement=WEIGHTED)
    fleet = [cluster("a", flavor(cpu="2", nodes=1)), cluster("b", flavor(cpu="2", nodes=1))]
    first = run(fleet, [web], queues=[capped])
    evicted = eviction.evict(
        first.bindings[0], "a", now=NOW, reason="cluster not ready", purge_mode="Directly"
    )
    # a is gone for good; c has room for the 2 replicas a held.
    moved = [fleet[1], cluster("c", flavor(cpu="8", nodes=1))]
    waiting = _waiting(web, evicted, moved)

    again = run(
        moved,
        [web],
        queues=[capped],
        usage=Usage(waiting),
        snapshot=_snapshot(moved, [evicted], queues=[capped]),
    )

    assert placed(again) == {"web": {"b": 2, "c": 2}}  # 4 of 4 CPUs: its own 2 not twice


def test_a_waiting_workload_preempted_gets_one_binding_in_the_cycle() -> None:
    """Its copies on b are a victim before its own turn comes: the cycle writes the
    eviction's Binding for it and does not place it again (two writes to one key)."""
    only_b = {**WEIGHTED, "clusterAffinity": {"clusterNames": ["a", "b"]}}
    low = job(workload("low", kind="Deployment", replicas=4, priority=1), placement=only_b)
    fleet = [cluster("a", flavor(cpu="2", nodes=1)), cluster("b", flavor(cpu="2", nodes=1))]
    first = run(fleet, [low])
    evicted = eviction.evict(
        first.bindings[0], "a", now=NOW, reason="cluster not ready", purge_mode="Directly"
    )
    down = [cluster("a", flavor(cpu="2", nodes=1), taints=[DOWN]), fleet[1]]
    waiting = _waiting(low, evicted, down)
    high = job(
        workload("high", kind="Deployment", replicas=2, priority=9),
        placement={"clusterAffinity": {"clusterNames": ["b"]}},
        seq=9,
    )

    result = run(down, [low, high], usage=Usage(waiting), snapshot=_snapshot(down, [evicted]))

    assert placed(result) == {"high": {"b": 2}}
    assert [v.ref.name for v, _ in result.evicted] == ["low"]
    names = Counter(b.spec.workload.name for b in result.bindings)
    assert names == {"high": 1, "low": 1}
    (mine,) = [b for b in result.bindings if b.spec.workload.name == "low"]
    assert mine.placement() == {}
    assert {t.cluster for t in mine.spec.eviction_tasks} == {"a", "b"}  # a's task kept
    assert low.ref in result.pending


def test_a_waiting_workload_reclaimed_after_its_turn_gets_one_binding() -> None:
    """Its turn comes first (it fails and keeps its copy on b), then a job of another queue
    reclaims that copy: the eviction's Binding replaces the kept one, not joins it."""
    spread = {
        **WEIGHTED,
        "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2}],
        "clusterAffinity": {"clusterNames": ["a", "b"]},
    }
    queues = [queue("q1", priority=5), queue("q2", guarantee={"cpu": "4"})]
    w = job(workload("w", kind="Deployment", replicas=4, queue="q1"), placement=spread, seq=1)
    fleet = [cluster("a", flavor(cpu="4", nodes=1)), cluster("b", flavor(cpu="4", nodes=1))]
    first = run(fleet, [w], queues=queues)
    evicted = eviction.evict(
        first.bindings[0], "a", now=NOW, reason="cluster not ready", purge_mode="Directly"
    )
    down = [cluster("a", flavor(cpu="4", nodes=1), taints=[DOWN]), fleet[1]]
    j = job(
        workload("j", kind="Deployment", replicas=4, queue="q2"),
        placement={"clusterAffinity": {"clusterNames": ["b"]}},
        seq=2,
    )
    snapshot = _snapshot(down, [evicted], queues=queues)

    result = run(
        down, [w, j], queues=queues, usage=Usage(_waiting(w, evicted, down)), snapshot=snapshot
    )

    assert placed(result) == {"j": {"b": 4}}
    assert [v.ref.name for v, _ in result.evicted] == ["w"]
    assert Counter(b.spec.workload.name for b in result.bindings) == {"w": 1, "j": 1}
    (mine,) = [b for b in result.bindings if b.spec.workload.name == "w"]
    assert mine.placement() == {}
    assert {t.cluster for t in mine.spec.eviction_tasks} == {"a", "b"}


def test_preemption_keeps_the_victims_other_eviction_tasks() -> None:
    """An application failover's task bars the member where the workload failed; the
    preemption's own tasks used to replace it, opening that member to the workload again."""
    only_b = {"clusterAffinity": {"clusterNames": ["b"]}}
    fleet = [cluster("a"), cluster("b", flavor(cpu="4", nodes=1))]
    web = job(workload("web", kind="Deployment", replicas=4), placement=only_b)
    first = run(fleet, [web])
    failed_there = EvictionTask(
        cluster="a",
        reason="application unhealthy",
        creation_time=NOW,
        replicas=4,
        purge_mode="Gracefully",
        producer="ApplicationFailover",
        grace_period_seconds=600,
    )
    spec = first.bindings[0].spec.model_copy(update={"eviction_tasks": [failed_there]})
    stored = first.bindings[0].model_copy(update={"spec": spec})
    high = job(workload("hi", kind="Deployment", replicas=4, priority=10), placement=only_b, seq=1)

    second = run(fleet, [high], usage=Usage(first.admitted), snapshot=_snapshot(fleet, [stored]))

    victim = next(b for b in second.bindings if b.spec.workload.name == "web")
    tasks = {(t.cluster, t.producer, t.purge_mode) for t in victim.spec.eviction_tasks}
    assert tasks == {("a", "ApplicationFailover", "Gracefully"), ("b", "", "Directly")}


def test_a_scale_down_on_full_members_keeps_its_members() -> None:
    """Members with no free room still hold the replicas running there: filtered on free
    room alone, the service moved wholesale to the one member with room."""
    web = job(workload("web", kind="Deployment", replicas=4), placement=WEIGHTED)
    fleet = [cluster("a", flavor(cpu="2", nodes=1)), cluster("b", flavor(cpu="2", nodes=1))]
    first = run(fleet, [web])
    assert placed(first) == {"web": {"a": 2, "b": 2}}
    fewer = job(workload("web", kind="Deployment", replicas=2), placement=WEIGHTED)
    full = [
        cluster("a", flavor(cpu="0", nodes=1)),
        cluster("b", flavor(cpu="0", nodes=1)),
        cluster("c", flavor(cpu="8", nodes=1)),
    ]

    again = run(full, [fewer], snapshot=_snapshot(full, first.bindings))

    assert placed(again) == {"web": {"a": 1, "b": 1}}


def test_pods_resized_on_a_full_member_keep_only_what_their_copies_room_holds() -> None:
    """Four 1-CPU copies fill a 4-CPU member; the pods grow to 2 CPU. The room the copies
    hold takes two of the new pods: the other two go where there is room. Counted as four
    replicas' room, the member was given 8 CPU of pods on 4."""
    small = job(workload("web", kind="Deployment", replicas=4, cpu="1"), placement=WEIGHTED)
    first = run([cluster("a", flavor(cpu="4", nodes=1))], [small])
    (stored,) = first.bindings
    assert stored.spec.pod_requests == {"cpu": "1", "memory": "1Gi"}
    big = job(workload("web", kind="Deployment", replicas=4, cpu="2"), placement=WEIGHTED)
    full = [cluster("a", flavor(cpu="0", nodes=1)), cluster("b", flavor(cpu="16", nodes=1))]
    work = _resized(big, stored, ["a", "b"])
    (copies,) = work.waiting
    assert copies.charge.amount("cpu") == 4000  # what its four 1-CPU copies hold

    again = run(full, [big], usage=Usage(work.waiting), snapshot=_snapshot(full, [stored]))

    assert placed(again) == {"web": {"a": 2, "b": 2}}


def test_pods_grown_past_what_their_copies_hold_do_not_compete_with_those_copies() -> None:
    """web's one 1-CPU copy holds no room for its new 8-CPU pod, so it keeps no replica
    where it runs; its namespace's quota (8 CPU) must still not count that copy against
    the pod replacing it, or the resize waits forever at 9/8."""
    web = job(workload("web", kind="Deployment", replicas=1, cpu="1"), placement=WEIGHTED)
    first = run([cluster("a", flavor(cpu="2", nodes=1))], [web])
    (stored,) = first.bindings
    big = job(workload("web", kind="Deployment", replicas=1, cpu="8"), placement=WEIGHTED)
    fleet = [cluster("a", flavor(cpu="1", nodes=1)), cluster("b", flavor(cpu="16", nodes=1))]
    quotas = [frq("team", cpu="8")]
    work = _resized(big, stored, ["a", "b"])
    snapshot = _snapshot(fleet, [stored], quotas=quotas)

    again = run(fleet, [big], usage=Usage(work.waiting), snapshot=snapshot)

    assert placed(again) == {"web": {"b": 1}}


def test_pods_resized_on_a_member_with_room_stay_where_they_run() -> None:
    """Four copies grow from 1 to 2 CPU on a 16-CPU member: it holds all four, so Steady
    division keeps them there. Counting only the copies' old room kept two, and the other
    two were sent to another member, splitting a workload that fits where it runs."""
    small = job(workload("web", kind="Deployment", replicas=4, cpu="1"), placement=WEIGHTED)
    (stored,) = run([cluster("a", flavor(cpu="16", nodes=1))], [small]).bindings
    big = job(workload("web", kind="Deployment", replicas=4, cpu="2"), placement=WEIGHTED)
    fleet = [cluster("a", flavor(cpu="12", nodes=1)), cluster("b", flavor(cpu="16", nodes=1))]
    work = _resized(big, stored, ["a", "b"])

    again = run(fleet, [big], usage=Usage(work.waiting), snapshot=_snapshot(fleet, [stored]))

    assert placed(again) == {"web": {"a": 4}}


def test_pods_resized_past_their_copies_room_still_run_where_the_member_is_cordoned() -> None:
    """A NoSchedule taint turns away new workloads, not the ones running there. A 1-CPU
    copy grown to 4 CPU keeps no replica in its old room, yet it still runs on a: it
    stays, and is not moved to b because a was cordoned after it came."""
    only = {**WEIGHTED, "clusterAffinity": {"clusterNames": ["a", "b"]}}
    small = job(workload("web", kind="Deployment", replicas=1, cpu="1"), placement=only)
    (stored,) = run([cluster("a")], [small]).bindings
    big = job(workload("web", kind="Deployment", replicas=1, cpu="4"), placement=only)
    cordon = Taint(key="maintenance", effect="NoSchedule", time_added=NOW)
    fleet = [cluster("a", taints=[cordon]), cluster("b", cpu_price="0.01")]
    work = _resized(big, stored, ["a", "b"])

    again = run(fleet, [big], usage=Usage(work.waiting), snapshot=_snapshot(fleet, [stored]))

    assert placed(again) == {"web": {"a": 1}}


def test_pods_resized_past_their_copies_room_stay_in_the_affinity_group_they_fell_back_to() -> None:
    """Placed in its "dr" group while "main" was down, the workload is resized: it stays in
    "dr" (going home is fail-back's graceful move), though its grown pod keeps no replica
    in its copy's old room."""
    groups = {
        "clusterAffinities": [
            {"affinityName": "main", "clusterNames": ["primary"]},
            {"affinityName": "dr", "clusterNames": ["backup"]},
        ]
    }
    small = job(workload("web", kind="Deployment", replicas=1, cpu="1"), placement=groups)
    down = [cluster("primary", ready=False), cluster("backup")]
    (stored,) = run(down, [small]).bindings
    assert list(stored.placement()) == ["backup"]
    big = job(workload("web", kind="Deployment", replicas=1, cpu="4"), placement=groups)
    fleet = [cluster("primary"), cluster("backup")]
    work = _resized(big, stored, ["primary", "backup"])

    again = run(fleet, [big], usage=Usage(work.waiting), snapshot=_snapshot(fleet, [stored]))

    assert placed(again) == {"web": {"backup": 1}}


def test_the_replicas_a_workload_keeps_leave_the_rest_of_the_member_to_others() -> None:
    """w keeps its 2 copies on b (held since the cycle began) and adds 2 on c; x, later in
    the cycle, fits in b's other 2 CPUs. Charged again for the kept copies, b read as full."""
    only = {**WEIGHTED, "clusterAffinity": {"clusterNames": ["a", "b", "c"]}}
    w = job(workload("w", kind="Deployment", replicas=4), placement=only, seq=1)
    first = run(
        [cluster("a", flavor(cpu="2", nodes=1)), cluster("b", flavor(cpu="2", nodes=1))], [w]
    )
    assert placed(first) == {"w": {"a": 2, "b": 2}}
    evicted = eviction.evict(
        first.bindings[0], "a", now=NOW, reason="cluster not ready", purge_mode="Directly"
    )
    down = [
        cluster("a", flavor(cpu="2", nodes=1), taints=[DOWN]),
        cluster("b", flavor(cpu="4", nodes=1)),  # its copies not yet counted by the monitor
        cluster("c", flavor(cpu="8", nodes=1)),
    ]
    x = job(
        workload("x", kind="Deployment", replicas=2),
        placement={"clusterAffinity": {"clusterNames": ["b"]}},
        seq=2,
    )
    usage = Usage(_waiting(w, evicted, down))

    result = run(down, [w, x], usage=usage, snapshot=_snapshot(down, [evicted]))

    assert placed(result) == {"w": {"b": 2, "c": 2}, "x": {"b": 2}}


def test_a_placed_workload_edited_counts_its_running_copies_until_placed_again() -> None:
    web = job(workload("web", kind="Deployment", replicas=4), placement=WEIGHTED)
    fleet = [cluster("a"), cluster("b")]
    (stored,) = run(fleet, [web]).bindings
    key = str(web.ref)

    work = reconcile.reconcile(
        workloads={key: reconcile.Entry(web.workload, 1)},
        bindings={key: stored},
        phases={},
        policies=[],
        clusters=["a", "b"],
        fingerprints={key: "admitted under an older spec"},
        settings=SchedulerSettings(),
    )

    assert [str(j.ref) for j in work.pending] == [key] and work.admitted == []
    assert [dict(a.placement) for a in work.waiting] == [{"a": 2, "b": 2}]


def test_the_queue_view_counts_a_waiting_workload_as_waiting_with_its_usage() -> None:
    web = job(workload("web", kind="Deployment", replicas=4), placement=WEIGHTED)
    fleet = [cluster("a"), cluster("b")]
    first = run(fleet, [web])
    evicted = eviction.evict(
        first.bindings[0], "a", now=NOW, reason="cluster not ready", purge_mode="Directly"
    )
    usage = Usage(_waiting(web, evicted, fleet))

    t = queue_view.tally(_snapshot(fleet, [evicted]), usage, {"default": 1}, {"default": 1})

    (row,) = queue_view.items(t, default="default")
    assert (row["admitted"], row["pending"]) == (0, 1)
    assert t.used["default"]["cpu"] == 2000  # its 2 running copies, 1 CPU each


def test_copies_on_the_members_left_hold_their_room_when_another_member_is_gone() -> None:
    """w ran 2 copies on a and 2 on z; z was deleted. The copies on a still run: charged
    nothing because z was gone, a read as empty and x was given its whole 4 CPUs, six
    1-CPU pods on a 4-CPU member (the monitor had not counted w's copies yet)."""
    w = job(workload("w", kind="Deployment", replicas=4), placement=WEIGHTED, seq=1)
    first = run(
        [cluster("a", flavor(cpu="2", nodes=1)), cluster("z", flavor(cpu="2", nodes=1))], [w]
    )
    (stored,) = first.bindings
    assert placed(first) == {"w": {"a": 2, "z": 2}}
    fleet = [cluster("a", flavor(cpu="4", nodes=1)), cluster("c", flavor(cpu="8", nodes=1))]
    x = job(
        workload("x", kind="Deployment", replicas=4),
        placement={"clusterAffinity": {"clusterNames": ["a"]}},
        seq=2,
    )
    (copies,) = _waiting(w, stored, fleet)
    assert dict(copies.placement) == {"a": 2}

    again = run(fleet, [w, x], usage=Usage([copies]), snapshot=_snapshot(fleet, [stored]))

    assert placed(again) == {"w": {"a": 2, "c": 2}}
    assert "best is a with 2" in again.reasons[str(x.ref)]


def test_a_service_placed_again_under_a_new_noexecute_taint_waits_for_failover_to_move_it() -> None:
    """a's NoExecute taint changes the fingerprint, so web is placed again, possibly before
    failover judges it. Refused by the scheduler, web left a at once and its copy was
    deleted outright; failover evicts it with the policy's graceful purge (and tolerations'
    seconds), so the scheduler keeps it where it runs until then."""
    web = job(workload("web", kind="Deployment", replicas=4), placement=WEIGHTED)
    fleet = [cluster("a", flavor(cpu="2", nodes=1)), cluster("b", flavor(cpu="2", nodes=1))]
    first = run(fleet, [web])
    assert placed(first) == {"web": {"a": 2, "b": 2}}
    leaving = Taint(key="example.com/retire", effect="NoExecute", time_added=NOW)
    tainted = [
        cluster("a", flavor(cpu="2", nodes=1), taints=[leaving]),
        cluster("b", flavor(cpu="2", nodes=1)),
        cluster("c", flavor(cpu="8", nodes=1)),
    ]

    again = run(tainted, [web], snapshot=_snapshot(tainted, first.bindings))

    assert placed(again) == {"web": {"a": 2, "b": 2}}


AGGREGATED = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Aggregated",
    }
}


@pytest.mark.parametrize("policy", [WEIGHTED, AGGREGATED], ids=["dynamic", "aggregated"])
def test_a_scale_up_gives_no_member_more_replicas_than_its_room(policy: dict[str, Any]) -> None:
    """web runs 1 replica on b; scaled to 3, a and b each have room for one more. Karmada's
    Steady division seats the 2 added ones over the running one and checks only the total,
    giving a both (a holds none yet); fedctl moves the one a has no room for to b."""
    web = job(workload("web", kind="Deployment", replicas=1), placement=policy)
    b = flavor(cpu="2", nodes=1)
    first = run([cluster("a", flavor(cpu="0", nodes=1)), cluster("b", b)], [web])
    assert placed(first) == {"web": {"b": 1}}
    (stored,) = first.bindings
    running = rl(cpu="1", memory="1Gi", pods="1")  # b's status shows the running replica
    b = b.model_copy(update={"free": b.free - running, "largest_free": b.largest_free - running})
    fleet = [cluster("a", flavor(cpu="1", nodes=1)), cluster("b", b)]
    bigger = job(workload("web", kind="Deployment", replicas=3), placement=policy)

    again = run(fleet, [bigger], snapshot=_snapshot(fleet, [stored]))

    assert placed(again) == {"web": {"a": 1, "b": 2}}


def test_replicas_kept_on_a_scale_up_keep_the_arch_their_pods_run_on() -> None:
    """web's 2 replicas run on c's Arm nodes (its Binding pins them to arm64); scaled to 3,
    the added one only fits c's x86 node. Recording the added pod's arch for all three
    pinned the running two to a node without room for them: the Binding now records no
    arch (either) on c."""
    amd, arm = flavor(cpu="2", nodes=1), flavor(arch="arm64", cpu="4", nodes=1)
    web = job(workload("web", kind="Deployment", cpu="2", replicas=2), placement=WEIGHTED)
    taken = rl(cpu="2", pods="1")  # others' pod on the x86 node, gone by the scale-up
    busy = amd.model_copy(update={"free": amd.free - taken, "largest_free": amd.free - taken})
    first = run([cluster("c", busy, arm)], [web])
    (stored,) = first.bindings
    assert [(t.name, t.replicas, t.chip) for t in stored.spec.clusters] == [("c", 2, "arm64")]
    running = rl(cpu="4", memory="2Gi", pods="2")
    arm = arm.model_copy(update={"free": arm.free - running, "largest_free": arm.free - running})
    fleet = [cluster("c", amd, arm)]
    bigger = job(workload("web", kind="Deployment", cpu="2", replicas=3), placement=WEIGHTED)

    again = run(fleet, [bigger], snapshot=_snapshot(fleet, [stored]))

    (out,) = again.bindings
    assert [(t.name, t.replicas, t.chip) for t in out.spec.clusters] == [("c", 3, None)]
    (admitted,) = again.admitted
    assert admitted.chips == {}

    smaller = job(workload("web", kind="Deployment", cpu="2", replicas=1), placement=WEIGHTED)
    down = run(fleet, [smaller], snapshot=_snapshot(fleet, [stored]))
    (out,) = down.bindings  # scaled down, the one kept still runs on arm64
    assert [(t.name, t.replicas, t.chip) for t in out.spec.clusters] == [("c", 1, "arm64")]


def test_gpu_replicas_kept_on_a_scale_keep_their_chip() -> None:
    """web (1 GPU a replica, H100 preferred, A100 taken) runs on c's A100s because its
    H100s were busy. Scaled up once the H100s are free, the added replica joins the running
    one on A100: the Binding pins every replica there to one chip. Scaled down on a full
    member, the one kept still records A100 (it recorded none: no chip had room left)."""
    a100 = flavor(chip="nvidia-a100-80gb", devices=2, cpu="16", nodes=1)
    h100 = flavor(chip="nvidia-h100-80gb", devices=2, cpu="16", nodes=1)
    chips = "nvidia-h100-80gb,nvidia-a100-80gb"
    busy = h100.model_copy(update={"free": h100.free - ResourceList({GPU: 2000})})
    busy = busy.model_copy(update={"largest_free": busy.free})
    one = job(workload("web", kind="Deployment", gpus=1, chips=chips), placement=WEIGHTED)
    first = run([cluster("c", a100, busy)], [one])
    (stored,) = first.bindings
    assert [(t.replicas, t.chip) for t in stored.spec.clusters] == [(1, "nvidia-a100-80gb")]
    used = rl(cpu="1", memory="1Gi", pods="1") + ResourceList({GPU: 1000})
    running = a100.model_copy(update={"free": a100.free - used, "largest_free": a100.free - used})
    fleet = [cluster("c", running, h100)]
    two = job(
        workload("web", kind="Deployment", gpus=1, replicas=2, chips=chips), placement=WEIGHTED
    )

    up = run(fleet, [two], snapshot=_snapshot(fleet, [stored]))

    (out,) = up.bindings
    assert [(t.replicas, t.chip) for t in out.spec.clusters] == [(2, "nvidia-a100-80gb")]
    (admitted,) = up.admitted
    assert {f for _, f, _ in admitted.flavors} == {0}  # the A100 flavor
    assert admitted.charge.amount("accelerator/nvidia-a100-80gb") == 2000

    full = [
        cluster(
            "c", *(f.model_copy(update={"free": rl(), "largest_free": rl()}) for f in (a100, h100))
        )
    ]
    down = run(full, [one], snapshot=_snapshot(full, [out]))
    (kept,) = down.bindings
    assert [(t.replicas, t.chip) for t in kept.spec.clusters] == [(1, "nvidia-a100-80gb")]


def test_copies_of_a_workload_moved_to_another_queue_stay_charged_where_admitted() -> None:
    """web runs 2 copies admitted by queue a, then is moved to queue b, capped below what
    it asks: b must admit it before its copies count there. Until then they hold a's share
    (charged to b, b ran past its capability with copies it never admitted)."""
    fleet = [cluster("c")]
    queues = [queue("a"), queue("b", capability={"cpu": "1"})]
    web = job(workload("web", kind="Deployment", replicas=2, queue="a"), placement=WEIGHTED)
    first = run(fleet, [web], queues=queues)
    (stored,) = first.bindings
    moved = job(workload("web", kind="Deployment", replicas=2, queue="b"), placement=WEIGHTED)

    work = _reconciled(moved, stored, ["c"], edited=True)
    (copies,) = work.waiting
    assert copies.queue == "a" and copies.charge.amount("cpu") == 2000

    again = run(
        fleet,
        work.pending,
        queues=queues,
        usage=Usage(work.waiting),
        snapshot=_snapshot(fleet, [stored], queues=queues),
    )
    assert again.admitted == []
    assert again.usage.queue_used("b").amount("cpu") == 0
    (pending,) = again.bindings
    assert pending.spec.queue == "a" and pending.placement() == {"c": 2}
    assert _waiting(moved, pending, fleet)[0].queue == "a"  # and so the cycle after


def test_the_queue_view_counts_no_object_without_pods_as_admitted_work() -> None:
    """A Namespace is placed and bound like work, but nobody queued it: counted, `default`
    read as busy with nothing running."""
    shop = job(
        Workload.model_validate(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
        )
    )
    web = job(workload("web", kind="Deployment", replicas=2), seq=2)
    fleet = [cluster("a")]
    result = run(fleet, [shop, web])
    assert len(result.admitted) == 2  # both placed

    t = queue_view.tally(_snapshot(fleet, result.bindings), result.usage, {})

    (row,) = queue_view.items(t, default="default")
    assert row["admitted"] == 1


@pytest.mark.parametrize(
    ("mode", "tolerated", "reason"),
    [
        pytest.param(
            "Gracefully",
            False,
            "0/2 clusters are available: 2 filtered by taints",
            id="graceful copies on members no allowed one tolerates: the taints say why",
        ),
        pytest.param(
            "Directly",
            False,
            "0/2 clusters are available: 2 filtered by taints",
            id="a copy purged at once from an untolerated taint: the taints say why",
        ),
        pytest.param(
            "Gracefully",
            True,
            "0/2 clusters are available: 2 waiting for an evicted copy to be removed",
            id="a taint tolerated for a while: only the eviction bar keeps it off",
        ),
    ],
)
def test_the_pending_reason_names_the_taint_that_keeps_a_service_from_its_members(
    mode: str, tolerated: bool, reason: str
) -> None:
    """Evicted from both members it may run on, each under a NoExecute taint it does not
    tolerate: the taint, not the old copy, keeps it off them (the copy's removal unblocks
    nothing). The bar speaks only where the taint alone would let it back."""
    maint = Taint(key="example.com/maint", value="now", effect="NoExecute", time_added=NOW)
    tolerations = [{"key": "example.com/maint", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": 20}] if tolerated else []  # fmt: skip
    web = job(
        workload("web", kind="Deployment", replicas=2),
        placement={**WEIGHTED, "clusterTolerations": tolerations},
    )
    fleet = [cluster("a", flavor()), cluster("b", flavor())]
    first = run(fleet, [web])
    assert placed(first) == {"web": {"a": 1, "b": 1}}
    (stored,) = first.bindings
    for name in ("a", "b"):
        stored = eviction.evict(stored, name, now=NOW, reason="untolerated taint", purge_mode=mode)
    tainted = [cluster("a", flavor(), taints=[maint]), cluster("b", flavor(), taints=[maint])]

    again = run(tainted, [web], snapshot=_snapshot(tainted, [stored]))

    assert placed(again) == {}
    assert again.reasons[str(web.ref)] == reason
