"""Pending order inside a queue and weighted dominant-resource fair share across queues."""

from __future__ import annotations

from fractions import Fraction

import pytest

from federation.queue import fairshare
from federation.queue.pending import PendingStore
from federation.resources import ResourceList
from tests.unit.scheduler.fleet import job, workload


def test_higher_priority_first_then_arrival_order() -> None:
    store = PendingStore()
    for name, prio in [("a", 0), ("b", 10), ("c", 0), ("d", 10)]:
        store.add(job(workload(name, priority=prio, queue="q")))
    assert [j.ref.name for j in store.ordered("q")] == ["b", "d", "a", "c"]
    assert store.head("q") is not None and store.head("q").ref.name == "b"  # type: ignore[union-attr]


def test_a_requeued_job_keeps_its_place_and_removal_is_lazy() -> None:
    store = PendingStore()
    first = store.add(job(workload("first", queue="q")))
    store.add(job(workload("second", queue="q")))
    store.remove(first.ref)
    assert [j.ref.name for j in store.ordered("q")] == ["second"]
    store.add(first.with_reason("preempted"))  # keeps seq 1
    assert [j.ref.name for j in store.ordered("q")] == ["first", "second"]
    assert store.get(first.ref).reason == "preempted"  # type: ignore[union-attr]


def test_replacing_a_job_with_new_priority_moves_it() -> None:
    store = PendingStore()
    a = store.add(job(workload("a", queue="q")))
    store.add(job(workload("b", queue="q")))
    store.add(job(workload("a", queue="q", priority=5), seq=a.seq))
    assert [j.ref.name for j in store.ordered("q")] == ["a", "b"]
    assert len(store) == 2


def test_copy_is_independent() -> None:
    store = PendingStore()
    store.add(job(workload("a", queue="q")))
    other = store.copy()
    other.add(job(workload("b", queue="q")))
    assert len(store) == 1 and len(other) == 2
    assert other.get(job(workload("b")).ref) is not None


CAPACITY = ResourceList.from_wire({"cpu": "100", "nvidia.com/gpu": "10"})


@pytest.mark.parametrize(
    ("usage", "weight", "expected"),
    [
        pytest.param({}, 1, Fraction(0), id="nothing used"),
        pytest.param({"cpu": "50"}, 1, Fraction(1, 2), id="half the CPUs"),
        pytest.param({"cpu": "10", "nvidia.com/gpu": "5"}, 1, Fraction(1, 2), id="GPUs dominate"),
        pytest.param(
            {"cpu": "10", "nvidia.com/gpu": "5"}, 2, Fraction(1, 4), id="weight 2 halves it"
        ),
    ],
)
def test_share(usage: dict[str, str], weight: int, expected: Fraction) -> None:
    assert fairshare.share(ResourceList.from_wire(usage), CAPACITY, weight=weight) == expected


def test_order_serves_lowest_weighted_share_first_and_queue_priority_before_that() -> None:
    usage = {
        "cpu-team": ResourceList.from_wire({"cpu": "40"}),  # 0.4
        "gpu-team": ResourceList.from_wire({"nvidia.com/gpu": "6"}),  # 0.6 / 2 = 0.3
        "idle": ResourceList(),
    }
    weights = {"gpu-team": 2}
    order = fairshare.order(
        ["cpu-team", "gpu-team", "idle"], usage=usage, capacity=CAPACITY, weights=weights
    )
    assert order == ["idle", "gpu-team", "cpu-team"]
    urgent = fairshare.order(
        ["cpu-team", "idle"], usage=usage, capacity=CAPACITY, weights={}, priorities={"cpu-team": 1}
    )
    assert urgent == ["cpu-team", "idle"]


def test_an_order_taken_stands_while_the_store_changes() -> None:
    """What `ordered` yields is fixed when it is called: a job put back later (its reason
    noted, or a re-queued victim) waits for the next order, a removed one is skipped."""
    store = PendingStore(
        [
            job(workload(name, priority=p), seq=i + 1)
            for i, (name, p) in enumerate([("low", 0), ("high", 5), ("mid", 2), ("gone", 1)])
        ]
    )
    order = store.ordered("default")
    first = next(order)
    assert first.ref.name == "high"
    store.remove(first.ref)
    store.add(first.with_reason("did not fit"))  # back in the store, not in this order
    victim = job(workload("victim", priority=9), seq=99)
    store.add(victim)
    store.remove(store.get(job(workload("gone")).ref).ref)  # type: ignore[union-attr]
    assert [j.ref.name for j in order] == ["mid", "low"]
    assert [j.ref.name for j in store.ordered("default")] == ["victim", "high", "mid", "low"]
    assert store.head("default") is not None and store.head("default").ref.name == "victim"
