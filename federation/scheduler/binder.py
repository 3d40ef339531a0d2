"""The binder: writes the cycle's Bindings to the registry, many per etcd transaction.

Fed by `CycleResult.bindings` (only Bindings whose content changed); feeds the registry,
whose watches feed the propagator and failover. Every write is a compare-and-swap on the
key's mod revision (create when absent), so a Binding failover amended meanwhile is never
overwritten blindly: a batch that loses a race is re-read and retried key by key, keeping
the eviction tasks failover added.

Why batches: one etcd transaction of ~100 puts costs about as much as one put, so a cycle
that admits thousands of jobs writes them in tens of round trips, not thousands. A batch
also stays under etcd's request limit (`store.batches`): a Binding of a service on
hundreds of members runs to tens of KB. Why a few
in flight at once: each transaction then waits mostly for its round trip and etcd's commit,
and etcd commits concurrent proposals together; the batches touch distinct keys, so their
order does not matter - except where a cycle made room: a preemption or reclaim victim's
eviction is committed before any placement, and a placement decided after a victim whose
eviction did not land is held back (see `write`), so a queue never holds a victim and the
job admitted in its place at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

from federation import errors
from federation.registry import codec, keys
from federation.registry import store as st
from policies.models import binding as binding_model
from policies.models.binding import Binding

__all__ = ["CLAIMED_BY", "FINGERPRINT", "Binder", "WriteReport", "binding_ref", "same"]

CODEC = codec.Codec(Binding)
FINGERPRINT = "fedctl.io/fingerprint"
"""Annotation of a Scheduled Binding: the workload and policy digest it was admitted under
(`fingerprint.fingerprint`), so a new leader sees an edit made while none led."""
CLAIMED_BY = binding_model.CLAIMED_BY


def binding_ref(binding: Binding) -> keys.WorkloadRef:
    w = binding.spec.workload
    return keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.name)


_Op = tuple[str, Binding, Binding | None, Binding, st.Create | st.Update, st.Check | None]
"""(key, the Binding given, the one last seen there, the one to write, its operation, the
check on its workload's status the decision asked for)."""


@dataclass
class WriteReport:
    written: int = 0
    unchanged: int = 0
    transactions: int = 0
    retried: int = 0
    superseded: int = 0
    """Decisions dropped because another writer moved the workload since they were made."""
    dropped: list[str] = field(default_factory=list)
    """The keys of those decisions."""
    held_back: list[str] = field(default_factory=list)
    """Placements not written because room they were decided into was not freed."""
    restated: list[str] = field(default_factory=list)
    """Keys of decisions dropped because their workload's status changed since they were
    read (`write`'s `checks`); also in `dropped`. Nothing else will wake the caller for
    them (the Binding did not change), so it decides them again itself."""


class Binder:
    """Remembers the revision of every Binding it wrote or read, to CAS the next write."""

    def __init__(
        self,
        store: st.Store,
        *,
        batch: int = 100,
        guards: Sequence[st.Guard] = (),
        in_flight: int = 4,
        echoes: codec.Echoes[Binding] | None = None,
    ):
        if not 1 <= batch <= 120:
            raise ValueError("batch must be 1..120 operations (etcd's default limit is 128)")
        if in_flight < 1:
            raise ValueError("in_flight must be at least 1")
        self.typed = codec.TypedStore(store, CODEC)
        self.batch = batch
        self.in_flight = in_flight
        self.echoes = echoes
        """Told of every batch before it is sent (and of its failure), so the caller's own
        watch of the Bindings takes these objects back rather than decoding them."""
        self.guards = tuple(guards)
        self._known: dict[str, tuple[int, Binding]] = {}

    async def load(self, listed: Iterable[codec.Stored[Binding]] | None = None) -> int:
        """Learn every stored Binding (at start-up or after a resync); returns how many.

        `listed`: Bindings the caller has just listed itself (the scheduling loop's mirror),
        so a new leader does not list and decode every Binding twice before its first cycle.
        """
        if listed is None:
            listed = (await self.typed.list(keys.prefix("bindings"))).items
        self._known = {item.key: (item.revision, item.obj) for item in listed}
        return len(self._known)

    def stored(self, key: str) -> tuple[int, Binding] | None:
        """The revision and Binding last written or read at `key`, if any."""
        return self._known.get(key)

    def forget(self, key: str) -> None:
        """Drop what is known of `key` (after the caller deleted it)."""
        self._known.pop(key, None)

    def known(self, binding: Binding) -> Binding | None:
        entry = self._known.get(keys.binding_key(binding_ref(binding)))
        return entry[1] if entry else None

    async def write(
        self,
        bindings: Sequence[Binding],
        *,
        freeing: Collection[str] = (),
        placing: Collection[str] = (),
        checks: Mapping[str, int] | None = None,
    ) -> WriteReport:
        """Write the Bindings that differ from what is stored; CAS, in batched transactions.

        `bindings` come in the order they were decided. `freeing`: keys of evictions whose
        room later decisions may use (preemption and reclaim victims); `placing`: keys of
        admissions. The evictions are committed first, on their own: the batches of one
        write run concurrently, so a victim's batch could otherwise fail (etcd restarting,
        the leadership lost) after its preemptor's committed, and a victim another writer
        moved meanwhile is dropped as superseded while its preemptor's admission stands;
        either way the queue would hold both, over its capability. So when an eviction
        raises, nothing else is written; when one is superseded, every admission decided
        after it is held back (`WriteReport.held_back`) for the next cycle to decide again.

        `checks`: Binding key -> the mod revision of its workload's status the decision was
        made on (0: none stored). The Binding is written only if that status is unchanged,
        in the same transaction: a batch job moved (or evicted) at the moment its member
        reports it finished would otherwise be applied on its new member and run again. A
        failed check drops the decision (`WriteReport.restated`).
        """
        checks = checks or {}
        report = WriteReport()
        if freeing:
            keyed = [(keys.binding_key(binding_ref(b)), b) for b in bindings]
            first = [b for key, b in keyed if key in freeing]
            if first:
                await self._write(first, report, checks)
            lost = set(report.dropped)  # all of them evictions: nothing else was written yet
            rest: list[Binding] = []
            cut = False
            for key, b in keyed:
                if key in freeing:
                    cut = cut or key in lost
                elif cut and key in placing:
                    report.held_back.append(key)
                else:
                    rest.append(b)
            bindings = rest
        await self._write(bindings, report, checks)
        return report

    async def _write(
        self, bindings: Sequence[Binding], report: WriteReport, checks: Mapping[str, int]
    ) -> None:
        ops = self._ops(bindings, report, checks)
        # A check is one more comparison, and etcd counts a transaction's comparisons
        # against its operation limit: checked writes go in batches half as long.
        plain = [op for op in ops if op[5] is None]
        checked = [op for op in ops if op[5] is not None]
        chunks = st.batches(plain, itemgetter(4), most=self.batch)
        chunks += st.batches(checked, itemgetter(4), most=max(1, self.batch // 2))
        slots = asyncio.Semaphore(self.in_flight)
        if len(chunks) == 1:
            await self._commit(chunks[0], report, slots)
        elif chunks:
            # Every batch runs to its end even when one fails (a fenced leader, etcd gone):
            # what was committed is recorded, then the first error is raised.
            outcomes = await asyncio.gather(
                *(self._commit(c, report, slots) for c in chunks), return_exceptions=True
            )
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome

    def _ops(
        self, bindings: Sequence[Binding], report: WriteReport, checks: Mapping[str, int]
    ) -> list[_Op]:
        """A create or CAS update per Binding that differs from the one last seen.

        Of two Bindings given for one key the later holds: etcd refuses a transaction that
        names a key twice, and every Binding in it would be refused with it.
        """
        last = {keys.binding_key(binding_ref(b)): b for b in bindings}
        ops: list[_Op] = []
        for key, given in last.items():
            revision = checks.get(key)
            check = None
            if revision is not None:
                check = st.Check(keys.workload_status_key(binding_ref(given)), revision)
            entry = self._known.get(key)
            if entry is None:
                ops.append((key, given, None, given, self.typed.create_op(key, given), check))
                continue
            binding = _merged(entry[1], given)
            if same(entry[1], binding):
                report.unchanged += 1
                continue
            op = self.typed.update_op(key, binding, revision=entry[0])
            ops.append((key, given, entry[1], binding, op, check))
        return ops

    async def _commit(
        self, chunk: list[_Op], report: WriteReport, slots: asyncio.Semaphore
    ) -> None:
        """One transaction; on a lost race, each of its Bindings again on its own."""
        echoes = self.echoes
        async with slots:
            if echoes is not None:  # before the commit: its watch event may come first
                for key, _, _, binding, op, _ in chunk:
                    echoes.wrote(key, op.value, binding)
            ops: list[st.Op] = [c[4] for c in chunk]
            ops += [c[5] for c in chunk if c[5] is not None]
            try:
                result = await self.typed.store.commit(ops, guards=self.guards)
            except BaseException as exc:
                if echoes is not None:  # nothing of it was written
                    for key, *_ in chunk:
                        echoes.forget(key)
                if not isinstance(exc, (errors.Conflict, errors.AlreadyExists, errors.NotFound)):
                    raise
                report.transactions += 1
                for key, given, seen, _, _, check in chunk:
                    # Merged again with what is stored now: the tasks merged above came
                    # from what this binder last saw, which failover may since have ended.
                    await self._one(key, given, seen, report, check)
                return
        report.transactions += 1
        report.written += len(chunk)
        for key, _, _, binding, *_ in chunk:
            self._known[key] = (result.revision, binding)

    async def _one(
        self,
        key: str,
        given: Binding,
        seen: Binding | None,
        report: WriteReport,
        check: st.Check | None = None,
    ) -> None:
        """Write one Binding after a lost race. If the workload was moved meanwhile (failover
        evicted it, fail-back or `fedctl rebalance` moved it), the decision was made on a
        placement that is gone: it is dropped, and the next cycle decides from the new one.
        Otherwise another writer only amended it (eviction tasks): merge and write. With a
        `check`, each compare-and-swap carries it, and a lost check drops the decision."""
        report.retried += 1
        for _ in range(10):
            current = await self.typed.get(key)
            if (
                current is not None
                and seen is not None
                and current.obj.spec.clusters != seen.spec.clusters
            ):
                self._drop(key, current, report)
                return
            binding = given if current is None else _merged(current.obj, given)
            if current is not None and binding == current.obj:
                self._known[key] = (current.revision, current.obj)
                report.written += 1
                return
            op: st.Create | st.Update = (
                self.typed.create_op(key, binding)
                if current is None
                else self.typed.update_op(key, binding, revision=current.revision)
            )
            try:
                result = await self.typed.store.commit(
                    [op] if check is None else [op, check], guards=self.guards
                )
            except (errors.Conflict, errors.AlreadyExists, errors.NotFound) as exc:
                if check is not None and isinstance(exc, errors.Conflict) and exc.key == check.key:
                    self._drop(key, current, report)
                    report.restated.append(key)
                    return
                continue
            self._known[key] = (result.revision, binding)
            report.written += 1
            return
        raise errors.Conflict(key, expected=-1, current=-1)

    def _drop(self, key: str, current: codec.Stored[Binding] | None, report: WriteReport) -> None:
        """A decision superseded: what is stored stays, and is what this binder knows."""
        if current is not None:
            self._known[key] = (current.revision, current.obj)
        report.superseded += 1
        report.dropped.append(key)


def same(old: Binding, new: Binding) -> bool:
    """Equal placement, outcome, admitted fingerprint and claiming policy (the time of
    scheduling alone is not a change; a new fingerprint or claimant is, even on the same
    placement, or a restart would read the old one and place the workload again)."""
    old_notes, new_notes = old.metadata.annotations, new.metadata.annotations
    return (
        old.spec == new.spec
        and (old.status.phase, old.status.reason) == (new.status.phase, new.status.reason)
        and old_notes.get(FINGERPRINT) == new_notes.get(FINGERPRINT)
        and old_notes.get(CLAIMED_BY) == new_notes.get(CLAIMED_BY)
    )


def _merged(stored: Binding, new: Binding) -> Binding:
    """Eviction tasks belong to failover: keep the stored ones, but for those on clusters
    the new Binding has a task of its own for (a preemption's, a move's handover).

    And a placement decided again where the workload already is, under the same policy,
    keeps the stored status: its reason (say, which fail-back brought it there) and time
    still tell the last move. A change of claimant is news (a policy took the workload
    over, or the one that claimed it was deleted), so its reason is written.
    """
    if (
        new.status.phase == stored.status.phase == "Scheduled"
        and new.status.reason != stored.status.reason
        and new.spec.clusters == stored.spec.clusters
        and new.metadata.annotations.get(CLAIMED_BY) == stored.metadata.annotations.get(CLAIMED_BY)
    ):
        new = new.model_copy(update={"status": stored.status})
    if not stored.spec.eviction_tasks:
        return new
    own = {t.cluster for t in new.spec.eviction_tasks}
    kept = [t for t in stored.spec.eviction_tasks if t.cluster not in own]
    if not kept:
        return new
    spec = new.spec.model_copy(update={"eviction_tasks": [*new.spec.eviction_tasks, *kept]})
    return new.model_copy(update={"spec": spec})
