"""A registry prefix mirrored in memory, and a de-duplicating queue with delayed adds.

Fed by the typed registry (list, then watch); feeds the failover controller's workers with
current objects by key and, through `on_change`, its queue (STYLE.md §7: watches only feed
queues). The delayed add is how a worker asks to look at a key again when a grace period,
a tolerationSeconds or a graceful timeout will have run out, instead of sleeping.

(The monitor and the propagator carry the same two small pieces; they can move down to a
shared layer once that exists, since controllers must not import each other.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

from pydantic import BaseModel

from federation import clock as clock_mod
from federation.registry import codec

__all__ = ["Mirror", "Queue"]

M = TypeVar("M", bound=BaseModel)


class Mirror(Generic[M]):
    """Objects under `prefix` by key; `on_change(key)` after every change."""

    def __init__(
        self, typed: codec.TypedStore[M], prefix: str, *, on_change: Callable[[str], None]
    ) -> None:
        self.typed = typed
        self.prefix = prefix
        self.items: dict[str, codec.Stored[M]] = {}
        self._on_change = on_change
        self._revision = 0

    def get(self, key: str) -> M | None:
        stored = self.items.get(key)
        return stored.obj if stored else None

    async def load(self) -> None:
        listed = await self.typed.list(self.prefix)
        self.items = {item.key: item for item in listed.items}
        self._revision = listed.revision + 1
        for key in self.items:
            self._on_change(key)

    async def run(self) -> None:
        """Follow the watch (call `load` first)."""
        async for event in self.typed.watch(self.prefix, start_revision=self._revision):
            if isinstance(event, codec.Put):
                self.items[event.item.key] = event.item
                self._on_change(event.item.key)
            elif isinstance(event, codec.Deleted):
                self.items.pop(event.key, None)
                self._on_change(event.key)
            else:
                before = set(self.items)
                self.items = {item.key: item for item in event.items}
                for key in before | set(self.items):
                    self._on_change(key)


class Queue:
    """Keys waiting for a worker; a key is queued once and never held by two workers."""

    def __init__(self, clock: clock_mod.Clock) -> None:
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

    @property
    def pending(self) -> int:
        """Keys queued or being worked on (timers not counted)."""
        return len(self._queued | self._active | self._again)

    def close(self) -> None:
        for _, task in self._timers.values():
            task.cancel()
        self._timers.clear()
