"""The typed registry: pydantic models stored as versioned JSON on top of a byte Store.

Each value is `{"schemaVersion": N, "object": {...}}`. The version lets a later fedctl
migrate old values on read instead of failing on them; the fast path for the current
version hands the inner JSON straight to pydantic's Rust parser, which keeps the typed
layer within a few percent of raw etcd (bench/registry.py measures it).

A value that fails to decode (a hand edit, a bug in an old release) is reported with its
key and skipped by `list` and `watch`; it never stops the process, and `get` raises
`errors.Invalid` naming the key. Values are decoded with `rules.STORED`, so a spelling rule
added after an object was stored (a label key Kubernetes refuses) does not make it
unreadable: it stays listed, and can be read to be mended. A watch that hits a compacted
revision re-lists and emits one `Resync` with the full current state, so a consumer never
silently misses a change.
Writes that lose a compare-and-swap can be retried after a re-read with `mutate`.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from federation import errors, gcpause
from federation.registry import store as st
from policies.models.rules import STORED

__all__ = [
    "Codec",
    "Deleted",
    "Echoes",
    "Put",
    "Resync",
    "Skipped",
    "Stored",
    "TypedList",
    "TypedStore",
]

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
Migration = Callable[[dict[str, object]], dict[str, object]]


@dataclass(frozen=True, slots=True)
class Stored(Generic[M]):
    """A decoded object with the revisions it was stored at."""

    key: str
    obj: M
    revision: int
    create_revision: int = 0


@dataclass(frozen=True, slots=True)
class Skipped:
    """A value that could not be decoded: where, and why."""

    key: str
    error: str

    def __str__(self) -> str:
        return f"{self.key}: {self.error}"


@dataclass(frozen=True, slots=True)
class TypedList(Generic[M]):
    items: list[Stored[M]]
    revision: int
    skipped: list[Skipped] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Put(Generic[M]):
    """An object was created or changed."""

    item: Stored[M]


@dataclass(frozen=True, slots=True)
class Deleted(Generic[M]):
    """An object was deleted; `previous` is its last value when etcd still had it."""

    key: str
    revision: int
    previous: M | None = None


@dataclass(frozen=True, slots=True)
class Resync(Generic[M]):
    """History was compacted: this is the whole current state; replace what you had."""

    items: list[Stored[M]]
    revision: int


TypedEvent = Put[M] | Deleted[M] | Resync[M]


class Codec(Generic[M]):
    """Encodes one model type; `migrations[n]` upgrades a version-n object to n + 1."""

    def __init__(
        self, model: type[M], *, version: int = 1, migrations: Mapping[int, Migration] = {}
    ) -> None:
        self.model = model
        self.version = version
        self._migrations = dict(migrations)
        self._prefix = b'{"schemaVersion":%d,"object":' % version

    def encode(self, obj: M) -> bytes:
        return self._prefix + obj.model_dump_json(by_alias=True, exclude_none=True).encode() + b"}"

    def decode(self, key: str, data: bytes) -> M:
        """The model in `data`; `errors.Invalid` names `key` and the first problem."""
        try:
            if data.startswith(self._prefix) and data.endswith(b"}"):
                return self.model.model_validate_json(data[len(self._prefix) : -1], context=STORED)
            return self._decode_slow(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise errors.Invalid(
                f"{key}: stored {self.model.__name__} is invalid at {where}: {first['msg']}"
            ) from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise errors.Invalid(f"{key}: stored value is not a fedctl document: {exc}") from exc

    def _decode_slow(self, data: bytes) -> M:
        doc = json.loads(data)
        if not isinstance(doc, dict) or "object" not in doc:
            raise ValueError("missing schemaVersion/object envelope")
        version = int(doc.get("schemaVersion", 0))
        obj = doc["object"]
        if version > self.version:
            raise ValueError(f"schemaVersion {version} is newer than this fedctl ({self.version})")
        while version < self.version:
            if version not in self._migrations:
                raise ValueError(f"no migration from schemaVersion {version}")
            obj = self._migrations[version](obj)
            version += 1
        return self.model.model_validate(obj, context=STORED)


class Echoes(Generic[M]):
    """Objects this process is writing, by key with their encoded bytes, so that a watch of
    the same keys in this process takes each back instead of decoding its own write.

    Why: the scheduler writes thousands of Bindings per cycle and watches them too; each
    came back through the watch and was validated again, which cost more than writing it.
    An entry is taken only when the watched bytes are exactly those written, so another
    writer's change is always decoded. Bounded: entries the watch never delivers (a failed
    write is forgotten, but a watch restart may skip some) are dropped past `limit`.
    """

    def __init__(self, limit: int = 100_000) -> None:
        self._items: dict[str, tuple[bytes, M]] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._items)

    def wrote(self, key: str, value: bytes, obj: M) -> None:
        if len(self._items) >= self._limit:
            self._items.clear()
        self._items[key] = (value, obj)

    def forget(self, key: str) -> None:
        self._items.pop(key, None)

    def take(self, key: str, value: bytes) -> M | None:
        """The object written at `key` if `value` is exactly what was written, else None."""
        hit = self._items.pop(key, None)
        return hit[1] if hit is not None and hit[0] == value else None


_RANGE_AT = 64
"""Keys of one parent from which `get_many` reads the parent's range instead."""


class TypedStore(Generic[M]):
    """A Store seen through one Codec (and, for a watch, the `Echoes` of this process's
    own writes, when given)."""

    def __init__(
        self, store: st.Store, codec: Codec[M], *, echoes: Echoes[M] | None = None
    ) -> None:
        self.store = store
        self.codec = codec
        self.echoes = echoes

    def _stored(self, kv: st.KeyValue) -> Stored[M]:
        obj = self.codec.decode(kv.key, kv.value)
        return Stored(kv.key, obj, kv.mod_revision, kv.create_revision)

    async def get(self, key: str) -> Stored[M] | None:
        kv = await self.store.get(key)
        return None if kv is None else self._stored(kv)

    async def list(self, prefix: str) -> TypedList[M]:
        return self.decoded(await self.store.list(prefix))

    async def get_many(
        self, keys: builtins.list[str], *, concurrency: int = 16
    ) -> dict[str, Stored[M] | None]:
        """Each key's stored object (None: absent), read at once.

        Why not one get each: an apply of 10,000 Jobs of one namespace read them with
        10,000 requests, a third of its time. Keys sharing a parent with many others are
        read with one paged range of that parent, when it holds not much more than they
        are (a namespace may keep 100,000 finished Jobs: counted first, without values).
        """
        found: dict[str, Stored[M] | None] = dict.fromkeys(keys)
        groups: dict[str, builtins.list[str]] = {}
        for key in keys:
            groups.setdefault(key.rpartition("/")[0] + "/", []).append(key)
        singles: builtins.list[str] = []
        for parent, members in groups.items():
            if len(members) < _RANGE_AT or await self.store.count(parent) > 4 * len(members):
                singles.extend(members)
                continue
            wanted = set(members)
            for kv in (await self.store.list(parent)).items:
                if kv.key in wanted:
                    found[kv.key] = self._stored(kv)
        slots = asyncio.Semaphore(concurrency)

        async def one(key: str) -> None:
            async with slots:
                found[key] = await self.get(key)

        await asyncio.gather(*(one(k) for k in singles))
        return found

    def decoded(self, raw: st.ListResult) -> TypedList[M]:
        """A raw list decoded: for a reader that lists on the event loop and decodes in a
        thread (seconds at tens of thousands of objects, when the loop serves nothing else)."""
        items, skipped = self._decode_all(raw.items)
        return TypedList(items, raw.revision, skipped)

    def _decode_all(
        self, kvs: builtins.list[st.KeyValue]
    ) -> tuple[builtins.list[Stored[M]], builtins.list[Skipped]]:
        items: builtins.list[Stored[M]] = []
        skipped: builtins.list[Skipped] = []
        with gcpause.paused():
            for kv in kvs:
                try:
                    items.append(self._stored(kv))
                except errors.Invalid as exc:
                    log.warning("skipping undecodable registry value: %s", exc)
                    skipped.append(Skipped(kv.key, str(exc)))
        return items, skipped

    # writes

    def create_op(self, key: str, obj: M, *, lease: int = 0) -> st.Create:
        return st.Create(key, self.codec.encode(obj), lease)

    def update_op(self, key: str, obj: M, *, revision: int) -> st.Update:
        return st.Update(key, self.codec.encode(obj), revision)

    def put_op(self, key: str, obj: M, *, lease: int = 0) -> st.Put:
        return st.Put(key, self.codec.encode(obj), lease)

    async def create(
        self, key: str, obj: M, *, lease: int = 0, guards: tuple[st.Guard, ...] = ()
    ) -> Stored[M]:
        result = await self.store.commit([self.create_op(key, obj, lease=lease)], guards=guards)
        return Stored(key, obj, result.revision, result.revision)

    async def update(
        self, key: str, obj: M, *, revision: int, guards: tuple[st.Guard, ...] = ()
    ) -> Stored[M]:
        result = await self.store.commit(
            [self.update_op(key, obj, revision=revision)], guards=guards
        )
        return Stored(key, obj, result.revision)

    async def put(
        self, key: str, obj: M, *, lease: int = 0, guards: tuple[st.Guard, ...] = ()
    ) -> Stored[M]:
        result = await self.store.commit([self.put_op(key, obj, lease=lease)], guards=guards)
        return Stored(key, obj, result.revision)

    async def delete(
        self, key: str, *, revision: int | None = None, guards: tuple[st.Guard, ...] = ()
    ) -> bool:
        result = await self.store.commit([st.Delete(key, revision)], guards=guards)
        return key in result.deleted

    async def mutate(
        self,
        key: str,
        change: Callable[[M | None], M | None],
        *,
        attempts: int = 10,
        guards: tuple[st.Guard, ...] = (),
    ) -> Stored[M] | None:
        """Read, apply `change`, compare-and-swap; on a lost race re-read and re-apply.

        `change` gets the current object (None when absent) and returns the new one, or
        None to delete it. Returns what was written (None after a delete or no-op).
        """
        for _ in range(attempts):
            current = await self.get(key)
            new = change(current.obj if current else None)
            try:
                if new is None:
                    if current is not None:
                        await self.delete(key, revision=current.revision, guards=guards)
                    return None
                if current is None:
                    return await self.create(key, new, guards=guards)
                if new == current.obj:
                    return current
                return await self.update(key, new, revision=current.revision, guards=guards)
            except (errors.Conflict, errors.AlreadyExists, errors.NotFound):
                continue
        raise errors.Conflict(key, expected=-1, current=-1)

    # watch

    async def watch(self, prefix: str, *, start_revision: int) -> AsyncIterator[TypedEvent[M]]:
        """Typed changes under `prefix`; compaction becomes a `Resync`, never a gap."""
        revision = start_revision
        while True:
            try:
                async for event in self.store.watch(prefix, start_revision=revision):
                    revision = event.mod_revision + 1
                    typed = self._typed(event)
                    if typed is not None:
                        yield typed
                return
            except errors.Compacted as exc:
                log.warning("watch on %s: %s", prefix, exc)
                current = await self.list(prefix)
                yield Resync(current.items, current.revision)
                revision = current.revision + 1

    def _typed(self, event: st.WatchEvent) -> TypedEvent[M] | None:
        if event.type == "delete":
            previous = None
            if event.prev_value:
                try:
                    previous = self.codec.decode(event.key, event.prev_value)
                except errors.Invalid:
                    previous = None
            return Deleted(event.key, event.mod_revision, previous)
        obj = self.echoes.take(event.key, event.value) if self.echoes is not None else None
        if obj is None:
            try:
                obj = self.codec.decode(event.key, event.value)
            except errors.Invalid as exc:
                log.warning("skipping undecodable registry value: %s", exc)
                return None
        return Put(Stored(event.key, obj, event.mod_revision, event.create_revision))
