"""`fedctl get queues`: the tree, and what each queue holds and waits for."""

from __future__ import annotations

import datetime as dt
from typing import Any

from federation.cli import queues_view

NOW = dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC)


def q(name: str, **spec: Any) -> dict[str, Any]:
    meta = {"name": name, "creationTimestamp": "2026-12-04T11:00:00Z"}
    return {"kind": "Queue", "metadata": meta, "spec": spec}


def item(queue: str | None, phase: str | None) -> dict[str, Any]:
    if phase is None:  # not seen by the scheduler yet
        return {"namespace": "team", "kind": "Job.batch", "name": "x", "binding": None}
    spec = {"queue": queue} if queue else {}
    return {"binding": {"spec": spec, "status": {"phase": phase}}}


QUEUES = [
    q("ml", weight=3, capability={"nvidia.com/gpu": "32"}),
    q("ml-prod", parent="ml", weight=2, priority=100, guarantee={"nvidia.com/gpu": "8"}),
    q("ml-research", parent="ml"),
    q("web", weight=2),
]
WORKLOADS = [
    item("ml-prod", "Scheduled"),
    item("ml-prod", "Scheduled"),
    item("ml-prod", "Pending"),
    item("ml-research", "Scheduled"),
    item("ml-research", "Pending"),
    item("mlprod", "Pending"),
    item(None, "Scheduled"),  # no queue named: the default queue
    item("web", None),
]


def rows(text: str | None) -> dict[str, list[str]]:
    assert text is not None
    lines = text.splitlines()
    return {line.split()[0]: line.split()[1:] for line in lines[1:]}


def test_leaves_count_their_own_work_and_a_parent_its_subtree() -> None:
    text = queues_view.table(QUEUES, WORKLOADS, now=NOW)
    assert text is not None
    assert text.splitlines()[0].split() == queues_view.HEADERS
    got = rows(text)
    assert got["ml-prod"] == ["ml", "2", "100", "2", "1", "1h"]
    assert got["ml-research"] == ["ml", "1", "0", "1", "1", "1h"]
    assert got["ml"] == ["-", "3", "0", "3", "2", "1h"]
    assert got["web"] == ["-", "2", "0", "0", "0", "1h"]  # not scheduled yet: not counted


def test_queues_that_bindings_name_but_nobody_defined_are_listed() -> None:
    got = rows(queues_view.table(QUEUES, WORKLOADS, now=NOW))
    assert got["mlprod"] == ["-", "-", "-", "0", "1", "<not", "defined>"]
    assert got["default"] == ["-", "-", "-", "1", "0", "<implicit>"]


def test_one_queue_by_name_and_the_wide_columns() -> None:
    text = queues_view.table(QUEUES, WORKLOADS, now=NOW, only="ml", wide=True)
    got = rows(text)
    assert list(got) == ["ml"]
    assert got["ml"][-2:] == ["nvidia.com/gpu=32", "-"]
    assert queues_view.table(QUEUES, WORKLOADS, now=NOW, only="none") is None
    assert queues_view.table([], [], now=NOW) is None


def test_a_parent_loop_written_by_hand_does_not_hang_or_double_count() -> None:
    loop = [q("a", parent="b"), q("b", parent="a")]
    got = rows(queues_view.table(loop, [item("a", "Scheduled")], now=NOW))
    assert got["a"][3] == "1" and got["b"][3] == "1"
