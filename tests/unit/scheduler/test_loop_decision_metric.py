"""The loop reports each decision's own time to `fedctl_scheduling_decision_seconds`, and
the time its Binding writes took to `fedctl_scheduling_binding_write_seconds`.

Before, it reported the cycle's wall time, Binding writes included, divided by the number
of decisions, once per decision: every observation of a cycle was the same average, so the
histogram's tail never showed a slow decision, and etcd's latency read as the scheduler's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from federation import clock
from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.scheduler import cycle
from federation.scheduler import loop as loop_mod
from federation.settings import SchedulerSettings
from policies.models.cluster import ClusterStatus
from tests.unit.scheduler.fleet import cluster, workload
from tests.unit.scheduler.test_loop import _equal, _joined, _phases, running
from tests.waiting import wait_for


class Observed:
    """The loop's metrics, kept: the seconds of each `observe_decision` call."""

    def __init__(self) -> None:
        self.decisions: list[float] = []
        self.writes: list[float] = []

    def observe_decision(self, seconds: float) -> None:
        self.decisions.append(seconds)

    def observe_write(self, seconds: float) -> None:
        self.writes.append(seconds)

    def observe_cycle(self, seconds: float, *, pending: int) -> None:
        pass

    def eviction(self, cluster: str, reason: str, *, replicas: int = 1) -> None:
        pass


NAMES = ("one", "two", "three")


async def _submit(objs: codec.TypedStore[Any]) -> None:
    """Three one-core Jobs, all of which fit."""
    for name in NAMES:
        w = workload(name, cpu="1")
        await objs.put(objects.key_for(w), w)


async def _all_placed(store: MemoryStore) -> None:
    await wait_for(
        lambda: _equal(_phases(store), dict.fromkeys(NAMES, "Scheduled")),
        message="all three placed",
    )


async def test_each_decision_is_observed_with_its_own_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, objs, _ = await _joined(cluster("a"))
    await _submit(objs)
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
        await _all_placed(store)
    timed = [seconds for result in results for seconds in result.decision_seconds]
    assert len(timed) == 3 and all(s > 0 for s in timed)
    assert observed.decisions == timed


class _SlowBindingWrites(MemoryStore):
    """A registry in which each transaction writing Bindings takes 0.25 s of `slow`."""

    def __init__(self, slow: clock.FakeClock) -> None:
        super().__init__()
        self.slow = slow

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        if any(op.key.startswith(keys.prefix("bindings")) for op in ops):
            await self.slow.advance(0.25)
        return await super().commit(ops, guards=guards)


async def test_the_binding_write_is_observed_apart_from_the_decisions() -> None:
    """The loop's clock moves only while Bindings are written: the decisions took none of
    it (before, each was a third of the write), and the write series has it all."""
    fake = clock.FakeClock()
    store = _SlowBindingWrites(fake)
    member = cluster("a")
    assert member.status is not None
    objs = codec.TypedStore(store, objects.ObjectCodec())
    await objs.put(keys.cluster_key("a"), member.model_copy(update={"status": None}))
    await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
        keys.cluster_status_key("a"), member.status
    )
    await _submit(objs)
    observed = Observed()
    loop = loop_mod.SchedulerLoop(
        store, settings=SchedulerSettings(), clock=fake, debounce=0, metrics=observed
    )
    async with running(loop):
        await _all_placed(store)
        await wait_for(lambda: observed.writes, message="the write observed")
    assert observed.decisions == [0.0, 0.0, 0.0]
    assert observed.writes[0] == 0.25
