"""The byte-level registry contract that both the etcd and the in-memory store honour.

Every write is a transaction of operations with optional guards: `Create` fails if the key
exists, `Update` and a revisioned `Delete` are compare-and-swaps on the key's mod revision,
and a `Guard` makes the whole transaction depend on another key's revision (leader fencing).
All or nothing: a transaction that loses writes nothing and raises the error of the first
operation that failed its comparison (`AlreadyExists`, `Conflict`, `NotFound`) or `Fenced`.

Watches are level-resumable: a watch from revision R delivers every change with
mod revision >= R exactly once, in revision order, across reconnects; asking for history
that was compacted raises `errors.Compacted` so the caller re-lists.

    Store
    ├── get / list            reads, with the revision they were read at
    ├── commit(ops, guards)   the one write path; create/update/put/delete are shorthands
    ├── watch(prefix, start)  async iterator of WatchEvent
    └── grant / keepalive / revoke   leases: keys written with a lease vanish when it expires
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

_T = TypeVar("_T")

__all__ = [
    "TXN_BYTES",
    "WATCH_RECONNECTING",
    "Check",
    "CommitResult",
    "Create",
    "Delete",
    "Guard",
    "KeyValue",
    "Lease",
    "ListResult",
    "Op",
    "Put",
    "Store",
    "Update",
    "WatchEvent",
    "batches",
    "create",
    "delete",
    "prefix_end",
    "put",
    "update",
]


@dataclass(frozen=True, slots=True)
class KeyValue:
    """A stored value and the revisions etcd keeps for it."""

    key: str
    value: bytes
    mod_revision: int
    create_revision: int
    version: int
    lease: int = 0


@dataclass(frozen=True, slots=True)
class ListResult:
    """A consistent read of a prefix at `revision`: watch from `revision + 1` to follow it."""

    items: list[KeyValue]
    revision: int


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change, with the previous value when the store still has it (a delete's
    object; what a put replaced, by which a filtered watch tells an object that stopped
    matching from one that never did)."""

    type: Literal["put", "delete"]
    key: str
    value: bytes
    mod_revision: int
    create_revision: int = 0
    prev_value: bytes | None = None


@dataclass(frozen=True, slots=True)
class Lease:
    """A granted lease; `ttl` is what the server granted, which may exceed what was asked."""

    id: int
    ttl: int


@dataclass(frozen=True, slots=True)
class Create:
    """Write `value` only if `key` does not exist."""

    key: str
    value: bytes
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Update:
    """Write `value` only if `key`'s mod revision is still `revision`."""

    key: str
    value: bytes
    revision: int
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Put:
    """Write unconditionally: only for keys with a single writer (events, leases, status)."""

    key: str
    value: bytes
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete `key`; with `revision`, only if its mod revision is still that."""

    key: str
    revision: int | None = None


@dataclass(frozen=True, slots=True)
class Check:
    """Write nothing; the transaction holds only if `key`'s mod revision is still
    `revision` (0: the key does not exist). A failed check is a `Conflict` on `key`, as a
    lost compare-and-swap is: the writer decided on a stale reading of another key (a
    finished job's status) and should read again, not give up its leadership."""

    key: str
    revision: int


@dataclass(frozen=True, slots=True)
class Guard:
    """Make a transaction depend on `key` having mod revision `revision` (leader fencing)."""

    key: str
    revision: int


Op = Create | Update | Put | Delete | Check

WATCH_RECONNECTING = "; reconnecting in"
"""In every log line of a lost watch: an etcd restart loses every watch of every component
at once, each logging each backoff (some 125 lines a restart), so a log handler folds
them by this mark."""


@dataclass(frozen=True, slots=True)
class CommitResult:
    """The revision a transaction was written at; deleted keys that existed are listed."""

    revision: int
    deleted: tuple[str, ...] = field(default=())


class Store(Protocol):
    """What the registry needs from a key-value store."""

    async def get(self, key: str) -> KeyValue | None:
        """The current value of `key`, or None."""
        ...

    async def list(self, prefix: str) -> ListResult:
        """Every key under `prefix`, in key order, read at one revision."""
        ...

    async def count(self, prefix: str) -> int:
        """How many keys are under `prefix`, without reading their values."""
        ...

    async def commit(self, ops: Sequence[Op], *, guards: Sequence[Guard] = ()) -> CommitResult:
        """Apply `ops` atomically if every comparison holds; raise the first failure otherwise."""
        ...

    def watch(self, prefix: str, *, start_revision: int) -> AsyncIterator[WatchEvent]:
        """Changes under `prefix` from `start_revision` on, exactly once, in order."""
        ...

    async def current_revision(self) -> int:
        """The store's latest revision."""
        ...

    async def ping(self, *, timeout: float) -> None:
        """One read, never retried, that must answer within `timeout` seconds; raise
        `errors.Unavailable` saying why otherwise.

        Why apart from `get`: readiness must answer within a probe's few seconds, while a
        read through the retry policy waits out an etcd restart (many seconds) by design."""
        ...

    async def check_history(self, revision: int) -> None:
        """Raise `errors.Compacted` if a watch from `revision` would (its history is gone);
        a revision past the latest has no history yet, and passes.

        Why asked apart from `watch`: a watch reports compaction only once it runs, after
        an HTTP stream has begun; asked first, the API answers before it sends anything."""
        ...

    async def grant(self, ttl: int) -> Lease:
        """A new lease of about `ttl` seconds."""
        ...

    async def keepalive(self, lease_id: int) -> int:
        """Refresh a lease; returns the remaining TTL, raises NotFound once it expired."""
        ...

    async def revoke(self, lease_id: int) -> None:
        """End a lease now, deleting its keys."""
        ...

    async def compact(self, revision: int) -> None:
        """Forget history before `revision` (watches from before it get Compacted)."""
        ...

    async def close(self) -> None:
        """Release connections; watches end."""
        ...


TXN_BYTES = 1024 * 1024
"""Value bytes one transaction of many writes carries at most (`batches`): under etcd's
default request limit (`--max-request-bytes`, 1.5 MiB), with room for keys and framing."""


def batches(
    items: Sequence[_T], op_of: Callable[[_T], Op], *, most: int, size: int = TXN_BYTES
) -> list[list[_T]]:
    """`items` in order, cut into runs of at most `most` whose operations carry at most
    `size` bytes of keys and values; an item larger than `size` goes alone (etcd judges it).

    Why by size as well as by count: etcd refuses a request past its limit whole, and a
    writer that retries the same transaction is refused for ever. A Binding of a service
    duplicated on 200 members is some 50 KB, a Work carries its whole manifest."""
    out: list[list[_T]] = []
    used = 0
    for item in items:
        op = op_of(item)
        weight = len(op.key) + len(getattr(op, "value", b""))
        if not out or len(out[-1]) >= most or used + weight > size:
            out.append([])
            used = 0
        out[-1].append(item)
        used += weight
    return out


def prefix_end(prefix: str) -> str:
    """The smallest key greater than every key starting with `prefix` (etcd's range end)."""
    raw = bytearray(prefix.encode())
    for i in range(len(raw) - 1, -1, -1):
        if raw[i] < 0xFF:
            raw[i] += 1
            return bytes(raw[: i + 1]).decode(errors="surrogateescape")
    return "\0"


async def create(store: Store, key: str, value: bytes, *, lease: int = 0) -> int:
    """Create `key`; raises AlreadyExists. Returns the new mod revision."""
    return (await store.commit([Create(key, value, lease)])).revision


async def update(store: Store, key: str, value: bytes, *, revision: int, lease: int = 0) -> int:
    """Compare-and-swap `key` from `revision`; raises Conflict or NotFound."""
    return (await store.commit([Update(key, value, revision, lease)])).revision


async def put(store: Store, key: str, value: bytes, *, lease: int = 0) -> int:
    """Write `key` unconditionally. Returns the new mod revision."""
    return (await store.commit([Put(key, value, lease)])).revision


async def delete(store: Store, key: str, *, revision: int | None = None) -> bool:
    """Delete `key` (CAS when `revision` is given); True if it existed."""
    result = await store.commit([Delete(key, revision)])
    return key in result.deleted
