"""Application failover: a copy Unhealthy on a member for the policy's toleration leaves it,
with the policy's purge mode and grace period, and the scheduler keeps off that member for
as long as the task lasts."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from federation import errors
from federation.clock import FakeClock
from federation.failover import application, graceful
from federation.failover.controller import FailoverController
from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.scheduler import plan
from federation.settings import FailoverSettings
from policies.models.binding import Binding, EvictionTask
from policies.models.cluster import Cluster, ClusterStatus, Condition
from policies.models.propagation import PropagationPolicy
from policies.models.work import ClusterWorkloadStatus, Health, WorkloadStatus
from policies.models.workload import Workload
from tests.unit.failover.builders import Counted, at, binding, events_of
from tests.waiting import wait_for

WEB = keys.WorkloadRef("default", "Deployment.apps", "web")


def health(**clusters: Health | tuple[Health, bool]) -> WorkloadStatus:
    rows = []
    for name, value in clusters.items():
        state, applied = value if isinstance(value, tuple) else (value, True)
        rows.append(
            ClusterWorkloadStatus(
                cluster=name, applied=applied, health=state, message=f"{name} says {state}"
            )
        )
    return WorkloadStatus(workload=binding("web", clusters={}).spec.workload, clusters=rows)


# -- the pure decision --------------------------------------------------------------------------


def test_an_unhealthy_copy_is_evicted_once_the_toleration_has_passed() -> None:
    status = health(a="Unhealthy", b="Healthy")
    first = application.judge(["a", "b"], status, {}, now=at(0), toleration=60)
    assert first.due == [] and first.since == {"a": at(0)} and first.recheck_after == 60
    later = application.judge(["a", "b"], status, first.since, now=at(59), toleration=60)
    assert later.due == [] and later.since == {"a": at(0)} and later.recheck_after == 1
    due = application.judge(["a", "b"], status, later.since, now=at(60), toleration=60)
    assert due.due == [("a", "application unhealthy for 60s: a says Unhealthy")]


@pytest.mark.parametrize(
    "state",
    [
        pytest.param("Healthy", id="healthy"),
        pytest.param("Progressing", id="still rolling out or waiting for room"),
        pytest.param("Unknown", id="not observed"),
        pytest.param(("Unhealthy", False), id="unhealthy but not our applied copy"),
    ],
)
def test_anything_but_an_applied_unhealthy_copy_starts_the_count_again(
    state: Health | tuple[Health, bool],
) -> None:
    out = application.judge(["a"], health(a=state), {"a": at(0)}, now=at(600), toleration=60)
    assert out.due == [] and out.since == {} and out.recheck_after is None


def test_a_cluster_no_longer_targeted_is_forgotten() -> None:
    out = application.judge(["b"], health(a="Unhealthy"), {"a": at(0)}, now=at(600), toleration=60)
    assert out.due == [] and out.since == {}


def test_a_workload_unhealthy_on_every_member_is_left_where_it_is() -> None:
    """The same failure everywhere is the workload's own (a bad rollout): evicted from
    every member at once, it had no copy left and nowhere better to go."""
    both = health(a="Unhealthy", b="Unhealthy")
    since = {"a": at(0), "b": at(0)}
    out = application.judge(["a", "b"], both, since, now=at(600), toleration=60)
    assert out.due == [] and out.everywhere and out.since == since
    alone = application.judge(["a"], health(a="Unhealthy"), {"a": at(0)}, now=at(60), toleration=60)
    assert [c for c, _ in alone.due] == ["a"]  # one member: it may be all that is wrong
    one_recovers = application.judge(
        ["a", "b"], health(a="Unhealthy", b="Healthy"), since, now=at(600), toleration=60
    )
    assert [c for c, _ in one_recovers.due] == ["a"]  # counted from its first time


def test_a_task_s_own_grace_period_replaces_the_global_timeout() -> None:
    task = EvictionTask(
        cluster="a", creation_time=at(0), purge_mode="Gracefully", grace_period_seconds=120
    )
    waiting = graceful.judge([task], targets=["b"], ready={}, now=at(119), timeout=600)
    assert waiting.keep == [task] and waiting.recheck_after == pytest.approx(1)
    expired = graceful.judge([task], targets=["b"], ready={}, now=at(120), timeout=600)
    assert expired.drop == [task] and expired.purge == ["a"]


def test_an_application_task_does_not_end_when_its_copy_is_gone() -> None:
    """A Directly task of a taint eviction ends once its copy is gone, so a preempted job
    may come back; one of application failover must keep the member barred."""
    task = EvictionTask(
        cluster="a", creation_time=at(0), purge_mode="Directly", producer="ApplicationFailover"
    )
    out = graceful.judge([task], targets=["b"], ready={}, now=at(1), timeout=600, gone={"a"})
    assert out.keep == [task]


@pytest.mark.parametrize(
    ("mode", "grace", "bar"),
    [
        pytest.param("Gracefully", 60, 600, id="graceful: the global timeout outlasts 60 s"),
        pytest.param("Gracefully", 900, 900, id="graceful: its own grace period is longer"),
        pytest.param("Directly", None, 600, id="directly: the global timeout"),
    ],
)
def test_an_application_task_bars_its_member_past_a_healthy_new_placement(
    mode: str, grace: int | None, bar: int
) -> None:
    """Its copy goes once the new placement is ready, as any graceful task's does; the task
    stays, purging at once, until the longer of its grace period and the global timeout.
    Dropped with its copy, the member was free again and the next re-division of the
    workload put it back there to fail once more."""
    task = EvictionTask(
        cluster="a",
        creation_time=at(0),
        purge_mode=mode,  # type: ignore[arg-type]
        producer="ApplicationFailover",
        grace_period_seconds=grace,
    )
    ready = {"b": True}
    healthy = graceful.judge([task], targets=["b"], ready=ready, now=at(10), timeout=600)
    (kept,) = healthy.keep
    assert (kept.cluster, kept.purge_mode, kept.creation_time) == ("a", "Directly", at(0))
    assert kept.from_application and healthy.purge == ["a"]
    assert healthy.drop == ([] if mode == "Directly" else [task])
    assert healthy.recheck_after == pytest.approx(bar - 10)
    again = graceful.judge([kept], targets=["b"], ready=ready, now=at(bar - 1), timeout=600)
    assert again.keep == [kept] and again.drop == []
    over = graceful.judge([kept], targets=["b"], ready=ready, now=at(bar), timeout=600)
    assert over.keep == [] and over.drop == [kept]


# -- the controller, on an in-memory registry and a fake clock --------------------------------


def policy(**failover: Any) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "propagateDeps": True,
                "failover": {"application": failover},
            },
        }
    )


def deployment() -> Workload:
    return Workload.model_validate(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}},
        }
    )


class World:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.store = MemoryStore(clock=self.clock)
        self.counted = Counted()
        self.controller = FailoverController(
            self.store,
            settings=FailoverSettings(eviction_grace=30, graceful_timeout=600),
            clock=self.clock,
            claim=plan.claim,
            metrics=self.counted,
        )
        self.objects = codec.TypedStore(self.store, objects.ObjectCodec())
        self.bindings = codec.TypedStore(self.store, codec.Codec(Binding))
        self.statuses = codec.TypedStore(self.store, codec.Codec(WorkloadStatus))

    async def setup(self, pp: PropagationPolicy, workload: Workload) -> None:
        for name in ("a", "b", "c"):
            cluster = Cluster.model_validate({"metadata": {"name": name}, "spec": {"region": "r"}})
            await codec.TypedStore(self.store, codec.Codec(Cluster)).create(
                keys.cluster_key(name), cluster
            )
            ready = Condition(
                type="Ready", status="True", reason="ClusterReady", last_transition_time=at(0)
            )
            await codec.TypedStore(self.store, codec.Codec(ClusterStatus)).create(
                keys.cluster_status_key(name), ClusterStatus(conditions=[ready])
            )
        await self.objects.create(objects.key_for(pp), pp)
        await self.objects.create(objects.key_for(workload), workload)
        await self.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1, "b": 1}))

    async def report(self, status: WorkloadStatus) -> None:
        await self.statuses.put(keys.workload_status_key(WEB), status)
        await self.settle()

    async def binding(self) -> Binding:
        stored = await self.bindings.get(keys.binding_key(WEB))
        assert stored is not None
        return stored.obj

    async def settle(self) -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        await wait_for(lambda: self.controller.queue.pending == 0, timeout=2, message="drained")
        for _ in range(20):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds)
        await self.settle()


@contextlib.asynccontextmanager
async def world(pp: PropagationPolicy, workload: Workload | None = None) -> AsyncIterator[World]:
    w = World()
    await w.setup(pp, workload or deployment())
    task = asyncio.create_task(w.controller.run())
    try:
        await w.settle()
        yield w
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await w.store.close()


async def test_a_member_where_the_copy_stays_unhealthy_is_left_with_the_policy_s_terms() -> None:
    pp = policy(
        decisionConditions={"tolerationSeconds": 60}, purgeMode="Graciously", gracePeriodSeconds=90
    )
    async with world(pp) as w:
        await w.report(health(a="Unhealthy", b="Healthy"))
        await w.advance(59)
        assert (await w.binding()).placement() == {"a": 1, "b": 1}, "within the toleration"
        await w.advance(1.1)
        left = await w.binding()
        assert left.placement() == {"b": 1} and left.status.phase == "Pending"
        (task,) = left.spec.eviction_tasks
        assert (task.cluster, task.purge_mode, task.grace_period_seconds, task.producer) == (
            "a",
            "Gracefully",
            90,
            "ApplicationFailover",
        )
        assert task.reason == "application unhealthy for 60s: a says Unhealthy"
        marks = [(m.what, m.cluster) for m in w.controller.timeline]
        assert ("evicted", "a") in marks
        (told,) = await events_of(w.store, WEB)
        assert (told.type, told.reason, told.cluster) == ("Warning", "Evicted", "a")
        assert "application unhealthy for 60s: a says Unhealthy" in told.message
        assert w.counted.evictions == [("a", "failover", 1)]


async def test_the_member_stays_barred_after_the_new_placement_is_ready() -> None:
    """The copy leaves once the workload runs elsewhere; the bar stays for the graceful
    timeout, told once: the task turning Directly is no second eviction."""
    pp = policy(
        decisionConditions={"tolerationSeconds": 60}, purgeMode="Gracefully", gracePeriodSeconds=90
    )
    async with world(pp) as w:
        await w.report(health(a="Unhealthy", b="Healthy"))
        await w.advance(60.1)
        left = await w.binding()
        assert left.placement() == {"b": 1}
        placed = left.model_copy(
            update={"status": left.status.model_copy(update={"phase": "Scheduled"})}
        )  # the scheduler re-placed it: b keeps its replica
        revision = (await w.bindings.put(keys.binding_key(WEB), placed)).revision
        ready = health(b="Healthy").model_copy(update={"binding_revision": revision})
        await w.report(ready)
        (task,) = (await w.binding()).spec.eviction_tasks
        assert (task.cluster, task.purge_mode, task.from_application) == ("a", "Directly", True)
        assert [e.reason for e in await events_of(w.store, WEB)] == ["Evicted"]
        assert w.counted.evictions == [("a", "failover", 1)]
        assert [m.what for m in w.controller.timeline].count("evicted") == 1
        await w.advance(589)  # 589 s since the eviction
        assert (await w.binding()).spec.eviction_tasks == [task], "within the timeout"
        await w.advance(11.1)
        assert (await w.binding()).spec.eviction_tasks == []


async def test_a_copy_that_recovers_within_the_toleration_starts_the_count_again() -> None:
    async with world(policy(decisionConditions={"tolerationSeconds": 60})) as w:
        await w.report(health(a="Unhealthy", b="Healthy"))
        await w.advance(50)
        await w.report(health(a="Healthy", b="Healthy"))
        await w.advance(5)
        await w.report(health(a="Unhealthy", b="Healthy"))
        await w.advance(50)
        assert (await w.binding()).placement() == {"a": 1, "b": 1}, "50 s, not 105 s, in a row"
        await w.advance(10.1)
        assert (await w.binding()).placement() == {"b": 1}


async def test_without_a_toleration_karmada_s_300_seconds_apply() -> None:
    async with world(policy(purgeMode="Directly")) as w:
        await w.report(health(a="Unhealthy", b="Healthy"))
        await w.advance(299)
        assert (await w.binding()).placement() == {"a": 1, "b": 1}
        await w.advance(1.1)
        (task,) = (await w.binding()).spec.eviction_tasks
        assert (task.cluster, task.purge_mode, task.grace_period_seconds) == ("a", "Directly", None)


async def test_a_finished_job_is_never_failed_over() -> None:
    async with world(policy(decisionConditions={"tolerationSeconds": 0})) as w:
        done = health(a="Unhealthy", b="Completed").model_copy(update={"phase": "Succeeded"})
        await w.report(done)
        await w.advance(10)
        assert (await w.binding()).placement() == {"a": 1, "b": 1}


async def test_a_policy_without_application_failover_leaves_an_unhealthy_copy_alone() -> None:
    pp = PropagationPolicy.model_validate(
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
        }
    )
    async with world(pp) as w:
        await w.report(health(a="Unhealthy", b="Healthy"))
        await w.advance(3600)
        assert (await w.binding()).placement() == {"a": 1, "b": 1}


async def test_a_lost_compare_and_swap_does_not_start_the_toleration_again() -> None:
    async with world(policy(decisionConditions={"tolerationSeconds": 60})) as w:
        real = w.store.commit
        lost: list[str] = []

        async def commit(ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()) -> Any:
            for op in ops:  # failover's eviction: the only update of a Binding here
                if isinstance(op, st.Update) and op.key == keys.binding_key(WEB) and not lost:
                    lost.append(op.key)  # another writer got there first (the scheduler, say)
                    raise errors.Conflict(op.key, expected=op.revision, current=op.revision + 1)
            return await real(ops, guards=guards)

        w.store.commit = commit  # type: ignore[method-assign]
        await w.report(health(a="Unhealthy", b="Healthy"))
        await w.advance(61)
        await w.advance(5)
        assert lost
        assert (await w.binding()).placement() == {"b": 1}  # not a whole toleration later
        # The refused write took its event with it: one eviction, told and counted once.
        assert [e.reason for e in await events_of(w.store, WEB)] == ["Evicted"]
        assert w.counted.evictions == [("a", "failover", 1)]


async def test_copies_unhealthy_everywhere_stay_until_one_recovers() -> None:
    pp = policy(decisionConditions={"tolerationSeconds": 60}, purgeMode="Directly")
    async with world(pp) as w:
        await w.report(health(a="Unhealthy", b="Unhealthy"))
        await w.advance(600)
        assert (await w.binding()).placement() == {"a": 1, "b": 1}
        await w.report(health(a="Unhealthy", b="Healthy"))
        assert (await w.binding()).placement() == {"b": 1}


async def test_the_eviction_rate_follows_the_fleet_s_health_now_not_at_the_last_blip() -> None:
    """Most of the fleet looked down a while ago (the limiter slowed, here to a stop, and
    its token was spent); it is all Ready now. Reading the rate left from then, the copy
    was never moved."""
    async with world(policy(decisionConditions={"tolerationSeconds": 60})) as w:
        w.controller.limiter.secondary_rate = 0
        w.controller.limiter.set_health(unhealthy=3, total=3)
        assert w.controller.limiter.try_acquire(w.clock.monotonic())
        await w.report(health(a="Unhealthy", b="Healthy"))
        await w.advance(60.1)
        assert (await w.binding()).placement() == {"b": 1}
