"""The Store contract: every implementation (etcd, memory) must pass each case here."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from federation import errors
from federation.registry import store as st
from tests.waiting import wait_for


async def test_missing_key_reads_as_none(store: st.Store, prefix: str) -> None:
    assert await store.get(prefix + "nothing") is None


async def test_a_store_that_answers_passes_a_ping(store: st.Store) -> None:
    assert await store.ping(timeout=1.0) is None


async def test_create_then_get_returns_value_and_revisions(store: st.Store, prefix: str) -> None:
    rev = await st.create(store, prefix + "a", b"one")
    kv = await store.get(prefix + "a")
    assert kv is not None
    assert (kv.value, kv.mod_revision, kv.create_revision, kv.version) == (b"one", rev, rev, 1)


async def test_create_fails_when_present(store: st.Store, prefix: str) -> None:
    rev = await st.create(store, prefix + "a", b"one")
    with pytest.raises(errors.AlreadyExists) as info:
        await st.create(store, prefix + "a", b"two")
    assert info.value.revision == rev
    kv = await store.get(prefix + "a")
    assert kv is not None and kv.value == b"one"


async def test_update_is_compare_and_swap(store: st.Store, prefix: str) -> None:
    first = await st.create(store, prefix + "a", b"1")
    second = await st.update(store, prefix + "a", b"2", revision=first)
    assert second > first
    with pytest.raises(errors.Conflict) as info:
        await st.update(store, prefix + "a", b"3", revision=first)
    assert (info.value.expected, info.value.current) == (first, second)
    kv = await store.get(prefix + "a")
    assert kv is not None and (kv.value, kv.version) == (b"2", 2)


async def test_update_of_missing_key_is_not_found(store: st.Store, prefix: str) -> None:
    with pytest.raises(errors.NotFound):
        await st.update(store, prefix + "ghost", b"x", revision=5)


@pytest.mark.parametrize(
    ("use_revision", "stale"),
    [
        pytest.param(False, False, id="unconditional delete"),
        pytest.param(True, False, id="delete at the current revision"),
        pytest.param(True, True, id="delete at a stale revision conflicts"),
    ],
)
async def test_delete(store: st.Store, prefix: str, use_revision: bool, stale: bool) -> None:
    first = await st.create(store, prefix + "a", b"1")
    current = await st.update(store, prefix + "a", b"2", revision=first)
    revision = (first if stale else current) if use_revision else None
    if stale:
        with pytest.raises(errors.Conflict):
            await st.delete(store, prefix + "a", revision=revision)
        assert await store.get(prefix + "a") is not None
    else:
        assert await st.delete(store, prefix + "a", revision=revision) is True
        assert await store.get(prefix + "a") is None
        assert await st.delete(store, prefix + "a") is False


async def test_list_by_prefix_in_key_order_with_revision(store: st.Store, prefix: str) -> None:
    for name in ["b", "a", "c/d"]:
        await st.put(store, prefix + name, name.encode())
    last = await st.put(store, prefix[:-1] + "-sibling/x", b"not mine")
    result = await store.list(prefix)
    assert [kv.key for kv in result.items] == [prefix + "a", prefix + "b", prefix + "c/d"]
    assert result.revision >= last


async def test_list_of_many_keys_is_complete(store: st.Store, prefix: str) -> None:
    ops: list[st.Op] = [st.Put(f"{prefix}{i:05d}", b"x") for i in range(2500) if i % 1 == 0]
    for start in range(0, len(ops), 100):
        await store.commit(ops[start : start + 100])
    result = await store.list(prefix)
    assert len(result.items) == 2500
    assert result.items[0].key.endswith("00000") and result.items[-1].key.endswith("02499")


async def test_count_by_prefix(store: st.Store, prefix: str) -> None:
    assert await store.count(prefix) == 0
    for name in ["b", "a", "c/d"]:
        await st.put(store, prefix + name, name.encode())
    await st.put(store, prefix[:-1] + "-sibling/x", b"not mine")
    assert await store.count(prefix) == 3
    assert await store.count(prefix + "c/") == 1
    await store.commit([st.Delete(prefix + "a")])
    assert await store.count(prefix) == 2


async def test_transaction_is_all_or_nothing(store: st.Store, prefix: str) -> None:
    await st.create(store, prefix + "taken", b"x")
    with pytest.raises(errors.AlreadyExists) as info:
        await store.commit([st.Create(prefix + "new", b"1"), st.Create(prefix + "taken", b"2")])
    assert info.value.key == prefix + "taken"
    assert await store.get(prefix + "new") is None


async def test_guard_fences_a_whole_transaction(store: st.Store, prefix: str) -> None:
    leader = await st.create(store, prefix + "leader", b"me")
    await store.commit([st.Put(prefix + "a", b"1")], guards=[st.Guard(prefix + "leader", leader)])
    await st.update(store, prefix + "leader", b"someone else", revision=leader)
    with pytest.raises(errors.Fenced):
        await store.commit(
            [st.Put(prefix + "a", b"2")], guards=[st.Guard(prefix + "leader", leader)]
        )
    kv = await store.get(prefix + "a")
    assert kv is not None and kv.value == b"1"


async def test_a_check_holds_a_transaction_to_another_key_s_revision(
    store: st.Store, prefix: str
) -> None:
    """A writer deciding on a reading of `status` (absent, then at a revision) commits only
    while that reading stands; a moved or created key fails as a Conflict on it."""
    write = st.Put(prefix + "binding", b"evicted")
    await store.commit([write, st.Check(prefix + "status", 0)])  # absent, as read
    seen = await st.create(store, prefix + "status", b"Succeeded")
    with pytest.raises(errors.Conflict) as info:
        await store.commit([st.Put(prefix + "binding", b"again"), st.Check(prefix + "status", 0)])
    assert (info.value.key, info.value.expected, info.value.current) == (
        prefix + "status",
        0,
        seen,
    )
    kv = await store.get(prefix + "binding")
    assert kv is not None and kv.value == b"evicted"
    done = await store.commit([st.Delete(prefix + "binding"), st.Check(prefix + "status", seen)])
    assert done.deleted == (prefix + "binding",)
    status = await store.get(prefix + "status")
    assert status is not None and status.mod_revision == seen  # a check writes nothing
    alone = await store.commit([st.Check(prefix + "status", seen)])
    assert alone.revision >= done.revision


async def _collect(
    store: st.Store, prefix: str, start: int, count: int, timeout: float = 10.0
) -> list[st.WatchEvent]:
    seen: list[st.WatchEvent] = []

    async def run() -> None:
        async for event in store.watch(prefix, start_revision=start):
            seen.append(event)
            if len(seen) >= count:
                return

    await asyncio.wait_for(run(), timeout)
    return seen


async def test_watch_replays_history_in_order(store: st.Store, prefix: str) -> None:
    r1 = await st.create(store, prefix + "a", b"1")
    r2 = await st.update(store, prefix + "a", b"2", revision=r1)
    await st.put(store, "/elsewhere/" + prefix, b"ignored")
    await st.delete(store, prefix + "a")
    events = await _collect(store, prefix, r1, 3)
    assert [(e.type, e.value) for e in events] == [("put", b"1"), ("put", b"2"), ("delete", b"")]
    assert events[0].mod_revision == r1 and events[1].mod_revision == r2
    assert events[2].prev_value == b"2"
    assert [e.prev_value for e in events[:2]] == [None, b"1"], "what a put replaced"


async def test_watch_from_list_revision_sees_only_later_changes(
    store: st.Store, prefix: str
) -> None:
    await st.put(store, prefix + "before", b"old")
    listed = await store.list(prefix)
    collector = asyncio.create_task(_collect(store, prefix, listed.revision + 1, 2))
    await st.put(store, prefix + "after", b"new")
    await st.delete(store, prefix + "before")
    events = await collector
    assert [(e.type, e.key) for e in events] == [
        ("put", prefix + "after"),
        ("delete", prefix + "before"),
    ]


async def test_watch_from_compacted_revision_says_so(store: st.Store, prefix: str) -> None:
    r1 = await st.put(store, prefix + "a", b"1")
    r2 = await st.put(store, prefix + "a", b"2")
    await store.compact(r2)
    with pytest.raises(errors.Compacted) as info:
        await _collect(store, prefix, r1, 1)
    assert info.value.compact_revision >= r2


async def test_fifty_writers_from_one_revision_exactly_one_wins(
    store: st.Store, prefix: str
) -> None:
    base = await st.create(store, prefix + "hot", b"0")

    async def writer(i: int) -> bool:
        try:
            await st.update(store, prefix + "hot", str(i).encode(), revision=base)
        except errors.Conflict:
            return False
        return True

    results = await asyncio.gather(*(writer(i) for i in range(50)))
    assert sum(results) == 1
    kv = await store.get(prefix + "hot")
    assert kv is not None and kv.value == str(results.index(True)).encode()


async def test_leased_keys_vanish_on_revoke(store: st.Store, prefix: str) -> None:
    lease = await store.grant(5)
    await st.put(store, prefix + "leased", b"x", lease=lease.id)
    assert await store.keepalive(lease.id) >= 5
    await store.revoke(lease.id)
    assert await store.get(prefix + "leased") is None
    with pytest.raises(errors.NotFound):
        await store.keepalive(lease.id)


async def test_leased_keys_vanish_on_expiry(store: st.Store, prefix: str) -> None:
    lease = await store.grant(1)
    await st.put(store, prefix + "leased", b"x", lease=lease.id)
    await st.put(store, prefix + "plain", b"y")

    async def gone() -> bool:
        return await store.get(prefix + "leased") is None

    await wait_for(gone, timeout=lease.ttl + 8, interval=0.1, message="leased key to expire")
    assert await store.get(prefix + "plain") is not None


async def test_watch_sees_lease_expiry_as_delete(store: st.Store, prefix: str) -> None:
    lease = await store.grant(1)
    rev = await st.put(store, prefix + "leased", b"x", lease=lease.id)
    events = await _collect(store, prefix, rev, 2, timeout=lease.ttl + 8)
    assert [e.type for e in events] == ["put", "delete"]


async def test_write_with_unknown_lease_is_refused(store: st.Store, prefix: str) -> None:
    with contextlib.suppress(errors.NotFound, errors.FedctlError):
        await st.put(store, prefix + "x", b"1", lease=987654321)
    assert await store.get(prefix + "x") is None


async def test_history_is_checked_before_a_watch_would_fail(store: st.Store, prefix: str) -> None:
    """A caller can learn that a watch from a revision would be refused as compacted
    before it starts one; a revision at or past the latest passes."""
    r1 = await st.put(store, prefix + "a", b"1")
    r2 = await st.put(store, prefix + "a", b"2")
    await store.check_history(r1)
    await store.compact(r2)
    with pytest.raises(errors.Compacted):
        await store.check_history(r1)
    await store.check_history(r2)
    await store.check_history(r2 + 1000)
