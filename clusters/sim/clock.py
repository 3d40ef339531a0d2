"""The simulator's only source of time: a scaled real clock and a manual clock for tests.

Every simulated cluster reads time through a `Clock` so that pod start-up delays, Job
durations, node heartbeats and toleration windows all run on one timeline. `SimClock`
scales real time by a speed factor (`fedctl sim up --speed 60` makes a 300 s toleration
window last 5 real seconds); `ManualClock` only moves when a test advances it, so
behaviour tests are deterministic. The simulator stands alone, so this module does not
reuse the controller's clock even though the shape is the same.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import heapq
import itertools
import re
import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SimClock", "parse_duration"]

_EPOCH = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | float | int) -> float:
    """Seconds in a Go-style duration (`30s`, `1m30s`, `500ms`) or a bare number of seconds.

    Annotations such as `sim.fedctl.io/duration` and `fedctl sim fault --for` use it.
    """
    if isinstance(text, int | float):
        return float(text)
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r}: use e.g. 30s, 2m, 1h30m, 500ms")
    return sum(float(n) * _UNITS[u] for n, u in parts)


class Clock(Protocol):
    """Simulated wall time, simulated monotonic seconds, and a sleep measured on them."""

    def now(self) -> _dt.datetime:
        """Timezone-aware UTC simulated wall time, for timestamps on API objects."""
        ...

    def monotonic(self) -> float:
        """Simulated seconds that never go backwards, for delays and deadlines."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep for simulated seconds."""
        ...


class SimClock:
    """Real time scaled by `speed`: one real second is `speed` simulated seconds."""

    def __init__(self, *, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError(f"clock speed must be positive, got {speed}")
        self.speed = speed
        self._real0 = time.monotonic()
        self._wall0 = _dt.datetime.now(tz=_dt.UTC)

    def now(self) -> _dt.datetime:
        return self._wall0 + _dt.timedelta(seconds=self.monotonic())

    def monotonic(self) -> float:
        return (time.monotonic() - self._real0) * self.speed

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self.speed)


class ManualClock:
    """A clock that moves only on `advance`; sleepers wake in deadline order."""

    def __init__(self, start: _dt.datetime | None = None) -> None:
        self._wall = start or _EPOCH
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
            # Let the woken coroutine (and what it schedules) run before time moves again.
            for _ in range(5):
                await asyncio.sleep(0)
        self._mono = target
        for _ in range(5):
            await asyncio.sleep(0)

    @property
    def sleepers(self) -> int:
        """How many coroutines are asleep on this clock."""
        return sum(1 for *_, fut in self._sleepers if not fut.done())
