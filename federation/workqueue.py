"""The de-duplicating work queue every controller drains: watches feed it, workers converge.

Fed by registry watches, member watches, probe loops and the workers themselves (a key
that must be looked at again after a grace period or a backoff comes back through
`add_after`); feeds each controller's workers (STYLE.md §7). A key is queued at most once
however often it is added, and a key added while a worker holds it is queued again when
the worker is done, so a change landing mid-convergence is never lost and no key is worked
on by two workers at once. Workers are level-based: they re-read current state, so many
adds collapse into one pass. Delays run on the injected clock: controllers requeue, they
never sleep inside a worker (STYLE.md §10).
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
        self._timers: dict[str, tuple[float, asyncio.Task[None]]] = {}

    def add(self, key: str) -> None:
        if key in self._active:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.put_nowait(key)

    def add_after(self, key: str, seconds: float) -> None:
        """Queue `key` again in `seconds` (the earliest of several requests wins)."""
        due = self._clock.monotonic() + max(0.0, seconds)
        current = self._timers.get(key)
        if current is not None and current[0] <= due and not current[1].done():
            return
        if current is not None:
            current[1].cancel()
        self._timers[key] = (due, asyncio.ensure_future(self._later(key, seconds)))

    async def _later(self, key: str, seconds: float) -> None:
        await self._clock.sleep(seconds)
        self._timers.pop(key, None)
        self.add(key)

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

    def __len__(self) -> int:
        """Keys queued and not yet taken by a worker."""
        return len(self._queued)

    @property
    def pending(self) -> int:
        """Keys queued or being worked on (timers not counted): zero means converged."""
        return len(self._queued | self._active | self._again)

    def close(self) -> None:
        """Cancel pending delayed adds."""
        for _, task in self._timers.values():
            task.cancel()
        self._timers.clear()
