"""`TypedStore.get_many`: the same objects as one get each, read with fewer requests."""

from __future__ import annotations

import pytest

from federation.registry import codec
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from policies.models.queue import Queue


class _Counted(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, int] = {"get": 0, "list": 0, "count": 0}

    async def get(self, key: str) -> st.KeyValue | None:
        self.calls["get"] += 1
        return await super().get(key)

    async def list(self, prefix: str) -> st.ListResult:
        self.calls["list"] += 1
        return await super().list(prefix)

    async def count(self, prefix: str) -> int:
        self.calls["count"] += 1
        return await super().count(prefix)


def _queue(name: str) -> Queue:
    return Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": 2}})


@pytest.mark.parametrize(
    ("stored_there", "asked", "lists", "gets"),
    [
        pytest.param(100, 100, 1, 0, id="all of a parent: one range"),
        pytest.param(300, 100, 1, 0, id="a third of a parent: still one range"),
        pytest.param(1000, 100, 0, 100, id="a tenth of a big parent: one get each"),
        pytest.param(100, 10, 0, 10, id="a few keys: one get each"),
    ],
)
async def test_get_many_reads_what_one_get_each_would(
    stored_there: int, asked: int, lists: int, gets: int
) -> None:
    store = _Counted()
    typed = codec.TypedStore(store, codec.Codec(Queue))
    ops: list[st.Op] = [typed.put_op(f"/t/a/{i:04d}", _queue(f"q{i}")) for i in range(stored_there)]
    for start in range(0, len(ops), 100):
        await store.commit(ops[start : start + 100])
    await typed.put("/t/b/x", _queue("x"))
    keys = [f"/t/a/{i:04d}" for i in range(0, 2 * asked, 2)] + ["/t/b/x", "/t/b/missing"]
    store.calls = dict.fromkeys(store.calls, 0)

    found = await typed.get_many(keys)
    calls = dict(store.calls)

    expected = {k: await typed.get(k) for k in keys}
    assert list(found) == keys
    assert {k: v.obj if v else None for k, v in found.items()} == {
        k: v.obj if v else None for k, v in expected.items()
    }
    assert {k: v.revision for k, v in found.items() if v} == {
        k: v.revision for k, v in expected.items() if v
    }
    assert found["/t/b/missing"] is None
    present = [k for k in keys[:-2] if int(k.rsplit("/", 1)[1]) < stored_there]
    assert all(found[k] is not None for k in present)
    assert calls["list"] == lists
    assert calls["get"] == gets + 2  # /t/b holds two asked keys: one get each
