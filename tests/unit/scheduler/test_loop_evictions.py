"""A committed preemption or reclaim leaves an event on its victim and counts its evicted
replicas; an eviction that did not land leaves neither.

Before, the victim's Binding said `preempted by …` until the next cycle replaced the
reason with the one it waits for now, and `fedctl_evictions_total` had no samples: a
preemption left no trace of who took the room, or why.
"""

from __future__ import annotations

from typing import Any

from federation import clock
from federation.registry import codec, events, keys, objects
from federation.registry.memory import MemoryStore
from federation.scheduler import loop as loop_mod
from federation.scheduler import reconcile
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.work import Event
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import cluster, flavor, queue, workload
from tests.unit.scheduler.test_loop import _equal, _joined, _phases, _Sampled, binding, running
from tests.waiting import wait_for

SETTINGS = SchedulerSettings()


class Counted:
    """The loop's metrics, kept: (cluster, reason, replicas) per `eviction` call."""

    def __init__(self) -> None:
        self.evictions: list[tuple[str, str, int]] = []

    def observe_decision(self, seconds: float) -> None:
        pass

    def observe_write(self, seconds: float) -> None:
        pass

    def observe_cycle(self, seconds: float, *, pending: int) -> None:
        pass

    def eviction(self, cluster: str, reason: str, *, replicas: int = 1) -> None:
        self.evictions.append((cluster, reason, replicas))


async def events_of(store: MemoryStore, w: Workload) -> list[Event]:
    typed = codec.TypedStore(store, events.EVENTS)
    listed = await typed.list(events.event_prefix(reconcile.ref_of(w)))
    return [i.obj for i in listed.items]


async def test_a_preempted_job_is_told_who_took_its_room_and_the_eviction_is_counted() -> None:
    store, objs, _ = await _joined(cluster("a"))
    qa = queue("qa", capability={"cpu": "4"})
    await objs.put(objects.key_for(qa), qa)
    low = workload("low", cpu="2", replicas=2, queue="qa")
    high = workload("high", cpu="4", queue="qa", priority=10)
    await objs.put(objects.key_for(low), low)
    counted = Counted()
    loop = loop_mod.SchedulerLoop(
        store, settings=SETTINGS, clock=clock.real, debounce=0.01, metrics=counted
    )
    async with running(loop):
        await wait_for(lambda: _equal(_phases(store), {"low": "Scheduled"}), message="low runs")
        await objs.put(objects.key_for(high), high)
        await wait_for(
            lambda: _equal(_phases(store), {"low": "Pending", "high": "Scheduled"}),
            message="high admitted in low's place",
        )
        (told,) = await wait_for(lambda: events_of(store, low), message="low's event")
    assert (told.type, told.reason, told.source, told.cluster) == (
        "Normal",
        "Preempted",
        "scheduler",
        "a",
    )
    assert told.object == str(reconcile.ref_of(low))
    assert f"preempted by {reconcile.ref_of(high)} (priority 10, queue qa)" in told.message
    assert "Evicted from a (2 replicas)" in told.message
    assert counted.evictions == [("a", "preempted", 2)]
    assert await events_of(store, high) == []


async def test_a_reclaimed_job_is_told_which_queue_took_its_borrowed_room() -> None:
    """`borrow` (the implicit default queue: guaranteed nothing) fills the member; then
    `owner` is defined with a guarantee of all of it, and its job takes the room back."""
    store, objs, _ = await _joined(cluster("a", flavor(cpu="4", nodes=1)))
    guest = workload("guest", cpu="4")
    await objs.put(objects.key_for(guest), guest)
    counted = Counted()
    loop = loop_mod.SchedulerLoop(
        store, settings=SETTINGS, clock=clock.real, debounce=0.01, metrics=counted
    )
    async with running(loop):
        await wait_for(lambda: _equal(_phases(store), {"guest": "Scheduled"}), message="guest runs")
        owner = queue("owner", guarantee={"cpu": "4"})
        mine = workload("mine", cpu="4", queue="owner")
        await objs.put(objects.key_for(owner), owner)
        await objs.put(objects.key_for(mine), mine)
        await wait_for(
            lambda: _equal(_phases(store), {"guest": "Pending", "mine": "Scheduled"}),
            message="owner takes its guarantee back",
        )
        (told,) = await wait_for(lambda: events_of(store, guest), message="guest's event")
    assert (told.type, told.reason, told.cluster) == ("Normal", "Reclaimed", "a")
    assert f"reclaimed by queue owner for {reconcile.ref_of(mine)}" in told.message
    assert "queue default had borrowed that capacity beyond its guarantee" in told.message
    assert counted.evictions == [("a", "reclaimed", 1)]


async def test_an_eviction_another_writer_superseded_is_neither_told_nor_counted() -> None:
    """As in `test_a_preemptor_waits_when_its_victim_was_moved_before_its_eviction_landed`:
    the first eviction, decided on low's place on a, is dropped as fail-back moved low to
    b; the next cycle evicts it from b. One eviction happened, and only that one shows."""
    store, objs, _ = await _joined(cluster("a"), cluster("b"))
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    qa = queue("qa", capability={"cpu": "4"})
    await objs.put(objects.key_for(qa), qa)
    low = workload("low", kind="Deployment", cpu="4", queue="qa")
    high = workload("high", kind="Deployment", cpu="4", queue="qa", priority=10)
    await objs.put(objects.key_for(low), low)
    counted = Counted()
    loop = _Sampled(store, settings=SETTINGS, clock=clock.real, debounce=0.01, metrics=counted)
    loop.samples = []
    key = keys.binding_key(reconcile.ref_of(low))
    moved_to: list[str] = []

    async def fail_back() -> None:
        def move(current: Binding | None) -> Binding:
            assert current is not None
            (there,) = current.placement()
            moved_to.append("b" if there == "a" else "a")
            away = binding(low, {moved_to[0]: 1})
            return current.model_copy(update={"spec": away.spec})

        moved = await bindings.mutate(key, move)
        assert moved is not None
        await wait_for(
            lambda: loop.bindings.items[key].revision == moved.revision, message="the loop sees"
        )

    async with running(loop):
        await wait_for(lambda: _equal(_phases(store), {"low": "Scheduled"}), message="low runs")
        loop.meanwhile = fail_back
        await objs.put(objects.key_for(high), high)
        await wait_for(
            lambda: _equal(_phases(store), {"low": "Pending", "high": "Scheduled"}),
            message="high admitted once low is evicted from where it was moved",
        )
        told: list[Any] = await wait_for(lambda: events_of(store, low), message="low's event")
    assert moved_to, "the cycle picked low as a victim"
    assert [(e.reason, e.cluster) for e in told] == [("Preempted", moved_to[0])]
    assert counted.evictions == [(moved_to[0], "preempted", 1)]
