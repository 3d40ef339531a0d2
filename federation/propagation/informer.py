"""A registry prefix mirrored in memory: list once, then follow the watch.

Fed by the typed registry; feeds the propagator's workers (current objects by key) and,
through `on_change`, its work queue. Why a mirror: a worker converging one workload needs
its template, Binding, the Cluster, override policies and profiles; reading them from
memory keeps a pass to the member calls it really needs. A compaction `Resync` replaces
the whole mirror and reports every key that changed or vanished.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from pydantic import BaseModel

from federation.registry import codec

__all__ = ["Informer"]

M = TypeVar("M", bound=BaseModel)


class Informer(Generic[M]):
    """Objects under `prefix` by key; `on_change(key, old, new)` after every change."""

    def __init__(
        self,
        typed: codec.TypedStore[M],
        prefix: str,
        *,
        on_change: Callable[[str, M | None, M | None], None] | None = None,
    ) -> None:
        self.typed = typed
        self.prefix = prefix
        self.items: dict[str, codec.Stored[M]] = {}
        self._on_change = on_change
        self._revision = 0

    def get(self, key: str) -> M | None:
        stored = self.items.get(key)
        return stored.obj if stored else None

    async def load(self) -> int:
        """List the prefix; returns the revision to watch from."""
        listed = await self.typed.list(self.prefix)
        self.items = {item.key: item for item in listed.items}
        self._revision = listed.revision + 1
        return self._revision

    async def run(self) -> None:
        """Follow the watch forever (call `load` first)."""
        async for event in self.typed.watch(self.prefix, start_revision=self._revision):
            if isinstance(event, codec.Put):
                old = self.items.get(event.item.key)
                self.items[event.item.key] = event.item
                self._changed(event.item.key, old.obj if old else None, event.item.obj)
            elif isinstance(event, codec.Deleted):
                gone = self.items.pop(event.key, None)
                self._changed(event.key, gone.obj if gone else event.previous, None)
            else:
                before = self.items
                self.items = {item.key: item for item in event.items}
                for key in before.keys() | self.items.keys():
                    old_item, new_item = before.get(key), self.items.get(key)
                    if old_item is None or new_item is None or old_item.obj != new_item.obj:
                        self._changed(
                            key,
                            old_item.obj if old_item else None,
                            new_item.obj if new_item else None,
                        )

    def _changed(self, key: str, old: M | None, new: M | None) -> None:
        if self._on_change is not None:
            self._on_change(key, old, new)
