"""The loop reports each decision's own time to `fedctl_scheduling_decision_seconds`.

Before, it reported the cycle's wall time, Binding writes included, divided by the number
of decisions, once per decision: every observation of a cycle was the same average, so the
histogram's tail never showed a slow decision, and etcd's latency read as the scheduler's.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation import clock
from federation.registry import objects
from federation.scheduler import cycle
from federation.scheduler import loop as loop_mod
from federation.settings import SchedulerSettings
from tests.unit.scheduler.fleet import cluster, workload
from tests.unit.scheduler.test_loop import _equal, _joined, _phases, running
from tests.waiting import wait_for


class Observed:
    """The loop's metrics, kept: the seconds of each `observe_decision` call."""

    def __init__(self) -> None:
        self.decisions: list[float] = []

    def observe_decision(self, seconds: float) -> None:
        self.decisions.append(seconds)

    def eviction(self, cluster: str, reason: str, *, replicas: int = 1) -> None:
        pass


async def test_each_decision_is_observed_with_its_own_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, objs, _ = await _joined(cluster("a"))
    names = ("one", "two", "three")
    for name in names:
        w = workload(name, cpu="1")
        await objs.put(objects.key_for(w), w)
    observed = Observed()
    loop = loop_mod.SchedulerLoop(
        store, settings=SchedulerSettings(), clock=clock.real, debounce=0.01, metrics=observed
    )
    results: list[cycle.CycleResult] = []
    run_cycle = loop.scheduler.run_cycle

    def kept(*args: Any, **kwargs: Any) -> cycle.CycleResult:
        result = run_cycle(*args, **kwargs)
        results.append(result)
        return result

    monkeypatch.setattr(loop.scheduler, "run_cycle", kept)
    async with running(loop):
        await wait_for(
            lambda: _equal(_phases(store), dict.fromkeys(names, "Scheduled")),
            message="all three placed",
        )
    timed = [seconds for result in results for seconds in result.decision_seconds]
    assert len(timed) == 3 and all(s > 0 for s in timed)
    assert observed.decisions == timed
