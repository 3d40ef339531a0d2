"""The controllers' work queue: de-duplication, re-queue after work, delayed re-adds."""

from __future__ import annotations

from federation import clock
from federation.workqueue import WorkQueue
from tests.waiting import wait_for


async def test_a_key_added_while_worked_on_comes_back_once_when_done() -> None:
    queue = WorkQueue()
    queue.add("w|a")
    queue.add("w|a")
    assert queue.pending == 1
    key = await queue.get()
    queue.add(key)
    queue.add(key)
    queue.done(key)
    assert queue.pending == 1
    assert await queue.get() == "w|a"


async def test_a_burst_of_delayed_adds_becomes_one_add_after_the_delay() -> None:
    fake = clock.FakeClock()
    queue = WorkQueue(fake)
    queue.add_after("w|a", 0.2)
    queue.add_after("w|a", 0.2)
    await wait_for(lambda: fake.sleepers == 1, message="one delayed re-add parked")
    assert queue.pending == 0
    await fake.advance(0.2)
    await wait_for(lambda: queue.pending == 1, message="the key queued after the delay")
    assert await queue.get() == "w|a"
    queue.close()
