"""A de-duplicating work queue of keys: watches and probes feed it, workers drain it.

Fed by the registry watch, the member watches and the probe loops of the monitor; feeds
its workers (STYLE.md §7). A key is queued at most once however often it is added, and a
key added while a worker holds it is queued again when the worker is done, so a change
that lands mid-convergence is never lost and no key is worked on by two workers at once.
Workers are level-based: they re-read current state, so many adds collapse into one pass.
(Small and generic; it can move to `federation.workqueue` when another controller needs it.)
"""

from __future__ import annotations

import asyncio

__all__ = ["WorkQueue"]


class WorkQueue:
    """Keys waiting for a worker; `get`, work, then `done`."""

    def __init__(self) -> None:
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._active: set[str] = set()
        self._again: set[str] = set()

    def add(self, key: str) -> None:
        if key in self._active:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.put_nowait(key)

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
        return len(self._queued)

    @property
    def pending(self) -> int:
        """Keys queued or being worked on: zero means every change so far is converged."""
        return len(self._queued | self._active | self._again)
