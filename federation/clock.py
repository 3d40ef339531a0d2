"""The only place fedctl reads the time or sleeps.

Every controller takes a `Clock`, so tests drive time with `FakeClock` instead of waiting,
and pure functions take `now` as an argument. A ruff banned-API rule keeps
`time.time`, `datetime.now` and `asyncio.sleep` out of every other module (STYLE.md §11):
a grace period measured on two different clocks is how failover timers slip.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import heapq
import itertools
import time
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock", "real"]


class Clock(Protocol):
    """Wall time for timestamps, monotonic time for durations, and a sleep that honours both."""

    def now(self) -> _dt.datetime:
        """Timezone-aware UTC wall time, for timestamps that people and etcd values carry."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards, for durations and deadlines."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep on this clock's time: a fake clock wakes sleepers when it is advanced."""
        ...


class RealClock:
    """The process's own clocks."""

    def now(self) -> _dt.datetime:
        return _dt.datetime.now(tz=_dt.UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


real = RealClock()


class FakeClock:
    """A clock that only moves when a test advances it; sleepers wake in deadline order."""

    def __init__(self, start: _dt.datetime | None = None) -> None:
        self._wall = start or _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
        self._mono = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> _dt.datetime:
        return self._wall + _dt.timedelta(seconds=self._mono)

    def monotonic(self) -> float:
        return self._mono

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._mono + seconds, next(self._seq), fut))
        await fut

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose deadline has passed, in order."""
        target = self._mono + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, fut = heapq.heappop(self._sleepers)
            self._mono = max(self._mono, deadline)
            if not fut.done():
                fut.set_result(None)
            # Let the woken coroutine run before time moves again.
            for _ in range(3):
                await asyncio.sleep(0)
        self._mono = target

    @property
    def sleepers(self) -> int:
        """How many coroutines are asleep on this clock (tests wait for a loop to park)."""
        return sum(1 for *_, fut in self._sleepers if not fut.done())
