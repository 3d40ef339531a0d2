"""Watch streams: the per-client queue between the store's commits and one HTTP watch.

The store offers every committed change to the open watches of that resource type; a
`Watch` filters by namespace and selectors (turning a MODIFIED that leaves or enters the
selection into DELETED or ADDED, as the apiserver's cacher does), queues the result and
hands it to the server's streaming handler or to an in-process consumer. Events carry the
stored object's cached JSON so a fan-out to many watchers serialises each object once.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clusters.sim.selectors import Selector

if TYPE_CHECKING:
    from clusters.sim.resources import ResourceType

__all__ = ["Entry", "EventLog", "Watch", "WatchEvent", "expired_status"]


class Entry:
    """A committed object: never mutated after commit, its JSON computed at most once."""

    __slots__ = ("_raw", "obj")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self._raw: bytes | None = None

    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = json.dumps(self.obj, separators=(",", ":")).encode()
        return self._raw


@dataclass
class WatchEvent:
    """One line of a watch stream."""

    type: str
    obj: dict[str, Any]
    entry: Entry | None = field(default=None, repr=False)

    def line(self) -> bytes:
        raw = self.entry.raw() if self.entry is not None else json.dumps(self.obj).encode()
        return b'{"type":"' + self.type.encode() + b'","object":' + raw + b"}\n"


def expired_status(requested: int, oldest: int) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: {requested} ({oldest})",
        "reason": "Expired",
        "code": 410,
    }


class Watch:
    """An async iterator of `(event_type, obj)`; `close()` ends it after what is queued.

    Objects handed out are the store's committed dicts: read them, copy before changing.
    """

    def __init__(
        self,
        *,
        rt: ResourceType,
        namespace: str | None,
        labels: Selector,
        fields: Selector,
        current_rv: Callable[[], int],
        on_close: Callable[[Watch], None],
    ) -> None:
        self.rt = rt
        self.namespace = namespace
        self._labels = labels
        self._fields = fields
        self._current_rv = current_rv
        self._on_close = on_close
        self._queue: deque[WatchEvent] = deque()
        self._wake = asyncio.Event()
        self._closed = False
        self.last_rv = 0

    # -- producer side (called synchronously by the store) --------------------------------

    def _matches(self, obj: dict[str, Any]) -> bool:
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return False
        return self._labels.matches(obj) and self._fields.matches(obj)

    def offer(self, etype: str, entry: Entry, old: dict[str, Any] | None, *, rv: int) -> None:
        """Queue a committed change if this watch selects it."""
        if self._closed:
            return
        now = self._matches(entry.obj)
        if etype == "MODIFIED" and old is not None and (self._labels or self._fields):
            before = self._matches(old)
            if now and not before:
                etype = "ADDED"
            elif before and not now:
                etype, now = "DELETED", True
        if now:
            self.push(WatchEvent(etype, entry.obj, entry), rv=rv)

    def push(self, event: WatchEvent, *, rv: int | None = None) -> None:
        if self._closed:
            return
        if rv is not None:
            self.last_rv = rv
        self._queue.append(event)
        self._wake.set()

    def bookmark(self, *, annotations: dict[str, str] | None = None) -> None:
        """Queue a BOOKMARK at the store's current resourceVersion."""
        rv = self._current_rv()
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if annotations:
            meta["annotations"] = annotations
        obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}
        self.push(WatchEvent("BOOKMARK", obj), rv=rv)

    def expire(self, *, oldest: int) -> None:
        """Queue a 410 ERROR and end the stream (history was compacted under it)."""
        self.push(WatchEvent("ERROR", expired_status(self.last_rv, oldest)))
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._wake.set()
            self._on_close(self)

    @property
    def closed(self) -> bool:
        return self._closed

    # -- consumer side --------------------------------------------------------------------

    async def next_event(self) -> WatchEvent | None:
        """The next queued event, or None once closed and drained."""
        while not self._queue:
            if self._closed:
                return None
            self._wake.clear()
            await self._wake.wait()
        return self._queue.popleft()

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> tuple[str, dict[str, Any]]:
        event = await self.next_event()
        if event is None:
            raise StopAsyncIteration
        return event.type, event.obj


History = tuple[int, "ResourceType", str, Entry, dict[str, Any] | None]


class EventLog:
    """The bounded event history of one store and its open watches.

    The floor is the oldest resourceVersion a watch may resume from: events after it are
    still held. Dropping history (ring overflow or `compact`) raises the floor.
    """

    def __init__(self, *, history_limit: int, current_rv: Callable[[], int]) -> None:
        self._history: deque[History] = deque(maxlen=history_limit)
        self._floor = 0
        self._current_rv = current_rv
        self._watchers: dict[ResourceType, set[Watch]] = {}

    @property
    def floor(self) -> int:
        return self._floor

    def watching(self, rt: ResourceType) -> int:
        """How many watches are open on `rt`."""
        return len(self._watchers.get(rt, ()))

    def publish(
        self, rt: ResourceType, etype: str, entry: Entry, old: dict[str, Any] | None, *, rv: int
    ) -> None:
        if len(self._history) == self._history.maxlen and self._history:
            self._floor = max(self._floor, self._history[0][0])
        self._history.append((rv, rt, etype, entry, old))
        for watch in tuple(self._watchers.get(rt, ())):
            watch.offer(etype, entry, old, rv=rv)

    def open(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        since: int,
        labels: Selector,
        fields: Selector,
        current: Iterable[Entry] = (),
        initial_events_end: bool = False,
    ) -> Watch:
        """A watch of changes after `since`; `since == 0` first replays `current` as ADDED."""
        watchers = self._watchers.setdefault(rt, set())
        watch = Watch(
            rt=rt,
            namespace=namespace,
            labels=labels,
            fields=fields,
            current_rv=self._current_rv,
            on_close=watchers.discard,
        )
        if since == 0:
            for entry in current:
                watch.push(WatchEvent("ADDED", entry.obj, entry))
            watch.last_rv = self._current_rv()
            if initial_events_end:
                watch.bookmark(annotations={"k8s.io/initial-events-end": "true"})
        else:
            watch.last_rv = since
            for rv, hrt, etype, entry, old in self._history:
                if rv > since and hrt is rt:
                    watch.offer(etype, entry, old, rv=rv)
        watchers.add(watch)
        return watch

    def compact(self) -> None:
        self._history.clear()
        self._floor = self._current_rv()
        for watchers in self._watchers.values():
            for watch in tuple(watchers):
                watch.expire(oldest=self._floor)

    def close_all(self) -> None:
        for watchers in self._watchers.values():
            for watch in tuple(watchers):
                watch.close()
