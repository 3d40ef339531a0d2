"""The scheduling cycle end to end on small fleets: admission, order, gang, preemption, reclaim."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from federation import clock
from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob, PendingStore
from federation.quota.accounting import Usage
from federation.scheduler import bound_usage, cycle
from federation.scheduler import framework as fw
from federation.scheduler.plugins import capacity
from federation.settings import SchedulerSettings
from policies.models.accelerator import ChipDevices
from policies.models.cluster import Cluster, NodeFlavor
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import (
    DYNAMIC_WEIGHT,
    NOW,
    cluster,
    flavor,
    frq,
    job,
    placed,
    queue,
    run,
    workload,
)

H100 = "nvidia-h100-80gb"


def a100(nodes: int = 1, **kw: Any) -> NodeFlavor:
    return flavor(chip="nvidia-a100-80gb", devices=8, cpu="96", memory="1Ti", nodes=nodes, **kw)


def npu(nodes: int = 1, devices: int = 8, **kw: Any) -> NodeFlavor:
    return flavor(
        arch="arm64",
        chip="ascend-910b",
        devices=devices,
        cpu="192",
        memory="1Ti",
        nodes=nodes,
        **kw,
    )


def test_a_gang_goes_whole_to_one_cluster() -> None:
    fleet = [cluster("small", flavor(nodes=1)), cluster("big", flavor(nodes=3))]
    result = run(fleet, [job(workload("train", cpu="8", replicas=5))])
    assert placed(result) == {"train": {"big": 5}}
    [binding] = result.bindings
    assert binding.status.phase == "Scheduled"
    assert [(t.name, t.replicas, t.chip) for t in binding.spec.clusters] == [("big", 5, "amd64")]
    assert binding.spec.hourly_cost is not None


def test_pending_reason_names_the_closest_cluster() -> None:
    fleet = [
        cluster("bj-npu-1", npu(nodes=2, largest_devices=4, free_devices=8)),
        cluster("bj-npu-2", npu(nodes=1, largest_devices=2, free_devices=2)),
    ]
    w = workload("big", gpus=8, resource="huawei.com/Ascend910", chips="ascend-910b")
    result = run(fleet, [job(w)])
    assert result.admitted == []
    assert result.reasons["team/Job.batch/big"] == (
        "no eligible cluster has a node with 8 free ascend-910b; best is bj-npu-1 with 4"
    )
    [binding] = result.bindings
    assert binding.status.phase == "Pending" and binding.status.reason.startswith("no eligible")
    assert result.pending.get(job(w).ref) is not None


def test_pending_reason_says_when_no_node_is_large_enough_even_empty() -> None:
    # Both clusters are full, but only the larger nodes could ever take the pod: the reason
    # must not read as a matter of waiting. A pool with no nodes is no node at all.
    fleet = [
        cluster("bj-npu-1", npu(nodes=2, largest_devices=0, free_devices=0)),
        cluster("bj-npu-2", npu(devices=4, nodes=3), npu(devices=16, nodes=0, largest_devices=0)),
    ]
    w = workload("big", gpus=12, resource="huawei.com/Ascend910", chips="ascend-910b")
    result = run(fleet, [job(w)])
    assert result.admitted == []
    assert result.reasons["team/Job.batch/big"] == (
        "no eligible cluster has a node with 12 ascend-910b even when empty; the largest,"
        " on bj-npu-1, has 8: shrink the request or add larger nodes"
    )
    small = workload("small", gpus=8, resource="huawei.com/Ascend910", chips="ascend-910b")
    assert run(fleet, [job(small)]).reasons["team/Job.batch/small"] == (
        "no eligible cluster has a node with 8 free ascend-910b; best is bj-npu-2 with 4"
    )


@pytest.mark.parametrize(
    "busy",
    [
        pytest.param(False, id="the members are empty"),
        pytest.param(True, id="the members are busy, which waiting would not change"),
    ],
)
def test_a_gang_larger_than_any_member_even_empty_can_never_be_admitted(busy: bool) -> None:
    """Three 8-GPU pods that must share a member, in a fleet whose largest member holds two
    of them when empty: "best is us-east-a100 with 2" read as a wait for room that would
    never come. The reason judges the members' whole capacity, not what is free."""
    used = {"largest_devices": 0, "free_devices": 0} if busy else {}
    fleet = [
        cluster("us-east-a100", a100(nodes=2, **used)),
        cluster("eu-west-a100", a100(nodes=1)),
    ]
    gang = workload("never", gpus=8, cpu="4", memory="8Gi", replicas=3, chips="nvidia-a100-80gb")
    result = run(fleet, [job(gang)])
    assert result.admitted == []
    assert result.reasons["team/Job.batch/never"] == (
        "no eligible cluster could hold 3 replicas of cpu=4, memory=8Gi, nvidia.com/gpu=8"
        " even when empty; the largest, us-east-a100, holds 2: it can never be admitted"
        " (shrink the request or add capacity)"
    )
    fits = workload("fits", gpus=8, cpu="4", memory="8Gi", replicas=2, chips="nvidia-a100-80gb")
    assert "can never" not in run(fleet, [job(fits)]).reasons.get("team/Job.batch/fits", "")


def test_a_duplicated_service_no_member_could_hold_whole_can_never_be_admitted() -> None:
    """Each member must hold every replica of a duplicated workload, as a gang's one must."""
    fleet = [cluster("a", flavor(nodes=1)), cluster("b", flavor(nodes=1))]
    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    web = workload("web", kind="Deployment", cpu="8", replicas=3)
    result = run(fleet, [job(web, placement=duplicated)])
    assert result.reasons["team/Deployment.apps/web"] == (
        "no eligible cluster could hold 3 replicas of cpu=8, memory=1Gi even when empty;"
        " the largest, a, holds 2: it can never be admitted (shrink the request or add"
        " capacity)"
    )


def test_a_division_needing_more_of_a_chip_than_the_fleet_has_is_not_a_borrowing_limit() -> None:
    """5 pods of 8 GPUs split 1:1 by static weight give the H100 member 3, more than the
    fleet's 16 H100s: it read "queue default cannot borrow …: 0 in use and 0 guaranteed
    to other queues, of 16 (needs 24)", as if another queue held them."""
    fleet = [
        cluster("us-east-a100", a100(nodes=2)),
        cluster("eu-west-h100", flavor(chip=H100, devices=8, cpu="96", memory="1Ti")),
    ]
    weights = [{"targetCluster": {"clusterNames": [c.name]}, "weight": 1} for c in fleet]
    placement = {
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": weights},
        }
    }
    big = workload("big5", gpus=8, replicas=5, chips=f"nvidia-a100-80gb,{H100}")
    result = run(fleet, [job(big, placement=placement)])
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/big5"] == (
        "the federation holds 16 nvidia-h100-80gb in all, and this placement needs 24: it can"
        " never be admitted as placed (shrink the request, change its division or add"
        " capacity)"
    )


def test_a_strict_fifo_head_that_can_never_be_admitted_is_named_as_such_behind_it() -> None:
    """The queue waits for its head as before (docs/concepts.md, dequeueStrategy), but the
    workloads behind it now say that head will never be admitted as it stands, so the
    stalled queue is noticed rather than read as a wait for room."""
    fleet = [cluster("us-east-a100", a100(nodes=2))]
    q = queue("ml-prod", dequeue_strategy="StrictFIFO")
    never = workload("never", gpus=8, replicas=3, chips="nvidia-a100-80gb", queue="ml-prod")
    small = workload("small", gpus=1, queue="ml-prod")
    result = run(fleet, [job(never, seq=1), job(small, seq=2)], queues=[q])
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/small"] == (
        "waiting behind team/Job.batch/never in queue ml-prod, which admits in strict FIFO"
        " order (dequeueStrategy StrictFIFO): nothing behind its first workload is admitted"
        " before it, and it can never be admitted as it stands: change or delete it"
    )


def _volcano(name: str, *, replicas: int, min_available: int) -> Workload:
    pod = {
        "containers": [
            {"name": "w", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "8"}}}
        ]
    }
    return Workload.model_validate(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "team"},
            "spec": {
                "minAvailable": min_available,
                "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": pod}}],
            },
        }
    )


@pytest.mark.parametrize(
    ("nodes", "tail"),
    [
        pytest.param(2, "holds 2: it can never be admitted", id="no member could ever hold it"),
        pytest.param(4, "best is a with 2", id="a member could, once room frees"),
    ],
)
def test_a_gang_smaller_than_its_replicas_says_every_replica_is_placed_at_once(
    nodes: int, tail: str
) -> None:
    """Volcano starts minAvailable pods together and the rest as room frees; fedctl places
    every replica of a gang on one member at once. The reason said nothing of minAvailable,
    so a gang of 1 waiting for room for 3 read as a bug in the count."""
    fleet = [cluster("a", a100(nodes=nodes, free_devices=16))]
    result = run(fleet, [job(_volcano("vcmin", replicas=3, min_available=1))])
    why = result.reasons["team/Job.batch.volcano.sh/vcmin"]
    assert tail in why, why
    assert why.endswith(
        "; every replica of a gang is placed on one member at once, so minAvailable 1"
        " does not let it start with fewer than 3"
    ), why
    whole = run(fleet, [job(_volcano("vcall", replicas=3, min_available=3))])
    assert "minAvailable" not in whole.reasons["team/Job.batch.volcano.sh/vcall"]


def test_a_gang_over_its_queues_capability_says_every_replica_is_counted() -> None:
    """A Volcano gang of 3 x 2 CPU with minAvailable 2 in a queue capped at 5 CPU: Volcano
    starts 2 (4 CPU) and the third as room frees; fedctl charges all 3 at once, so it can
    never be admitted, and "needs 6" beside minAvailable 2 read as a miscount."""
    pod = {"containers": [{"name": "w", "resources": {"requests": {"cpu": "2"}}}]}
    gang = Workload.model_validate(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "g1", "namespace": "team"},
            "spec": {
                "minAvailable": 2,
                "queue": "gq",
                "tasks": [{"name": "worker", "replicas": 3, "template": {"spec": pod}}],
            },
        }
    )
    fleet = [cluster("a", flavor(nodes=2))]
    result = run(fleet, [job(gang)], queues=[queue("gq", capability={"cpu": "5"})])
    assert result.reasons["team/Job.batch.volcano.sh/g1"] == (
        "queue gq capability for cpu is 5, this workload needs 6: it can never be admitted"
        " (raise the limit or shrink the request); every replica of a gang is placed on"
        " one member at once, so minAvailable 2 does not let it start with fewer than 3"
    )


@pytest.mark.parametrize(
    ("request_", "shown"),
    [
        pytest.param({"cpu": "1e16"}, "10P cpu", id="cpu past int64 in milli-units"),
        pytest.param({"memory": "64Ei"}, "64Ei memory", id="memory past int64"),
        pytest.param({"cpu": "1e24"}, "1000000E cpu", id="the largest quantity parsed"),
    ],
)
def test_a_request_no_node_can_hold_waits_with_a_reason_and_blocks_no_one(
    request_: dict[str, str], shown: str
) -> None:
    """Quantities parse up to 10^24; in milli-units most of that is past int64, and
    building the pod's vector raised OverflowError: one typo failed every cycle, for every
    job in the federation. The request now waits, named as written."""
    fleet = [cluster("a", flavor(cpu="16", memory="64Gi", nodes=2))]
    huge = workload("huge", cpu=request_.get("cpu", "1"), memory=request_.get("memory", "1Gi"))
    result = run(fleet, [job(huge, seq=1), job(workload("small", cpu="1"), seq=2)])

    assert [a.ref.name for a in result.admitted] == ["small"]
    assert result.reasons["team/Job.batch/huge"].startswith(
        f"no eligible cluster has a node with {shown} even when empty"
    )


def test_a_member_reporting_more_than_int64_milli_units_is_still_scheduled_on() -> None:
    """70,000 nodes of 1 TiB: 7.7e19 milli-bytes of memory, past int64. The snapshot part
    failed to build and no cycle ran; the member now reads as the most int64 holds."""
    fleet = [
        cluster("huge", flavor(cpu="96", memory="1Ti", nodes=70_000)),
        cluster("small", flavor(cpu="16", memory="64Gi", nodes=1)),
    ]
    w = workload("wide", cpu="64", memory="512Gi")
    result = run(fleet, [job(w)])

    assert [a.placement for a in result.admitted] == [{"huge": 1}]
    s = snap.build(fleet)
    assert 0 < s.free[s.index["huge"], 0, snap.MEMORY] <= 2**62


def test_static_filters_are_summarised_when_no_cluster_is_eligible() -> None:
    fleet = [cluster("down", ready=False), cluster("cpu")]
    result = run(fleet, [job(workload("gpu", gpus=1))])
    assert result.reasons["team/Job.batch/gpu"] == (
        "0/2 clusters are available: 1 filtered by chips, 1 filtered by health"
    )


def test_queue_at_capability_for_a_chip_stays_pending_with_the_numbers() -> None:
    fleet = [cluster("gpu", a100(nodes=4))]
    q = queue("ml-research", capability={"accelerator/nvidia-a100-80gb": "16"})
    jobs = [job(workload(f"j{i}", gpus=8, queue="ml-research")) for i in range(3)]
    result = run(fleet, jobs, queues=[q])
    assert sorted(placed(result)) == ["j0", "j1"]
    assert result.reasons["team/Job.batch/j2"] == (
        "queue ml-research at capability for nvidia-a100-80gb: 16/16 (needs 8)"
    )


def test_namespace_quota_overall_counts_what_is_bound() -> None:
    fleet = [cluster("cpu", flavor(nodes=4))]
    jobs = [job(workload(f"j{i}", cpu="4")) for i in range(3)]
    result = run(fleet, jobs, quotas=[frq("team", cpu="8")])
    assert sorted(placed(result)) == ["j0", "j1"]
    assert (
        "FederatedResourceQuota quota overall for cpu: 8/8" in result.reasons["team/Job.batch/j2"]
    )


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param("BestEffortFIFO", ["small"], id="a head that does not fit does not block"),
        pytest.param("StrictFIFO", [], id="strict FIFO waits for its head"),
    ],
)
def test_head_of_line(strategy: str, expected: list[str]) -> None:
    fleet = [cluster("cpu", flavor(nodes=1))]
    q = queue("q", dequeue_strategy=strategy)
    jobs = [job(workload("huge", cpu="64", queue="q")), job(workload("small", cpu="1", queue="q"))]
    result = run(fleet, jobs, queues=[q])
    assert sorted(placed(result)) == expected
    assert "huge" in {j.ref.name for j in result.pending.jobs()}
    if strategy == "StrictFIFO":  # it said "not scheduled yet" for as long as huge waited
        why = result.reasons["team/Job.batch/small"]
        assert why.startswith("waiting behind team/Job.batch/huge in queue q, which admits"), why
        [small] = [b for b in result.bindings if b.metadata.name == "small"]
        assert (small.status.phase, small.status.reason) == ("Pending", why)
        [waiting] = [j for j in result.pending.jobs() if j.ref.name == "small"]
        assert waiting.reason == why


def test_priority_then_fifo_decides_who_gets_the_last_slot() -> None:
    fleet = [cluster("cpu", flavor(nodes=1, cpu="4"))]
    jobs = [
        job(workload("early-low", cpu="2")),
        job(workload("late-high", cpu="2", priority=10)),
        job(workload("late-low", cpu="2")),
    ]
    result = run(fleet, jobs)
    assert [a.ref.name for a in result.admitted] == ["late-high", "early-low"]


def test_a_named_priority_takes_its_value_from_the_queue() -> None:
    """`fedctl.io/priority: high` means the queue's `priorityClasses.high`: it orders and
    is recorded like a number; a class the queue does not define holds the workload with a
    reason naming the classes it does."""
    fleet = [cluster("cpu", flavor(nodes=1, cpu="4"))]
    ml = queue("ml", priorityClasses={"high": 100, "low": 0})
    jobs = [
        job(workload("early-low", cpu="2", queue="ml", priority="low")),
        job(workload("late-high", cpu="2", queue="ml", priority="high")),
        job(workload("typo", cpu="2", queue="ml", priority="hihg")),
        job(workload("late-number", cpu="2", queue="ml", priority=50)),
    ]
    result = run(fleet, jobs, queues=[ml])
    assert [a.ref.name for a in result.admitted] == ["late-high", "late-number"]
    high = next(b for b in result.bindings if b.metadata.name == "late-high")
    assert high.spec.priority == 100
    assert result.reasons["team/Job.batch/typo"] == (
        "priority class 'hihg' is not defined in queue ml (its priorityClasses: high (100),"
        " low (0)): define it there or correct the workload's fedctl.io/priority"
    )


def test_a_child_queue_takes_its_parents_priority_classes_and_its_own_win() -> None:
    """Kueue's WorkloadPriorityClass is cluster-wide, so a team moving from it writes its
    classes once, on the department's parent queue; read from the leaf alone they were
    never used and a job naming one waited. A child's own definition of a name wins."""
    fleet = [cluster("cpu", flavor(nodes=1, cpu="4"))]
    dept = queue("dept", priorityClasses={"prod": 1000, "batch": 0, "dev": 10})
    team = queue("team", parent="dept", priorityClasses={"dev": 500})
    jobs = [
        job(workload("early-batch", cpu="2", queue="team", priority="batch")),
        job(workload("late-dev", cpu="2", queue="team", priority="dev")),
        job(workload("late-prod", cpu="2", queue="team", priority="prod")),
        job(workload("typo", cpu="2", queue="team", priority="prdo")),
    ]
    result = run(fleet, jobs, queues=[dept, team])
    assert [a.ref.name for a in result.admitted] == ["late-prod", "late-dev"]
    values = {b.metadata.name: b.spec.priority for b in result.bindings}
    assert (values["late-prod"], values["late-dev"]) == (1000, 500)
    assert result.reasons["team/Job.batch/typo"] == (
        "priority class 'prdo' is not defined in queue team (its priorityClasses: prod (1000),"
        " dev (500), batch (0)): define it there or correct the workload's fedctl.io/priority"
    )


def test_fair_share_alternates_between_equal_queues() -> None:
    fleet = [cluster("cpu", flavor(nodes=1, cpu="8"))]
    jobs = [job(workload(f"a{i}", cpu="2", queue="a")) for i in range(4)]
    jobs += [job(workload(f"b{i}", cpu="2", queue="b")) for i in range(4)]
    result = run(fleet, jobs, queues=[queue("a"), queue("b")])
    assert [a.ref.name for a in result.admitted] == ["a0", "b0", "a1", "b1"]


def test_weight_gives_a_queue_a_larger_share() -> None:
    fleet = [cluster("cpu", flavor(nodes=1, cpu="12"))]
    jobs = [job(workload(f"a{i}", cpu="2", queue="a")) for i in range(6)]
    jobs += [job(workload(f"b{i}", cpu="2", queue="b")) for i in range(6)]
    result = run(fleet, jobs, queues=[queue("a", weight=2), queue("b")])
    names = [a.ref.name[0] for a in result.admitted]
    assert names.count("a") == 4 and names.count("b") == 2


def _full_cluster_with(low_priority: int) -> tuple[list[Cluster], Usage, snap.Snapshot]:
    fleet = [cluster("cpu", flavor(nodes=1, cpu="8"))]
    first = run(
        fleet,
        [job(workload("low", cpu="8", queue="q", priority=low_priority))],
        queues=[queue("q")],
    )
    assert placed(first) == {"low": {"cpu": 1}}
    snapshot = snap.build(fleet, queues=[queue("q")], bindings=first.bindings)
    # the monitor now reports the cluster full: the pod's cpu, memory and slot in use
    pod = first.admitted[0].pod
    used = [pod.amount("cpu"), pod.amount("memory"), 0, 1000]
    object.__setattr__(snapshot, "free", snapshot.free - used)
    object.__setattr__(snapshot, "largest", snapshot.largest - used)
    return fleet, first.usage, snapshot


@pytest.mark.parametrize(
    ("enabled", "admitted"),
    [
        pytest.param(True, ["high"], id="higher priority evicts the lower one"),
        pytest.param(False, [], id="preemption switched off"),
    ],
)
def test_preemption_inside_a_queue(enabled: bool, admitted: list[str]) -> None:
    fleet, usage, snapshot = _full_cluster_with(low_priority=1)
    high = job(workload("high", cpu="8", queue="q", priority=100))
    settings = SchedulerSettings(preemption=enabled)
    result = run(fleet, [high], usage=usage, settings=settings, snapshot=snapshot)
    assert [a.ref.name for a in result.admitted] == admitted
    if enabled:
        [(victim, reason)] = result.evicted
        assert victim.ref.name == "low" and reason.startswith("preempted by team/Job.batch/high")
        requeued = result.pending.get(victim.ref)
        assert requeued is not None and requeued.reason == reason  # re-queued, never lost
        assert "low" not in result.usage
        statuses = {b.metadata.name: b.status.phase for b in result.bindings}
        assert statuses == {"low": "Pending", "high": "Scheduled"}
    else:
        assert result.evicted == [] and result.usage.get(high.ref) is None


def test_equal_priority_never_preempts() -> None:
    fleet, usage, snapshot = _full_cluster_with(low_priority=100)
    result = run(
        fleet,
        [job(workload("peer", cpu="8", queue="q", priority=100))],
        usage=usage,
        snapshot=snapshot,
    )
    assert result.admitted == [] and result.evicted == []


@pytest.mark.parametrize(
    ("enabled", "admitted"),
    [
        pytest.param(True, ["mine"], id="a queue under its guarantee reclaims what was lent"),
        pytest.param(False, [], id="reclaim switched off"),
    ],
)
def test_reclaim_across_queues(enabled: bool, admitted: list[str]) -> None:
    fleet = [cluster("cpu", flavor(nodes=1, cpu="8"))]
    queues = [
        queue("lender", guarantee={"cpu": "4"}),
        queue("borrower", guarantee={"cpu": "4"}),
    ]
    # The lender is idle, so the borrower may use all 8 cores (4 borrowed).
    loose = [queue("lender"), queue("borrower", guarantee={"cpu": "4"})]
    jobs = [job(workload(f"b{i}", cpu="4", queue="borrower")) for i in range(2)]
    first = run(fleet, jobs, queues=loose)
    assert sorted(placed(first)) == ["b0", "b1"]
    snapshot = snap.build(fleet, queues=queues, bindings=first.bindings)
    settings = SchedulerSettings(reclaim=enabled)
    mine = job(workload("mine", cpu="4", queue="lender"))
    result = run(fleet, [mine], usage=first.usage, settings=settings, snapshot=snapshot)
    assert [a.ref.name for a in result.admitted] == admitted
    if enabled:
        [(victim, reason)] = result.evicted
        assert victim.ref.name == "b1" and reason.startswith("reclaimed by queue lender")
        assert result.pending.get(victim.ref) is not None


def test_reclaim_for_a_full_fleet_takes_only_work_on_clusters_the_job_can_use() -> None:
    fleet = [cluster("x", flavor(nodes=1, cpu="8")), cluster("y", flavor(nodes=1, cpu="8"))]
    queues = [queue("lender", guarantee={"cpu": "8"}), queue("borrower", guarantee={"cpu": "4"})]
    loose = [queue("lender"), queue("borrower", guarantee={"cpu": "4"})]
    jobs = [job(workload(f"b{i}", cpu="4", queue="borrower")) for i in range(4)]
    first = run(fleet, jobs, queues=loose)
    on = {name: next(iter(where)) for name, where in placed(first).items()}
    assert sorted(on.values()) == ["x", "x", "y", "y"]  # both clusters full of borrowed work
    snapshot = snap.build(fleet, queues=queues, bindings=first.bindings)
    mine = job(
        workload("mine", cpu="4", queue="lender"),
        placement={"clusterAffinity": {"clusterNames": ["x"]}},
    )
    result = run(fleet, [mine], usage=first.usage, snapshot=snapshot)
    assert placed(result)["mine"] == {"x": 1}
    [(victim, reason)] = result.evicted
    assert on[victim.ref.name] == "x" and reason.startswith("reclaimed by queue lender")


def test_affinity_groups_fall_back_in_order() -> None:
    fleet = [cluster("primary", flavor(nodes=1, cpu="4")), cluster("backup", flavor(nodes=1))]
    placement = {
        "clusterAffinities": [
            {"affinityName": "main", "clusterNames": ["primary"]},
            {"affinityName": "dr", "clusterNames": ["backup"]},
        ]
    }
    small = job(workload("small", cpu="2"), placement=placement)
    large = job(workload("large", cpu="8"), placement=placement)
    result = run(fleet, [small, large])
    assert placed(result) == {"small": {"primary": 1}, "large": {"backup": 1}}
    groups = {b.metadata.name: b.status.scheduler_observing_affinity_name for b in result.bindings}
    assert groups == {"small": "main", "large": "dr"}  # as Karmada's ResourceBinding says


def test_a_job_no_affinity_group_holds_is_told_why_for_each_group() -> None:
    """Only the first group's reason was given: a job its own fallback group could have
    held but for one cluster read as if only `main` mattered."""
    fleet = [cluster("primary", flavor(nodes=1, cpu="4")), cluster("backup", flavor(nodes=1))]
    placement = {
        "clusterAffinities": [
            {"affinityName": "main", "clusterNames": ["primary"]},
            {"affinityName": "dr", "clusterNames": ["backup"]},
        ]
    }
    result = run(fleet, [job(workload("huge", cpu="64"), placement=placement)])
    reason = result.reasons["team/Job.batch/huge"]
    assert reason.startswith("no affinity group can hold it: group main: "), reason
    assert "; group dr: " in reason and "the largest, on backup, has 16" in reason, reason


def test_placed_again_a_workload_stays_in_the_fallback_group_it_runs_in() -> None:
    placement = {
        "clusterAffinities": [
            {"affinityName": "main", "clusterNames": ["primary"]},
            {"affinityName": "dr", "clusterNames": ["backup"]},
        ]
    }
    down = [cluster("primary", flavor(nodes=1), ready=False), cluster("backup", flavor(nodes=1))]
    web = job(workload("web", cpu="1", replicas=2, kind="Deployment"), placement=placement)
    first = run(down, [web])
    assert placed(first) == {"web": {"backup": 2}}
    back = [cluster("primary", flavor(nodes=1)), cluster("backup", flavor(nodes=1))]
    snapshot = snap.build(back, bindings=first.bindings)
    scaled = job(workload("web", cpu="1", replicas=3, kind="Deployment"), placement=placement)
    fresh = job(workload("new", cpu="1", replicas=2, kind="Deployment"), placement=placement)
    again = run(back, [scaled, fresh], snapshot=snapshot)
    # Coming home is fail-back's move (graceful); a re-placement keeps the group it runs in.
    assert placed(again) == {"web": {"backup": 3}, "new": {"primary": 2}}
    assert {
        b.metadata.name: b.status.scheduler_observing_affinity_name for b in again.bindings
    } == {"web": "dr", "new": "main"}


def test_static_weights_divide_a_service() -> None:
    fleet = [
        cluster("a", flavor(nodes=4)),
        cluster("b", flavor(nodes=4)),
        cluster("c", flavor(nodes=4)),
    ]
    placement = {
        "clusterAffinity": {"clusterNames": ["a", "b"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": ["a"]}, "weight": 2},
                    {"targetCluster": {"clusterNames": ["b"]}, "weight": 1},
                ]
            },
        },
    }
    result = run(fleet, [job(workload("web", kind="Deployment", replicas=6), placement=placement)])
    assert placed(result) == {"web": {"a": 4, "b": 2}}


HALVES = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": ["a"]}, "weight": 1},
                {"targetCluster": {"clusterNames": ["b"]}, "weight": 1},
            ]
        },
    },
}
"""Divided 1:1 by static weight over clusters a and b."""


def test_static_weights_divide_a_job_but_never_an_indexed_one() -> None:
    """An Indexed Job divided over two members ran indexes 0 and 1 on both and 2 and 3
    nowhere: each copy numbers its indexes from 0. It goes whole to one member."""
    fleet = [cluster("a", flavor(nodes=4)), cluster("b", flavor(nodes=4))]
    placement = HALVES
    plain = workload("plain", replicas=4)
    spec = {**plain.spec, "completions": 4, "completionMode": "Indexed"}
    indexed = workload("indexed", replicas=4).model_copy(update={"spec": spec})
    jobs = [job(plain, placement=placement, seq=1), job(indexed, placement=placement, seq=2)]
    got = placed(run(fleet, jobs))
    assert got["plain"] == {"a": 2, "b": 2}
    assert list(got["indexed"].values()) == [4]


@pytest.mark.parametrize(
    "order",
    [
        pytest.param(("plain", "indexed"), id="the plain job queued first"),
        pytest.param(("indexed", "plain"), id="the indexed job queued first"),
    ],
)
def test_one_policy_divides_a_job_but_not_an_indexed_one_of_the_same_shape(
    order: tuple[str, str],
) -> None:
    """Two Jobs of one shape under one policy share what a cycle reads of them, but an
    Indexed one is never divided: whichever came first, the other took its placement (the
    Indexed one divided and ran indexes 0 and 1 three times, or the plain one whole)."""
    fleet = [cluster(name, flavor(nodes=4)) for name in ("a", "b", "c")]
    plain = workload("plain", replicas=3)
    spec = {**plain.spec, "completions": 6, "completionMode": "Indexed"}
    workloads = {
        "plain": plain.model_copy(update={"spec": {**plain.spec, "completions": 6}}),
        "indexed": workload("indexed", replicas=3).model_copy(update={"spec": spec}),
    }
    divided = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
    shared = job(plain, placement={"replicaScheduling": divided})
    jobs = [
        dataclasses.replace(
            job(workloads[name], seq=seq), placement=shared.placement, fedctl=shared.fedctl
        )
        for seq, name in enumerate(order)
    ]
    got = placed(run(fleet, jobs))
    assert got["plain"] == {"a": 1, "b": 1, "c": 1}
    assert list(got["indexed"].values()) == [3]


def _roles(api_version: str, kind: str, roles: dict[str, int]) -> Workload:
    """A job of the given roles (name -> pods), each pod 1 CPU."""
    pod = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if kind == "PyTorchJob":
        spec: dict[str, Any] = {
            "pytorchReplicaSpecs": {
                role: {"replicas": n, "template": {"spec": pod}} for role, n in roles.items()
            }
        }
    else:
        spec = {
            "tasks": [
                {"name": role, "replicas": n, "template": {"spec": pod}}
                for role, n in roles.items()
            ]
        }
    return Workload.model_validate(
        {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": "train", "namespace": "team"},
            "spec": spec,
        }
    )


_PYTORCH = ("kubeflow.org/v1", "PyTorchJob")
_VOLCANO = ("batch.volcano.sh/v1alpha1", "Job")


@pytest.mark.parametrize(
    ("kind", "roles", "whole"),
    [
        pytest.param(
            _PYTORCH, {"Master": 1, "Worker": 4}, True, id="a pytorchjob with a master: whole"
        ),
        pytest.param(_PYTORCH, {"Worker": 4}, False, id="a pytorchjob of workers only: divided"),
        pytest.param(
            _VOLCANO, {"ps": 2, "worker": 4}, True, id="a volcano job of several tasks: whole"
        ),
        pytest.param(_VOLCANO, {"worker": 4}, False, id="a volcano job of one task: divided"),
    ],
)
def test_weights_never_divide_a_job_of_several_roles(
    kind: tuple[str, str], roles: dict[str, int], whole: bool
) -> None:
    """Divided 1:1, a PyTorchJob of a Master and four Workers gave one member a Master and
    two Workers and the other two Workers with no Master to join: a job of several roles
    goes whole to one member, as an Indexed Job does; one of a single role is divided."""
    fleet = [cluster("a", flavor(nodes=4)), cluster("b", flavor(nodes=4))]
    placement = HALVES
    w = _roles(*kind, roles)
    got = placed(run(fleet, [job(w, placement=placement)]))["train"]
    assert sorted(got.values()) == ([w.replicas] if whole else [w.replicas // 2] * 2)


def test_duplicated_policy_runs_everything_everywhere() -> None:
    fleet = [cluster("a"), cluster("b")]
    placement = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    result = run(fleet, [job(workload("web", kind="Deployment", replicas=2), placement=placement)])
    assert placed(result) == {"web": {"a": 2, "b": 2}}


@pytest.mark.parametrize(
    "placement",
    [
        pytest.param({}, id="empty placement"),
        pytest.param(
            {"clusterTolerations": [{"key": "x", "operator": "Exists"}]}, id="only tolerations"
        ),
    ],
)
def test_a_policy_naming_no_clusters_and_no_division_duplicates_everywhere(
    placement: dict[str, Any],
) -> None:
    """Karmada: no affinity lets every cluster through, no replicaScheduling duplicates.
    Such a policy used to be read as no policy at all: one cluster."""
    fleet = [cluster("a"), cluster("b"), cluster("c")]
    result = run(fleet, [job(workload("web", kind="Deployment", replicas=2), placement=placement)])
    assert placed(result) == {"web": {"a": 2, "b": 2, "c": 2}}


def test_a_spread_constraint_holds_without_affinity_or_division() -> None:
    fleet = [cluster(n) for n in ("a", "b", "c", "d")]
    placement = {
        "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 3, "maxGroups": 3}]
    }
    result = run(fleet, [job(workload("web", kind="Deployment", replicas=2), placement=placement)])
    assert len(placed(result)["web"]) == 3


def test_a_gang_is_not_split_even_when_only_the_sum_would_fit() -> None:
    fleet = [cluster("a", flavor(nodes=1)), cluster("b", flavor(nodes=1))]
    placement = {
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Aggregated",
        }
    }
    result = run(fleet, [job(workload("gang", cpu="8", replicas=4), placement=placement)])
    assert result.admitted == []
    assert result.reasons["team/Job.batch/gang"].startswith("no eligible cluster could hold 4")


def test_cycle_is_pure_and_rewrites_only_changed_bindings() -> None:
    fleet = [cluster("cpu", flavor(nodes=2))]
    pending = PendingStore()
    pending.add(job(workload("a")))
    pending.add(job(workload("never", cpu="100")))
    usage = Usage()
    scheduler = cycle.Scheduler()
    first = scheduler.run_cycle(snap.build(fleet), pending, usage, NOW)
    assert len(pending) == 2 and len(usage) == 0  # inputs untouched
    assert {b.metadata.name for b in first.bindings} == {"a", "never"}
    again = scheduler.run_cycle(
        snap.build(fleet, bindings=first.bindings), first.pending, first.usage, NOW
    )
    assert again.bindings == []  # "never" is still pending for the same reason
    assert again.reasons["team/Job.batch/never"] == first.reasons["team/Job.batch/never"]


def test_a_finished_job_releases_its_usage_for_the_next_in_line() -> None:
    fleet = [cluster("cpu", flavor(nodes=1, cpu="4"))]
    q = queue("q", capability={"cpu": "4"})
    first = run(
        fleet,
        [job(workload("a", cpu="4", queue="q")), job(workload("b", cpu="4", queue="q"))],
        queues=[q],
    )
    assert sorted(placed(first)) == ["a"]
    usage = cycle.release(first.usage, [job(workload("a")).ref])
    result = cycle.Scheduler().run_cycle(snap.build(fleet, queues=[q]), first.pending, usage, NOW)
    assert sorted(placed(result)) == ["b"]


def test_binding_explains_the_choice() -> None:
    fleet = [
        cluster("cheap", flavor(), cpu_price="0.01"),
        cluster("dear", flavor(), cpu_price="0.09"),
        cluster("down", ready=False),
    ]
    result = run(fleet, [job(workload("w"))])
    [binding] = result.bindings
    chosen = [v for v in binding.spec.explanation if v.selected]
    assert [v.cluster for v in chosen] == ["cheap"] and chosen[0].scores["cost"] == 100
    assert [v.cluster for v in binding.spec.explanation] == ["cheap", "dear"]
    assert binding.spec.filtered_summary == {"health": 1}


def test_two_queues_over_three_members_admit_in_order_and_within_limits() -> None:
    fleet = [cluster(f"member-{i}", flavor(nodes=4, cpu="16")) for i in range(3)]  # 192 cores
    queues = [
        queue("research", capability={"cpu": "96"}),
        queue("prod", weight=2, capability={"cpu": "128"}),
    ]
    jobs = []
    for i in range(200):
        q = "research" if i % 2 else "prod"
        jobs.append(job(workload(f"{q}-{i:03d}", cpu="2", queue=q, priority=i % 7), seq=i + 1))
    result = run(fleet, jobs, queues=queues, settings=SchedulerSettings(cycle_batch=1000))
    by_queue: dict[str, list[str]] = {"research": [], "prod": []}
    for admission in result.admitted:
        by_queue[admission.queue].append(admission.ref.name)
    # Nothing over a queue's capability, and the weighted queue gets its larger share.
    assert len(by_queue["prod"]) == 64 and len(by_queue["research"]) == 32
    assert result.usage.queue_used("prod").amount("cpu") == 128_000
    # Inside each queue: priority first, then arrival, and no job skipped a better one.
    for name, admitted in by_queue.items():
        expected = sorted((j for j in jobs if j.queue == name), key=lambda j: (-j.priority, j.seq))[
            : len(admitted)
        ]
        assert admitted == [j.ref.name for j in expected]
    # No member is over-committed.
    per_cluster: dict[str, int] = {}
    for admission in result.admitted:
        for member, replicas in admission.placement.items():
            per_cluster[member] = per_cluster.get(member, 0) + replicas * 2
    assert all(cores <= 64 for cores in per_cluster.values())
    assert len(result.pending) == 200 - 96


def test_preemption_makes_room_under_the_queue_capability() -> None:
    fleet = [cluster("cpu", flavor(nodes=4))]
    q = queue("q", capability={"cpu": "8"})
    first = run(
        fleet,
        [
            job(workload("low-a", cpu="4", queue="q", priority=1)),
            job(workload("low-b", cpu="4", queue="q", priority=2)),
        ],
        queues=[q],
    )
    assert sorted(placed(first)) == ["low-a", "low-b"]
    snapshot = snap.build(fleet, queues=[q], bindings=first.bindings)
    high = job(workload("high", cpu="4", queue="q", priority=9))
    result = run(fleet, [high], usage=first.usage, snapshot=snapshot)
    assert [a.ref.name for a in result.admitted] == ["high"]
    assert [v.ref.name for v, _ in result.evicted] == ["low-a"]  # the lowest, and only one


@pytest.mark.parametrize("queue_object", [True, False], ids=["a Queue", "no Queue object"])
def test_preemption_makes_room_under_the_namespace_quota(queue_object: bool) -> None:
    """Lower-priority work of the job's queue and namespace holding the namespace's
    FederatedResourceQuota is preempted as work holding the queue's capability is: the
    job otherwise waited while the quota stayed with the lower priority, and room freed
    later in the cycle went to whichever lower-priority job came next."""
    fleet = [cluster("cpu", flavor(nodes=4))]
    name = "q" if queue_object else None  # the default queue needs no Queue object
    queues = [queue("q", capability={"cpu": "64"})] if queue_object else []
    quotas = [frq("team", cpu="8")]
    lows = [
        job(workload("low-a", cpu="4", queue=name, priority=1)),
        job(workload("low-b", cpu="4", queue=name, priority=2)),
        job(workload("other", namespace="elsewhere", cpu="4", queue=name, priority=0)),
    ]
    first = run(fleet, lows, queues=queues, quotas=quotas)
    assert sorted(placed(first)) == ["low-a", "low-b", "other"]
    snapshot = snap.build(fleet, queues=queues, quotas=quotas, bindings=first.bindings)
    high = job(workload("high", cpu="4", queue=name, priority=9))
    result = run(fleet, [high], usage=first.usage, snapshot=snapshot)
    assert [a.ref.name for a in result.admitted] == ["high"]
    # the lowest of its own namespace, and only one: another namespace's frees nothing
    [(victim, reason)] = result.evicted
    assert victim.ref.name == "low-a"
    assert reason == f"preempted by team/Job.batch/high (priority 9, queue {name or 'default'})"
    disabled = run(
        fleet,
        [high],
        usage=first.usage,
        snapshot=snapshot,
        settings=SchedulerSettings(preemption=False),
    )
    assert disabled.evicted == [] and disabled.admitted == []


def test_room_a_victim_leaves_does_not_go_to_work_its_queue_ranks_after_it() -> None:
    """A victim waits for the next cycle to be placed again. Here the second preemptor
    frees more than it needs, enough for the first victim again; that room went, in the
    same cycle, to the victim's twin that arrived after it. The twin now waits a cycle,
    and the victim gets its place back first."""
    fleet = [cluster("cpu", flavor(nodes=4))]
    q = queue("q", capability={"cpu": "4"})
    first = run(
        fleet,
        [
            job(workload("big", cpu="3", queue="q", priority=1), seq=1),
            job(workload("small", cpu="1", queue="q", priority=1), seq=2),
            job(workload("twin", cpu="1", queue="q", priority=1), seq=3),
        ],
        queues=[q],
    )
    assert sorted(placed(first)) == ["big", "small"]
    snapshot = snap.build(fleet, queues=[q], bindings=first.bindings)
    [twin] = first.pending.jobs()
    arriving = [
        job(workload("h1", cpu="1", queue="q", priority=9), seq=4),
        job(workload("h2", cpu="2", queue="q", priority=8), seq=5),
    ]
    result = run(fleet, [*arriving, twin], usage=first.usage, snapshot=snapshot)
    assert [a.ref.name for a in result.admitted] == ["h1", "h2"]
    assert [v.ref.name for v, _ in result.evicted] == ["small", "big"]
    waiting = result.pending.get(twin.ref)
    assert waiting is not None and waiting.reason == (
        "waits behind team/Job.batch/small (priority 1) in queue q: evicted this cycle, it"
        " fits again and is placed first next cycle"
    )
    again = run(fleet, result.pending.jobs(), usage=result.usage, snapshot=snapshot, queues=[q])
    assert [a.ref.name for a in again.admitted] == ["small"]


def test_work_ranked_after_a_victim_evicts_no_one_in_that_cycle() -> None:
    """`victim` left c1 for `pinned`; the lower-priority `next` then evicted `low` to take
    c0, where `victim` would have gone by evicting `low` itself next cycle. Now `next`
    waits a cycle and `victim`, ranked ahead of it, makes that room first."""
    fleet = [
        cluster("c0", flavor(cpu="4", nodes=1)),
        cluster("c1", flavor(cpu="4", nodes=1), cpu_price="0.01"),
    ]
    first = run(
        fleet,
        [
            job(workload("victim", cpu="4", priority=2), seq=1),
            job(workload("low", cpu="4", priority=0), seq=2),
        ],
    )
    assert placed(first) == {"victim": {"c1": 1}, "low": {"c0": 1}}
    snapshot = snap.build(fleet, bindings=first.bindings)
    pinned = job(
        workload("pinned", cpu="2", priority=9),
        placement={"clusterAffinity": {"clusterNames": ["c1"]}},
        seq=3,
    )
    later = job(workload("next", cpu="4", priority=1), seq=4)
    result = run(fleet, [pinned, later], usage=first.usage, snapshot=snapshot)
    assert [a.ref.name for a in result.admitted] == ["pinned"]
    assert [v.ref.name for v, _ in result.evicted] == ["victim"]
    latest = {b.metadata.name: b for b in [*first.bindings, *result.bindings]}
    evicted = latest["victim"]  # failover ended its task: the copy on c1 is gone
    spec = evicted.spec.model_copy(update={"eviction_tasks": []})
    latest["victim"] = evicted.model_copy(update={"spec": spec})
    snapshot = snap.build(fleet, bindings=list(latest.values()))
    again = run(fleet, result.pending.jobs(), usage=result.usage, snapshot=snapshot)
    assert placed(again) == {"victim": {"c0": 1}}
    assert [v.ref.name for v, _ in again.evicted] == ["low"]


def test_a_victim_over_its_members_room_gives_back_only_the_room_it_held() -> None:
    """Static weights ignore capacity: `static` runs 8 CPU on c0 where only 4 were left.
    Evicted, it gave back all 8 (a cycle starts from free room clipped at 0), and two
    more 4-CPU jobs went to c0, where only one fits."""
    fleet = [cluster("c0", flavor(cpu="16", nodes=1)), cluster("c1", flavor(cpu="16", nodes=1))]
    on_c0 = {"clusterAffinity": {"clusterNames": ["c0"]}}
    weights = {
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [{"targetCluster": {"clusterNames": ["c0"]}, "weight": 1}]
            },
        }
    }
    first = run(
        fleet,
        [
            job(workload("fill", cpu="12", priority=9), placement=on_c0, seq=1),
            job(workload("static", kind="Deployment", cpu="4", replicas=2), placement=weights),
        ],
    )
    assert placed(first) == {"fill": {"c0": 1}, "static": {"c0": 2}}
    snapshot = snap.build(fleet, bindings=first.bindings)
    arriving = [
        job(workload(f"j{i}", cpu="4", priority=9), placement=on_c0, seq=3 + i) for i in range(2)
    ]
    result = run(fleet, arriving, usage=first.usage, snapshot=snapshot)
    assert [v.ref.name for v, _ in result.evicted] == ["static"]
    assert [a.ref.name for a in result.admitted] == ["j0"]


def test_room_an_eviction_frees_goes_first_to_jobs_refused_earlier_in_the_cycle() -> None:
    """`high` was refused while c0 was full; queue r's `urgent` then preempted `old` on c0,
    and the room left went to `low`, ranked after `high` in the same queue, which was not
    tried again. Jobs refused before an eviction are now tried again, in order."""
    fleet = [cluster("c0", flavor(cpu="4", nodes=1)), cluster("c1", flavor(cpu="4", nodes=1))]
    queues = [queue("q"), queue("r", weight=10)]

    def on(name: str, where: str, cpu: str, *, priority: int, q: str, seq: int) -> PendingJob:
        w = workload(name, cpu=cpu, priority=priority, queue=q)
        return job(w, placement={"clusterAffinity": {"clusterNames": [where]}}, seq=seq)

    first = run(fleet, [on("old", "c0", "4", priority=0, q="r", seq=1)], queues=queues)
    assert placed(first) == {"old": {"c0": 1}}
    snapshot = snap.build(fleet, queues=queues, bindings=first.bindings)
    arriving = [
        on("high", "c0", "2", priority=5, q="q", seq=2),
        on("middle", "c1", "2", priority=3, q="q", seq=3),  # raises q's share: r goes next
        on("low", "c0", "2", priority=1, q="q", seq=4),
        on("urgent", "c0", "2", priority=9, q="r", seq=5),
    ]
    result = run(fleet, arriving, usage=first.usage, snapshot=snapshot, queues=queues)
    assert [v.ref.name for v, _ in result.evicted] == ["old"]
    assert placed(result) == {"middle": {"c1": 1}, "urgent": {"c0": 1}, "high": {"c0": 1}}


@pytest.mark.parametrize(
    ("cpu", "replicas", "arch"),
    [
        pytest.param("8", 1, "arm64", id="only the Arm nodes hold the pod"),
        pytest.param("1", 2, "amd64", id="the x86 nodes hold them all"),
        pytest.param("1", 6, None, id="over both arches: not pinned to one"),
    ],
)
def test_cpu_pods_are_recorded_on_the_arch_of_the_nodes_they_took(
    cpu: str, replicas: int, arch: str | None
) -> None:
    """The Binding's chip for CPU pods is the arch the propagator pins them to (through
    that arch's AcceleratorProfile). It was the cluster's first flavor's arch: an 8-CPU
    pod only Arm nodes could hold was pinned to amd64 and stayed Pending in the member."""
    fleet = [cluster("c0", flavor(cpu="4", nodes=1), flavor(arch="arm64", cpu="32", nodes=1))]
    w = workload("svc", kind="Deployment", cpu=cpu, replicas=replicas)
    result = run(fleet, [job(w)])
    [binding] = result.bindings
    assert [(t.name, t.replicas, t.chip) for t in binding.spec.clusters] == [("c0", replicas, arch)]
    [admitted] = result.admitted
    assert admitted.chips == ({"c0": arch} if arch else {})
    # read back from the Binding (a restart, a new leader): the same arch holds the pods
    again = bound_usage.admission_of(
        job(w), binding, device_resources=(), chip_devices=ChipDevices()
    )
    assert again.chips == admitted.chips


def test_the_cycle_budget_leaves_the_rest_pending_untouched() -> None:
    fleet = [cluster("cpu", flavor(nodes=4))]
    jobs = [job(workload(f"j{i}")) for i in range(5)]
    result = run(fleet, jobs, settings=SchedulerSettings(cycle_batch=2))
    assert result.decisions == 2 and len(result.admitted) == 2
    assert sorted(j.ref.name for j in result.pending.jobs()) == ["j2", "j3", "j4"]
    assert all(j.reason == "" for j in result.pending.jobs())


class _Scripted(clock.RealClock):
    """A clock whose monotonic readings are given in advance."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def monotonic(self) -> float:
        return self.readings.pop(0)


def test_each_decision_is_timed_on_its_own() -> None:
    """The metric recorded the cycle's wall time (Binding writes included) over the
    decisions, N times: p99 equalled p50 and a slow decision never showed. Each decision
    is now timed on its own, from its placement to its admission settled."""
    fleet = [cluster("cpu", flavor(nodes=4))]
    jobs = [job(workload("fast")), job(workload("slow"))]
    pending = PendingStore()
    for j in jobs:
        pending.add(j)
    ticks = _Scripted(10.0, 10.00004, 20.0, 20.3)
    scheduler = cycle.Scheduler(SchedulerSettings(), clock=ticks)
    result = scheduler.run_cycle(snap.build(fleet), pending, Usage(), NOW)
    assert result.decisions == 2
    assert result.decision_seconds == pytest.approx([0.00004, 0.3])
    assert ticks.readings == [], "two readings a decision, no more"


def test_equal_workloads_read_separately_share_one_request() -> None:
    """Workloads decoded from the registry are distinct objects even when they ask for the
    same thing; such jobs share one request (and its per-signature caches), others do not."""
    snapshot = snap.build([cluster("a", flavor(cpu="16"))])
    scheduler = cycle.Scheduler()
    first, same = workload("first", cpu="2"), workload("same", cpu="2")
    assert first.spec is not same.spec
    requests = {
        name: scheduler.request(job(w), snapshot)
        for name, w in {
            "first": first,
            "same": same,
            "more cpu": workload("more", cpu="3"),
            "service": workload("svc", kind="Deployment", cpu="2"),
            "chips": workload("chips", cpu="2", chips="arm64"),
            "gang of 2": workload("gang", cpu="2", replicas=2),
        }.items()
    }
    assert requests["same"].signature is requests["first"].signature
    assert requests["same"].job.ref.name == "same"
    others = [r for name, r in requests.items() if name not in ("first", "same")]
    assert all(r.signature != requests["first"].signature for r in others)
    assert requests["gang of 2"].replicas == 2
    assert requests["chips"].arches == () and requests["chips"].chips == ("arm64",)


@pytest.mark.parametrize(
    ("backlog", "batch"),
    [(0, 1000), (1000, 1000), (9_999, 1000), (20_000, 2000), (50_000, 5000), (10**6, 5000)],
)
def test_a_backlog_is_taken_a_tenth_at_a_time_between_the_two_limits(
    backlog: int, batch: int
) -> None:
    assert cycle.batch_for(backlog, SchedulerSettings()) == batch


def test_a_cycle_decides_at_most_its_batch_and_leaves_the_rest_pending() -> None:
    snapshot = snap.build([cluster("a", flavor(cpu="64", nodes=4))])
    pending = PendingStore()
    for i in range(5):
        pending.add(job(workload(f"j{i}", cpu="1"), seq=i + 1))
    result = cycle.Scheduler().run_cycle(snapshot, pending, Usage(), NOW, batch=3)
    assert [str(a.ref.name) for a in result.admitted] == ["j0", "j1", "j2"]
    assert sorted(j.ref.name for j in result.pending.jobs()) == ["j3", "j4"]


def test_identical_refused_jobs_do_not_use_up_the_batch_before_a_job_that_fits() -> None:
    """A queue's GPU capability is full and 40 identical GPU jobs wait in it, more than the
    batch of 8: the CPU job behind them is still reached and admitted in this cycle, and
    each GPU job keeps the reason the first one got."""
    fleet = [cluster("gpu", a100(nodes=4)), cluster("cpu", flavor(nodes=1))]
    q = queue("ml", capability={"accelerator/nvidia-a100-80gb": "8"})
    first = run(fleet, [job(workload("running", gpus=8, queue="ml"))], queues=[q])
    assert placed(first) == {"running": {"gpu": 1}}
    pending = PendingStore()
    for i in range(40):
        pending.add(job(workload(f"gpu-{i:02d}", gpus=8, queue="ml"), seq=i + 1))
    pending.add(job(workload("cpu-job", cpu="2", queue="ml"), seq=100))
    snapshot = snap.build(fleet, queues=[q])
    settings = SchedulerSettings(cycle_batch=8)
    result = cycle.Scheduler(settings).run_cycle(snapshot, pending, first.usage, NOW)
    assert placed(result) == {"cpu-job": {"cpu": 1}}
    assert (result.decisions, result.repeated, result.exhausted) == (2, 39, False)
    reason = "queue ml at capability for nvidia-a100-80gb: 8/8 (needs 8)"
    assert {j.reason for j in result.pending.jobs()} == {reason}
    assert len({b.metadata.name for b in result.bindings if b.status.reason == reason}) == 40


def test_a_plan_shows_what_the_cycle_would_preempt_to_place_it() -> None:
    """`fedctl plan --live` said "pending: queue team at capability" for a job the
    controller then admitted at once by preempting lower-priority work of its queue."""
    fleet = [cluster("cpu", flavor(nodes=1, cpu="16"))]
    team = queue("team", capability={"cpu": "4"})
    low = job(workload("low", cpu="4", queue="team", priority=0))
    scheduler = cycle.Scheduler(SchedulerSettings())
    snapshot = snap.build(fleet, queues=[team])
    admitted = scheduler.run_cycle(snapshot, PendingStore([low]), Usage(), NOW)
    assert [a.ref.name for a in admitted.admitted] == ["low"]
    state = fw.CycleState(snapshot, admitted.usage, scheduler.settings)

    urgent = job(workload("urgent", cpu="4", queue="team", priority=100))
    planned = scheduler.plan_in(urgent, state)

    assert planned.placement == {"cpu": 1} and planned.reason == ""
    assert planned.preempts == [
        "team/Job.batch/low: preempted by team/Job.batch/urgent (priority 100, queue team)"
    ]
    assert len(state.usage) == 1  # planning changed nothing
    off = cycle.Scheduler(SchedulerSettings(preemption=False))
    refused = off.plan_in(urgent, fw.CycleState(snapshot, admitted.usage, off.settings))
    assert refused.placement == {} and refused.preempts == []
    assert refused.reason.startswith("queue team at capability for cpu: 4/4")


def test_a_plan_reads_named_priorities_as_the_cycle_does() -> None:
    """A job naming class `high` (100) preempts in the cycle, so its plan says so; a class
    its queue does not define holds it in the cycle, so the plan does not place it."""
    fleet = [cluster("cpu", flavor(nodes=1, cpu="8"))]
    queues = [queue("q", priorityClasses={"high": 100}), queue("other")]
    scheduler = cycle.Scheduler(SchedulerSettings())
    snapshot = snap.build(fleet, queues=queues)
    low = job(workload("low", cpu="8", queue="q", priority=1))
    admitted = scheduler.run_cycle(snapshot, PendingStore([low]), Usage(), NOW)
    state = fw.CycleState(snapshot, admitted.usage, scheduler.settings)

    urgent = scheduler.plan_in(job(workload("urgent", cpu="8", queue="q", priority="high")), state)
    assert urgent.placement == {"cpu": 1}
    assert urgent.preempts == [
        "team/Job.batch/low: preempted by team/Job.batch/urgent (priority 100, queue q)"
    ]
    stray = scheduler.plan_in(
        job(workload("stray", cpu="1", queue="other", priority="high")), state
    )
    assert stray.placement == {}
    assert stray.reason.startswith("priority class 'high' is not defined in queue other")


def test_a_repeated_refusal_after_an_admission_gives_the_numbers_as_they_are_now() -> None:
    fleet = [cluster("c", flavor(nodes=2, cpu="16"))]
    jobs = [
        job(workload("x", cpu="5", queue="q"), seq=1),
        job(workload("j1", cpu="4", queue="q"), seq=2),
        job(workload("s", cpu="3", queue="q"), seq=3),
        job(workload("j2", cpu="4", queue="q"), seq=4),
    ]
    result = run(fleet, jobs, queues=[queue("q", capability={"cpu": "8"})])
    assert sorted(placed(result)) == ["s", "x"]
    assert result.reasons["team/Job.batch/j1"].endswith("5/8 (needs 4; 1 more must be freed)")
    assert result.reasons["team/Job.batch/j2"].endswith("8/8 (needs 4)")


def test_after_a_reclaim_the_queue_that_lost_work_is_served_by_its_new_share() -> None:
    """x reclaims 8 cpu from y; y then holds 8/32 and z 10/32, so y's next job goes before
    z's. With the heap keyed from before the reclaim, z took the last room."""
    fleet = [cluster("c", flavor(nodes=1, cpu="32", memory="256Gi"))]
    flat = [queue("x"), queue("y"), queue("z")]
    jobs = [job(workload(f"z{i}", cpu="2", queue="z"), seq=1 + i) for i in range(5)]
    jobs += [job(workload(f"y{i}", cpu="8", queue="y"), seq=10 + i) for i in range(2)]
    first = run(fleet, jobs, queues=flat)
    assert len(first.admitted) == 7
    queues = [queue("x", guarantee={"cpu": "8"}), queue("y"), queue("z")]
    snapshot = snap.build(fleet, queues=queues, bindings=first.bindings)
    pending = PendingStore(
        [
            job(workload("x1", cpu="8", queue="x"), seq=20),
            job(workload("y-new", cpu="4", queue="y"), seq=21),
            job(workload("z-new", cpu="4", queue="z"), seq=22),
        ]
    )
    result = cycle.Scheduler().run_cycle(snapshot, pending, first.usage, NOW)
    assert [v.ref.name for v, _ in result.evicted] == ["y1"]
    assert [a.ref.name for a in result.admitted] == ["x1", "y-new"]


H100_A100 = "nvidia-h100-80gb,nvidia-a100-80gb"


def test_a_gangs_device_pods_share_one_chip_on_a_cluster() -> None:
    """Two 1-GPU pods that take either chip; mixed has one free H100 and one free A100,
    a100 two free A100s. The Binding records one chip per cluster and the propagator pins
    every pod there to it, so mixed cannot hold the pair: it goes to a100."""
    mixed = cluster(
        "mixed",
        flavor(chip="nvidia-h100-80gb", devices=1, cpu="16", nodes=1),
        flavor(chip="nvidia-a100-80gb", devices=1, cpu="16", nodes=1),
    )
    a100 = cluster("z-a100", flavor(chip="nvidia-a100-80gb", devices=2, cpu="16", nodes=1))
    busy = cluster(  # H100s in use: the federation has more than the pair asks for
        "busy", flavor(chip="nvidia-h100-80gb", devices=8, cpu="96", nodes=1, free_devices=0)
    )
    pair = job(workload("pair", gpus=1, replicas=2, chips=H100_A100))

    result = run([mixed, a100, busy], [pair])

    assert placed(result) == {"pair": {"z-a100": 2}}
    (admitted,) = result.admitted
    assert admitted.chips == {"z-a100": "nvidia-a100-80gb"}

    alone = run([mixed, busy], [pair])
    assert alone.admitted == []
    assert alone.reasons["team/Job.batch/pair"].endswith("best is mixed with 1")


def test_a_services_device_pods_share_one_chip_on_a_cluster() -> None:
    """Divided over one mixed member with a free H100 and a free A100, a 2-replica GPU
    service gets the replica the preferred chip holds; the other waits for room."""
    mixed = cluster(
        "mixed",
        flavor(chip="nvidia-h100-80gb", devices=1, cpu="16", nodes=1),
        flavor(chip="nvidia-a100-80gb", devices=1, cpu="16", nodes=1),
    )
    divided = {"replicaScheduling": DYNAMIC_WEIGHT}
    web = job(
        workload("web", kind="Deployment", gpus=1, replicas=2, chips=H100_A100),
        placement=divided,
    )

    busy = cluster(
        "busy", flavor(chip="nvidia-h100-80gb", devices=8, cpu="96", nodes=1, free_devices=0)
    )
    result = run([mixed, busy], [web])

    assert result.admitted == []  # 1 free replica on one chip: 2 do not fit


def test_a_gang_takes_the_chip_that_holds_all_of_it_when_the_preferred_one_cannot() -> None:
    """Three 1-GPU pods that take either chip, H100 preferred; the only member with free
    GPUs has one free H100 and five free A100s. The preferred chip cannot hold the gang,
    the other can: it goes there on A100, not Pending for want of H100 room."""
    mixed = cluster(
        "mixed",
        flavor(chip="nvidia-h100-80gb", devices=1, cpu="16", nodes=1),
        flavor(chip="nvidia-a100-80gb", devices=5, cpu="48", nodes=1),
    )
    busy = cluster(
        "busy", flavor(chip="nvidia-h100-80gb", devices=8, cpu="96", nodes=1, free_devices=0)
    )
    gang = job(workload("gang", gpus=1, replicas=3, chips=H100_A100))
    single = job(workload("single", gpus=1, replicas=1, chips=H100_A100))

    result = run([mixed, busy], [gang, single])

    assert placed(result) == {"gang": {"mixed": 3}, "single": {"mixed": 1}}
    chips = {a.ref.name: a.chips for a in result.admitted}
    assert chips["gang"] == {"mixed": "nvidia-a100-80gb"}
    assert chips["single"] == {"mixed": "nvidia-h100-80gb"}  # one pod: the preferred chip

    s = snap.build([mixed, busy])
    settings = SchedulerSettings()
    state = fw.CycleState(s, Usage(), settings)
    request = fw.request_for(gang, settings=settings, device_resources=s.device_resources)
    row = s.index["mixed"]
    assert capacity.Capacity().filter(request, s.clusters[row], state).ok  # plain reference
    assert capacity.cluster_chip(request, state, np.array([row])).tolist() == [
        s.chips.index("nvidia-a100-80gb")
    ]


def test_gangs_placed_one_after_another_move_to_the_chip_that_still_holds_them() -> None:
    """Within one cycle: the first gang of three takes three of four free H100s on mixed;
    the next no longer fits the preferred chip there and takes its A100s, cheaper than
    the A100s of pricey; the third fits mixed on neither chip and goes to pricey."""
    mixed = cluster(
        "mixed",
        flavor(chip="nvidia-h100-80gb", devices=4, cpu="64", nodes=1),
        flavor(chip="nvidia-a100-80gb", devices=5, cpu="64", nodes=1),
        gpu_prices={"nvidia-h100-80gb": "2.0", "nvidia-a100-80gb": "1.0"},
    )
    pricey = cluster(
        "pricey",
        flavor(chip="nvidia-a100-80gb", devices=3, cpu="64", nodes=1),
        gpu_prices={"nvidia-a100-80gb": "9.0"},
    )
    busy = cluster(
        "busy", flavor(chip="nvidia-h100-80gb", devices=8, cpu="96", nodes=1, free_devices=0)
    )
    gangs = [job(workload(f"g{i}", gpus=1, replicas=3, chips=H100_A100)) for i in range(4)]

    result = run([mixed, pricey, busy], gangs)

    assert placed(result) == {"g0": {"mixed": 3}, "g1": {"mixed": 3}, "g2": {"pricey": 3}}
    chips = {a.ref.name: a.chips for a in result.admitted}
    assert chips["g0"] == {"mixed": "nvidia-h100-80gb"}
    assert chips["g1"] == {"mixed": "nvidia-a100-80gb"}
    assert result.reasons["team/Job.batch/g3"].endswith("best is mixed with 2")


def test_a_divided_service_takes_the_roomier_chip_when_the_preferred_ones_cannot_hold_it() -> None:
    """Four 1-GPU replicas divided by free room, H100 preferred: the only member with free
    GPUs has one free H100 and five free A100s. On the preferred chips the fleet holds one
    replica of four; on the roomier chip of each member it holds all four, so they go there."""
    mixed = cluster(
        "mixed",
        flavor(chip="nvidia-h100-80gb", devices=1, cpu="16", nodes=1),
        flavor(chip="nvidia-a100-80gb", devices=5, cpu="48", nodes=1),
    )
    busy = cluster(
        "busy", flavor(chip="nvidia-h100-80gb", devices=8, cpu="96", nodes=1, free_devices=0)
    )
    dynamic = {"replicaScheduling": DYNAMIC_WEIGHT}
    web = job(
        workload("web", kind="Deployment", gpus=1, replicas=4, chips=H100_A100), placement=dynamic
    )
    small = job(
        workload("small", kind="Deployment", gpus=1, replicas=1, chips=H100_A100),
        placement=dynamic,
    )

    result = run([mixed, busy], [web, small])

    assert placed(result) == {"web": {"mixed": 4}, "small": {"mixed": 1}}
    chips = {a.ref.name: a.chips for a in result.admitted}
    assert chips["web"] == {"mixed": "nvidia-a100-80gb"}
    assert chips["small"] == {"mixed": "nvidia-h100-80gb"}  # the preferred chip holds it


def test_reclaim_takes_victims_where_the_job_fits_not_only_the_latest_fleet_wide() -> None:
    """Eight 1-CPU borrowed jobs fill two 4-CPU clusters, alternating. The latest two
    arrivals free 2 CPUs in total but one on each cluster, where a 2-CPU job fits neither:
    reclaim goes on down the list until it fits, and spares the victim on the other cluster."""
    fleet = [cluster("x", flavor(nodes=1, cpu="4")), cluster("y", flavor(nodes=1, cpu="4"))]
    loose = [queue("lender"), queue("borrower", guarantee={"cpu": "2"})]
    jobs = [
        job(
            workload(f"b{i}", cpu="1", queue="borrower"),
            placement={"clusterAffinity": {"clusterNames": ["xy"[i % 2]]}},
            seq=i + 1,
        )
        for i in range(8)
    ]
    first = run(fleet, jobs, queues=loose)
    on = {name: next(iter(where)) for name, where in placed(first).items()}
    assert on == {f"b{i}": "xy"[i % 2] for i in range(8)}
    queues = [queue("lender", guarantee={"cpu": "4"}), queue("borrower", guarantee={"cpu": "2"})]
    snapshot = snap.build(fleet, queues=queues, bindings=first.bindings)
    mine = job(workload("mine", cpu="2", queue="lender"), seq=100)

    result = run(fleet, [mine], usage=first.usage, snapshot=snapshot)

    assert list(placed(result)) == ["mine"]
    (where,) = placed(result)["mine"]
    victims = sorted(v.ref.name for v, _ in result.evicted)
    assert {on[v] for v in victims} == {where} and len(victims) == 2, victims


def _full_of_spread_low_priority_work() -> tuple[list[Cluster], cycle.CycleResult]:
    """Forty single-node 4-core members, each running four priority-0 one-core jobs placed
    round the fleet, so that the latest arrivals sit one per member."""
    names = [f"m{i:02d}" for i in range(40)]
    fleet = [cluster(name, flavor(nodes=1, cpu="4")) for name in names]
    low = [
        job(
            workload(f"low{i:03d}", cpu="1", priority=0),
            placement={"clusterAffinity": {"clusterNames": [names[i % 40]]}},
            seq=i + 1,
        )
        for i in range(160)
    ]
    return fleet, run(fleet, low, settings=SchedulerSettings(cycle_batch=200))


def test_preemption_makes_room_on_one_member_when_the_latest_victims_are_spread() -> None:
    """Forty single-node members full of priority-0 one-core jobs, placed round the fleet
    so that the latest arrivals sit one per member. A priority-5 job of two cores fits
    only where two of them go from one member: more than the victims one trial releases
    in order (the latest 32, on 32 members) before it looks member by member."""
    fleet, first = _full_of_spread_low_priority_work()
    assert len(first.admitted) == 160  # every core taken
    high = job(workload("high", cpu="2", priority=5), seq=1000)

    result = run(fleet, [high], usage=first.usage)

    assert list(placed(result)) == ["high"]
    (where,) = placed(result)["high"]
    victims = [v for v, _ in result.evicted]
    assert len(victims) == 2 and all(set(v.placement) == {where} for v in victims)
    assert all(v.priority == 0 for v in victims)


def _priority_5_service(*, replicas: int, seq: int) -> PendingJob:
    """web: a priority-5 service of 2-core replicas divided by free room."""
    return job(
        workload("web", kind="Deployment", cpu="2", replicas=replicas, priority=5),
        placement={"replicaScheduling": DYNAMIC_WEIGHT},
        seq=seq,
    )


def test_a_divided_service_preempts_on_several_members_when_the_victims_are_spread() -> None:
    """As above, but a priority-5 service of four 2-core replicas divided by free room:
    no one member can hold it, two can, each once two of its victims go."""
    fleet, first = _full_of_spread_low_priority_work()
    web = _priority_5_service(replicas=4, seq=1000)

    result = run(fleet, [web], usage=first.usage)

    assert list(placed(result)) == ["web"]
    where = placed(result)["web"]
    assert sum(where.values()) == 4 and all(n <= 2 for n in where.values())
    victims = [v for v, _ in result.evicted]
    assert len(victims) == 8 and all(set(v.placement) <= set(where) for v in victims)


def test_a_job_needing_more_victims_than_one_trial_step_preempts_them_all() -> None:
    """A queue of 300 cores full of one-core priority-0 jobs; a priority-5 service of 150
    one-core replicas needs 150 of them gone. A trial released at most 32 victims, so the
    higher-priority job waited for ever behind lower-priority work. Now a trial goes on in
    doubling steps, and the shortest start of the victims in order that lets it in goes:
    the 150 lowest ranked, no more."""
    fleet = [cluster(f"m{i}", flavor(nodes=1, cpu="100", memory="400Gi")) for i in range(3)]
    qa = queue("qa", capability={"cpu": "300"})
    low = [job(workload(f"low{i}", cpu="1", queue="qa"), seq=i + 1) for i in range(300)]
    first = run(fleet, low, queues=[qa], settings=SchedulerSettings(cycle_batch=400))
    assert len(first.admitted) == 300
    big = job(
        workload("big", kind="Deployment", cpu="1", replicas=150, queue="qa", priority=5),
        placement={"replicaScheduling": DYNAMIC_WEIGHT},
        seq=1000,
    )

    result = run(fleet, [big], queues=[qa], usage=first.usage)

    assert sum(placed(result)["big"].values()) == 150
    victims = sorted(int(v.ref.name.removeprefix("low")) for v, _ in result.evicted)
    assert victims == list(range(150, 300))  # the latest arrivals, as many as needed


def test_a_divided_service_short_of_room_across_members_preempts() -> None:
    """Two 4-core members: m0 runs two priority-0 one-core jobs (two cores free), m1 four.
    A priority-5 service of three 2-core replicas passes the capacity filter on m0 (room
    for one) but cannot be divided: short of room across members, it preempts as a job
    no member could hold does."""
    fleet = [cluster("m0", flavor(nodes=1, cpu="4")), cluster("m1", flavor(nodes=1, cpu="4"))]
    low = [
        job(
            workload(f"low{i}", cpu="1", priority=0),
            placement={"clusterAffinity": {"clusterNames": ["m0" if i < 2 else "m1"]}},
            seq=i + 1,
        )
        for i in range(6)
    ]
    first = run(fleet, low)
    assert len(first.admitted) == 6
    web = _priority_5_service(replicas=3, seq=100)

    result = run(fleet, [web], usage=first.usage)

    assert sum(placed(result)["web"].values()) == 3
    assert all(why.startswith("preempted by team/Deployment.apps/web") for _, why in result.evicted)
    assert len(result.evicted) == 4  # two cores more for each of the two replicas added


def test_work_admitted_under_a_named_priority_keeps_its_value_when_read_back() -> None:
    """A controller reads admitted work back from its Bindings every cycle. A named
    priority read back as 0, so three `high` jobs in a queue capped at two preempted one
    another without end (each victim, waiting again at 100, evicted the next), and a job
    of plain priority 50 evicted `high` work."""
    fleet = [cluster("cpu", flavor(nodes=1, cpu="8"))]
    capped = queue("pcm", capability={"cpu": "4"}, priorityClasses={"high": 100})
    snapshot = snap.build(fleet, queues=[capped])
    first = [job(workload(f"pcm-{i}", cpu="2", queue="pcm", priority="high")) for i in (0, 1)]
    admitted = run(fleet, first, snapshot=snapshot)
    assert sorted(a.ref.name for a in admitted.admitted) == ["pcm-0", "pcm-1"]
    back = Usage(
        [
            bound_usage.admission_of(
                pending,
                binding,
                device_resources=snapshot.device_resources,
                chip_devices=snapshot.chip_devices,
            )
            for pending, binding in zip(
                first, sorted(admitted.bindings, key=lambda b: b.metadata.name), strict=True
            )
        ]
    )
    assert [a.priority for a in back.admissions()] == [100, 100]
    late = job(workload("pcm-2", cpu="2", queue="pcm", priority="high"), seq=5)
    number = job(workload("fifty", cpu="2", queue="pcm", priority=50), seq=6)
    again = run(fleet, [late, number], snapshot=snapshot, usage=back)
    assert again.evicted == [] and again.admitted == []


def test_weights_split_gpus_whatever_models_the_queues_land_on() -> None:
    """Fair share counted each GPU model as a resource of its own, so a queue's share
    hung on which model the cost score picked for it (3 of 12 L4s outweighed 8 of 16
    GPUs): a queue of weight 3 ended with no more GPUs than one of weight 1. GPUs are
    counted once, as `nvidia.com/gpu`: 16 split 1 : 3."""
    fleet = [
        cluster(
            "l4",
            flavor(chip="nvidia-l4", devices=12, cpu="64", nodes=1),
            gpu_prices={"nvidia-l4": "0.5"},
        ),
        cluster(
            "a100",
            flavor(chip="nvidia-a100-80gb", devices=4, cpu="64", nodes=1),
            gpu_prices={"nvidia-a100-80gb": "3.0"},
        ),
    ]
    jobs = [job(workload(f"aa{i:02}", gpus=1, queue="aa"), seq=i) for i in range(16)]
    jobs += [job(workload(f"zz{i:02}", gpus=1, queue="zz"), seq=i) for i in range(16)]
    result = run(fleet, jobs, queues=[queue("aa", weight=1), queue("zz", weight=3)])
    names = [a.ref.name[:2] for a in result.admitted]
    assert (names.count("aa"), names.count("zz")) == (4, 12)


def test_preemption_takes_one_victim_where_one_frees_enough() -> None:
    """Under a cap of 4 cores, vc (2) then va and vb (1 each) run at priority 0; vh (2,
    priority 10) took va and vb, the latest, where vc alone, of the same priority, would
    have done: the fewest victims is one."""
    fleet = [cluster("cpu", flavor(nodes=1, cpu="16"))]
    capped = [queue("fw", capability={"cpu": "4"})]
    held = [
        job(workload(name, cpu=cpu, queue="fw"), seq=seq)
        for seq, (name, cpu) in enumerate([("vc", "2"), ("va", "1"), ("vb", "1")], start=1)
    ]
    first = run(fleet, held, queues=capped)
    assert sorted(placed(first)) == ["va", "vb", "vc"]
    snapshot = snap.build(fleet, queues=capped, bindings=first.bindings)
    high = job(workload("vh", cpu="2", queue="fw", priority=10), seq=9)
    result = run(fleet, [high], usage=first.usage, snapshot=snapshot)
    assert placed(result) == {"vh": {"cpu": 1}}
    assert [victim.ref.name for victim, _ in result.evicted] == ["vc"]


def test_preemption_for_room_on_a_node_takes_one_victim_where_one_frees_enough() -> None:
    """The same on a full node of 4 cores, with no cap: the room, not a limit, is short."""
    fleet = [cluster("cpu", flavor(nodes=1, cpu="4"))]
    held = [
        job(workload(name, cpu=cpu, memory="0", queue="q"), seq=seq)
        for seq, (name, cpu) in enumerate([("vc", "2"), ("va", "1"), ("vb", "1")], start=1)
    ]
    first = run(fleet, held, queues=[queue("q")])
    assert sorted(placed(first)) == ["va", "vb", "vc"]
    snapshot = snap.build(fleet, queues=[queue("q")], bindings=first.bindings)
    used = [4000, 0, 0, 3000]  # the monitor reports the node full: 4 cores, 3 pods
    object.__setattr__(snapshot, "free", snapshot.free - used)
    object.__setattr__(snapshot, "largest", snapshot.largest - used)
    high = job(workload("vh", cpu="2", memory="0", queue="q", priority=10), seq=9)
    result = run(fleet, [high], usage=first.usage, snapshot=snapshot)
    assert placed(result) == {"vh": {"cpu": 1}}, result.reasons
    assert [victim.ref.name for victim, _ in result.evicted] == ["vc"]


def test_a_queue_takes_work_only_from_the_namespaces_it_serves() -> None:
    """Any workload could name any queue: one department filled another's. A queue (or
    a parent) listing namespaces takes only theirs; others wait, told why."""
    fleet = [cluster("cpu", flavor(nodes=1, cpu="16"))]
    queues = [
        queue("shop", namespaces=["web", "shop-b"]),
        queue("ml", parent="research"),
        queue("research", namespaces=["ml-prod"]),
    ]
    jobs = [
        job(workload("mine", cpu="1", queue="shop", namespace="web")),
        job(workload("theirs", cpu="1", queue="shop", namespace="ml-prod")),
        job(workload("child", cpu="1", queue="ml", namespace="web")),
        job(workload("ok", cpu="1", queue="ml", namespace="ml-prod")),
    ]
    result = run(fleet, jobs, queues=queues)
    assert sorted(placed(result)) == ["mine", "ok"]
    assert result.reasons["ml-prod/Job.batch/theirs"] == (
        "queue shop takes work from namespaces web, shop-b only, not ml-prod: use a queue of"
        " ml-prod's (fedctl get queues) or ask an admin to add the namespace"
    )
    assert result.reasons["web/Job.batch/child"].startswith(
        "queue ml's parent research takes work from namespaces ml-prod only, not web"
    )


def test_a_stored_parent_loop_does_not_spin_the_namespace_check() -> None:
    """Loops are refused at apply, but a stored one must not hang a cycle."""
    loop = {
        "a": queue("a", parent="b", namespaces=["team"]),
        "b": queue("b", parent="a"),
    }
    pending = job(workload("x", cpu="1", queue="a"))
    assert cycle._namespace_refusal(pending, loop) is None
