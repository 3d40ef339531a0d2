"""What a member's status watch logs while the member is down: once when it starts to
fail, once when it reads again, not a line per retry."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import pytest

from clusters import member
from federation import clock
from federation.propagation import status
from policies.models.cluster import Cluster
from tests.waiting import stop, wait_for

DOWN_FOR = 12
"""Failed reads before the member answers again."""


class _Down:
    """A member that refuses its first `DOWN_FOR` watches, then lists and waits."""

    def __init__(self) -> None:
        self.calls = 0

    async def follow(
        self, api_version: str, kind: str, *, namespace: str | None = None
    ) -> AsyncIterator[member.Relisted | member.Changed]:
        self.calls += 1
        if self.calls <= DOWN_FOR:
            raise member.MemberUnavailable("connection refused by https://c1:6443")
        yield member.Relisted([], "1")
        await asyncio.Event().wait()


class _Members:
    def __init__(self, conn: _Down) -> None:
        self.conn = conn

    def on_retire(self, hook: Any) -> None:
        pass

    async def get(self, cluster: Cluster) -> Any:
        return self.conn


async def test_a_down_member_s_watch_says_it_fails_once_and_once_that_it_answers_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A member down for a minute logged `connection refused` every few seconds for each
    kind watched there: most of the controller's log, for an outage the monitor reports."""
    fake = clock.FakeClock()
    down = _Down()
    tasks: list[asyncio.Task[None]] = []
    cluster = Cluster.model_validate({"metadata": {"name": "c1"}, "spec": {"region": "r"}})

    def spawn(coro: Coroutine[Any, Any, None], name: str) -> None:
        tasks.append(asyncio.create_task(coro, name=name))

    watches = status.StatusWatches(
        _Members(down),  # type: ignore[arg-type]
        cluster=lambda name: cluster,
        notify=lambda _: None,
        spawn=spawn,
        clock=fake,
    )
    caplog.set_level(logging.INFO, logger=status.__name__)
    try:
        watches.ensure("c1", "v1", "Namespace")

        async def listed() -> bool:
            await fake.advance(5)
            return watches.synced("c1", "v1", "Namespace")

        await wait_for(listed, message="the watch lists once the member answers")
    finally:
        await stop(tasks)
    assert down.calls == DOWN_FOR + 1
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert said == [
        "status watch v1 Namespace in c1: connection refused by https://c1:6443; retrying,"
        " quietly until it answers",
        f"status watch v1 Namespace in c1 answers again after {DOWN_FOR} failures",
    ]
