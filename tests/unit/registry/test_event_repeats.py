"""An event that happens again is counted on the one recorded (events.Again), as a
Kubernetes event's count and lastTimestamp: by the recorder that wrote it, by another
(a new leader), and never on one the registry has forgotten."""

from __future__ import annotations

import datetime as dt

from federation.clock import FakeClock
from federation.registry import codec, events, keys
from federation.registry.memory import MemoryStore
from policies.models.work import Event

REF = keys.WorkloadRef("web", "Deployment.apps", "shop")
TTL = 3600


def _failed(clock: FakeClock) -> events.Told:
    return lambda: Event(
        type="Warning",
        reason="ApplyFailed",
        message="eu rejected the object: imagePullPolicy: Unsupported value",
        cluster="eu",
        object=str(REF),
        time=clock.now(),
    )


async def _record(store: MemoryStore, recorder: events.Recorder, told: events.Told) -> None:
    await store.commit(await recorder.ops(REF, [told]))


async def _stored(store: MemoryStore) -> list[Event]:
    listed = await codec.TypedStore(store, events.EVENTS).list(events.event_prefix(REF))
    return [e.obj for e in listed.items]


async def test_a_repeat_counts_on_the_recorded_event_until_the_registry_forgets_it() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    recorder = events.Recorder(store, clock=clock, ttl=TTL)
    first = clock.now()
    await _record(store, recorder, _failed(clock))
    await clock.advance(20)
    await _record(store, recorder, events.Again(_failed(clock)))
    await clock.advance(20)
    await _record(store, recorder, events.Again(_failed(clock)))
    (counted,) = await _stored(store)
    assert (counted.count, counted.time, counted.last_time) == (
        3,
        first,
        first + dt.timedelta(seconds=40),
    )

    successor = events.Recorder(store, clock=clock, ttl=TTL)  # a new leader's
    await clock.advance(20)
    await _record(store, successor, events.Again(_failed(clock)))
    (counted,) = await _stored(store)
    assert (counted.count, counted.time) == (4, first), "found among the stored events"

    await clock.advance(TTL + 1)  # renewed at each repeat, then forgotten an hour after
    assert await _stored(store) == []
    await _record(store, successor, events.Again(_failed(clock)))
    (fresh,) = await _stored(store)
    assert (fresh.count, fresh.time, fresh.last_time) == (1, clock.now(), None)
    await store.close()


async def test_a_repeat_in_the_same_pass_is_one_write() -> None:
    """etcd refuses a transaction that names a key twice: the pass would fail for good."""
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    recorder = events.Recorder(store, clock=clock, ttl=TTL)
    await _record(store, recorder, _failed(clock))
    ops = await recorder.ops(REF, [events.Again(_failed(clock)), events.Again(_failed(clock))])
    assert len(ops) == 1
    await store.commit(ops)
    (counted,) = await _stored(store)
    assert counted.count == 3
    await store.close()
