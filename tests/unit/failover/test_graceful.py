"""Graceful eviction: which tasks go, which copies are purged, by purge mode and time."""

from __future__ import annotations

import pytest

from federation.failover import graceful
from tests.unit.failover.builders import at, task

TIMEOUT = 600.0


@pytest.mark.parametrize(
    ("mode", "ready", "now", "expected"),
    [
        pytest.param(
            "Gracefully",
            {"b": False},
            10,
            (True, [], 590.0),
            id="gracefully: old copy stays while the new one is not ready",
        ),
        pytest.param(
            "Gracefully",
            {"b": True},
            10,
            (False, ["a"], None),
            id="gracefully: new placement ready, old copy goes",
        ),
        pytest.param(
            "Gracefully",
            {"b": False},
            600,
            (False, ["a"], None),
            id="gracefully: the timeout ends the wait even when the new copy is not ready",
        ),
        pytest.param(
            "Directly",
            {"b": False},
            10,
            (True, ["a"], 590.0),
            id="directly: copy purged at once, task kept to keep the scheduler away",
        ),
        pytest.param(
            "Directly",
            {"b": True},
            10,
            (False, ["a"], None),
            id="directly: task dropped once the new placement is ready",
        ),
        pytest.param(
            "Never",
            {"b": True},
            10,
            (False, ["a"], None),
            id="a task recorded as Never (refused in policies now) ends as Gracefully",
        ),
        pytest.param(
            "Gracefully",
            {},
            10,
            (True, [], 590.0),
            id="no readiness reported yet counts as not ready",
        ),
    ],
)
def test_one_task(
    mode: str,
    ready: dict[str, bool],
    now: float,
    expected: tuple[bool, list[str], float | None],
) -> None:
    kept, purged, recheck = expected
    t = task("a", created=0, mode=mode)
    out = graceful.judge([t], targets=["b"], ready=ready, now=at(now), timeout=TIMEOUT)
    assert (out.keep == [t], out.drop == [t]) == (kept, not kept)
    assert out.purge == purged
    assert out.recheck_after == recheck


def test_every_new_target_must_be_ready() -> None:
    t = task("a")
    partly = graceful.judge(
        [t], targets=["b", "c"], ready={"b": True, "c": False}, now=at(1), timeout=TIMEOUT
    )
    assert partly.keep == [t]
    whole = graceful.judge(
        [t], targets=["b", "c"], ready={"b": True, "c": True}, now=at(1), timeout=TIMEOUT
    )
    assert whole.drop == [t]


def test_no_new_placement_yet_keeps_the_old_copy_until_the_timeout() -> None:
    old, new = task("a", created=0), task("b", created=500)
    out = graceful.judge([old, new], targets=[], ready={}, now=at(600), timeout=TIMEOUT)
    assert out.drop == [old] and out.keep == [new]
    assert out.purge == ["a"]
    assert out.recheck_after == pytest.approx(500)


def test_a_task_whose_cluster_is_a_target_again_ends_at_once_without_a_purge() -> None:
    """The member recovered before the workload found room elsewhere and the scheduler put
    it back: the copy there is the new placement's, so nothing of it may be purged, and the
    other cluster's task still waits for the new placement to be ready."""
    back, other = task("a", created=0), task("b", created=0)
    out = graceful.judge(
        [back, other], targets=["a"], ready={"a": False}, now=at(1), timeout=TIMEOUT
    )
    assert out.drop == [back] and out.keep == [other]
    assert out.purge == []
    ready = graceful.judge([other], targets=["a"], ready={"a": True}, now=at(2), timeout=TIMEOUT)
    assert ready.drop == [other] and ready.purge == ["b"]


def test_the_last_copy_of_a_workload_placed_nowhere_else_outlives_the_timeout() -> None:
    """Its member answers and nothing else runs the workload: deleted at the timeout, a
    running service went to zero because a drain could not place it anywhere. It stays
    until the workload is placed elsewhere and ready there; a copy on a member that does
    not answer (not `holding`) still ends at the timeout."""
    last = task("a", created=0)
    held = graceful.judge([last], targets=[], ready={}, now=at(900), timeout=TIMEOUT, holding={"a"})
    assert (held.keep, held.drop, held.purge, held.recheck_after) == ([last], [], [], None)
    down = graceful.judge([last], targets=[], ready={}, now=at(900), timeout=TIMEOUT)
    assert down.drop == [last] and down.purge == ["a"]
    ready = graceful.judge([last], targets=["b"], ready={"b": True}, now=at(901), timeout=TIMEOUT)
    assert ready.drop == [last] and ready.purge == ["a"]


def test_a_copy_held_for_want_of_a_placement_waits_a_whole_timeout_for_the_new_one() -> None:
    """Placed at last, long past its timeout: the old copy still waits for the new one to
    be ready, for a graceful timeout counted from that placement."""
    held = task("a", created=0).model_copy(update={"nowhere_since": at(30)})
    placed = at(2000)
    waits = graceful.judge(
        [held], targets=["b"], ready={"b": False}, now=at(2010), timeout=TIMEOUT, placed_at=placed
    )
    assert waits.keep == [held] and waits.purge == []
    assert waits.recheck_after == pytest.approx(590)
    over = graceful.judge(
        [held], targets=["b"], ready={"b": False}, now=at(2600), timeout=TIMEOUT, placed_at=placed
    )
    assert over.drop == [held] and over.purge == ["a"]


def test_a_share_that_shrank_in_a_move_keeps_its_old_count_until_the_new_placement_is_ready() -> (
    None
):
    """A move took 2 of a's 4 replicas to b: a runs its 4 until b's 2 are ready, then is
    scaled down to its share (nothing purged: it is still a target)."""
    shrunk = task("a", created=0, replicas=4)
    placed = {"a": 2, "b": 2}
    waiting = graceful.judge(
        [shrunk], targets=list(placed), placed=placed,
        ready={"a": True, "b": False}, now=at(1), timeout=TIMEOUT,
    )  # fmt: skip
    assert waiting.keep == [shrunk] and waiting.purge == []
    assert waiting.recheck_after == pytest.approx(TIMEOUT - 1)
    ready = graceful.judge(
        [shrunk], targets=list(placed), placed=placed,
        ready={"a": True, "b": True}, now=at(2), timeout=TIMEOUT,
    )  # fmt: skip
    assert ready.drop == [shrunk] and ready.purge == []
    late = graceful.judge(
        [shrunk], targets=list(placed), placed=placed,
        ready={"a": True, "b": False}, now=at(TIMEOUT), timeout=TIMEOUT,
    )  # fmt: skip
    assert late.drop == [shrunk] and late.purge == []


@pytest.mark.parametrize(
    ("mode", "placed_there"),
    [
        pytest.param("Gracefully", 4, id="placed back with as many replicas as it kept"),
        pytest.param("Directly", 2, id="a Directly task keeps no copy to shrink"),
    ],
)
def test_a_task_on_a_target_that_keeps_nothing_more_ends_at_once(
    mode: str, placed_there: int
) -> None:
    back = task("a", created=0, mode=mode, replicas=4)
    placed = {"a": placed_there, "b": 2}
    out = graceful.judge(
        [back], targets=list(placed), placed=placed,
        ready={"a": False, "b": False}, now=at(1), timeout=TIMEOUT,
    )  # fmt: skip
    assert out.drop == [back] and out.purge == []


@pytest.mark.parametrize(
    ("mode", "ready", "now", "targets"),
    [
        pytest.param(
            "Gracefully", {"b": True}, 10, ["b"],
            id="gracefully: the new placement ready does not end it while a is away",
        ),
        pytest.param(
            "Gracefully", {"b": False}, 900, ["b"],
            id="gracefully: nor does the timeout",
        ),
        pytest.param(
            "Directly", {"b": True}, 900, ["b"],
            id="directly: kept too, its copy to be purged on return",
        ),
        pytest.param(
            "Directly", {}, 900, [],
            id="directly, placed nowhere else: kept, for its copy to be given back",
        ),
    ],
)  # fmt: skip
def test_a_task_on_a_member_away_waits_for_its_return(
    mode: str, ready: dict[str, bool], now: float, targets: list[str]
) -> None:
    """Ended while a did not answer, the task only queued the deletion of its copy for the
    moment a answered again, before the scheduler could place the workload back there."""
    t = task("a", created=0, mode=mode)
    out = graceful.judge(
        [t], targets=targets, ready=ready, now=at(now), timeout=TIMEOUT, away={"a"}
    )
    assert (out.keep, out.drop, out.purge, out.recheck_after) == ([t], [], [], None)


def test_a_task_on_a_member_away_ends_when_placed_back_there() -> None:
    t = task("a", created=0, mode="Gracefully")
    out = graceful.judge([t], targets=["a", "b"], ready={}, now=at(10), timeout=TIMEOUT, away={"a"})
    assert (out.keep, out.drop, out.purge) == ([], [t], [])
