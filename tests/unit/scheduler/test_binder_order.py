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
from typing import cast

import pytest

from federation import errors
from federation.registry import codec, keys
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.scheduler import binder
from policies.models.binding import Binding
from tests.unit.scheduler.fleet import FailingCommits, bound, evicted


def _key(b: Binding) -> str:
    return keys.binding_key(binder.binding_ref(b))


@pytest.mark.parametrize("seed", range(300))
async def test_no_admission_is_stored_without_the_evictions_decided_before_it(seed: int) -> None:
    rng = random.Random(seed)
    store = MemoryStore()
    victims = [bound("team", f"victim-{i}") for i in range(rng.randint(1, 5))]
    await binder.Binder(store).write(victims)
    p = rng.choice((0.0, 0.15, 0.4))
    flaky = FailingCommits(store, lambda _: rng.random() < p)
    writer = binder.Binder(
        cast(st.Store, flaky), batch=rng.randint(1, 4), in_flight=rng.randint(1, 4)
    )
    await writer.load()
    decided = [evicted(v) for v in victims]
    decided += [bound("team", f"job-{i}") for i in range(rng.randint(1, 6))]
    rng.shuffle(decided)
    typed = codec.TypedStore(store, binder.CODEC)
    moved = {_key(v) for v in victims if rng.random() < 0.3}
    for key in sorted(moved):  # fail-back moves them to b behind the binder's back
        await typed.mutate(key, lambda b: b and b.model_copy(update={"spec": bound(
            "team", b.metadata.name, cluster="b").spec}))  # fmt: skip
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
