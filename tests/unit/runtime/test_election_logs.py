"""What the election logs, at the level a controller logs by default (WARNING): taking
the lead as well as losing it, and a keepalive's failure with its cause named."""

from __future__ import annotations

import asyncio
import logging

import pytest

from federation import errors
from federation.clock import FakeClock
from federation.registry.memory import MemoryStore
from federation.runtime import election as election_mod
from tests.waiting import stop, wait_for


class _Silent(MemoryStore):
    """A store whose keepalives fail with `failure` (an exception without text)."""

    failure: BaseException = TimeoutError()

    async def keepalive(self, lease_id: int) -> int:
        raise self.failure


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        pytest.param(
            TimeoutError(),
            "election: keepalive failed (no answer within 10.0s)",
            id="a timeout, whose text is empty, says how long it waited",
        ),
        pytest.param(
            errors.Unavailable(""),
            "election: keepalive failed (Unavailable); 10.0s left",
            id="an error without text is named by its type",
        ),
    ],
)
async def test_leading_and_a_failed_keepalive_are_logged_at_warning(
    caplog: pytest.LogCaptureFixture, failure: BaseException, said: str
) -> None:
    """At the default level the log said leadership was lost and never that it came
    back, and a timed-out keepalive read `keepalive failed ()`."""
    clock = FakeClock()
    store = _Silent(clock=clock)
    store.failure = failure
    election = election_mod.Election(store, ttl=15, identity="r0", key="/leader", clock=clock)
    caplog.set_level(logging.WARNING, logger=election_mod.__name__)
    task = asyncio.create_task(election.run())
    try:
        await wait_for(lambda: election.is_leader, message="r0 leads")
        await wait_for(lambda: clock.sleepers, message="the keepalive waits")
        await clock.advance(5)
        await wait_for(lambda: len(caplog.records) >= 2, message="a keepalive failed")
    finally:
        await stop([task])
        await store.close()
    (led, failed, *_) = caplog.records
    assert (led.levelno, led.getMessage()[:29]) == (
        logging.WARNING,
        "election: r0 leads (revision ",
    )
    assert (failed.levelno, failed.getMessage()) == (logging.WARNING, said)
