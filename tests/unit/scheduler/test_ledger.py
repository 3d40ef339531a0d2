"""The ledger (reconcile kept across cycles, redone only for changed workloads) against a
full `reconcile` over the same inputs, through random runs of the changes a loop sees."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from federation import clock
from federation.quota import accounting
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from federation.scheduler import loop as loop_mod
from federation.scheduler import mirrors as mirrors_mod
from federation.scheduler import reconcile
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import NOW, cluster, flavor, queue, workload
from tests.unit.scheduler.test_loop import DUPLICATED, binding, key
from tests.waiting import background, wait_for

SETTINGS = SchedulerSettings()
OWN = ("put", "put", "bind", "bind", "evict", "unbind", "phase", "delete", "remember")
SHARED = ("policies", "ready", "clusters")
CLUSTERS = ("a", "b", "c")


def _view(work: reconcile.Work) -> dict[str, Any]:
    return {
        "pending": sorted(str(j.ref) for j in work.pending),
        "admitted": {
            k: _admission(a) for k, a in zip(work.admitted_keys, work.admitted, strict=True)
        },
        "marks": dict(sorted(work.marks.items())),
        "finished": sorted(work.finished),
        "stale": sorted(work.stale),
        "fingerprints": dict(sorted(work.fingerprints.items())),
        "waiting": sorted(_admission(a) for a in work.waiting),
    }


def _ledger_view(ledger: reconcile.Ledger) -> dict[str, Any]:
    return {
        "pending": sorted(ledger.pending),
        "admitted": {k: _admission(a) for k, a in ledger.admitted.items()},
        "marks": dict(sorted(ledger.marks.items())),
        "finished": sorted(ledger.finished),
        "stale": sorted(ledger.stale.values()),
        "fingerprints": dict(sorted(ledger.fingerprints().items())),
        "waiting": sorted(_admission(a) for a in ledger.waiting.values()),
    }


def _admission(a: accounting.Admission) -> tuple[object, ...]:
    return (str(a.ref), a.queue, str(a.charge), sorted(a.placement.items()), a.seq)


def _totals(usage: accounting.Usage) -> dict[str, dict[str, int]]:
    queues = {a.queue for a in usage.admissions()} | {"default"}
    totals = {q: {n: v for n, v in usage.queue_totals(q).items() if v} for q in queues}
    return {q: t for q, t in totals.items() if t}


class World:
    """What a loop reads: workloads, Bindings, phases, remembered fingerprints, and the
    shared inputs (policies, known and Ready clusters)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.workloads: dict[str, reconcile.Entry] = {}
        self.bindings: dict[str, Binding] = {}
        self.phases: dict[str, str | None] = {}
        self.fingerprints: dict[str, str] = {}
        self.policies: list[Any] = []
        self.clusters: tuple[str, ...] = ("a", "b", "c")
        self.ready: tuple[str, ...] = ("a", "b")
        self.revision = 0
        self.names = [f"w{i}" for i in range(12)]

    def _workload(self, name: str) -> Workload:
        if self.rng.random() < 0.3:
            return workload(name, kind="Deployment", replicas=self.rng.randint(1, 4))
        return workload(name, cpu=self.rng.choice(["1", "2"]), replicas=self.rng.randint(1, 3))

    def step(self, marks: dict[str, str]) -> set[str]:
        """One random change; the refs whose own inputs it changed."""
        rng = self.rng
        name = rng.choice(self.names)
        ref = key(workload(name))
        deployment = key(workload(name, kind="Deployment"))
        ref = deployment if deployment in self.workloads else ref
        action = rng.choice([*OWN, *SHARED])
        if action == "put":
            self.revision += 1
            w = self._workload(name)
            ref = key(w)
            old = key(workload(name)), key(workload(name, kind="Deployment"))
            for other in old:
                if other != ref:
                    self.workloads.pop(other, None)  # one kind per name at a time
            self.workloads[ref] = reconcile.Entry(w, self.revision)
            return set(old) | {ref}
        entry = self.workloads.get(ref)
        w = entry.workload if entry is not None else workload(name)
        if action == "bind":
            targets = {c: 1 for c in rng.sample(CLUSTERS, rng.randint(1, 2))}
            self.bindings[ref] = binding(w, targets)
        elif action == "evict":
            self.bindings[ref] = binding(
                w, {"b": 1}, phase="Pending", reason="Evicted from a: NotReady"
            )
        elif action == "unbind":
            self.bindings.pop(ref, None)
        elif action == "phase":
            self.phases[ref] = rng.choice([None, "Running", "Succeeded", "Failed"])
        elif action == "delete":
            self.workloads.pop(ref, None)
        elif action == "remember":
            choice = rng.choice(["now", "older", "forget"])
            if choice == "now" and ref in marks:
                self.fingerprints[ref] = marks[ref]
            elif choice == "older":
                self.fingerprints[ref] = "older"
            else:
                self.fingerprints.pop(ref, None)
        elif action == "policies":
            self.policies = [DUPLICATED] if rng.random() < 0.5 else []
            return set()
        elif action == "ready":
            self.ready = tuple(sorted(rng.sample(CLUSTERS, rng.randint(1, 3))))
            return set()
        else:
            self.clusters = ("a", "b", "c") if rng.random() < 0.5 else ("a", "b")
            return set()
        return {ref}

    def inputs(self) -> dict[str, Any]:
        return {
            "workloads": dict(self.workloads),
            "bindings": dict(self.bindings),
            "phases": dict(self.phases),
            "policies": list(self.policies),
            "clusters": self.clusters,
            "fingerprints": dict(self.fingerprints),
            "ready": self.ready,
            "settings": SETTINGS,
        }


@pytest.mark.parametrize("seed", range(12))
def test_the_ledger_redone_for_changed_workloads_equals_a_full_reconcile(seed: int) -> None:
    rng = random.Random(seed)
    world = World(rng)
    ledger = reconcile.Ledger()
    memo: dict[str, Any] = {}
    prepared = reconcile.Prepared()
    usage = accounting.Usage()
    marks: dict[str, str] = {}
    # The loop's reconcile before the ledger, with its own memo of admissions, which it
    # trusts while their Binding and fingerprint stand as the ledger does.
    full_memo: dict[str, Any] = {}
    full_prepared = reconcile.Prepared()
    changes = ledger.update(None, **world.inputs(), memo=memo, prepared=prepared)
    assert changes is None
    incremental = 0
    for _ in range(150):
        dirty = world.step(marks)
        changes = ledger.update(dirty, **world.inputs(), memo=memo, prepared=prepared)
        full = reconcile.reconcile(**world.inputs(), memo=full_memo, prepared=full_prepared)
        assert _ledger_view(ledger) == _view(full)
        held = {**ledger.admitted, **ledger.waiting}
        if changes is None:
            usage.sync(held.values(), held.keys())
        else:
            incremental += 1
            usage.apply(changes)
        assert {str(a.ref): a for a in usage.admissions()} == held
        assert _totals(usage) == _totals(accounting.Usage([*full.admitted, *full.waiting]))
        assert set(memo) <= set(ledger.admitted)
        marks = dict(ledger.marks)
    assert incremental > 50  # most steps were redone per workload, not in full


def test_a_change_to_what_every_workload_shares_sorts_them_all_again() -> None:
    web = workload("web", kind="Deployment", replicas=4)
    ref = key(web)
    ledger, memo, prepared = reconcile.Ledger(), {}, reconcile.Prepared()  # type: ignore[var-annotated]
    inputs: dict[str, Any] = {
        "workloads": {ref: reconcile.Entry(web, 3)},
        "bindings": {ref: binding(web, {"a": 4})},
        "phases": {},
        "policies": [DUPLICATED],
        "clusters": ("a", "b"),
        "fingerprints": {},
        "ready": ("a",),
        "settings": SETTINGS,
    }
    ledger.update(None, **inputs, memo=memo, prepared=prepared)
    assert list(ledger.admitted) == [ref]
    inputs["fingerprints"] = {ref: ledger.marks[ref]}
    # Named nothing, yet a cluster turning Ready re-divides the service.
    assert ledger.update(set(), **inputs, memo=memo, prepared=prepared) is not None
    assert list(ledger.admitted) == [ref]
    inputs["ready"] = ("a", "b")
    assert ledger.update(set(), **inputs, memo=memo, prepared=prepared) is None
    assert list(ledger.pending) == [ref] and not ledger.admitted


# -- the loop's views of its mirrors


class Mirrors:
    """Three mirrors (workloads, Bindings, workload statuses) and the loop's writes not yet
    seen, changed at random as watches and cycles change them."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.workloads: dict[str, codec.Stored[Any]] = {}
        self.bindings: dict[str, codec.Stored[Binding]] = {}
        self.results: dict[str, codec.Stored[WorkloadStatus]] = {}
        self.written: dict[str, tuple[int, Binding | None]] = {}
        self.revision = 0
        self.changed: tuple[set[str], set[str], set[str]] = (set(), set(), set())

    def _next(self) -> int:
        self.revision += 1
        return self.revision

    def step(self) -> None:
        rng = self.rng
        w = workload(f"w{rng.randrange(10)}")
        ref = reconcile.ref_of(w)
        wkey, bkey, skey = (
            keys.workload_key(ref),
            keys.binding_key(ref),
            keys.workload_status_key(ref),
        )
        action = rng.choice(["put", "delete", "bind", "unbind", "status", "write", "write"])
        if action == "put":
            self.workloads[wkey] = codec.Stored(wkey, w, self._next(), self._next())
            self.changed[0].add(wkey)
        elif action == "delete" and self.workloads.pop(wkey, None) is not None:
            self.changed[0].add(wkey)
        elif action == "bind":
            self.bindings[bkey] = codec.Stored(bkey, binding(w, {"a": 1}), self._next())
            self.changed[1].add(bkey)
        elif action == "unbind" and self.bindings.pop(bkey, None) is not None:
            self.changed[1].add(bkey)
        elif action == "status":
            status = WorkloadStatus(
                workload=binding(w, {}).spec.workload, phase=rng.choice(["Running", "Succeeded"])
            )
            self.results[skey] = codec.Stored(skey, status, self._next())
            self.changed[2].add(skey)
        elif action == "write":  # the loop's own write: its echo arrives later, or never
            written = binding(w, {"b": 1}) if rng.random() < 0.7 else None
            revision = self._next()
            self.written[bkey] = (revision, written)
            if rng.random() < 0.5:
                if written is None:
                    if self.bindings.pop(bkey, None) is not None:
                        self.changed[1].add(bkey)
                else:
                    self.bindings[bkey] = codec.Stored(bkey, written, revision)
                    self.changed[1].add(bkey)

    def seen(self, *, everything: bool = False) -> mirrors_mod.Seen:
        changed = self.changed
        self.changed = (set(), set(), set())
        return mirrors_mod.Seen(
            workloads=dict(self.workloads),
            policies=[],
            clusters=[],
            statuses={},
            bindings=dict(self.bindings),
            results=dict(self.results),
            changed=(None, None, None) if everything else changed,
        )


@pytest.mark.parametrize("seed", range(6))
def test_the_views_kept_from_changed_keys_equal_views_built_afresh(seed: int) -> None:
    mirrors = Mirrors(random.Random(seed))
    views = mirrors_mod.Views()
    assert views.update(mirrors.seen(), mirrors.written) is None  # a first build: all
    for _ in range(300):
        for _ in range(mirrors.rng.randint(1, 3)):
            mirrors.step()
        before = {
            "entries": dict(views.entries),
            "bindings": dict(views.bindings),
            "phases": dict(views.phases),
        }
        written = dict(mirrors.written)
        seen = mirrors.seen()
        dirty = views.update(seen, mirrors.written)
        fresh = mirrors_mod.Views()
        fresh.update(dataclasses.replace(seen, changed=(None, None, None)), written)
        after = {"entries": views.entries, "bindings": views.bindings, "phases": views.phases}
        assert after == {
            "entries": fresh.entries,
            "bindings": fresh.bindings,
            "phases": fresh.phases,
        }
        assert dirty is not None
        moved = {
            ref
            for name, view in after.items()
            for ref in set(view) | set(before[name])
            if view.get(ref) != before[name].get(ref)
        }
        assert moved <= dirty  # every ref whose inputs changed is sorted again


# -- whole cycles: reading changes only against re-reading everything


class History:
    """A registry as two loops' watches see it, changed at random between cycles: jobs
    submitted, edited, finished and deleted, evictions and Bindings by other writers, a
    queue's capability edited, and the loops' own writes delivered late, at once or lost."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.revision = 0
        self.workloads: dict[str, codec.Stored[Any]] = {}
        self.bindings: dict[str, codec.Stored[Binding]] = {}
        self.results: dict[str, codec.Stored[WorkloadStatus]] = {}
        self.queue = queue("qa", capability={"cpu": "24"})
        self.clusters = [cluster("a", flavor(cpu="16", nodes=2)), cluster("b", flavor(cpu="8"))]
        self.late: list[tuple[str, Binding | None, int]] = []
        self.changed: set[str] = set()  # keys put or deleted since the loop looked

    def _next(self) -> int:
        self.revision += 1
        return self.revision

    def _put(self, store: dict[str, Any], key: str, obj: Any, created: int = 0) -> None:
        store[key] = codec.Stored(key, obj, self._next(), created or self.revision)
        self.changed.add(key)

    def _drop(self, store: dict[str, Any], key: str) -> None:
        if store.pop(key, None) is not None:
            self.changed.add(key)

    def step(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 4)):
            w = workload(
                f"j{rng.randrange(14)}",
                cpu=rng.choice(["2", "4", "6"]),
                replicas=rng.randint(1, 2),
                queue=rng.choice(["qa", None]),
                priority=rng.choice([0, 5]),
            )
            ref = reconcile.ref_of(w)
            wkey, bkey = keys.workload_key(ref), keys.binding_key(ref)
            action = rng.choice(["submit", "submit", "finish", "delete", "evict", "queue", "adopt"])
            if action == "submit":  # new, or an edit keeping its arrival
                old = self.workloads.get(wkey)
                self._put(self.workloads, wkey, w, old.create_revision if old else 0)
            elif action == "finish" and wkey in self.workloads:
                status = WorkloadStatus(
                    workload=binding(w, {}).spec.workload, phase=rng.choice(["Succeeded", "Failed"])
                )
                self._put(self.results, keys.workload_status_key(ref), status)
            elif action == "delete":
                self._drop(self.workloads, wkey)
                self._drop(self.results, keys.workload_status_key(ref))
            elif action == "evict" and bkey in self.bindings:
                held = self.bindings[bkey].obj
                if held.status.phase == "Scheduled":
                    evicted = held.model_copy(
                        update={
                            "status": held.status.model_copy(
                                update={"phase": "Pending", "reason": "Evicted from a: NotReady"}
                            )
                        }
                    )
                    self._put(self.bindings, bkey, evicted)
            elif action == "adopt" and wkey in self.workloads:
                # Placed by another writer, with no fingerprint stored on it (by hand, or
                # before fingerprints were stored): adopted by whoever remembers one.
                self._put(self.bindings, bkey, binding(self.workloads[wkey].obj, {"a": 1}))
            elif action == "queue":
                cpu = rng.choice(["12", "24", "40"])
                self.queue = queue("qa", capability={"cpu": cpu})
        self.deliver(everything=rng.random() < 0.5)

    def write(self, result: Any, stale: list[str], loops: list[loop_mod.SchedulerLoop]) -> None:
        """The first loop's writes: each loop remembers its own (same revision, as when
        both are the same controller), the watch delivers them now or later."""
        for b in result.bindings:
            where = keys.binding_key(loop_mod.binder_mod.binding_ref(b))
            if self.rng.random() < 0.1:
                continue  # lost: another writer moved the Binding first
            revision = self._next()
            for loop in loops:
                loop._written[where] = (revision, b)
            self.late.append((where, b, revision))
        for where in stale:
            revision = self._next()
            for loop in loops:
                loop._written[where] = (revision, None)
            self.late.append((where, None, revision))
        self.deliver(everything=self.rng.random() < 0.5)

    def deliver(self, *, everything: bool) -> None:
        keep = []
        for where, b, revision in self.late:
            if everything or self.rng.random() < 0.5:
                if b is None:
                    self._drop(self.bindings, where)
                else:
                    self.bindings[where] = codec.Stored(where, b, revision)
                    self.changed.add(where)
            else:
                keep.append((where, b, revision))
        self.late = keep

    def seen(self, *, changed: bool) -> mirrors_mod.Seen:
        taken = set(self.changed) if changed else None
        return mirrors_mod.Seen(
            workloads=dict(self.workloads),
            policies=[self.queue],
            clusters=list(self.clusters),
            statuses={},
            bindings=dict(self.bindings),
            results=dict(self.results),
            changed=(taken, taken, taken),
        )


def _decided(result: Any, stale: list[str]) -> dict[str, Any]:
    return {
        "bindings": sorted(
            (b.metadata.name, b.status.phase, b.status.reason, str(b.spec.clusters))
            for b in result.bindings
        ),
        "stale": sorted(stale),
        "evicted": sorted(str(v.ref) for v, _ in result.evicted),
    }


@pytest.mark.parametrize("seed", range(8))
def test_cycles_reading_only_changes_decide_as_cycles_reading_everything(seed: int) -> None:
    history = History(random.Random(seed))
    store = MemoryStore()
    settings = SchedulerSettings(cycle_batch=4, cycle_batch_max=4)
    changes_only = loop_mod.SchedulerLoop(store, settings=settings, clock=clock.real)
    everything = loop_mod.SchedulerLoop(store, settings=settings, clock=clock.real)
    decided = 0
    for _ in range(60):
        history.step()
        first = changes_only._steps(history.seen(changed=True), NOW)
        second = everything._steps(history.seen(changed=False), NOW)
        history.changed.clear()
        assert _decided(*first) == _decided(*second)
        assert changes_only._fingerprints == everything._fingerprints
        assert sorted(changes_only._usage._admissions) == sorted(everything._usage._admissions)
        decided += len(first[0].bindings)
        history.write(*first, [changes_only, everything])
    assert decided > 20  # the runs admitted, evicted and re-queued, not just waited


async def test_a_mirror_names_the_keys_it_changed_and_everything_after_a_resync() -> None:
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    first, second = workload("first"), workload("second")
    await objs.put(objects.key_for(first), first)
    seen: list[object] = []
    mirror = mirrors_mod.Mirror(objs, keys.prefix("workloads"), lambda old, new: seen.append(new))
    await mirror.load()
    assert mirror.changes() is None  # just listed: everything may be new to a reader
    assert mirror.changes() == set()
    async with background(mirror.run()):
        await objs.put(objects.key_for(second), second)
        await wait_for(lambda: len(seen) == 1, message="put seen")
        assert mirror.changes() == {objects.key_for(second)}
    # The watch falls behind a compaction: it lists again, and every key may have moved.
    await objs.delete(objects.key_for(first))
    await store.compact(await store.current_revision())
    async with background(mirror.run()):
        await wait_for(lambda: len(seen) == 2, message="resync seen")
        assert mirror.changes() is None
        assert set(mirror.items) == {objects.key_for(second)}
