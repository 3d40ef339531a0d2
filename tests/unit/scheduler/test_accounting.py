"""Admitted usage, queue capability, namespace quota, lending, reclaim and preemption victims."""

from __future__ import annotations

from typing import Any

from federation.quota import accounting
from federation.quota.accounting import Admission, Usage
from federation.registry import keys
from federation.resources import ResourceList
from tests.unit.scheduler.fleet import frq, queue


def adm(
    name: str, q: str, *, priority: int = 0, seq: int = 1, ns: str = "team", **charge: Any
) -> Admission:
    amounts = ResourceList.from_wire({k.replace("_", "/"): v for k, v in charge.items()})
    return Admission(keys.WorkloadRef(ns, "Job.batch", name), q, ns, priority, seq, amounts)


def gpus(n: int) -> ResourceList:
    return ResourceList.from_wire({"nvidia.com/gpu": str(n)})


def test_usage_totals_follow_admit_and_release() -> None:
    usage = Usage([adm("a", "q", cpu="2"), adm("b", "q", cpu="3", ns="other")])
    assert usage.queue_used("q") == ResourceList.from_wire({"cpu": "5"})
    assert usage.namespace_used("team") == ResourceList.from_wire({"cpu": "2"})
    released = usage.release(keys.WorkloadRef("team", "Job.batch", "a"))
    assert released is not None and usage.queue_used("q") == ResourceList.from_wire({"cpu": "3"})
    assert usage.release(keys.WorkloadRef("team", "Job.batch", "a")) is None


def test_pseudo_chip_resources_count_for_queues_not_namespaces() -> None:
    usage = Usage([adm("a", "q", **{"nvidia.com/gpu": "8", "accelerator/nvidia-a100": "8"})])
    assert usage.queue_used("q").amount("accelerator/nvidia-a100") == 8000
    assert "accelerator/nvidia-a100" not in usage.namespace_used("team")


def test_capability_and_overall_messages_name_the_limit_and_numbers() -> None:
    q = queue("ml-research", capability={"accelerator/nvidia-a100": "64"})
    used = ResourceList.from_wire({"accelerator/nvidia-a100": "64"})
    charge = ResourceList.from_wire({"accelerator/nvidia-a100": "8"})
    assert accounting.capability_problem(q, used, charge) == (
        "queue ml-research at capability for nvidia-a100: 64/64 (needs 8)"
    )
    assert accounting.capability_problem(q, ResourceList(), charge) is None
    quota = frq("team", cpu="10")
    assert accounting.overall_problem(
        quota, ResourceList.from_wire({"cpu": "8"}), ResourceList.from_wire({"cpu": "4"})
    ) == (
        "namespace team at FederatedResourceQuota quota overall for cpu: 8/10"
        " (needs 4; 2 more must be freed)"
    )


def test_every_resource_at_capability_is_named_not_only_the_first() -> None:
    """Naming cpu alone, with "1 more must be freed", read as if freeing one core would do
    while the queue's GPUs were full as well."""
    q = queue("team-a", capability={"cpu": "8", "nvidia.com/gpu": "2"})
    used = ResourceList.from_wire({"cpu": "7", "nvidia.com/gpu": "2"})
    charge = ResourceList.from_wire({"cpu": "2", "nvidia.com/gpu": "1"})
    assert accounting.capability_problem(q, used, charge) == (
        "queue team-a at capability for cpu: 7/8 (needs 2; 1 more must be freed), and for"
        " nvidia.com/gpu: 2/2 (needs 1)"
    )


def test_a_request_larger_than_the_limit_itself_says_it_can_never_be_admitted() -> None:
    q = queue("ml-research", capability={"accelerator/nvidia-h100": "4"})
    eight = ResourceList.from_wire({"accelerator/nvidia-h100": "8"})
    never = accounting.capability_problem(q, ResourceList(), eight)
    assert never == (
        "queue ml-research capability for nvidia-h100 is 4, this workload needs 8:"
        " it can never be admitted (raise the limit or shrink the request)"
    )
    # Evicting every lower-priority workload of the queue would not make room either.
    usage = Usage([adm("low", "ml-research", **{"accelerator/nvidia-h100": "4"})])
    assert accounting.preemption_victims(q, usage=usage, charge=eight, priority=10) is None
    quota = frq("team", memory="64Gi")
    assert accounting.overall_problem(
        quota, ResourceList(), ResourceList.from_wire({"memory": "100Gi"})
    ) == (
        "namespace team FederatedResourceQuota quota overall for memory is 64Gi, this workload"
        " needs 100Gi: it can never be admitted (raise the limit or shrink the request)"
    )


QUEUES = {
    "a": queue("a", guarantee={"nvidia.com/gpu": "8"}, capability={"nvidia.com/gpu": "16"}),
    "b": queue("b", guarantee={"nvidia.com/gpu": "8"}, capability={"nvidia.com/gpu": "16"}),
}
CAPACITY = {"nvidia.com/gpu": 16000}


def test_a_queue_may_borrow_idle_capacity_but_not_others_guarantee() -> None:
    usage = Usage([adm("a1", "a", **{"nvidia.com/gpu": "8"})])
    # b's 8 are promised to b: a cannot borrow them while b does not use them.
    problem = accounting.lending_problem(
        "a", queues=QUEUES, usage=usage, capacity=CAPACITY, charge=gpus(4)
    )
    assert problem == (
        "queue a cannot borrow nvidia.com/gpu: 8 in use and 8 guaranteed to other queues,"
        " of 16 (needs 4)"
    )
    lenient = {"a": QUEUES["a"], "b": queue("b")}
    assert (
        accounting.lending_problem(
            "a", queues=lenient, usage=usage, capacity=CAPACITY, charge=gpus(4)
        )
        is None
    )


def test_a_charge_beyond_the_whole_fleet_is_named_as_such_not_as_a_borrowing_limit() -> None:
    """24 GPUs asked of a fleet of 16 read "cannot borrow …: 0 in use and 0 guaranteed to
    other queues, of 16 (needs 24)", as if another queue stood in the way; no queue does."""
    problem = accounting.lending_problem(
        "default", queues={}, usage=Usage(), capacity=CAPACITY, charge=gpus(24)
    )
    assert problem == (
        "the federation holds 16 nvidia.com/gpu in all, and this placement needs 24: it can"
        " never be admitted as placed (shrink the request, change its division or add"
        " capacity)"
    )


def test_reclaim_takes_back_borrowed_capacity_for_a_queue_under_its_guarantee() -> None:
    lenders = {
        "a": QUEUES["a"],
        "b": queue("b", guarantee={"nvidia.com/gpu": "8"}, capability={"nvidia.com/gpu": "16"}),
    }
    usage = Usage(
        [
            adm("a1", "a", seq=1, **{"nvidia.com/gpu": "8"}),
            adm("a2", "a", seq=2, **{"nvidia.com/gpu": "4"}),
            adm("a3", "a", seq=3, **{"nvidia.com/gpu": "4"}),
        ]
    )
    victims = accounting.reclaim_victims(
        "b", queues=lenders, usage=usage, capacity=CAPACITY, charge=gpus(4)
    )
    assert victims is not None and [v.ref.name for v in victims] == ["a3"]  # latest arrival first
    assert (
        accounting.reclaim_victims(
            "b", queues=lenders, usage=usage, capacity=CAPACITY, charge=gpus(12)
        )
        is None
    )
    unreclaimable = dict(lenders, a=queue("a", reclaimable=False))
    assert (
        accounting.reclaim_victims(
            "b", queues=unreclaimable, usage=usage, capacity=CAPACITY, charge=gpus(4)
        )
        is None
    )


def test_preemption_picks_lowest_priority_and_fewest_victims() -> None:
    q = queue("q", capability={"nvidia.com/gpu": "16"})
    usage = Usage(
        [
            adm("low-small", "q", priority=1, seq=1, **{"nvidia.com/gpu": "2"}),
            adm("low-big", "q", priority=1, seq=2, **{"nvidia.com/gpu": "8"}),
            adm("mid", "q", priority=5, seq=3, **{"nvidia.com/gpu": "6"}),
            adm("high", "q", priority=50, seq=4, **{"nvidia.com/gpu": "0"}),
        ]
    )
    victims = accounting.preemption_victims(q, usage=usage, charge=gpus(8), priority=10)
    assert victims is not None and [v.ref.name for v in victims] == ["low-big"]
    assert accounting.preemption_victims(q, usage=usage, charge=gpus(8), priority=1) is None


def test_sync_charges_only_the_difference_and_matches_a_fresh_usage() -> None:
    a, b, c = adm("a", "q", cpu="2"), adm("b", "q", cpu="3", ns="other"), adm("c", "r", cpu="1")
    usage = Usage([a, b])
    b2 = adm("b", "q", cpu="5", ns="other")  # b's Binding was rewritten: a new admission
    usage.sync([a, b2, c])
    fresh = Usage([a, b2, c])
    for q in ("q", "r"):
        assert usage.queue_used(q) == fresh.queue_used(q)
    for ns in ("team", "other"):
        assert usage.namespace_used(ns) == fresh.namespace_used(ns)
    assert usage.queue_used("q") == ResourceList.from_wire({"cpu": "7"})
    usage.sync([c])  # a and b finished
    assert len(usage) == 1 and usage.get(c.ref) is c
    assert usage.queue_used("q").amount("cpu") == 0
    assert usage.in_queue("q") == [] and usage.in_queue("r") == [c]


def test_reclaim_honours_a_parent_guarantee_for_its_subtree() -> None:
    """org is guaranteed 16 GPUs; its children a and b have none of their own. x borrowed
    the whole fleet before that guarantee was written."""
    tree = {
        "org": queue("org", guarantee={"nvidia.com/gpu": "16"}),
        "a": queue("a", parent="org"),
        "b": queue("b", parent="org"),
        "x": queue("x"),
    }
    usage = Usage([adm(f"x{i}", "x", seq=i, **{"nvidia.com/gpu": "8"}) for i in range(1, 5)])
    full = {"nvidia.com/gpu": 32000}
    # a is within org's guarantee with 8 more: x's latest job goes.
    victims = accounting.reclaim_victims(
        "a", queues=tree, usage=usage, capacity=full, charge=gpus(8)
    )
    assert victims is not None and [v.ref.name for v in victims] == ["x4"]
    # Past org's guarantee (16), reclaim is not a way to borrow.
    assert (
        accounting.reclaim_victims("a", queues=tree, usage=usage, capacity=full, charge=gpus(24))
        is None
    )
    # What b holds within org's guarantee is not borrowed: y (guaranteed 8) reclaims from x,
    # never from b, though b's job is the latest.
    tree = {**tree, "y": queue("y", guarantee={"nvidia.com/gpu": "8"})}  # a new queue set
    usage = Usage(
        [adm("x1", "x", seq=1, **{"nvidia.com/gpu": "16"}),
         adm("b1", "b", seq=2, **{"nvidia.com/gpu": "16"})]
    )  # fmt: skip
    victims = accounting.reclaim_victims(
        "y", queues=tree, usage=usage, capacity=full, charge=gpus(8)
    )
    assert victims is not None and [v.ref.name for v in victims] == ["x1"]


def test_a_queue_without_a_queue_object_is_guaranteed_nothing() -> None:
    """The implicit default queue: everything it holds is borrowed, so reclaimable, and
    another queue's unused guarantee is not lent to it."""
    guaranteed = {"a": queue("a", guarantee={"nvidia.com/gpu": "8"})}
    usage = Usage([adm(f"d{i}", "default", seq=i, **{"nvidia.com/gpu": "8"}) for i in (1, 2)])
    victims = accounting.reclaim_victims(
        "a", queues=guaranteed, usage=usage, capacity=CAPACITY, charge=gpus(8)
    )
    assert victims is not None and [v.ref.name for v in victims] == ["d2"]
    assert accounting.lending_problem(
        "default", queues=guaranteed, usage=Usage(), capacity=CAPACITY, charge=gpus(12)
    ) == (
        "queue default cannot borrow nvidia.com/gpu: 0 in use and 8 guaranteed to other"
        " queues, of 16 (needs 12)"
    )


def test_reclaim_keeps_the_unused_guarantees_of_uninvolved_queues() -> None:
    """b borrowed all 24 before a and c were guaranteed 8 each; c is idle. Evicting one of
    b's jobs would free room on the fleet, but not past c's 8: two go."""
    queues = {
        "a": queue("a", guarantee={"nvidia.com/gpu": "8"}),
        "b": queue("b"),
        "c": queue("c", guarantee={"nvidia.com/gpu": "8"}),
    }
    usage = Usage([adm(f"b{i}", "b", seq=i, **{"nvidia.com/gpu": "8"}) for i in (1, 2, 3)])
    capacity = {"nvidia.com/gpu": 24000}
    victims = accounting.reclaim_victims(
        "a", queues=queues, usage=usage, capacity=capacity, charge=gpus(8)
    )
    assert victims is not None and [v.ref.name for v in victims] == ["b3", "b2"]
    for victim in victims:
        usage.release(victim.ref)
    assert (
        accounting.lending_problem(
            "a", queues=queues, usage=usage, capacity=capacity, charge=gpus(8)
        )
        is None
    )


def test_reclaim_never_takes_a_victim_queue_below_its_guarantee() -> None:
    """b is guaranteed 8 and holds all 12 GPUs: 4 are borrowed. Its latest job (8) would
    take it to 4, so the earlier 4-GPU job goes; when no victim keeps b at 8, none does."""
    queues = {
        "a": queue("a", guarantee={"nvidia.com/gpu": "4"}),
        "b": queue("b", guarantee={"nvidia.com/gpu": "8"}),
    }
    usage = Usage(
        [
            adm("b-small", "b", seq=1, **{"nvidia.com/gpu": "4"}),
            adm("b-big", "b", seq=2, **{"nvidia.com/gpu": "8"}),
        ]
    )
    twelve = {"nvidia.com/gpu": 12000}
    victims = accounting.reclaim_victims(
        "a", queues=queues, usage=usage, capacity=twelve, charge=gpus(4)
    )
    assert victims is not None and [v.ref.name for v in victims] == ["b-small"]
    only_big = Usage([adm("b-big", "b", seq=2, **{"nvidia.com/gpu": "12"})])
    assert (
        accounting.reclaim_victims(
            "a", queues=queues, usage=only_big, capacity=twelve, charge=gpus(4)
        )
        is None
    )


def test_reclaim_keeps_a_victims_parent_at_its_guarantee() -> None:
    """org (guaranteed 12) holds all 16 GPUs through x and y, each guaranteed nothing of
    its own: only 4 are borrowed, so a gets 4 back but not 8."""
    tree = {
        "org": queue("org", guarantee={"nvidia.com/gpu": "12"}),
        "x": queue("x", parent="org"),
        "y": queue("y", parent="org"),
        "a": queue("a", guarantee={"nvidia.com/gpu": "8"}),
    }
    usage = Usage(
        [
            adm("x1", "x", seq=1, **{"nvidia.com/gpu": "8"}),
            adm("y1", "y", seq=2, **{"nvidia.com/gpu": "4"}),
            adm("y2", "y", seq=3, **{"nvidia.com/gpu": "4"}),
        ]
    )
    victims = accounting.reclaim_victims(
        "a", queues=tree, usage=usage, capacity=CAPACITY, charge=gpus(4)
    )
    assert victims is not None and [v.ref.name for v in victims] == ["y2"]
    assert (
        accounting.reclaim_victims("a", queues=tree, usage=usage, capacity=CAPACITY, charge=gpus(8))
        is None
    )
