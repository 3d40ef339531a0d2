"""A loop that does not end when its leadership does is said at ERROR, and does not keep
the loop from running again at the next lead.

`while_leader` waited without limit for a cancelled loop to end: a cluster monitor that
swallowed its cancellation was never run again, and every member stayed `NotProbed`
with nothing in the log."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from federation.clock import FakeClock
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.runtime import election as election_mod
from tests.waiting import stop, wait_for


async def test_a_loop_that_outlives_its_cancellation_is_said_and_run_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    election = election_mod.Election(store, ttl=15, identity="r0", key="/leader", clock=clock)
    runs: list[int] = []
    release = asyncio.Event()

    async def stubborn() -> None:
        """Swallows its first cancellation, as a worker awaiting a child under
        suppress(CancelledError) did, then waits on."""
        runs.append(len(runs))
        if len(runs) > 1:
            await asyncio.Event().wait()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
        await release.wait()

    caplog.set_level(logging.ERROR, logger=election_mod.__name__)
    electing = asyncio.create_task(election.run())
    looping = asyncio.create_task(election.while_leader("cluster-monitor", stubborn))
    try:
        await wait_for(lambda: runs == [0], message="the loop runs while r0 leads")
        await store.commit([st.Delete("/leader")])  # leadership lost: the loop is cancelled
        await wait_for(lambda: election.terms == 2, message="r0 leads again")
        assert runs == [0], "the old run has not ended: not started beside it yet"
        await clock.advance(15)
        await wait_for(lambda: runs == [0, 1], message="run again at the next lead")
    finally:
        release.set()
        await stop([looping, electing])
        await store.close()
    (said,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert said.getMessage().startswith(
        "cluster-monitor did not stop within 15s of being cancelled (at stubborn:"
    ), said.getMessage()
