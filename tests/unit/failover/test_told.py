"""What failover tells on a workload for one of its writes of a Binding (told.py)."""

from __future__ import annotations

from federation.failover import told
from tests.unit.failover.builders import at, binding, task


def test_a_shrunk_share_handed_over_is_not_told_as_placed_back() -> None:
    """A move kept `a` running 4 replicas while `b` started; the task ending once `b` is
    ready scales `a` down to its 2. The workload never left `a`: no PlacedBack."""
    shrunk = task("a", replicas=4)
    before = binding(clusters={"a": 2, "b": 2}, tasks=[shrunk])
    after = binding(clusters={"a": 2, "b": 2})
    evicted, events = told.told(before, after, now=at(5), answers=lambda _: True)
    assert (evicted, events) == ([], [])


def test_a_task_ended_by_the_workload_placed_back_is_told() -> None:
    leaving = task("a", replicas=2)
    before = binding(clusters={}, tasks=[leaving])
    after = binding(clusters={"a": 2})
    _, events = told.told(before, after, now=at(5), answers=lambda _: True)
    assert [(e().reason, e().cluster, e().type) for e in events] == [("PlacedBack", "a", "Normal")]


def test_a_member_given_its_share_again_after_the_workload_moved_is_not_told_placed_back() -> None:
    """A static split placed the workload on `b` and `c` while `a` was down, its copy on
    `a` kept as `a` did not answer; `a` back, the split gives it its share again.
    "Placed back before it found room elsewhere" read as a failed failover when the
    workload had moved and run elsewhere."""
    before = binding(clusters={"b": 3, "c": 3}, tasks=[task("a", replicas=2)])
    after = binding(clusters={"a": 2, "b": 2, "c": 2})
    _, events = told.told(before, after, now=at(5), answers=lambda _: True)
    assert [(e().reason, e().cluster, e().type) for e in events] == [
        ("ShareReturned", "a", "Normal")
    ]
    assert events[0]().message == (
        "a has its share again (2 replicas), beside b, c, where the workload was placed"
        " meanwhile: its copy there was kept, and the eviction ended"
    )
