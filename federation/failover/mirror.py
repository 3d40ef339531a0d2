"""A registry prefix mirrored in memory, feeding the failover controller's work queue.

Fed by the typed registry (list, then watch); feeds the failover controller's workers with
current objects by key and, through `on_change`, its queue (STYLE.md §7: watches only feed
queues; the queue is `federation.workqueue`, whose delayed add is how a worker asks to look
at a key again when a grace period, a tolerationSeconds or a graceful timeout will have run
out, instead of sleeping).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from pydantic import BaseModel

from federation.registry import codec

__all__ = ["Mirror"]

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
