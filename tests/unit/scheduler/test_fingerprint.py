"""The fingerprint a workload was admitted under, stored on its Binding: read back first by
`reconcile`, set by the loop on the Bindings it writes, kept by every other Binding writer,
counted as a change by the binder, and equal in every process that computes it.

Why these matter: a new leader (or a restarted controller) has only the registry. If the
fingerprint lived only in the old leader's memory, an edit made while none led would look
like the workload as admitted and never be placed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from federation import clock
from federation.failover import eviction, rebalance
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from federation.scheduler import binder as binder_mod
from federation.scheduler import fingerprint, reconcile, recorded
from federation.scheduler import loop as loop_mod
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.cluster import ClusterStatus
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import NOW, cluster, job, queue, run, workload
from tests.unit.scheduler.test_loop import binding
from tests.waiting import wait_for

SETTINGS = SchedulerSettings()
JOB = workload("train", cpu="2", replicas=2, queue="qa")
SCALED = workload("train", cpu="2", replicas=3, queue="qa")
FP = fingerprint.fingerprint(job(JOB))
OLD = fingerprint.fingerprint(job(SCALED))
KEY = str(reconcile.ref_of(JOB))
ROOT = Path(__file__).resolve().parents[3]


def stamped(b: Binding, mark: str) -> Binding:
    meta = b.metadata.model_copy(update={"annotations": {binder_mod.FINGERPRINT: mark}})
    return b.model_copy(update={"metadata": meta})


def sort(bound: Binding, remembered: str | None = None) -> str:
    work = reconcile.reconcile(
        workloads={KEY: reconcile.Entry(JOB, 7)},
        bindings={KEY: bound},
        phases={},
        policies=[],
        clusters=("a", "b"),
        fingerprints={KEY: remembered} if remembered is not None else {},
        settings=SETTINGS,
    )
    return "admitted" if work.admitted else "pending"


def test_the_stored_fingerprint_decides_before_memory_and_memory_before_adoption() -> None:
    bound = binding(JOB, {"a": 2})
    # A fresh loop (nothing remembered): the stored fingerprint tells edited from unchanged.
    assert sort(stamped(bound, FP)) == "admitted"
    assert sort(stamped(bound, OLD)) == "pending"
    # The stored one wins: a write that never landed leaves the old one on the Binding.
    assert sort(stamped(bound, OLD), remembered=FP) == "pending"
    assert sort(stamped(bound, FP), remembered=OLD) == "admitted"
    # A Binding without one (written before they were stored): memory, then adoption.
    assert sort(bound, remembered=OLD) == "pending"
    assert sort(bound) == "admitted"
    assert recorded.admitted_as(bound, None, "now") == "now"


def test_a_binding_of_an_earlier_object_of_the_same_name_is_not_its_admission() -> None:
    """Deleted and created again under its name (a new uid) before the old Binding went:
    the new object is admitted afresh, its quota checked, whatever the fingerprint says.
    A Binding or object without a uid (written before they were recorded) is its own."""

    def sort_uids(placed: str | None, now: str | None) -> str:
        bound = stamped(binding(JOB, {"a": 2}), FP)
        ref = bound.spec.workload.model_copy(update={"uid": placed})
        bound = bound.model_copy(update={"spec": bound.spec.model_copy(update={"workload": ref})})
        meta = JOB.metadata.model_copy(update={"uid": now})
        work = reconcile.reconcile(
            workloads={KEY: reconcile.Entry(JOB.model_copy(update={"metadata": meta}), 7)},
            bindings={KEY: bound},
            phases={},
            policies=[],
            clusters=("a", "b"),
            fingerprints={},
            settings=SETTINGS,
        )
        return "admitted" if work.admitted else "pending"

    assert sort_uids("first", "second") == "pending"
    assert sort_uids("first", "first") == "admitted"
    assert sort_uids(None, "second") == "admitted"
    assert sort_uids("first", None) == "admitted"


def test_a_pending_binding_stays_pending_whatever_it_carries() -> None:
    evicted = binding(JOB, {"b": 2}, phase="Pending", reason="Evicted from a: NotReady")
    assert sort(stamped(evicted, FP), remembered=FP) == "pending"


def test_the_loop_stamps_scheduled_bindings_only_each_on_its_own_annotations() -> None:
    clusters = [cluster("a")]
    big = workload("big", cpu="999")
    result = run(clusters, [job(JOB), job(big)], queues=[queue("qa")])
    by_name = {b.metadata.name: b for b in result.bindings}
    assert by_name["train"].status.phase == "Scheduled"
    assert by_name["big"].status.phase == "Pending"
    # The cycle builds every Binding's annotations afresh, so stamping one touches no other.
    dicts = [id(b.metadata.annotations) for b in result.bindings]
    assert len(set(dicts)) == len(dicts)
    marks = {KEY: FP, str(reconcile.ref_of(big)): "never-admitted"}
    loop_mod._mark_fingerprints(result.bindings, marks)
    assert by_name["train"].metadata.annotations == {binder_mod.FINGERPRINT: FP}
    assert by_name["big"].metadata.annotations == {}


def test_a_new_fingerprint_is_a_change_to_write_even_on_the_same_placement() -> None:
    bound = binding(JOB, {"a": 2})
    assert binder_mod.same(stamped(bound, FP), stamped(bound, FP))
    assert not binder_mod.same(stamped(bound, OLD), stamped(bound, FP))
    assert not binder_mod.same(bound, stamped(bound, FP))


def test_failover_and_rebalance_rewrites_keep_the_fingerprint() -> None:
    bound = stamped(binding(JOB, {"a": 1, "b": 1}), FP)
    evicted = eviction.evict(bound, "a", now=NOW, reason="NotReady")
    assert evicted.status.phase == "Pending"
    assert evicted.metadata.annotations[binder_mod.FINGERPRINT] == FP
    candidate = rebalance.Candidate(
        key=keys.binding_key(reconcile.ref_of(JOB)),
        revision=1,
        binding=bound,
        current=rebalance.Option(placement={"a": 1, "b": 1}),
        preferred=rebalance.Option(placement={"b": 2}),
    )
    moved = rebalance.moved(rebalance.Verdict(candidate, True, "cheaper"), now=NOW)
    assert moved.placement() == {"b": 2}
    assert moved.metadata.annotations[binder_mod.FINGERPRINT] == FP
    # A moved, unchanged workload still holds; an edited one is placed again.
    assert sort(moved) == "admitted"
    assert sort(stamped(moved, OLD)) == "pending"


def test_the_fingerprint_is_the_same_in_another_process() -> None:
    """Another leader is another interpreter, with another string-hash seed."""
    code = (
        "from tests.unit.scheduler.test_fingerprint import JOB\n"
        "from tests.unit.scheduler.fleet import job\n"
        "from federation.scheduler import fingerprint\n"
        "print(fingerprint.fingerprint(job(JOB), ready=['b', 'a']))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == fingerprint.fingerprint(job(JOB), ready=["a", "b"])


# -- a restarted loop over a memory store


@contextlib.asynccontextmanager
async def running(store: MemoryStore) -> AsyncIterator[loop_mod.SchedulerLoop]:
    loop = loop_mod.SchedulerLoop(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    task = asyncio.create_task(loop.run())
    try:
        yield loop
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _stored(store: MemoryStore, w: Workload) -> codec.Stored[Binding] | None:
    key = keys.binding_key(reconcile.ref_of(w))
    return await codec.TypedStore(store, codec.Codec(Binding)).get(key)


async def test_a_label_edit_while_stopped_rewrites_only_the_fingerprint_once() -> None:
    """Same placement, new fingerprint: the Binding is rewritten with it, so the next
    restart finds the workload unchanged and writes nothing."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    member = cluster("a")
    assert member.status is not None
    await objs.put(keys.cluster_key("a"), member.model_copy(update={"status": None}))
    await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
        keys.cluster_status_key("a"), member.status
    )
    qa = queue("qa")
    await objs.put(objects.key_for(qa), qa)
    await objs.put(objects.key_for(JOB), JOB)

    async def scheduled() -> codec.Stored[Binding] | None:
        got = await _stored(store, JOB)
        return got if got is not None and got.obj.status.phase == "Scheduled" else None

    async with running(store):
        first = await wait_for(scheduled, message="train Scheduled")
    assert first.obj.metadata.annotations[binder_mod.FINGERPRINT] == FP

    meta = JOB.metadata.model_copy(update={"labels": {"team": "vision"}})
    labelled = JOB.model_copy(update={"metadata": meta})
    await objs.put(objects.key_for(labelled), labelled)
    mark = fingerprint.fingerprint(job(labelled))
    assert mark != FP

    async def restamped() -> codec.Stored[Binding] | None:
        got = await _stored(store, JOB)
        fp = got.obj.metadata.annotations.get(binder_mod.FINGERPRINT) if got else None
        return got if fp == mark else None

    async with running(store):
        again = await wait_for(restamped, message="the Binding carries the new fingerprint")
    assert again.obj.placement() == first.obj.placement() == {"a": 2}

    async with running(store) as third:
        await wait_for(lambda: third.cycles >= 1, message="a cycle after the second restart")
        assert third.last is not None and not third.last.admitted
    after = await _stored(store, JOB)
    assert after is not None and after.revision == again.revision
