"""`WorkRecords.commit`: a workload's Works, status and events in transactions etcd takes."""

from __future__ import annotations

from collections.abc import Sequence

from federation.propagation import status as status_mod
from federation.propagation import works as works_mod
from federation.registry import codec, keys
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from policies.models.work import Work, WorkloadReference, WorkloadStatus, WorkStatus

REF = keys.WorkloadRef("web", "ConfigMap", "bundle")


class Counting(MemoryStore):
    """Records each transaction's operation count and value bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.transactions: list[tuple[int, int]] = []

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        self.transactions.append((len(ops), sum(len(getattr(op, "value", b"")) for op in ops)))
        return await super().commit(ops, guards=guards)


def _writes(clusters: int, blob: str) -> list[works_mod.Write]:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"blob": blob}}
    return [
        (
            f"m-{i:03d}",
            None,
            works_mod.new_work(
                ref=REF,
                cluster=f"m-{i:03d}",
                old=None,
                manifest={**manifest, "metadata": {"name": "bundle", "namespace": "web"}},
                revision=1,
                status=WorkStatus(),
                uid="u-1",
            ),
        )
        for i in range(clusters)
    ]


def _status(writes: list[works_mod.Write]) -> WorkloadStatus:
    reference = WorkloadReference(
        api_version="v1", kind="ConfigMap", namespace="web", name="bundle"
    )
    return status_mod.aggregate(REF, reference, [w for _, _, w in writes], binding_revision=1)


async def _commit(store: Counting, writes: list[works_mod.Write]) -> works_mod.WorkRecords:
    records = works_mod.WorkRecords(
        codec.TypedStore(store, codec.Codec(Work)),
        codec.TypedStore(store, codec.Codec(WorkloadStatus)),
    )
    await records.commit(REF, writes, _status(writes), [])
    return records


async def test_large_works_are_split_under_the_request_limit_and_all_recorded() -> None:
    store = Counting()
    writes = _writes(5, "x" * (600 * 1024))

    records = await _commit(store, writes)

    assert len(store.transactions) > 1
    assert all(size <= 1024 * 1024 for _, size in store.transactions)
    listed = (await store.list(keys.prefix("works"))).items
    assert len(listed) == 5 and set(records.works[str(REF)]) == {c for c, _, _ in writes}
    assert await store.get(keys.workload_status_key(REF)) is not None


async def test_many_works_are_split_under_the_operation_limit() -> None:
    store = Counting()

    await _commit(store, _writes(250, "small"))

    assert [count for count, _ in store.transactions] == [100, 100, 51]  # the status last
    assert len((await store.list(keys.prefix("works"))).items) == 250


async def test_small_works_go_in_one_transaction() -> None:
    store = Counting()

    await _commit(store, _writes(8, "small"))

    assert [count for count, _ in store.transactions] == [9]
