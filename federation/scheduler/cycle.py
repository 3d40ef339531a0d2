"""One scheduling cycle: numbered steps over an immutable snapshot (STYLE.md §6).

Fed by the snapshot (clusters, queues, quotas, bindings), the pending store and admitted
usage; returns a `CycleResult` with the Bindings to write, the new pending store and the
new usage. `Scheduler.run_cycle` is pure: it works on copies, so `fedctl plan` and the
controller run the very same code, and the caller (the controller loop, fed by registry
watches) swaps the results in and hands the Bindings to the binder.

The steps:
 1. heads      - queues ordered by weighted dominant-resource share (level by level under
                 a queue hierarchy); each yields its jobs by priority then FIFO (a
                 StrictFIFO queue stops at a head that fails).
                 A job whose queue takes no work (not defined, or a parent) is held here.
 2. snapshot   - a `CycleState`: capacity and usage copied from the inputs.
 3. filter     - static plugins (cached per request signature), then capacity, cost cap and
                 quota over the survivors.
 4. score      - weighted plugins, each normalised to 0-100.
 5. divide     - one cluster for a gang or a job without policy; else spread + division.
                 Steps 3-5 for a whole-to-one-cluster job run incrementally (`incremental`):
                 per-signature scores refreshed only where capacity changed, same answer.
 6. admit      - queue capability, namespace quota and lending of idle capacity; when that
                 fails, preemption inside the queue or reclaim across queues (each can be
                 switched off), victims re-queued, never lost.
 7. bindings   - Scheduled Bindings for admitted jobs, Pending ones with the reason.
 8. requeue    - everything not admitted stays pending with its reason.

A job that asks exactly what an earlier job of this cycle asked (same queue, namespace,
priority and request) after that one was refused, with no admission or eviction since, is
refused with the same reason at a sixteenth of a decision's share of the batch (`_REPEAT_COST`):
a deep backlog of identical jobs waiting for their queue's quota no longer keeps the
cycle from reaching the smaller jobs behind it.
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from federation import clock as clock_mod
from federation import gcpause
from federation.cache import snapshot as snap
from federation.queue import fairshare
from federation.queue.pending import PendingJob, PendingStore
from federation.quota import accounting, hierarchy
from federation.scheduler import admission, explain
from federation.scheduler import framework as fw
from federation.scheduler import placement as pl
from federation.scheduler.plugins import default_registry, quota
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.queue import Queue, priority_classes

__all__ = ["CycleResult", "Scheduler", "batch_for"]

_WAITS = frozenset({"capacity", "division", "cost", "static"})
"""Placement failures that room, prices or members freeing up could end: a limit the job
exceeds on its own is said instead. "static" too: a member down (health) or tainted filters
every cluster the job may use, and "1 filtered by health" had a job over its queue's limit
wait for a member whose return admits nothing."""
_REPEAT_COST = 1 / 16
"""A repeated refusal's share of the batch: it costs a lookup, not a placement."""


@dataclass
class CycleResult:
    """What one cycle decided. `bindings` holds only Bindings whose content changed."""

    bindings: list[Binding] = field(default_factory=list)
    admitted: list[accounting.Admission] = field(default_factory=list)
    evicted: list[tuple[accounting.Admission, str]] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    pending: PendingStore = field(default_factory=PendingStore)
    usage: accounting.Usage = field(default_factory=accounting.Usage)
    timings: fw.Timings = field(default_factory=fw.Timings)
    decisions: int = 0
    decision_seconds: list[float] = field(default_factory=list)
    """Each decision's own time, from its placement to its admission settled (the
    Binding built, not written): what `fedctl_scheduling_decision_seconds` observes and
    the bench's latency percentiles are taken from."""
    repeated: int = 0
    """Jobs refused as an identical earlier one was, without placing them again."""
    exhausted: bool = False
    """The batch ran out with jobs left that this cycle did not consider."""

    @property
    def considered(self) -> int:
        return self.decisions + self.repeated


class Scheduler:
    """Owns the plugins and the per-workload request cache; `run_cycle` is pure."""

    def __init__(
        self,
        settings: SchedulerSettings | None = None,
        *,
        registry: fw.Registry | None = None,
        clock: clock_mod.Clock = clock_mod.real,
    ) -> None:
        """`clock` times each decision (`CycleResult.decision_seconds`), and nothing else:
        the cycle's choices never depend on it."""
        self.settings = settings or SchedulerSettings()
        self.clock = clock
        self.plugins = (registry or default_registry()).build(self.settings)
        self.timings = fw.Timings()
        self.placer = pl.Placer(
            self.plugins, weights=dict(self.settings.score_weights), timings=self.timings
        )
        self._requests: dict[int, fw.JobRequest] = {}
        self._stopped: set[str] = set()
        """Strict queues a refused head stopped this cycle (until an eviction frees room)."""
        self._stopped_by: dict[str, PendingJob] = {}
        """Per strict queue stopped, the workload whose refusal stopped it."""
        self._requests_of: snap.Snapshot | None = None
        self._stamps: dict[tuple[object, ...], tuple[object, object, object, fw.JobRequest]] = {}
        self._stamps_by_id: dict[int, tuple[Any, ...]] = {}
        self._contents: dict[tuple[object, ...], tuple[object, object, fw.JobRequest]] = {}

    def request(self, job: PendingJob, snapshot: snap.Snapshot) -> fw.JobRequest:
        """The job's request, read once per pending entry (and previous placement)."""
        if snapshot is not self._requests_of:
            # A request depends on the snapshot too (its previous placement, the device
            # resources), and the controller keeps a job's entry across cycles.
            self._requests, self._requests_of = {}, snapshot
        cached = self._requests.get(id(job))
        if cached is not None and cached.job is job:
            return cached
        previous = snapshot.bindings.get(str(job.ref)) if snapshot.bindings else None
        located = snapshot.located.get(str(job.ref)) if previous is None else None
        if located:
            # Its Binding lost, its copies still run: placed as if that Binding named them,
            # their pods the workload's own room there (`reconcile.located`).
            request = fw.request_for(
                job,
                settings=self.settings,
                device_resources=snapshot.device_resources,
                previous=located,
                held_pod=job.workload.pod_requests(),
            )
        elif previous is None or not (previous.spec.clusters or previous.spec.eviction_tasks):
            # No placement to keep or leave (a Pending Binding: a job that waits, cycle
            # after cycle): the same request as a job never bound, so it is shared too.
            request = self._stamped(job, snapshot)
        else:
            request = fw.request_for(
                job,
                settings=self.settings,
                device_resources=snapshot.device_resources,
                previous=previous.placement(),
                evicting=_barred(previous, snapshot, job),
                held_pod=previous.spec.placed_pod(),
                held_chips={t.name: t.chip for t in previous.spec.clusters},
            )
        self._requests[id(job)] = request
        return request

    def _stamped(self, job: PendingJob, snapshot: snap.Snapshot) -> fw.JobRequest:
        """The request of a job stamped from the same spec, policy and annotations as one
        read earlier this cycle (job arrays, generated batches): read once, shared."""
        w = job.workload
        annotations = w.metadata.annotations
        # First by identity: jobs stamped from one template share the very spec, policy and
        # annotation objects, so the hashed key below need not be built for each of them.
        quick = self._stamps_by_id.get(id(w.spec))
        if (
            quick is not None
            and quick[0] is w.spec
            and quick[1] is annotations
            and quick[2] is job.placement
            and quick[3] is job.fedctl
            and quick[4] is snapshot.device_resources
            and quick[5] == (w.api_version, w.kind)
        ):
            template: fw.JobRequest = quick[6]
            return template.for_job(job)
        key = (
            id(w.spec),
            w.api_version,
            w.kind,
            tuple(w.metadata.annotations.items()),
            id(job.placement),
            id(job.fedctl),
            snapshot.device_resources,
        )
        hit = self._stamps.get(key)
        if hit is not None:
            spec, placement, fedctl, template = hit
            if spec is w.spec and placement is job.placement and fedctl is job.fedctl:
                self._remember(job, snapshot, template)
                return template.for_job(job)
        # Then by content: workloads read from the registry are distinct objects even when
        # they ask for the same thing (a sweep, many small services), and reading one into a
        # request costs far more than this key. It holds everything `request_for` reads
        # from the workload besides what the hashed key above already names.
        content = (key[1:], fw.workload_reads(w))
        shared = self._contents.get(content)
        if shared is not None and shared[0] is job.placement and shared[1] is job.fedctl:
            request = shared[2].for_job(job)
        else:
            request = fw.request_for(
                job, settings=self.settings, device_resources=snapshot.device_resources
            )
            self._contents[content] = (job.placement, job.fedctl, request)
        self._stamps[key] = (w.spec, job.placement, job.fedctl, request)
        self._remember(job, snapshot, request)
        return request

    def _remember(self, job: PendingJob, snapshot: snap.Snapshot, request: fw.JobRequest) -> None:
        w = job.workload
        self._stamps_by_id[id(w.spec)] = (
            w.spec,
            w.metadata.annotations,
            job.placement,
            job.fedctl,
            snapshot.device_resources,
            (w.api_version, w.kind),
            request,
        )

    def run_cycle(
        self,
        snapshot: snap.Snapshot,
        pending: PendingStore,
        usage: accounting.Usage,
        now: dt.datetime,
        *,
        batch: int | None = None,
    ) -> CycleResult:
        """Steps 1-8 above, on copies of `pending` and `usage`; at most `batch` decisions
        (default `cycle_batch`), the rest left pending for the next cycle.

        The cyclic garbage collector is paused for the cycle: every decision allocates a
        handful of objects that all outlive it (Bindings, admissions), so its passes over
        them only cost time; it runs again, as before, when the cycle returns.
        """
        with gcpause.paused():
            result = CycleResult(pending=pending.copy(), usage=usage.copy(), timings=self.timings)
            _name_priorities(result.pending, snapshot.queues)
            self._forget_stamps()  # specs are immutable, but only within a cycle is that relied on
            state = fw.CycleState(snapshot, result.usage, self.settings)  # step 2
            admit = admission.Admitter(self, state, result, now=now)
            budget = float(self.settings.cycle_batch if batch is None else batch)
            refusals: dict[tuple[object, ...], str] = {}  # valid while nothing changes
            changes = (0, 0)
            for job in self._heads(snapshot, result):  # step 1
                if budget <= 0:
                    result.pending.add(job)  # untouched: next cycle
                    result.exhausted = True
                    break
                skipped = _set_aside(job, admit, result)
                if skipped is not None:
                    budget -= skipped
                    continue
                request = self.request(job, snapshot)
                if (len(result.evicted), len(result.admitted)) != changes:
                    # Room freed (an eviction): a refusal may no longer hold; room taken (an
                    # admission): it holds, but the numbers in its reason are out of date.
                    refusals.clear()
                    changes = (len(result.evicted), len(result.admitted))
                same = _refusal_key(job, request)
                known = refusals.get(same) if same is not None else None
                if known is not None:
                    budget -= _REPEAT_COST
                    result.repeated += 1
                    admit.hold(job, known, like=request)
                    result.pending.add(job.with_reason(known))
                    continue
                behind = admit.behind_victim(job) if admit.evicted_refs else None
                if behind is not None:  # the victim goes first, next cycle
                    budget -= _REPEAT_COST
                    result.pending.add(job.with_reason(behind))
                    continue
                budget -= 1
                result.decisions += 1
                if not self._decide(job, request, admit, snapshot.queues):  # steps 3-7
                    yield_back = result.reasons.get(str(job.ref), "")
                    result.pending.add(job.with_reason(yield_back))  # step 8
                    self._strict_stop(job, snapshot)
                    unchanged = (len(result.evicted), len(result.admitted)) == changes
                    if same is not None and yield_back and unchanged:
                        refusals[same] = yield_back
            self._finish(result, admit)
            return result

    def _decide(
        self,
        job: PendingJob,
        request: fw.JobRequest,
        admit: admission.Admitter,
        queues: Mapping[str, Queue],
    ) -> bool:
        """Steps 3-7 for one job, timed into `decision_seconds`; whether it was admitted."""
        began = self.clock.monotonic()
        refused = hierarchy.refusal(
            job.queue,
            queues,
            default=self.settings.default_queue,
            named_by=job.workload.queue_field,
        ) or _queue_refusal(job, queues)
        # A job waiting with copies still running (`reconcile`) is placed without their
        # charge, so it does not compete with itself; they keep it if it fails.
        own = admit.state.usage.release(job.ref) if request.holding else None
        admit.state.holds = own  # what a change asking no more passes limits with
        try:
            outcome = (  # steps 3-5, for a job its queue can take
                self._place(request, admit.state)
                if refused is None
                else pl.Failed(request, refused, "static")
            )
            settled = admit.settle(job, outcome, explained=refused is None)  # steps 6-7
        finally:
            admit.state.holds = None
        admit.result.decision_seconds.append(self.clock.monotonic() - began)
        if not settled and own is not None:
            admit.state.usage.admit(own)
        return settled

    def _finish(self, result: CycleResult, admit: admission.Admitter) -> None:
        """The cycle's last step: reasons for what a strict head held back; the requests
        of what still waits kept for the next cycle, the stamps dropped."""
        self._tell_behind(result, admit)
        self._requests = {k: v for k, v in self._requests.items() if v.job.ref in result.pending}
        self._forget_stamps()

    def _tell_behind(self, result: CycleResult, admit: admission.Admitter) -> None:
        """Give each workload waiting behind a StrictFIFO queue's refused head a reason.

        They were never met once the head stopped their queue, so their status read "not
        scheduled yet" for as long as the head waited (a head that can never fit blocks
        its queue for good, which nothing said). The reason names the head, not why it
        waits: that changes with every admission elsewhere, and would rewrite each of their
        Bindings with it; `fedctl describe` on the head says it. A head that can never be
        admitted is the exception: that does not change while the fleet and the limits do
        not, and the queue stays stalled until someone changes or deletes the head, so the
        workloads behind it say so.
        """
        for name, head in self._stopped_by.items():
            if name not in self._stopped:
                continue
            never = accounting.NEVER in result.reasons.get(str(head.ref), "")
            reason = (
                f"waiting behind {head.ref} in queue {name}, which admits in strict FIFO"
                " order (dequeueStrategy StrictFIFO): nothing behind its first workload is"
                " admitted before it"
            ) + (f", and {accounting.NEVER} as it stands: change or delete it" if never else "")
            for job in result.pending.ordered(name):
                if job.ref == head.ref or str(job.ref) in result.reasons:
                    continue  # judged this cycle, with a reason of its own
                if job.workload.is_suspended:  # it waits for no head, but for a resume
                    result.pending.add(replace(job, reason=admit.suspend(job)))
                    continue
                admit.hold(job, reason)
                result.pending.add(replace(job, reason=reason))

    def _place(self, request: fw.JobRequest, state: fw.CycleState) -> pl.Placed | pl.Failed:
        """Steps 3-5; a job that waits for room no limit would ever let it use is told so."""
        outcome = self.placer.place(request, state)
        if isinstance(outcome, pl.Failed) and outcome.kind in _WAITS:
            never = quota.never(request, state)
            if never is not None:
                return pl.Failed(request, never, "static")
        return outcome

    def _forget_stamps(self) -> None:
        self._stamps, self._stamps_by_id, self._contents = {}, {}, {}

    # -- step 1

    def _heads(
        self, snapshot: snap.Snapshot, result: CycleResult
    ) -> Generator[PendingJob, None, None]:
        self._stopped = set()
        self._stopped_by = {}
        # Each queue's order as it stood when the cycle began, pulled as needed: a job put
        # back meanwhile (not admitted, or a victim) waits for the next cycle, unless an
        # eviction frees room (`_restart`).
        iters = {q: result.pending.ordered(q) for q in result.pending.queues()}
        capacity = fairshare.shared_capacity(snapshot.capacity)

        def key(name: str) -> tuple[int, float, fairshare.ShareKey, str]:
            # `result.usage` is re-read: preemption may have swapped in its trial copy. The
            # share's float goes first so that the heap compares floats natively; only when
            # two tie does the exact share decide, as it would on its own.
            q = snapshot.queues.get(name)
            weight, prio = (q.spec.weight, q.spec.priority) if q is not None else (1, 0)
            share = fairshare.ShareKey(result.usage.queue_totals(name), capacity, weight)
            return (-prio, share.approx, share, name)

        tree = hierarchy.tree_of(snapshot.queues)
        if any(q in tree.ancestors for q in iters):
            yield from self._nested_heads(snapshot, result, iters, tree)
            return
        heap = [key(q) for q in iters]
        heapq.heapify(heap)
        evicted = len(result.evicted)
        while heap:
            name = heapq.heappop(heap)[3]
            if name in self._stopped:
                continue
            job = next(iters[name], None)
            if job is None:
                continue
            result.pending.remove(job.ref)
            yield job
            heapq.heappush(heap, key(name))
            if len(result.evicted) != evicted:
                # Preemption or reclaim took work from queues whose keys wait in the heap
                # as they were: key them all afresh, or a queue that lost its work would
                # still be served after one that holds more.
                evicted = len(result.evicted)
                iters = self._restart(result)
                heap = [key(q) for q in iters]
                heapq.heapify(heap)

    def _nested_heads(
        self,
        snapshot: snap.Snapshot,
        result: CycleResult,
        iters: dict[str, Iterator[PendingJob]],
        tree: hierarchy.QueueTree,
    ) -> Generator[PendingJob, None, None]:
        """Step 1 under a queue hierarchy: fair share level by level, as Volcano's `hdrf`.

        Queue priority still decides first, between the queues that take work. Then the
        top-level subtrees are compared by what each holds as a whole (over its own weight),
        then the children inside the winning subtree, and so on down: a parent's weight
        splits the federation between departments, its children's weights split the
        department's part. Keys are compared afresh for each job, since one admission moves
        the shares of all its ancestors; a share is recomputed only when the usage of a
        queue it covers has changed (`Usage.queue_version`).
        """
        queues = snapshot.queues
        capacity = fairshare.shared_capacity(snapshot.capacity)
        paths = {q: (*reversed(tree.ancestors.get(q, ())), q) for q in iters}
        live = set(iters)
        kept: dict[str, tuple[tuple[int, ...], fairshare.ShareKey]] = {}
        evicted = len(result.evicted)
        while live:
            if len(result.evicted) != evicted:
                evicted = len(result.evicted)
                iters = self._restart(result)
                paths = {q: (*reversed(tree.ancestors.get(q, ())), q) for q in iters}
                live = set(iters)
                continue
            usage = result.usage  # re-read: preemption may have swapped in its trial copy
            shares: dict[str, fairshare.ShareKey] = {}
            for node in {n for q in live for n in paths[q]}:
                members = tree.members.get(node, (node,))
                stamp = tuple(usage.queue_version(m) for m in members)
                held = kept.get(node)
                if held is None or held[0] != stamp:
                    held = (stamp, _subtree_share(node, tree, queues, usage, capacity))
                    kept[node] = held
                shares[node] = held[1]
            keys = {
                q: (
                    -(queues[q].spec.priority if q in queues else 0),
                    *((shares[n].approx, shares[n], n) for n in paths[q]),
                )
                for q in live
                if q not in self._stopped
            }
            if not keys:
                return
            name = min(keys, key=keys.__getitem__)
            job = next(iters[name], None)
            if job is None:
                live.discard(name)
                continue
            result.pending.remove(job.ref)
            yield job

    def _restart(self, result: CycleResult) -> dict[str, Iterator[PendingJob]]:
        """Every queue's order afresh, after an eviction freed room.

        Why: a job refused earlier in the cycle was not met again, so room a later
        preemption or reclaim freed went to whichever job its queue ranked next, down to
        lower-priority work admitted ahead of a refused higher-priority job. Jobs refused
        before are tried again, in order (each at a decision's or a repeat's cost, so the
        batch still bounds the cycle), and a strict queue's head gets its chance again.
        """
        self._stopped.clear()
        return {q: result.pending.ordered(q) for q in result.pending.queues()}

    def _strict_stop(self, job: PendingJob, snapshot: snap.Snapshot) -> None:
        queue = snapshot.queues.get(job.queue)
        if queue is not None and queue.spec.dequeue_strategy == "StrictFIFO":
            self._stopped.add(job.queue)
            self._stopped_by[job.queue] = job

    # -- what-if, for `fedctl plan` and explanations

    def plan(
        self, job: PendingJob, snapshot: snap.Snapshot, usage: accounting.Usage
    ) -> explain.Plan:
        """Every cluster's verdict and the placement this job would get now (writes nothing)."""
        return self.plan_in(job, fw.CycleState(snapshot, usage.copy(), self.settings))

    def plan_in(self, job: PendingJob, state: fw.CycleState) -> explain.Plan:
        """`plan` against a given state, which many plans may share (placing reads a state
        and never charges it): building one per plan would redo the held-capacity accounting
        of every admitted workload each time. A job that is itself admitted is planned as
        the cycle places it again: its quota released, so it does not compete with itself,
        and its pods left where they run, as room its placement holds (`previous`). Given
        back as free room too, its own replicas counted twice, and a plan placed a scale-up
        the controller then refused.

        A queue that takes no work (not defined, or a parent) is refused as the cycle does,
        unless no queue is defined at all: an offline plan given no Queue files asks where
        the work would go, not which queue takes it."""
        if state.usage.get(job.ref) is not None:
            state = state.copy()
            state.usage.release(job.ref)
        queues = state.snapshot.queues
        if job.priority_class:  # as `_name_priorities` gives it in a cycle
            value = (priority_classes(job.queue, queues) or {}).get(job.priority_class)
            if value is not None:
                job = replace(job, priority=value)
        request = self.request(job, state.snapshot)
        refused = (
            hierarchy.refusal(
                job.queue,
                queues,
                default=self.settings.default_queue,
                named_by=job.workload.queue_field,
            )
            or _queue_refusal(job, queues)
            if queues
            else None
        )
        if refused is not None:
            return explain.plan(self.placer, request, state, pl.Failed(request, refused, "static"))
        return self._settled(job, request, state, self._place(request, state))

    def _settled(
        self,
        job: PendingJob,
        request: fw.JobRequest,
        state: fw.CycleState,
        outcome: pl.Placed | pl.Failed,
    ) -> explain.Plan:
        """The plan as the cycle would settle it, on a copy of `state`: admission's checks
        (a placement the queue cannot lend to waits), and preemption or reclaim when the
        job fits only once lower-priority work goes. Without this a plan said "pending" for
        a job the controller then admitted by preempting, or placed one it left waiting."""
        result = CycleResult(pending=PendingStore(), usage=state.usage.copy())
        admit = admission.Admitter(self, state.copy(), result, now=_PLAN_TIME)
        if not admit.settle(job, outcome, explained=False):
            if isinstance(outcome, pl.Placed):
                reason = result.reasons.get(str(job.ref), "")
                outcome = pl.Failed(outcome.request, reason, "quota")
            return explain.plan(self.placer, request, state, outcome)
        if admit.last_placed is not None and admit.last_placed.request is not request:
            # Placed again by admission (within what its budget leaves): the plan explains
            # that placement, filtered clusters' budget reasons included.
            outcome = admit.last_placed
            request = outcome.request
        planned = explain.plan(self.placer, request, state, outcome)
        mine = next(
            b
            for b in reversed(result.bindings)
            if b.status.phase == "Scheduled" and b.spec.workload.name == job.ref.name
        )  # settle() admitted it: its Binding is there
        # The chip each cluster's pods run on is the Binding's, from the node flavors they
        # took: a CPU service on a member with x86 and Arm nodes showed "chip any" here and
        # amd64 in the Binding the controller wrote.
        planned.chips = {t.name: t.chip for t in mine.spec.clusters}
        if not result.evicted:
            return planned
        planned.reason = ""
        planned.placement = {t.name: t.replicas for t in mine.spec.clusters}
        planned.costs = {t.name: t.hourly_cost for t in mine.spec.clusters}
        planned.preempts = [f"{victim.ref}: {reason}" for victim, reason in result.evicted]
        return planned


def _barred(previous: Binding, snapshot: snap.Snapshot, job: PendingJob) -> list[str]:
    """The clusters the workload is leaving that it may not be placed back on yet.

    A Directly task bars its cluster until failover ends it (the copy there is gone), and an
    application failover's task for as long as it lasts (the workload failed there). A
    graceful task's copy still runs, so its cluster bars the workload only while a NoExecute
    taint there still evicts it: once the member recovered (or the user lifted the taint)
    before the workload found room elsewhere, placing it back adopts the running copy. Kept
    barred, a workload every cluster of which failed at once stayed Pending until the
    graceful timeout, then lost its copy and started again.

    A batch job evicted Directly from a Ready member no taint evicts it from (preempted or
    reclaimed there) waits for that copy to go before it runs anywhere: placed on another
    member at once, it ran on both while the old copy's deletion was on its way (seconds on
    a slow member). Failover ends such a task as soon as the copy is gone. A member that is
    down or tainted cannot be waited for (nothing there can be confirmed gone): the job
    leaves it without waiting, as before.

    A cluster whose taint the workload does not tolerate is left to the taint filter: it
    keeps the workload off as surely, and says why. Barred, the pending reason of a service
    whose every allowed member carried such a taint read "waiting for an evicted copy to be
    removed", which no removal would ever end.
    """
    tolerations = job.placement.cluster_tolerations if job.placement is not None else ()
    out = []
    waits = False
    targets = previous.placement()
    for task in previous.spec.eviction_tasks:
        row = snapshot.index.get(task.cluster)
        cluster = snapshot.clusters[row] if row is not None else None
        tainted = cluster is not None and any(t.evicts(tolerations) for t in cluster.taints)
        if task.at_once and not task.from_application and cluster is not None:
            waits = waits or (cluster.ready and not tainted)
        if (
            cluster is not None
            and task.cluster not in targets
            and any(t.refuses(tolerations) for t in cluster.taints)
        ):
            continue  # its taint keeps the workload off, and the reason names it
        if task.at_once or task.from_application or cluster is None or tainted:
            out.append(task.cluster)
    if waits and job.workload.is_batch:
        return [c.name for c in snapshot.clusters]
    return out


def _subtree_share(
    node: str,
    tree: hierarchy.QueueTree,
    queues: Mapping[str, Queue],
    usage: accounting.Usage,
    capacity: dict[str, int],
) -> fairshare.ShareKey:
    """The weighted dominant share of what queue `node` and everything below it hold."""
    used = usage.totals_of(tree.members.get(node, (node,)))
    weight = queues[node].spec.weight if node in queues else 1
    return fairshare.ShareKey(used, capacity, weight)


_PLAN_TIME = dt.datetime.fromtimestamp(0, dt.UTC)
"""The time a plan's trial admission stamps on Bindings that are never written."""


def _name_priorities(pending: PendingStore, queues: Mapping[str, Queue]) -> None:
    """Give each workload that names a priority class its value in its queue, keeping its
    arrival, so it is ordered by it like any other priority. Read afresh every cycle, so a
    queue whose classes change re-orders what waits in it; an unknown class stays 0 and
    `_queue_refusal` holds the workload with a reason."""
    if not any(q.spec.priority_classes for q in queues.values()):
        return  # nothing to look up (an unknown class is held by `_queue_refusal`)
    for job in [j for j in pending.jobs() if j.priority_class]:
        value = (priority_classes(job.queue, queues) or {}).get(job.priority_class)
        if value is not None and value != job.priority:
            pending.add(replace(job, priority=value))


def _queue_refusal(job: PendingJob, queues: Mapping[str, Queue]) -> str | None:
    """Why its queue does not take the workload: its namespace is not one the queue (or an
    ancestor) serves, or it names a priority class the queue does not define."""
    return _namespace_refusal(job, queues) or _class_refusal(job, queues)


def _namespace_refusal(job: PendingJob, queues: Mapping[str, Queue]) -> str | None:
    """Why a queue that serves only some namespaces does not take this one's workload.

    Why: any workload could name any queue, so one department filled another's queue
    (and its priority classes jumped ahead of that department's own work) with nothing
    that department could see or delete."""
    namespace = job.ref.namespace
    name: str | None = job.queue
    seen: set[str] = set()  # a stored parent loop (refused at apply) must not spin here
    while name is not None and name not in seen:
        seen.add(name)
        queue = queues.get(name)
        if queue is None:
            return None
        served = queue.spec.namespaces
        if served and namespace not in served:
            which = "queue" if name == job.queue else f"queue {job.queue}'s parent"
            return (
                f"{which} {name} takes work from namespaces {', '.join(served)} only, not"
                f" {namespace}: use a queue of {namespace}'s (fedctl get queues) or ask an"
                " admin to add the namespace"
            )
        name = queue.spec.parent
    return None


def _class_refusal(job: PendingJob, queues: Mapping[str, Queue]) -> str | None:
    """Why a workload naming a priority class its queue does not define must wait."""
    if not job.priority_class:
        return None
    classes = priority_classes(job.queue, queues) or {}
    if job.priority_class in classes:
        return None
    known = ", ".join(f"{n} ({v})" for n, v in sorted(classes.items(), key=lambda i: -i[1]))
    return (
        f"priority class {job.priority_class!r} is not defined in queue {job.queue}"
        f" (its priorityClasses: {known or 'none'}): define it there or correct the"
        " workload's fedctl.io/priority"
    )


def _set_aside(job: PendingJob, admit: admission.Admitter, result: CycleResult) -> float | None:
    """What settling `job` without placing it cost the cycle's budget, or None: it is to
    be placed. A suspended Job waits for its resume (holding no one back, in a strict
    queue too); a job whose running copies were a victim earlier this cycle waits again,
    its Binding this cycle being the eviction's."""
    if job.workload.is_suspended:
        result.pending.add(job.with_reason(admit.suspend(job)))
        return _REPEAT_COST
    if admit.evicted_refs and str(job.ref) in admit.evicted_refs:
        result.pending.add(job.with_reason(result.reasons.get(str(job.ref), "")))
        return 0.0
    return None


def _refusal_key(job: PendingJob, request: fw.JobRequest) -> tuple[object, ...] | None:
    """What decides whether a job is admitted and why not, when it is the same for another
    job; None for a job whose answer also depends on where it runs now (re-placement).

    Within one cycle room only shrinks, except by an eviction (the caller drops its memo
    then), so a job asking what a refused one asked is refused too. The request signature
    covers the pods, chips, arches, tolerations, affinity, strategy and price cap; spread
    and static weights are not in it, so they are added.
    """
    if request.holding:
        return None
    # Most workloads have neither (no policy): the key is built for every decision.
    spread = tuple(c.model_dump_json() for c in request.spread) if request.spread else ()
    weights = request.static_weights
    return (
        job.queue,
        job.ref.namespace,
        job.priority,
        job.priority_class,
        request.signature,
        spread,
        tuple((a.model_dump_json(), w) for a, w in weights) if weights else (),
    )


def batch_for(backlog: int, settings: SchedulerSettings) -> int:
    """How many jobs a cycle takes from a backlog: `cycle_batch`, or a tenth of a larger
    backlog, at most `cycle_batch_max`.

    Every cycle first reads the whole registry view (pending jobs, admitted usage), so with
    a fixed batch draining a backlog costs that read once per batch, which grows with the
    backlog itself: quadratic. Taking a share of it keeps the number of cycles small; the
    cap bounds how long one cycle holds the controller (about 0.3 ms per decision).
    """
    if backlog <= settings.cycle_batch:
        return settings.cycle_batch
    return max(settings.cycle_batch, min(backlog // 10, settings.cycle_batch_max))


def release(usage: accounting.Usage, refs: Sequence[object]) -> accounting.Usage:
    """A copy of `usage` without finished or deleted workloads (their waiting peers are
    reconsidered by the next cycle, which the controller runs at once)."""
    out = usage.copy()
    for ref in refs:
        out.release(ref)  # type: ignore[arg-type]
    return out
