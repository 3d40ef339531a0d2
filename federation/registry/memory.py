"""An in-process Store for unit tests; it passes the same contract suite as etcd.

It keeps a revision counter, the full history since the last compaction (so watches can
start in the past) and lease deadlines on an injected clock. Leases expire lazily: every
operation first drops keys whose lease has run out, which is indistinguishable from etcd's
expiry to a caller that only observes through the Store.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from federation import clock as clock_mod
from federation import errors
from federation.registry import store as st

__all__ = ["MemoryStore"]

_MIN_TTL = 2


@dataclass(slots=True)
class _Entry:
    value: bytes
    mod_revision: int
    create_revision: int
    version: int
    lease: int


class MemoryStore:
    """Dictionary-backed Store with revisions, history, watches and leases."""

    def __init__(self, *, clock: clock_mod.Clock = clock_mod.real) -> None:
        self._clock = clock
        self._data: dict[str, _Entry] = {}
        self._revision = 1
        self._compacted = 0
        self._history: list[st.WatchEvent] = []
        self._leases: dict[int, tuple[int, float]] = {}
        self._next_lease = 1000
        self._changed = asyncio.Event()
        self._closed = False

    # reads

    async def get(self, key: str) -> st.KeyValue | None:
        await self._expire()
        entry = self._data.get(key)
        return None if entry is None else self._kv(key, entry)

    async def list(self, prefix: str) -> st.ListResult:
        await self._expire()
        items = [self._kv(k, e) for k, e in sorted(self._data.items()) if k.startswith(prefix)]
        return st.ListResult(items=items, revision=self._revision)

    async def count(self, prefix: str) -> int:
        await self._expire()
        return sum(1 for k in self._data if k.startswith(prefix))

    async def current_revision(self) -> int:
        await self._expire()
        return self._revision

    async def ping(self, *, timeout: float) -> None:
        await self._expire()

    async def check_history(self, revision: int) -> None:
        if revision <= self._compacted:
            raise errors.Compacted(requested=revision, compact_revision=self._compacted + 1)

    # writes

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        await self._expire()
        self._check(ops, guards)
        if all(isinstance(op, st.Check) for op in ops):  # nothing written: no new revision
            return st.CommitResult(revision=self._revision)
        self._revision += 1
        deleted: list[str] = []
        for op in ops:
            if isinstance(op, st.Check):
                continue
            if isinstance(op, st.Delete):
                if self._remove(op.key):
                    deleted.append(op.key)
            else:
                if op.lease and op.lease not in self._leases:
                    self._revision -= 1
                    raise errors.NotFound(f"lease {op.lease}")
                self._store(op.key, op.value, op.lease)
        await self._notify()
        return st.CommitResult(revision=self._revision, deleted=tuple(deleted))

    def _check(self, ops: Sequence[st.Op], guards: Sequence[st.Guard]) -> None:
        for guard in guards:
            entry = self._data.get(guard.key)
            if entry is None or entry.mod_revision != guard.revision:
                raise errors.Fenced(f"guard on {guard.key} no longer holds")
        for op in ops:
            entry = self._data.get(op.key)
            current = entry.mod_revision if entry else 0
            if isinstance(op, st.Check):
                if current != op.revision:
                    raise errors.Conflict(op.key, expected=op.revision, current=current)
                continue
            if isinstance(op, st.Create) and entry is not None:
                raise errors.AlreadyExists(op.key, revision=current)
            expected = op.revision if isinstance(op, st.Update | st.Delete) else None
            if expected is None:
                continue
            if entry is None:
                raise errors.NotFound(op.key)
            if current != expected:
                raise errors.Conflict(op.key, expected=expected, current=current)

    def _store(self, key: str, value: bytes, lease: int) -> None:
        entry = self._data.get(key)
        prev = None if entry is None else entry.value
        if entry is None:
            entry = _Entry(value, self._revision, self._revision, 1, lease)
            self._data[key] = entry
        else:
            entry.value, entry.mod_revision, entry.lease = value, self._revision, lease
            entry.version += 1
        self._history.append(
            st.WatchEvent("put", key, value, self._revision, entry.create_revision, prev)
        )

    def _remove(self, key: str) -> bool:
        entry = self._data.pop(key, None)
        if entry is None:
            return False
        self._history.append(
            st.WatchEvent("delete", key, b"", self._revision, 0, prev_value=entry.value)
        )
        return True

    async def _notify(self) -> None:
        # Wake every watcher, then arm a fresh event for the next change.
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # watch

    async def watch(self, prefix: str, *, start_revision: int) -> AsyncIterator[st.WatchEvent]:
        next_revision = start_revision
        while not self._closed:
            changed = self._changed  # taken first, so a write while we yield still wakes us
            await self._expire()
            if next_revision <= self._compacted:
                raise errors.Compacted(
                    requested=next_revision, compact_revision=self._compacted + 1
                )
            pending = [
                e
                for e in self._history
                if e.mod_revision >= next_revision and e.key.startswith(prefix)
            ]
            for event in pending:
                yield event
                next_revision = event.mod_revision + 1
            if self._revision >= next_revision and changed is not self._changed:
                continue
            next_revision = max(next_revision, self._revision + 1)
            await self._wait_changed(changed)

    async def _wait_changed(self, changed: asyncio.Event) -> None:
        # Leases expire on the clock, not on writes: wake up periodically to expire them.
        waiter = asyncio.ensure_future(changed.wait())
        tick = asyncio.ensure_future(self._clock.sleep(0.2 if self._leases else 3600))
        try:
            await asyncio.wait({waiter, tick}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiter, tick):
                task.cancel()

    # leases

    async def grant(self, ttl: int) -> st.Lease:
        await self._expire()
        ttl = max(ttl, _MIN_TTL)
        self._next_lease += 1
        self._leases[self._next_lease] = (ttl, self._clock.monotonic() + ttl)
        return st.Lease(id=self._next_lease, ttl=ttl)

    async def keepalive(self, lease_id: int) -> int:
        await self._expire()
        if lease_id not in self._leases:
            raise errors.NotFound(f"lease {lease_id}")
        ttl, _ = self._leases[lease_id]
        self._leases[lease_id] = (ttl, self._clock.monotonic() + ttl)
        return ttl

    async def revoke(self, lease_id: int) -> None:
        await self._expire()
        if self._leases.pop(lease_id, None) is None:
            raise errors.NotFound(f"lease {lease_id}")
        await self._drop_leased({lease_id})

    async def _expire(self) -> None:
        now = self._clock.monotonic()
        gone = {lid for lid, (_, deadline) in self._leases.items() if deadline <= now}
        for lid in gone:
            del self._leases[lid]
        if gone:
            await self._drop_leased(gone)

    async def _drop_leased(self, lease_ids: set[int]) -> None:
        keys = [k for k, e in self._data.items() if e.lease in lease_ids]
        if not keys:
            return
        self._revision += 1
        for key in keys:
            self._remove(key)
        await self._notify()

    async def compact(self, revision: int) -> None:
        if revision > self._revision:
            raise errors.Invalid(f"cannot compact to future revision {revision}")
        self._compacted = max(self._compacted, revision - 1)
        self._history = [e for e in self._history if e.mod_revision > self._compacted]

    async def close(self) -> None:
        self._closed = True
        await self._notify()

    @staticmethod
    def _kv(key: str, entry: _Entry) -> st.KeyValue:
        return st.KeyValue(
            key, entry.value, entry.mod_revision, entry.create_revision, entry.version, entry.lease
        )
