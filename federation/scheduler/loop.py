"""The scheduling loop inside `fedctl controller`: registry watches in, Bindings out.

Fed by list+watch mirrors of workloads, policies (queues, quotas, propagation policies),
clusters, cluster statuses, Bindings and workload statuses; feeds the registry with the
Bindings each cycle decides (through the binder, fenced by the election guards so a deposed
leader cannot write). The propagator and failover read those Bindings in turn.

Why a debounced, whole-view cycle: a change only marks work (STYLE.md §7: watches feed
queues); a burst of changes - 200 jobs applied at once, a monitor refreshing every cluster -
becomes one cycle a few tens of milliseconds later. Each cycle reads what it must consider
from the cache (`reconcile`): Scheduled Bindings are the admissions, so a restart never
admits twice, and jobs already placed are left alone unless their workload, policy or
clusters changed or failover evicted them. That reading is kept across cycles and redone
only for the workloads whose own workload, Binding or status the watches changed (all of
them when a policy, the clusters or the settings change), so a cycle with little to decide
costs little however many workloads are admitted. Workloads finishing or deleted free
their share and the cycle that follows at once reconsiders the jobs waiting behind them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import gc
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from federation import clock as clock_mod
from federation import errors, gcpause
from federation.cache import snapshot as snap
from federation.cache.currency import Currency
from federation.queue.pending import PendingJob, PendingStore
from federation.quota import accounting
from federation.registry import codec, events, keys, objects
from federation.registry import store as st
from federation.scheduler import admission as admission_mod
from federation.scheduler import binder as binder_mod
from federation.scheduler import cycle, fingerprint, reconcile, victims
from federation.scheduler import queue_view as qv
from federation.scheduler.mirrors import Mirror, Seen, Views
from federation.settings import SchedulerSettings
from policies.models.accelerator import AcceleratorProfile
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.frq import FederatedResourceQuota
from policies.models.propagation import (
    ClusterPropagationPolicy,
    FedctlClusterPropagationPolicy,
    FedctlPropagationPolicy,
    PropagationPolicy,
)
from policies.models.queue import Queue
from policies.models.work import WorkloadStatus

__all__ = ["SchedulerLoop"]

log = logging.getLogger(__name__)
_POLICY_TYPES = (
    PropagationPolicy,
    ClusterPropagationPolicy,
    FedctlPropagationPolicy,
    FedctlClusterPropagationPolicy,
)


class LoopMetrics(Protocol):
    """What the loop reports: how long decisions and Binding writes take (apart, so etcd's
    latency does not read as the scheduler's), and the evictions it committed."""

    def observe_decision(self, seconds: float) -> None: ...

    def observe_write(self, seconds: float) -> None: ...

    def observe_cycle(self, seconds: float, *, pending: int) -> None: ...

    def eviction(self, cluster: str, reason: str, *, replicas: int = 1) -> None: ...


def _binding_changed(old: Binding | None, new: Binding | None) -> bool:
    """Only what others do to Bindings matters: failover's evictions and deletions, and
    failover ending an eviction task of a waiting workload (a preemption victim's copy is
    gone from its member), which lets it back onto that cluster."""
    if new is None:
        return True
    if new.status.phase != "Pending":
        return False
    if new.status.reason.startswith("Evicted from"):
        return True
    return old is not None and len(new.spec.eviction_tasks) < len(old.spec.eviction_tasks)


def _status_changed(old: ClusterStatus | None, new: ClusterStatus | None) -> bool:
    """Whether a status write changes what a cycle reads from it (capacity, readiness,
    APIs, taints). A heartbeat alone does not: with tens of thousands of workloads admitted
    a cycle costs a good fraction of a second, and every member heartbeats."""
    if old is None or new is None:
        return True
    return (
        old.ready() != new.ready()
        or old.flavors != new.flavors
        or old.taints != new.taints
        or old.api_enablements != new.api_enablements
    )


def _located(
    snapshot: snap.Snapshot,
    ledger: reconcile.Ledger,
    bindings: Mapping[str, Binding],
    seen: Seen,
) -> snap.Snapshot:
    """`snapshot` knowing where pending workloads whose Binding was lost still run
    (`reconcile.located`), so each is placed again there rather than moved and restarted."""
    located = reconcile.located(
        ledger.pending, bindings=bindings, results=seen.results, known=snapshot.index
    )
    return dataclasses.replace(snapshot, located=located) if located else snapshot


def _finished_changed(old: WorkloadStatus | None, new: WorkloadStatus | None) -> bool:
    was = old is not None and old.phase in reconcile.FINISHED
    return was != (new is not None and new.phase in reconcile.FINISHED)


def _queued(result: cycle.CycleResult, bindings: Mapping[str, Binding]) -> list[Binding]:
    """Pending Bindings, with a reason, for the workloads beyond a cycle's batch that have
    none yet.

    Why: a cycle considers at most a batch of the pending workloads, in queue order. While
    the ones at the front cannot be admitted (their queue at capability, say), every cycle
    takes those same ones again, so a deep backlog's tail was never reached: its workloads
    had no Binding at all, indistinguishable from lost ones, and `fedctl describe` gave no
    reason. Only a cycle that admitted nothing writes these, so a backlog that drains (a
    sweep) pays no extra writes; a cycle that admits goes on at once to the next one.
    """
    decided = {str(binder_mod.binding_ref(b)) for b in result.bindings}
    reason = (
        "Queued behind earlier workloads: not considered yet (each cycle considers the "
        f"first {result.considered} pending workloads, in queue order)"
    )
    return [
        admission_mod.binding_for(job, reason=reason)
        for job in result.pending.jobs()
        if (key := str(job.ref)) not in bindings and key not in decided
    ]


def _charge(
    usage: accounting.Usage,
    ledger: reconcile.Ledger,
    changes: Mapping[str, accounting.Admission | None] | None,
) -> None:
    """Bring the loop's usage to the ledger's: what is admitted, and what the running
    copies of workloads waiting to be placed again hold."""
    if changes is not None:
        usage.apply(changes)
        return
    held = ledger.admitted
    if ledger.waiting:
        held = {**held, **ledger.waiting}
    usage.sync(held.values(), held.keys())


def _mark_fingerprints(bindings: Sequence[Binding], marks: dict[str, str]) -> None:
    """Store on each Scheduled Binding the fingerprint it was admitted under, so the next
    leader tells an edit made meanwhile from an unchanged workload (`recorded.admitted_as`).

    Set in place, not copied: the cycle builds every Binding (and its annotations dict)
    afresh per decision and nothing has seen it before this write, while a copy would cost
    about as much as building it. A Pending Binding carries none: it was admitted under
    nothing.
    """
    for binding in bindings:
        if binding.status.phase != "Scheduled":
            continue
        mark = marks.get(str(binder_mod.binding_ref(binding)))
        if mark is not None:
            binding.metadata.annotations[binder_mod.FINGERPRINT] = mark


def _mark_claims(bindings: Sequence[Binding], claims: Mapping[str, str]) -> None:
    """Record on each Binding the policy claiming its workload (`binder.CLAIMED_BY`), so the
    claim stands across policy changes and leaders as Karmada's does (`plan.claimant`).

    Pending ones too: Karmada claims a template before scheduling it. Set in place, as
    `_mark_fingerprints`; a workload no policy claims gets none.
    """
    if not claims:
        return
    for binding in bindings:
        claim = claims.get(str(binder_mod.binding_ref(binding)))
        if claim:
            binding.metadata.annotations[binder_mod.CLAIMED_BY] = claim


def _amended(amends: Mapping[str, Binding], decided: Sequence[Binding]) -> list[Binding]:
    """The Bindings amended to say their policy is gone (`recorded.orphaned`), but those
    the cycle just decided anew: one write per Binding."""
    taken = {str(binder_mod.binding_ref(b)) for b in decided}
    return [b for key, b in amends.items() if key not in taken]


_Decided = tuple[cycle.CycleResult, list[str]]
"""A cycle's decisions and the keys of the Bindings whose workload is gone."""


class SchedulerLoop:
    """Runs cycles while leading; `run()` is started and cancelled by the election."""

    def __init__(
        self,
        store: st.Store,
        *,
        settings: SchedulerSettings,
        clock: clock_mod.Clock,
        guards: Callable[[], Sequence[st.Guard]] | None = None,
        metrics: LoopMetrics | None = None,
        debounce: float | None = None,
        queue_view: qv.Published | None = None,
    ) -> None:
        """`queue_view`: where each cycle publishes its queue tally for the status view."""
        self.store, self.settings, self.clock = store, settings, clock
        self.guards, self.metrics = guards, metrics
        self.queue_view = queue_view
        self._leading = False
        self._tally: tuple[qv.Tally, int] | None = None
        self.debounce = settings.cycle_debounce if debounce is None else debounce
        self.scheduler = cycle.Scheduler(settings, clock=clock)
        self._currency = Currency.of(settings)
        self._unpriced: dict[str, str] = {}
        self._recorder = events.Recorder(store, clock=clock, source="scheduler")
        obj = objects.ObjectCodec()
        self.workloads = Mirror(codec.TypedStore(store, obj), keys.prefix("workloads"), self._any)
        self.policies = Mirror(codec.TypedStore(store, obj), keys.prefix("policies"), self._any)
        self.clusters = Mirror(
            codec.TypedStore(store, codec.Codec(Cluster)), keys.prefix("clusters"), self._any
        )
        self.statuses = Mirror(
            codec.TypedStore(store, codec.Codec(ClusterStatus)),
            keys.prefix("clusterstatus"),
            self._status,
        )
        self._echoes: codec.Echoes[Binding] = codec.Echoes()
        self.bindings = Mirror(
            codec.TypedStore(store, codec.Codec(Binding), echoes=self._echoes),
            keys.prefix("bindings"),
            self._evicted,
        )
        self.results = Mirror(
            codec.TypedStore(store, codec.Codec(WorkloadStatus)),
            keys.prefix("workloadstatus"),
            self._finished,
        )
        self._mirrors: tuple[Mirror[Any], ...] = (
            self.workloads,
            self.policies,
            self.clusters,
            self.statuses,
            self.bindings,
            self.results,
        )
        self._dirty = asyncio.Event()
        self._urgent = False
        self._fingerprints: dict[str, str] = {}
        self._claims: dict[str, str] = {}
        self._memo: dict[str, tuple[Binding, str, accounting.Admission]] = {}
        self._prepared = reconcile.Prepared()
        self._usage = accounting.Usage()
        self._ledger = reconcile.Ledger()
        # What the cycles derive from the mirrors, kept across cycles and changed only where
        # a mirror did (or a write of this loop not yet seen): workloads, Bindings and
        # phases by workload ref, and each stored key's ref.
        self._views = Views()
        self._written: dict[str, tuple[int, Binding | None]] = {}
        self._results_seen = 0
        """The workload statuses' revision the cycle running read (`_unfinished`)."""
        self._snapshots = snap.BuildCache()
        self._batch = settings.cycle_batch
        self._deciding = threading.Lock()
        self.cycles = 0
        self.last: cycle.CycleResult | None = None
        self.ready = asyncio.Event()

    # -- change marking (watch callbacks: cheap, no I/O)

    def _any(self, old: object, new: object) -> None:
        self._dirty.set()

    def _status(self, old: ClusterStatus | None, new: ClusterStatus | None) -> None:
        if _status_changed(old, new):
            self._dirty.set()

    def _evicted(self, old: Binding | None, new: Binding | None) -> None:
        if _binding_changed(old, new):
            self._dirty.set()

    def _finished(self, old: WorkloadStatus | None, new: WorkloadStatus | None) -> None:
        if _finished_changed(old, new):
            self._urgent = True  # freed share: reconsider the waiting jobs at once
            self._dirty.set()

    # -- the loop

    async def run(self) -> None:
        """Load the mirrors, then cycle after each (debounced) change, until cancelled."""
        # A cycle of a term that ended may still be deciding in its thread: let it finish
        # before this term resets what it reads.
        await asyncio.to_thread(self._deciding.acquire)
        try:
            self._written.clear()
            self._fingerprints.clear()
            self._claims.clear()
            self._memo.clear()
            self._prepared = reconcile.Prepared()
            self._usage = accounting.Usage()
            self._ledger = reconcile.Ledger()
            self._views = Views()
            self._snapshots = snap.BuildCache()
        finally:
            self._deciding.release()
        guards = tuple(self.guards()) if self.guards is not None else ()
        self._echoes = codec.Echoes()
        self.bindings.typed.echoes = self._echoes
        binder = binder_mod.Binder(self.store, guards=guards, echoes=self._echoes)
        try:
            await self._load(binder)
            self._dirty.set()
            self._leading = True
            async with asyncio.TaskGroup() as group:
                for mirror in self._mirrors:
                    group.create_task(mirror.run(), name=f"scheduler-watch-{mirror.prefix}")
                group.create_task(self._cycles(binder), name="scheduler-cycles")
        finally:
            self._leading = False
            if self.queue_view is not None:
                self.queue_view.withdraw()  # the API reads the registry until a leader publishes
            gc.unfreeze()

    async def _load(self, binder: binder_mod.Binder) -> None:
        """List every mirror at once, then keep the collector off what they hold.

        The lists go out together so etcd reads and sends one while this process decodes
        another. What they decode (an object graph per stored workload and Binding) lives
        as long as this leader leads, yet each collection the allocations set off would
        walk all of it again, young then older, about a second at 20,000 workloads, for
        nothing: those objects hold no reference cycles and are freed by reference count
        when replaced. So the collector stays paused across the load and the result is
        frozen (moved out of the generations it scans); `run()` unfreezes when leadership
        ends, returning whatever is still alive to the oldest generation. Both are process
        wide: other tasks allocate without collections for the seconds the load takes, and
        cyclic garbage still uncollected at the freeze waits for that unfreeze.
        """
        with gcpause.paused():
            async with asyncio.TaskGroup() as loading:
                for mirror in self._mirrors:
                    loading.create_task(mirror.load(), name=f"scheduler-list-{mirror.prefix}")
            await binder.load(list(self.bindings.items.values()))
            gc.freeze()

    async def _cycles(self, binder: binder_mod.Binder) -> None:
        while True:
            await self._dirty.wait()
            if not self._urgent:
                await self.clock.sleep(self.debounce)
            self._dirty.clear()
            self._urgent = False
            try:
                await self.cycle_once(binder)
            except errors.Fenced:
                raise
            except errors.FedctlError as exc:  # a registry hiccup: the next change retries
                log.warning("scheduling cycle failed: %s", exc)
                await self.clock.sleep(self.debounce)
                self._dirty.set()
            self.ready.set()

    async def cycle_once(self, binder: binder_mod.Binder) -> cycle.CycleResult:
        """One cycle over the current cache; returns what it decided.

        1. snapshot  - clusters joined with the monitor's statuses, queues, quotas, Bindings.
        2. reconcile - pending jobs and the admitted usage, read from the Bindings.
        3. decide    - `Scheduler.run_cycle` (pure).
        4. remember  - fingerprints of what is admitted now and the claiming policies,
                       also on their Bindings.
        5. write     - changed Bindings (CAS, batched, fenced); stale ones deleted.
        """
        began = self.clock.monotonic()
        with gcpause.paused():  # steps 1-4 allocate per stored object; none of it is garbage
            result, stale = await self._decide()
        result.bindings = self._unfinished(result.bindings)
        await self._write(binder, result, stale)  # step 5
        tally, self._tally = self._tally, None
        if tally is not None and self.queue_view is not None and self._leading:
            edition = qv.Edition(tally[0], tally[1], self.clock.monotonic())
            self.queue_view.publish(edition, self._dirty.is_set)
        if result.admitted and result.exhausted:
            self._dirty.set()  # jobs beyond this cycle's batch are still waiting
        self.cycles += 1
        self.last = result
        if self.metrics is not None:  # each decision's own time, the write not included
            for seconds in result.decision_seconds:
                self.metrics.observe_decision(seconds)
            self.metrics.observe_cycle(self.clock.monotonic() - began, pending=len(result.pending))
        return result

    async def _decide(self) -> _Decided:
        """Steps 1-4 of `cycle_once`: everything but the write, without I/O.

        Run in a worker thread on copies of the mirrors taken here: a cycle takes up to a
        few seconds of CPU (reading thousands of new workloads, deciding a batch), and the
        API, the other controllers' watches and the leader lease share this event loop,
        which the interpreter hands the lock every few milliseconds meanwhile. Safe because
        the thread reads only those copies and state no one else touches while a cycle runs
        (the loop's memos, usage and scheduler caches, `_written`, which only `cycle_once`
        changes, after this returns); `_deciding` keeps a cycle left running by a lost
        leadership from overlapping the next leader term's first one.
        """
        self._results_seen = self.results.seen
        seen = Seen(
            workloads=dict(self.workloads.items),
            policies=self.policies.objects(),
            clusters=[i.obj for i in self.clusters.items.values()],
            statuses=dict(self.statuses.items),
            bindings=dict(self.bindings.items),
            results=dict(self.results.items),
            changed=(self.workloads.changes(), self.bindings.changes(), self.results.changes()),
            revision=max(m.seen for m in self._mirrors),
        )
        return await asyncio.to_thread(self._decide_seen, seen, self.clock.now())

    def _decide_seen(self, seen: Seen, now: dt.datetime) -> _Decided:
        with self._deciding:
            try:
                return self._steps(seen, now)
            except BaseException:
                self._views = Views()  # the changes this cycle took are lost with it
                raise

    def _steps(self, seen: Seen, now: dt.datetime) -> _Decided:
        clusters = seen.clusters
        statuses = {key.rpartition("/")[2]: i.obj for key, i in seen.statuses.items()}
        for c in clusters:
            if c.name not in statuses and c.status is not None:
                statuses[c.name] = c.status
        policies = seen.policies
        views = self._views
        dirty = views.update(seen, self._written)
        snapshot = snap.build(  # step 1
            clusters,
            statuses=statuses,
            queues=[p for p in policies if isinstance(p, Queue)],
            quotas=[p for p in policies if isinstance(p, FederatedResourceQuota)],
            bindings=views.bindings,
            cache=self._snapshots,
            currency=self._currency,
            profiles=[p for p in policies if isinstance(p, AcceleratorProfile)],
        )
        self._say_unpriced(snapshot)
        ready = fingerprint.placeable(snapshot.clusters)
        ledger = self._ledger
        changes = ledger.update(  # step 2
            dirty,
            workloads=views.entries,
            bindings=views.bindings,
            phases=views.phases,
            policies=[p for p in policies if isinstance(p, _POLICY_TYPES)],
            clusters=[c.name for c in clusters],
            fingerprints=self._fingerprints,
            claims=self._claims,
            ready=ready,
            memo=self._memo,
            prepared=self._prepared,
            settings=self.settings,
            device_resources=snapshot.device_resources,
            chip_devices=snapshot.chip_devices,
        )
        pending = PendingStore(ledger.pending.values())
        snapshot = _located(snapshot, ledger, views.bindings, seen)
        self._batch = cycle.batch_for(len(pending), self.settings)
        _charge(self._usage, ledger, changes)
        result = self.scheduler.run_cycle(  # step 3
            snapshot, pending, self._usage, now, batch=self._batch
        )
        if changes is None or dirty is None:  # step 4
            self._fingerprints = ledger.fingerprints()
            self._claims = ledger.held()
        else:  # the admitted marks and the claims, where the ledger sorted again
            for key in dirty:
                mark = ledger.marks.get(key) if key in ledger.admitted else None
                if mark is None:
                    self._fingerprints.pop(key, None)
                else:
                    self._fingerprints[key] = mark
                claim = ledger.held_by(key)
                if claim is None:
                    self._claims.pop(key, None)
                else:
                    self._claims[key] = claim
        for admission in result.admitted:
            if isinstance(admission.job, PendingJob):
                key = str(admission.ref)
                mark = ledger.marks[key]  # every job the cycle saw was read by reconcile
                self._fingerprints[key] = mark
                views.redo.add(key)
        for victim, _ in result.evicted:
            self._fingerprints.pop(str(victim.ref), None)
            views.redo.add(str(victim.ref))
        _mark_fingerprints(result.bindings, self._fingerprints)
        if not result.admitted and result.exhausted:
            result.bindings.extend(_queued(result, views.bindings))
        _mark_claims(result.bindings, ledger.claims)
        if ledger.amends:  # workloads kept where the policy they lost placed them
            result.bindings.extend(_amended(ledger.amends, result.bindings))
        if self.queue_view is not None:  # published by `cycle_once` once written
            waiting: dict[str, int] = {}
            for key, held in ledger.waiting.items():
                if key in result.usage and held.ref in result.pending:
                    waiting[held.queue] = waiting.get(held.queue, 0) + 1
            tally = qv.tally(snapshot, result.usage, result.pending.counts(), waiting)
            self._tally = (tally, seen.revision)
        return result, list(ledger.stale.values())

    def _say_unpriced(self, snapshot: snap.Snapshot) -> None:
        """Log, once each, the clusters whose prices the federation cannot compare (a
        currency with no exchange rate): their costs drop out of every placement."""
        unpriced = {c.name: c.price_note for c in snapshot.clusters if c.price_note}
        for name, note in sorted(unpriced.items()):
            if self._unpriced.get(name) != note:
                log.warning("scheduler: cluster %s is %s", name, note)
        self._unpriced = unpriced

    def _unfinished(self, bindings: list[Binding]) -> list[Binding]:
        """The Bindings decided for workloads that did not finish while the cycle ran.

        A job's Succeeded status can arrive after the cycle copied the mirrors and before
        its decisions are written: picked as a preemption or reclaim victim then (or placed
        again), its Binding would go Pending and its finished copy be purged for nothing.
        Its decision is dropped instead; the next cycle reads it finished (its share is
        free by then, so a preemptor admitted in its place still fits). A status landing
        after this check fails the write of a decision that moves the job (`_moving_jobs`),
        and the propagator keeps a finished job's status when its copy goes
        (`WorkRecords.status`), so it is never queued to run again.
        """
        if self.results.seen == self._results_seen or not bindings:
            return bindings
        decided, live = self._views.phases, self.results.items
        kept = []
        for b in bindings:
            ref = binder_mod.binding_ref(b)
            status = live.get(keys.workload_status_key(ref))
            if (
                status is not None
                and status.obj.phase in reconcile.FINISHED
                and decided.get(str(ref)) not in reconcile.FINISHED
            ):
                log.info("scheduler: %s finished while the cycle ran; its decision dropped", ref)
                self._dirty.set()
                continue
            kept.append(b)
        return kept

    def _moving_jobs(
        self, binder: binder_mod.Binder, bindings: Sequence[Binding]
    ) -> dict[str, int]:
        """Binding key -> its workload status's revision, for each batch job these
        Bindings take off a member it is placed on (moved, or evicted to make room).

        `_unfinished` drops such a decision when the job's Succeeded status came while the
        cycle ran; one landing after that is caught by the write, which holds only while
        the status is still the one read here (`Binder.write`'s `checks`): applied on its
        new member, a job that had finished would run again. Services are left out: their
        statuses change with every pod that becomes ready, and moving one runs nothing
        twice.
        """
        checks: dict[str, int] = {}
        entries, live = self._views.entries, self.results.items
        for b in bindings:
            key = keys.binding_key(binder_mod.binding_ref(b))
            stored = binder.stored(key)
            if stored is None or not stored[1].spec.clusters:
                continue
            if {t.name: t.replicas for t in b.spec.clusters} == {
                t.name: t.replicas for t in stored[1].spec.clusters
            }:
                continue
            ref = binder_mod.binding_ref(b)
            entry = entries.get(str(ref))
            if entry is None or not entry.workload.is_batch:
                continue
            status = live.get(keys.workload_status_key(ref))
            checks[key] = status.revision if status is not None else 0
        return checks

    async def _write(
        self, binder: binder_mod.Binder, result: cycle.CycleResult, stale: Sequence[str]
    ) -> None:
        bindings = result.bindings
        landed: list[tuple[accounting.Admission, str]] = []
        if bindings:
            # Victims' evictions first; an admission decided after one that another writer
            # superseded is held back (`Binder.write`), so no queue holds both.
            freeing = {keys.binding_key(victim.ref) for victim, _ in result.evicted}
            placing = {keys.binding_key(a.ref) for a in result.admitted} if freeing else set()
            before = {key: _revision(binder, key) for key in freeing}
            checks = self._moving_jobs(binder, bindings)
            began = self.clock.monotonic()
            report = await binder.write(bindings, freeing=freeing, placing=placing, checks=checks)
            if self.metrics is not None:
                self.metrics.observe_write(self.clock.monotonic() - began)
            for b in bindings:
                key = keys.binding_key(binder_mod.binding_ref(b))
                entry = binder.stored(key)  # the revision the write got
                if entry is not None:
                    self._written[key] = entry
            log.debug("scheduler wrote %d Bindings in %d txns", report.written, report.transactions)
            for key in [*report.held_back, *report.restated]:  # decided again next cycle
                ref = str(keys.parse_workload_key(key))
                self._fingerprints.pop(ref, None)
                self._views.redo.add(ref)
            if report.superseded or report.held_back:
                self._dirty.set()  # moved by another writer meanwhile: decide again from there
            # A write that raised records nothing here: what it committed of the evictions
            # goes untold (the registry refused the rest; an event would be refused too).
            dropped = set(report.dropped)
            landed = [
                (victim, reason)
                for victim, reason in result.evicted
                if (key := keys.binding_key(victim.ref)) not in dropped
                and _revision(binder, key) != before[key]
            ]
        for key in stale:
            try:
                deleted = await self.store.commit([st.Delete(key)], guards=binder.guards)
            except errors.NotFound:
                continue
            self._written[key] = (deleted.revision, None)
            binder.forget(key)
        if landed:
            await self._tell(landed, guards=binder.guards)

    async def _tell(
        self, landed: Sequence[tuple[accounting.Admission, str]], *, guards: Sequence[st.Guard]
    ) -> None:
        """Count the committed evictions and record an event on each victim (`victims`).

        After the Bindings, never with them: the binder's batches and retries decide which
        evictions land, and an event must tell only of those. An event the registry
        refuses is lost, not retried: the evictions stand, and the next cycle must not
        wait for their story.
        """
        if self.metrics is not None:
            for victim, reason in landed:
                label = victims.kind(reason).lower()
                for cluster, replicas in sorted(victim.placement.items()):
                    self.metrics.eviction(cluster, label, replicas=replicas)
        now = self.clock.now()
        try:
            ops: list[st.Op] = []
            for victim, reason in landed:
                told = [victims.event(victim, reason, now=now)]
                ops += await self._recorder.ops(victim.ref, told)
            for chunk in st.batches(ops, lambda op: op, most=100):
                await self.store.commit(chunk, guards=guards)
        except errors.Fenced:
            raise
        except errors.FedctlError as exc:
            log.warning("scheduler: %d eviction events not recorded: %s", len(landed), exc)


def _revision(binder: binder_mod.Binder, key: str) -> int | None:
    """The revision the binder last wrote or read at `key` (None: none known)."""
    entry = binder.stored(key)
    return entry[0] if entry is not None else None
