"""What the binder may never leave behind when a cycle made room: an admission stored
while an eviction decided before it is not (the queue would hold the victim and the job
admitted in its place at once, over its capability).

Randomized: a few victims bound on a member, a cycle's decisions that evict them and admit
jobs in a random order, another writer moving some victims before the write (fail-back),
transactions failing at random (etcd restarting), random batch sizes and concurrency. The
store is the in-memory registry, which passes the etcd store's contract tests.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from typing import Any, cast

import pytest

from federation import errors
from federation.registry import codec, keys
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.scheduler import binder
from policies.models.base import ObjectMeta
from policies.models.binding import (
    Binding,
    BindingSpec,
    BindingStatus,
    EvictionTask,
    TargetCluster,
    WorkloadReference,
)
from tests.unit.scheduler.fleet import NOW


def _bound(name: str, cluster: str) -> Binding:
    return Binding(
        metadata=ObjectMeta(name=name, namespace="team"),
        spec=BindingSpec(
            workload=WorkloadReference(
                api_version="batch/v1", kind="Job", namespace="team", name=name
            ),
            clusters=[TargetCluster(name=cluster, replicas=1)],
        ),
        status=BindingStatus(phase="Scheduled", last_scheduled_time=NOW),
    )


def _evicted(victim: Binding) -> Binding:
    reason = "preempted by team/urgent (priority 10, queue qa)"
    task = EvictionTask(
        cluster="a", reason=reason, creation_time=NOW, replicas=1, purge_mode="Directly"
    )
    return victim.model_copy(
        update={
            "spec": victim.spec.model_copy(update={"clusters": [], "eviction_tasks": [task]}),
            "status": BindingStatus(phase="Pending", reason=reason),
        }
    )


class _Flaky:
    """The store, but each transaction fails before it applies with probability `p`."""

    def __init__(self, store: MemoryStore, rng: random.Random, p: float) -> None:
        self.store, self.rng, self.p = store, rng, p

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def commit(self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()) -> Any:
        if self.rng.random() < self.p:
            raise errors.Unavailable("etcd restarting")
        return await self.store.commit(ops, guards=guards)


def _key(b: Binding) -> str:
    return keys.binding_key(binder.binding_ref(b))


@pytest.mark.parametrize("seed", range(300))
async def test_no_admission_is_stored_without_the_evictions_decided_before_it(seed: int) -> None:
    rng = random.Random(seed)
    store = MemoryStore()
    victims = [_bound(f"victim-{i}", "a") for i in range(rng.randint(1, 5))]
    await binder.Binder(store).write(victims)
    flaky = _Flaky(store, rng, p=rng.choice((0.0, 0.15, 0.4)))
    writer = binder.Binder(
        cast(st.Store, flaky), batch=rng.randint(1, 4), in_flight=rng.randint(1, 4)
    )
    await writer.load()
    decided = [_evicted(v) for v in victims]
    decided += [_bound(f"job-{i}", "a") for i in range(rng.randint(1, 6))]
    rng.shuffle(decided)
    typed = codec.TypedStore(store, binder.CODEC)
    moved = {_key(v) for v in victims if rng.random() < 0.3}
    for key in sorted(moved):  # fail-back moves them to b behind the binder's back
        await typed.mutate(key, lambda b: b and b.model_copy(update={"spec": _bound(
            b.metadata.name, "b").spec}))  # fmt: skip
    freeing = {_key(v) for v in victims}
    placing = {_key(b) for b in decided} - freeing
    report: binder.WriteReport | None = None
    with contextlib.suppress(errors.Unavailable):
        report = await writer.write(decided, freeing=freeing, placing=placing)
    stored = {i.key: i.obj for i in (await typed.list(keys.prefix("bindings"))).items}

    def freed(key: str) -> bool:
        return key in stored and stored[key].status.phase == "Pending"

    for i, b in enumerate(decided):
        key = _key(b)
        if key in placing and key in stored:
            unfreed = [_key(e) for e in decided[:i] if _key(e) in freeing and not freed(_key(e))]
            assert not unfreed, f"{key} admitted, but {unfreed} decided before it still bound"
    if report is None:
        return
    # Written in full otherwise: every eviction but the moved, every admission before the
    # first moved eviction, and none after it.
    assert {k for k in freeing if not freed(k)} == moved
    assert set(report.dropped) == moved
    cut = min((i for i, b in enumerate(decided) if _key(b) in moved), default=len(decided))
    assert {_key(b) for b in decided[:cut] if _key(b) in placing} <= stored.keys()
    held = {_key(b) for b in decided[cut:] if _key(b) in placing}
    assert set(report.held_back) == held and not held & stored.keys()
