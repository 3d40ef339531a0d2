"""`/metrics` families that tell how the controller's loops keep up: the event loop's lag,
the scheduling cycle's duration and backlog, and each member's last heartbeat.

A 144-member fleet lost its leader lease to an event loop blocked for 40 s, and nothing
but `fedctl_leader_transitions` said so; these series name the stall where it happens.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time

import pytest

from federation import clock
from federation.api import loop_lag
from federation.api import metrics as metrics_mod
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.cluster import ClusterStatus, Condition
from tests.unit.api.test_metrics import samples
from tests.unit.scheduler import fleet
from tests.waiting import background, wait_for

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def hold_the_loop(seconds: float) -> None:
    """What a blocking parse does: run without yielding to the event loop. Not a wait: the
    test's subject is exactly a loop that cannot run anything meanwhile."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pass


def lagged(m: metrics_mod.Metrics, *, over: str) -> float:
    """Lag observations above the bucket bound `over` (seconds, as Prometheus writes it)."""
    got = samples(m)
    total = got[("fedctl_event_loop_lag_seconds_count", ())]
    return total - got[("fedctl_event_loop_lag_seconds_bucket", (("le", over),))]


def blocked_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "event loop blocked" in r.getMessage()
    ]


async def test_a_blocked_event_loop_is_measured_and_named_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On the real clock, held for real: the lag is the hold (or more, on a busy host)."""
    m = metrics_mod.Metrics()
    follow = loop_lag.follow(observe=m.observe_loop_lag, interval=0.02, warn_after=0.3)
    with caplog.at_level(logging.WARNING, logger=loop_lag.__name__):
        async with background(follow):
            await wait_for(
                lambda: samples(m)[("fedctl_event_loop_lag_seconds_count", ())] >= 2,
                message="the sleeper's first wake-ups",
            )
            hold_the_loop(0.6)
            await wait_for(lambda: lagged(m, over="0.5") >= 1, message="the stall observed")
    said = [float(re.findall(r"blocked for ([0-9.]+) s", w)[0]) for w in blocked_warnings(caplog)]
    assert said, "a WARNING names the blocked loop"
    assert max(said) >= 0.5


class HeldClock(clock.FakeClock):
    """A fake clock on which the test can hold the loop: `hold(s)` moves time on by `s`
    without waking anyone, as a loop blocked for `s` seconds finds it when it runs again."""

    def __init__(self) -> None:
        super().__init__()
        self.held = 0.0

    def monotonic(self) -> float:
        return super().monotonic() + self.held

    async def stall(self, seconds: float, *, interval: float) -> None:
        """The loop held for `seconds`, then the sleeper's interval up."""
        await wait_for(lambda: self.sleepers == 1, message="the sleeper parked")
        self.held += seconds
        await self.advance(interval)
        await wait_for(lambda: self.sleepers == 1, message="the sleeper parked again")


@pytest.mark.parametrize(
    ("stalls", "warnings"),
    [
        pytest.param([2.0], ["blocked for 2.0 s"], id="one stall, one warning"),
        pytest.param(
            [2.0, 1.5, 0.5, 3.0, 60.0],
            ["blocked for 2.0 s", "blocked for 60.0 s", "(2 more stalls over 1 s since"],
            id="stalls within a minute of a warning are counted in the next, not logged",
        ),
        pytest.param([0.5, 0.9], [], id="lags under the threshold are only measured"),
    ],
)
async def test_warnings_about_a_blocked_loop_are_rate_limited(
    caplog: pytest.LogCaptureFixture, stalls: list[float], warnings: list[str]
) -> None:
    m = metrics_mod.Metrics()
    held = HeldClock()
    follow = loop_lag.follow(
        observe=m.observe_loop_lag, clock=held, interval=1.0, warn_after=1.0, warn_every=60.0
    )
    with caplog.at_level(logging.WARNING, logger=loop_lag.__name__):
        async with background(follow):
            for seconds in stalls:
                await held.stall(seconds, interval=1.0)
    logged = " | ".join(blocked_warnings(caplog))
    assert len(blocked_warnings(caplog)) == sum(w.startswith("blocked") for w in warnings)
    for text in warnings:
        assert text in logged
    got = samples(m)
    assert got[("fedctl_event_loop_lag_seconds_count", ())] == len(stalls)
    assert got[("fedctl_event_loop_lag_seconds_sum", ())] == pytest.approx(sum(stalls))


async def test_the_scheduling_cycle_reports_its_time_and_what_it_left_waiting() -> None:
    """qa has room for one of three 4-core jobs: each cycle leaves two waiting."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    member = fleet.cluster("a")
    assert member.status is not None
    await objs.put(keys.cluster_key("a"), member.model_copy(update={"status": None}))
    await statuses.put(keys.cluster_status_key("a"), member.status)
    qa = fleet.queue("qa", capability={"cpu": "4"})
    await objs.put(objects.key_for(qa), qa)
    for name in ("one", "two", "three"):
        w = fleet.workload(name, cpu="4", queue="qa")
        await objs.put(objects.key_for(w), w)
    m = metrics_mod.Metrics()
    m.set_leader(True)
    loop = SchedulerLoop(
        store, settings=SchedulerSettings(), clock=clock.real, debounce=0.01, metrics=m
    )
    async with background(loop.run()):
        await wait_for(
            lambda: samples(m)[("fedctl_scheduler_cycle_seconds_count", ())] >= 1,
            message="a cycle observed",
        )
        await wait_for(
            lambda: samples(m)[("fedctl_scheduler_pending_workloads", ())] == 2,
            message="two jobs left waiting",
        )
    assert samples(m)[("fedctl_scheduler_cycle_seconds_sum", ())] > 0
    m.set_leader(False)
    assert samples(m)[("fedctl_scheduler_pending_workloads", ())] == 0, "no one's count"


async def test_each_member_s_last_heartbeat_is_a_timestamp() -> None:
    store = MemoryStore()
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    beat = T0 + dt.timedelta(seconds=42)
    cond = Condition(type="Ready", status="True", last_transition_time=T0)
    await statuses.put(
        keys.cluster_status_key("eu"), ClusterStatus(conditions=[cond], last_heartbeat=beat)
    )
    await statuses.put(keys.cluster_status_key("never"), ClusterStatus())
    m = metrics_mod.Metrics()
    async with background(m.cache.run(store)):
        await wait_for(lambda: len(m.cache.statuses) == 2, message="statuses cached")
        got = samples(m)
    name = "fedctl_cluster_last_heartbeat_timestamp_seconds"
    assert got[(name, (("cluster", "eu"),))] == beat.timestamp()
    assert (name, (("cluster", "never"),)) not in got, "no probe has succeeded yet"
