"""The propagator's de-duplicating work queue, with delayed re-adds for backoff.

Fed by the registry watches, the member status watches and the workers themselves (a key
that failed comes back after a backoff); feeds the workers (STYLE.md §7). A key is queued
at most once however often it is added; a key added while a worker holds it is queued
again when the worker is done, so a change landing mid-convergence is never lost and no
key is worked on by two workers at once. Same idea as `federation.monitor.workqueue`, plus
`add_after`, which the monitor does not need: controllers requeue with backoff, they never
sleep inside a worker (STYLE.md §10).
"""

from __future__ import annotations

import asyncio

from federation import clock as clock_mod

__all__ = ["WorkQueue"]


class WorkQueue:
    """Keys waiting for a worker; `get`, work, then `done`."""

    def __init__(self, clock: clock_mod.Clock = clock_mod.real) -> None:
        self._clock = clock
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._active: set[str] = set()
        self._again: set[str] = set()
        self._delayed: dict[str, asyncio.Task[None]] = {}

    def add(self, key: str) -> None:
        if key in self._active:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        """Add `key` after `delay` seconds (one pending re-add per key)."""
        if key in self._delayed:
            return

        async def later() -> None:
            try:
                await self._clock.sleep(delay)
            finally:
                self._delayed.pop(key, None)
            self.add(key)

        self._delayed[key] = asyncio.get_running_loop().create_task(later())

    async def get(self) -> str:
        key = await self._ready.get()
        self._queued.discard(key)
        self._active.add(key)
        return key

    def done(self, key: str) -> None:
        self._active.discard(key)
        if key in self._again:
            self._again.discard(key)
            self.add(key)

    def close(self) -> None:
        """Cancel pending delayed re-adds."""
        for task in list(self._delayed.values()):
            task.cancel()
        self._delayed.clear()

    @property
    def pending(self) -> int:
        """Keys queued or being worked on (delayed re-adds not counted)."""
        return len(self._queued | self._active | self._again)
