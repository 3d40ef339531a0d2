"""Queue hierarchy at admission: only leaves take work, and a parent's capability caps its
whole subtree (the cycle over small fleets, and the tree itself)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.cache import snapshot as snap
from federation.quota import accounting, hierarchy
from federation.quota.accounting import Usage
from federation.registry import keys
from federation.resources import ResourceList
from federation.scheduler import cycle
from federation.scheduler import framework as fw
from federation.scheduler.plugins import quota
from federation.settings import SchedulerSettings
from policies.models.cluster import NodeFlavor
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import cluster, flavor, frq, job, placed, queue, run, workload
from tests.unit.scheduler.test_plugins import verdict


def a100(nodes: int) -> NodeFlavor:
    return flavor(chip="nvidia-a100-80gb", devices=8, cpu="96", memory="1Ti", nodes=nodes)


FLEET = [cluster("gpu", a100(nodes=4), flavor(nodes=4))]  # 32 GPUs, plenty of CPU


def gpu_job(name: str, q: str, gpus: int, seq: int, **kw: Any) -> Any:
    return job(workload(name, gpus=gpus, queue=q, **kw), seq=seq)


def test_a_parent_capability_caps_what_its_children_hold_together() -> None:
    queues = [
        queue("org", capability={"nvidia.com/gpu": "8"}),
        queue("a", parent="org", capability={"nvidia.com/gpu": "8"}),
        queue("b", parent="org", capability={"nvidia.com/gpu": "8"}),
    ]
    jobs = [gpu_job("a1", "a", 4, 1), gpu_job("a2", "a", 4, 2), gpu_job("b1", "b", 4, 3)]
    result = run(FLEET, jobs, queues=queues)
    assert set(placed(result)) == {"a1", "b1"}  # fair share serves b1 before a2
    assert result.reasons["team/Job.batch/a2"] == (
        "queue org (parent of a) at capability for nvidia.com/gpu: 8/8 (needs 4)"
    )
    # Without the links each child's own capability is all that applies.
    flat = [
        q.model_copy(update={"spec": q.spec.model_copy(update={"parent": None})}) for q in queues
    ]
    assert set(placed(run(FLEET, jobs, queues=flat))) == {"a1", "a2", "b1"}


def test_every_ancestor_counts_and_the_nearest_refusal_is_named() -> None:
    queues = [
        queue("root", capability={"cpu": "10"}),
        queue("mid", parent="root"),
        queue("leaf", parent="mid"),
    ]
    jobs = [job(workload(f"j{i}", cpu="4", queue="leaf"), seq=i) for i in range(1, 4)]
    result = run(FLEET, jobs, queues=queues)
    assert set(placed(result)) == {"j1", "j2"}
    assert result.reasons["team/Job.batch/j3"] == (
        "queue root (parent of leaf) at capability for cpu: 8/10 (needs 4; 2 more must be freed)"
    )


def test_work_a_parent_held_before_it_had_children_counts_against_its_cap() -> None:
    queues = [queue("org", capability={"nvidia.com/gpu": "8"}), queue("a", parent="org")]
    usage = Usage()
    usage.admit(
        accounting.Admission(
            ref=keys.WorkloadRef("team", "Job.batch", "old"),
            queue="org",
            namespace="team",
            priority=0,
            seq=0,
            charge=ResourceList.from_wire({"nvidia.com/gpu": "4"}),
        )
    )
    result = run(FLEET, [gpu_job("new", "a", 8, 1)], queues=queues, usage=usage)
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/new"] == (
        "queue org (parent of a) at capability for nvidia.com/gpu: 4/8"
        " (needs 8; 4 more must be freed)"
    )


def test_preemption_makes_room_under_a_parent_cap_from_its_own_queue_only() -> None:
    queues = [
        queue("org", capability={"nvidia.com/gpu": "16"}),
        queue("a", parent="org"),
        queue("b", parent="org"),
    ]
    usage = Usage()
    for name, q, prio in [("a-low", "a", 0), ("a-mid", "a", 5), ("b-low", "b", 0)]:
        usage.admit(held(name, q, prio, gpus=4))
    usage.admit(held("a-old", "a", 1, gpus=4))
    # org holds 16/16. a-high (priority 9) needs 8: a's two lowest-priority jobs go, b's
    # job (lower still, but in another queue) stays, and so does a-mid.
    result = run(FLEET, [gpu_job("a-high", "a", 8, 9, priority=9)], queues=queues, usage=usage)
    assert set(placed(result)) == {"a-high"}
    assert sorted(v.ref.name for v, _ in result.evicted) == ["a-low", "a-old"]
    # b's job cannot make room by evicting a's: no preemption across queues.
    result = run(FLEET, [gpu_job("b-high", "b", 8, 9, priority=9)], queues=queues, usage=usage)
    assert placed(result) == {} and result.evicted == []
    assert result.reasons["team/Job.batch/b-high"] == (
        "queue org (parent of b) at capability for nvidia.com/gpu: 16/16 (needs 8)"
    )


def test_a_siblings_unused_guarantee_is_no_room_under_the_parent_cap() -> None:
    # org caps 16; a is guaranteed 8 and idle, so b may take only 8 of org's 16: a can
    # always reach its guarantee, with nothing to reclaim from b.
    queues = [
        queue("org", capability={"nvidia.com/gpu": "16"}),
        queue("a", parent="org", guarantee={"nvidia.com/gpu": "8"}),
        queue("b", parent="org"),
    ]
    jobs = [gpu_job(f"b{i}", "b", 4, i) for i in range(1, 4)]
    result = run(FLEET, jobs, queues=queues)
    assert set(placed(result)) == {"b1", "b2"}
    assert result.reasons["team/Job.batch/b3"] == (
        "queue org (parent of b) at capability for nvidia.com/gpu: 8/16 and 8 guaranteed to"
        " its other queues (needs 4); a guarantee is never lent, even unused: lower the"
        " other queues' guarantees or raise org's capability"
    )
    # What a itself uses of its guarantee is no longer kept for it.
    usage = Usage()
    usage.admit(held("a-old", "a", 0, gpus=4))
    result = run(FLEET, jobs, queues=queues, usage=usage)
    assert set(placed(result)) == {"b1", "b2"}
    assert result.reasons["team/Job.batch/b3"] == (
        "queue org (parent of b) at capability for nvidia.com/gpu: 12/16 and 4 guaranteed to"
        " its other queues (needs 4); a guarantee is never lent, even unused: lower the"
        " other queues' guarantees or raise org's capability"
    )


def test_fair_share_splits_the_fleet_between_subtrees_then_inside_each() -> None:
    # 32 GPUs, 4 per job, far more asked than there is. Flat, a, b and x would hold a
    # third each; level by level org (a and b together) and x hold half each.
    def shares(org_weight: int) -> dict[str, int]:
        queues = [
            queue("org", weight=org_weight),
            queue("a", parent="org"),
            queue("b", parent="org"),
            queue("x"),
        ]
        jobs = [
            gpu_job(f"{q}{i}", q, 4, seq)
            for seq, (i, q) in enumerate((i, q) for i in range(8) for q in ("a", "b", "x"))
        ]
        result = run(FLEET, jobs, queues=queues)
        held: dict[str, int] = {}
        for name in placed(result):
            held[name[0]] = held.get(name[0], 0) + 4
        return held

    assert shares(1) == {"a": 8, "b": 8, "x": 16}
    # The parent's weight splits the fleet between departments: org 3 to x's 1.
    assert shares(3) == {"a": 12, "b": 12, "x": 8}


def test_queue_priority_still_comes_before_the_subtrees_shares() -> None:
    queues = [
        queue("org"),
        queue("a", parent="org", priority=10),
        queue("b", parent="org"),
        queue("x"),
    ]
    jobs = [
        gpu_job(f"{q}{i}", q, 4, seq)
        for seq, (i, q) in enumerate((i, q) for i in range(8) for q in ("b", "x", "a"))
    ]
    result = run(FLEET, jobs, queues=queues)
    assert {n for n in placed(result) if n[0] == "a"} == {f"a{i}" for i in range(8)}
    assert not any(n[0] in "bx" for n in placed(result))


def held(name: str, q: str, priority: int, *, gpus: int) -> accounting.Admission:
    """An admission of `gpus` A100s on cluster `gpu`, as a stored Binding stands for."""
    w = workload(name, gpus=gpus, queue=q, priority=priority)
    charge = ResourceList.from_wire(
        {
            "cpu": "1",
            "memory": "1Gi",
            "nvidia.com/gpu": str(gpus),
            "accelerator/nvidia-a100-80gb": str(gpus),
        }
    )
    return accounting.Admission(
        ref=keys.WorkloadRef("team", "Job.batch", name),
        queue=q,
        namespace="team",
        priority=priority,
        seq=0,
        charge=charge,
        placement={"gpu": 1},
        pod=charge.only(["cpu", "memory", "nvidia.com/gpu"]),
        chips={"gpu": "nvidia-a100-80gb"},
        job=job(w),
    )


def test_a_job_beyond_its_guarantee_is_told_why_borrowed_work_is_not_reclaimed() -> None:
    """Kueue's cohort translated: ca and cb each guaranteed 4 GPUs under a parent capped
    at 16; cb holds 12 (8 borrowed). An 8-GPU job in the idle ca, of higher priority,
    waits: reclaim returns only what was promised, and ca was promised 4. "4 more must be
    freed" gave its user nothing to act on."""
    queues = [
        queue("cohort2", capability={"nvidia.com/gpu": "16"}),
        queue("ca", parent="cohort2", guarantee={"nvidia.com/gpu": "4"}),
        queue("cb", parent="cohort2", guarantee={"nvidia.com/gpu": "4"}),
    ]
    usage = Usage()
    for i in range(3):
        usage.admit(held(f"cb{i}", "cb", 0, gpus=4))
    result = run(FLEET, [gpu_job("ca-hi", "ca", 8, 1, priority=1000)], queues=queues, usage=usage)
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/ca-hi"] == (
        "queue cohort2 (parent of ca) at capability for nvidia.com/gpu: 12/16 (needs 8; 4 more"
        " must be freed); queue cb holds 8 nvidia.com/gpu beyond its guarantee, but borrowed"
        " room is reclaimed only for work within a guarantee, and this workload would take"
        " queue ca to 8 of its 4 guaranteed nvidia.com/gpu: raise ca's guarantee to 8"
        " nvidia.com/gpu, or shrink the workload to 4 nvidia.com/gpu"
    )
    # Within its guarantee it reclaims, and says nothing of it.
    result = run(FLEET, [gpu_job("ca-4", "ca", 4, 1)], queues=queues, usage=usage)
    assert set(placed(result)) == {"ca-4"}


def test_a_job_within_its_guarantee_names_the_queue_reclaim_may_not_touch() -> None:
    """A queue under its guarantee whose room is held by a queue marked not reclaimable
    was told only that no node had room, which reads as "buy more nodes"."""
    fleet = [cluster("gpu", a100(nodes=2))]  # 16 GPUs
    queues = [
        queue("qx", guarantee={"nvidia.com/gpu": "12"}),
        queue("qy", reclaimable=False),
    ]
    usage = Usage()
    for i in range(3):
        usage.admit(held(f"y{i}", "qy", 0, gpus=4))
    usage.admit(held("x0", "qx", 0, gpus=4))
    result = run(fleet, [gpu_job("xm", "qx", 4, 1)], queues=queues, usage=usage)
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/xm"].endswith(
        "; queue qx is under its guarantee (4 of 12 nvidia.com/gpu) but the room is held by"
        " queue qy, which spec.reclaimable: false keeps from reclaim"
    ), result.reasons["team/Job.batch/xm"]


def test_the_quota_filter_turns_each_cluster_down_with_the_parents_numbers() -> None:
    """What `fedctl plan` shows per cluster; admission checks the same again."""
    queues = [queue("org", capability={"nvidia.com/gpu": "8"}), queue("a", parent="org")]
    usage = Usage()
    usage.admit(held("old", "a", 0, gpus=8))
    w = workload("more", gpus=4, queue="a")
    refused = verdict(quota.Quota(), FLEET[0], w, usage=usage, queues=queues)
    assert refused.reasons == (
        "queue org (parent of a) at capability for nvidia.com/gpu: 8/8 (needs 4)",
    )
    assert verdict(quota.Quota(), FLEET[0], w, queues=queues).ok


def test_a_request_over_a_parent_capability_is_told_it_can_never_be_admitted() -> None:
    queues = [queue("org", capability={"nvidia.com/gpu": "8"}), queue("a", parent="org")]
    result = run(FLEET, [gpu_job("big", "a", 8, 1, replicas=2)], queues=queues)
    assert result.reasons["team/Job.batch/big"] == (
        "queue org (parent of a) capability for nvidia.com/gpu is 8, this workload needs 16:"
        " it can never be admitted (raise the limit or shrink the request)"
    )


def test_only_queues_without_children_take_work() -> None:
    queues = [
        queue("org"),
        queue("b", parent="org"),
        queue("a", parent="org"),
        queue("web"),
        queue("b1", parent="b"),
        queue("b2", parent="b"),
    ]
    jobs = [
        job(workload("to-parent", queue="org"), seq=1),
        job(workload("typo", queue="ogr"), seq=2),
        job(workload("to-leaf", queue="a"), seq=3),
        job(workload("unnamed"), seq=4),  # the default queue, not defined: no queue limit
    ]
    result = run(FLEET, jobs, queues=queues)
    assert set(placed(result)) == {"to-leaf", "unnamed"}
    assert result.reasons == {
        "team/Job.batch/to-parent": (
            "queue org has child queues (a, b) and takes no work itself: submit to one that"
            " takes work (a, b1, b2)"
        ),
        "team/Job.batch/typo": (
            "queue ogr is not defined (queues that take work: a, b1, b2, web): create it or"
            " correct"
            " the workload's fedctl.io/queue"
        ),
    }
    held = {b.metadata.name: b for b in result.bindings}
    assert held["typo"].status.phase == "Pending"
    assert held["typo"].spec.clusters == [] and held["typo"].spec.explanation == []
    assert result.pending.get(jobs[0].ref) is not None  # held, not dropped


def test_a_parent_guarantee_is_not_reserved_on_top_of_its_childrens() -> None:
    # 32 GPUs; org guarantees 16 and its child a the same 16: 16 are reserved, not 32.
    queues = [
        queue("org", guarantee={"nvidia.com/gpu": "16"}),
        queue("a", parent="org", guarantee={"nvidia.com/gpu": "16"}),
        queue("x"),
    ]
    jobs = [gpu_job("x1", "x", 8, 1), gpu_job("x2", "x", 8, 2), gpu_job("x3", "x", 8, 3)]
    result = run(FLEET, jobs, queues=queues, settings=None)
    assert set(placed(result)) == {"x1", "x2"}
    assert result.reasons["team/Job.batch/x3"].startswith(
        "queue x cannot borrow nvidia.com/gpu: 16 in use and 16 guaranteed to other queues, of 32"
    )


def test_the_tree_ends_chains_at_undefined_parents_and_loops() -> None:
    queues = {
        q.name: q
        for q in [
            queue("root"),
            queue("mid", parent="root"),
            queue("leaf", parent="mid"),
            queue("orphan", parent="gone"),
            queue("p", parent="q"),
            queue("q", parent="p"),
        ]
    }
    tree = hierarchy.tree_of(queues)
    assert tree.ancestors["leaf"] == ("mid", "root")
    assert "orphan" not in tree.ancestors
    assert tree.ancestors["p"] == ("q",) and tree.ancestors["q"] == ("p",)
    assert tree.members["root"] == ("root", "leaf", "mid")
    assert tree.children == {"mid": ("leaf",), "p": ("q",), "q": ("p",), "root": ("mid",)}
    assert hierarchy.tree_of(queues) is tree  # kept for the same queue set
    assert hierarchy.refusal("orphan", queues, default="default") is None
    assert hierarchy.refusal("default", queues, default="default") is None
    refused = hierarchy.refusal("default", {**queues}, default="other")
    assert refused is not None and refused.startswith("queue default is not defined")


def test_a_queues_usage_version_moves_with_its_totals_and_a_copy_keeps_it() -> None:
    """Nested fair share keeps a subtree's share while these stand."""
    usage = Usage()
    assert usage.queue_version("a") == 0
    usage.admit(held("a1", "a", 0, gpus=4))
    first, b = usage.queue_version("a"), usage.queue_version("b")
    usage.admit(held("b1", "b", 0, gpus=4))
    assert usage.queue_version("a") == first and usage.queue_version("b") != b
    copy = usage.copy()
    assert copy.queue_version("a") == first
    copy.release(keys.WorkloadRef("team", "Job.batch", "a1"))
    usage.admit(held("a2", "a", 0, gpus=4))
    # Each changed its own way: neither may be mistaken for the other or for the start.
    assert len({first, copy.queue_version("a"), usage.queue_version("a")}) == 3


def test_a_job_waiting_for_room_is_told_when_no_room_would_ever_let_it_in() -> None:
    """The fleet is full, so placement fails for capacity; but the job is over a limit on
    its own, and a user should not wait for capacity to learn that."""
    queues = [
        queue("org", capability={"nvidia.com/gpu": "12"}),
        queue("r", parent="org", capability={"accelerator/nvidia-a100-80gb": "8"}),
        queue("other"),
    ]
    usage = Usage()
    for i in range(4):  # all 32 A100s
        usage.admit(held(f"full{i}", "other", 0, gpus=8))
    over_chip = gpu_job("big", "r", 8, 1, replicas=2, chips="nvidia-a100-80gb")
    over_parent = gpu_job("bigger", "r", 8, 2, replicas=2)  # any chip: 16 GPUs > org's 12
    fits = gpu_job("waits", "r", 4, 3)
    result = run(FLEET, [over_chip, over_parent, fits], queues=queues, usage=usage)
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/big"] == (
        "queue r capability for nvidia-a100-80gb is 8, this workload needs 16: it can never"
        " be admitted (raise the limit or shrink the request)"
    )
    assert result.reasons["team/Job.batch/bigger"].startswith(
        "queue org (parent of r) capability for nvidia.com/gpu is 12, this workload needs 16"
    )
    assert "can never" not in result.reasons["team/Job.batch/waits"]
    assert "nvidia.com/gpu" in result.reasons["team/Job.batch/waits"]  # waits for room
    # `fedctl plan` says the same.
    scheduler = cycle.Scheduler(SchedulerSettings())
    snapshot = snap.build(FLEET, queues=queues)
    assert scheduler.plan(over_chip, snapshot, usage).reason == result.reasons["team/Job.batch/big"]


def test_a_namespace_quota_the_job_alone_exceeds_is_said_before_capacity() -> None:
    usage = Usage()
    for i in range(4):
        usage.admit(held(f"full{i}", "other", 0, gpus=8))
    job_ = gpu_job("big", "other", 8, 1, replicas=2)
    result = run(
        FLEET, [job_], queues=[queue("other")], quotas=[frq("team", **{"nvidia.com/gpu": "8"})],
        usage=usage,
    )  # fmt: skip
    assert result.reasons["team/Job.batch/big"].startswith(
        "namespace team FederatedResourceQuota quota overall for nvidia.com/gpu is 8,"
        " this workload needs 16: it can never be admitted"
    )


def test_the_quota_filter_applies_under_a_capped_ancestor_only() -> None:
    """Without any cap above (or on) the queue, the filter is skipped, as for a flat queue."""
    scheduler = cycle.Scheduler(SchedulerSettings())
    for cap, expected in ((None, False), ({"cpu": "8"}, True)):
        queues = [
            queue("top", **({"capability": cap} if cap else {})),
            queue("org", parent="top"),
            queue("a", parent="org"),
        ]
        snapshot = snap.build(FLEET, queues=queues)
        request = scheduler.request(job(workload("w", queue="a")), snapshot)
        state = fw.CycleState(snapshot, Usage(), scheduler.settings)
        assert quota.limited(request, state) is expected


def test_a_parent_guarantee_beyond_its_childrens_is_kept_for_the_whole_subtree() -> None:
    # 32 GPUs; org is guaranteed 16 and its children nothing of their own: x, outside,
    # may borrow only 16, and either child may use org's 16.
    queues = [
        queue("org", guarantee={"nvidia.com/gpu": "16"}),
        queue("a", parent="org"),
        queue("b", parent="org"),
        queue("x"),
    ]
    jobs = [gpu_job(f"x{i}", "x", 8, i) for i in range(1, 4)]
    result = run(FLEET, jobs, queues=queues, settings=None)
    assert set(placed(result)) == {"x1", "x2"}
    assert result.reasons["team/Job.batch/x3"].startswith(
        "queue x cannot borrow nvidia.com/gpu: 16 in use and 16 guaranteed to other queues, of 32"
    )
    usage = Usage()
    for name in ("x1", "x2"):
        usage.admit(held(name, "x", 0, gpus=8))
    inside = run(FLEET, [gpu_job("a1", "a", 8, 5), gpu_job("b1", "b", 8, 6)], queues=queues,
                 usage=usage, settings=None)  # fmt: skip
    assert set(placed(inside)) == {"a1", "b1"}


def test_a_parent_guarantee_counts_what_its_whole_subtree_holds() -> None:
    # org 16 over a 4 and b 4. a holds 10: org keeps 16 - 10 = 6 (more than b's unused 4,
    # which is all a leaf-by-leaf count would keep), so x may take 32 - 10 - 6 = 16.
    queues = [
        queue("org", guarantee={"nvidia.com/gpu": "16"}),
        queue("a", parent="org", guarantee={"nvidia.com/gpu": "4"}),
        queue("b", parent="org", guarantee={"nvidia.com/gpu": "4"}),
        queue("x"),
    ]
    usage = Usage()
    usage.admit(held("a-1", "a", 0, gpus=8))
    usage.admit(held("a-2", "a", 0, gpus=2))
    jobs = [gpu_job(f"x{i}", "x", 2, i) for i in range(1, 11)]
    result = run(FLEET, jobs, queues=queues, usage=usage, settings=None)
    assert set(placed(result)) == {f"x{i}" for i in range(1, 9)}
    assert result.reasons["team/Job.batch/x9"].startswith(
        "queue x cannot borrow nvidia.com/gpu: 26 in use and 6 guaranteed to other queues, of 32"
    )


def test_a_middle_parents_guarantee_is_kept_under_the_capped_top_too() -> None:
    # top caps 16; mid (under top) is guaranteed 8 for a and b, which have none of their
    # own. c, mid's sibling, may hold only 16 - 8 under top.
    queues = [
        queue("top", capability={"nvidia.com/gpu": "16"}),
        queue("mid", parent="top", guarantee={"nvidia.com/gpu": "8"}),
        queue("a", parent="mid"),
        queue("b", parent="mid"),
        queue("c", parent="top"),
    ]
    jobs = [gpu_job(f"c{i}", "c", 4, i) for i in range(1, 4)]
    result = run(FLEET, jobs, queues=queues)
    assert set(placed(result)) == {"c1", "c2"}
    assert result.reasons["team/Job.batch/c3"] == (
        "queue top (parent of c) at capability for nvidia.com/gpu: 8/16 and 8 guaranteed to"
        " its other queues (needs 4); a guarantee is never lent, even unused: lower the"
        " other queues' guarantees or raise top's capability"
    )
    # Inside mid, its guarantee is a's and b's to use.
    inside = run(FLEET, [gpu_job(f"a{i}", "a", 4, i) for i in range(1, 5)], queues=queues)
    assert set(placed(inside)) == {"a1", "a2", "a3", "a4"}


@pytest.mark.parametrize(
    "fleet",
    [
        pytest.param(FLEET, id="its member is up"),
        pytest.param(
            [cluster("gpu", a100(nodes=4), flavor(nodes=4), ready=False)],
            id="its only member is down: health filters it, the limit still says never",
        ),
    ],
)
def test_a_job_over_its_queue_s_limit_is_told_so_whatever_filters_its_members(
    fleet: list[Any],
) -> None:
    """A member going down filters every cluster the job could use; the reason said
    "1 filtered by health", sending an on-call engineer to wait for a member whose return
    would not help."""
    queues = [queue("r", capability={"accelerator/nvidia-a100-80gb": "4"})]
    big = gpu_job("big", "r", 8, 1, chips="nvidia-a100-80gb")
    result = run(fleet, [big], queues=queues)
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/big"] == (
        "queue r capability for nvidia-a100-80gb is 4, this workload needs 8: it can never"
        " be admitted (raise the limit or shrink the request)"
    )


def test_a_volcano_job_naming_an_undefined_queue_is_told_to_correct_its_spec_queue() -> None:
    """A Volcano Job whose `spec.queue: ml-reserch` is not defined was told to correct the
    workload's fedctl.io/queue, an annotation it does not have."""
    vcjob = Workload.model_validate(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "vc", "namespace": "team"},
            "spec": {
                "queue": "ml-reserch",
                "tasks": [
                    {
                        "name": "w",
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                    }
                ],
            },
        }
    )
    result = run(FLEET, [job(vcjob, seq=1)], queues=[queue("ml-research")])
    assert placed(result) == {}
    assert result.reasons["team/Job.batch.volcano.sh/vc"] == (
        "queue ml-reserch is not defined (queues that take work: ml-research): create it or"
        " correct the workload's spec.queue"
    )
