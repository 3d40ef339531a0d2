"""Admission: the cycle's steps 6 and 7 - charge a placement to its queue and namespace, or
make room by preemption or reclaim, or leave the job pending with the reason.

Fed by the cycle with each job's placement outcome and the cycle state; feeds the cycle
result (admissions, victims, reasons, Bindings to write). Which victims make room is
`room`'s to find, on a copy of the state; admission keeps that copy and evicts them only
once the job passes its checks there. Victims are released from usage, their capacity
given back, and they are re-queued with their original arrival, so a preempted job is
never lost and never pushed to the back of its queue.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from pydantic import BaseModel

from federation.queue.pending import PendingJob
from federation.quota import accounting, budget, hierarchy
from federation.resources import ResourceList
from federation.scheduler import binder, explain, room
from federation.scheduler import framework as fw
from federation.scheduler import placement as pl
from federation.scheduler import taken as taken_mod
from federation.scheduler.plugins import quota
from policies.models.base import ObjectMeta
from policies.models.binding import (
    Binding,
    BindingSpec,
    BindingStatus,
    ClusterVerdict,
    EvictionTask,
    TargetCluster,
    WorkloadReference,
    handover,
    hourly_total,
    known_cost,
)
from policies.models.common import ClusterAffinityTerm

if TYPE_CHECKING:
    from federation.scheduler.cycle import CycleResult, Scheduler

__all__ = ["Admitter", "binding_for", "release", "suspended"]

_RECLAIMED_FOR = frozenset({"capacity", "lend", "quota"})
"""The reasons a job may wait while other queues hold borrowed work it could be given:
room, lending, and a parent's capability (`Admitter._reclaim_note`)."""


def suspended(job: PendingJob) -> str:
    """Why a suspended job waits, naming the field that suspends it (a Job's
    `spec.suspend`, a PyTorchJob's `spec.runPolicy.suspend`): said where its status shows
    (get, describe, dashboard)."""
    field = ".".join(job.workload.suspend_path or ("spec", "suspend"))
    return (
        f"suspended ({field}: true): it runs no pods and holds no quota; set {field}"
        " to false to queue it for admission again"
    )


release = room.release
"""`room.release`, also here for callers that release admitted work for a what-if."""


class Admitter:
    """Settles each job of a cycle; holds the (replaceable) cycle state."""

    def __init__(
        self, scheduler: Scheduler, state: fw.CycleState, result: CycleResult, *, now: dt.datetime
    ) -> None:
        self.scheduler = scheduler
        self.state = state
        self.result = result
        self.now = now
        self._costs: dict[tuple[object, ...], Decimal | None] = {}
        self._targets: dict[tuple[object, ...], TargetCluster] = {}
        self._flavors: dict[taken_mod.Taken, taken_mod.Taken] = {}
        self._costs_by_pod: dict[tuple[object, ...], tuple[ResourceList, Decimal | None]] = {}
        self._status = BindingStatus.model_construct(
            phase="Scheduled", reason="", last_scheduled_time=now
        )
        self.evicted_refs: set[str] = set()
        """`str(ref)` of every victim evicted this cycle."""
        self._victims: dict[str, list[accounting.Admission]] = {}
        """Per queue, the workloads evicted from it this cycle."""
        self._fits_again: dict[str, tuple[tuple[int, int], bool]] = {}
        """Per victim: whether it fits again, as of (evictions, admissions) so far."""
        self._wires: dict[ResourceList, dict[str, str]] = {}
        self._wires_by_id: dict[int, tuple[ResourceList, dict[str, str]]] = {}
        self._arches: dict[tuple[object, ...], str | None] = {}
        self._emitted: dict[tuple[str, str, str, str], int] = {}
        """Where in `result.bindings` each workload's Binding of this cycle is."""
        self.last_placed: pl.Placed | None = None
        """The placement last admitted: a plan shows it, not the scores' first choice, when
        admission placed the job again (within its budget, or where room was made)."""

    def settle(
        self, job: PendingJob, outcome: pl.Placed | pl.Failed, *, explained: bool = True
    ) -> bool:
        """Admit the job (True) or record why not (False). `explained`: a Pending Binding
        says how each cluster's filters judged it (`_nowhere`); False where the placer
        never tried it (its queue refused it) or no Binding is written (a plan)."""
        if isinstance(outcome, pl.Placed):
            charged = self._charge(outcome, self.state)
            problem = self._problem(outcome, self.state, charged=charged)
            if problem is None:
                self._commit(outcome, self.state, charged=charged)
                return True
            reason, kind = problem
            if kind == "budget":
                cheaper, reason = self._within_budget(outcome, reason)
                if cheaper is not None:
                    self._commit(cheaper, self.state)
                    return True
        else:
            reason, kind = outcome.reason, outcome.kind
            if outcome.undivided:  # short of room across members: made as on capacity
                kind = "capacity"
        if kind != "budget" and self._budgeted(job.queue):
            spent = budget.exhausted(
                job.queue,
                self.state.snapshot.queues,
                self.state.usage,
                currency=self.state.snapshot.currency,
            )
            if spent is not None:  # no room is made for a job its budget refuses anyway
                why = f"{reason}; and {spent}"
                self._pending(job, why, tried=outcome.request if explained else None)
                return False
        settings, placer = self.scheduler.settings, self.scheduler.placer
        # Behind a victim, the job evicts no one this cycle: placed again next cycle, that
        # workload may make room as well, and it goes first.
        if not self._victims_ahead(job):
            for pool in room.pools(
                job, kind, outcome.request, state=self.state, settings=settings, placer=placer
            ):
                if self._make_room(job, outcome.request, pool):
                    return True
            reason += self._reclaim_note(job, kind, outcome.request)
        self._pending(job, reason, tried=outcome.request if explained else None)
        return False

    def _reclaim_note(self, job: PendingJob, kind: str, request: fw.JobRequest) -> str:
        """Why no other queue's borrowed work was taken back for the job, and what would
        help (`accounting.reclaim_note`), when room or an ancestor's capability stops it:
        its own queue's capability or its namespace's quota no reclaim could lift."""
        if kind not in _RECLAIMED_FOR or not self.scheduler.settings.reclaim:
            return ""
        snapshot, usage = self.state.snapshot, self.state.usage
        charge = room.charge_of(request, self.state)
        if kind == "quota":
            queue = snapshot.queues.get(job.queue)
            frq = snapshot.quotas.get(job.ref.namespace)
            used = usage.namespace_totals(job.ref.namespace)
            if (
                accounting.capability_problem(queue, usage.queue_totals(job.queue), charge)
                or accounting.overall_problem(frq, used, charge)
            ) is not None:
                return ""
        return accounting.reclaim_note(
            job.queue, queues=snapshot.queues, usage=usage, charge=charge
        )

    def behind_victim(self, job: PendingJob) -> str | None:
        """Why the job waits for the next cycle (None: it need not): its queue ranks a
        workload evicted this cycle ahead of it, and that workload fits again.

        Why: a victim waits for the next cycle to be placed again, so the room it left
        beyond what its preemptor took went, in the same cycle, to the next job of its
        queue, which might be its identical twin that arrived after it. A victim that no
        longer fits holds back no one, as a head that does not fit does not, but in a
        strict FIFO queue, which waits for its head.
        """
        queue = self.state.snapshot.queues.get(job.queue)
        strict = queue is not None and queue.spec.dequeue_strategy == "StrictFIFO"
        for victim in self._victims_ahead(job):
            if strict:  # a strict queue waits for its head, fitting or not
                why = "the queue is strict FIFO"
            elif self._fits(victim):
                why = "it fits again and is placed first next cycle"
            else:
                continue
            return (
                f"waits behind {victim.ref} (priority {victim.priority}) in queue"
                f" {job.queue}: evicted this cycle, {why}"
            )
        return None

    def _victims_ahead(self, job: PendingJob) -> list[accounting.Admission]:
        """The workloads evicted this cycle that the job's queue ranks ahead of it."""
        rank = (job.priority, -job.seq)
        victims = self._victims.get(job.queue, ()) if self._victims else ()
        return [v for v in victims if rank < (v.priority, -v.seq)]

    def _fits(self, victim: accounting.Admission) -> bool:
        """Whether an evicted workload would be admitted now, were it considered."""
        now = (len(self.result.evicted), len(self.result.admitted))
        key = str(victim.ref)
        known = self._fits_again.get(key)
        if known is not None and known[0] == now:
            return known[1]
        original = victim.job
        fits = False
        if isinstance(original, PendingJob):
            request = self.scheduler.request(original, self.state.snapshot)
            fits = self._admissible(request, self.state) is not None
        self._fits_again[key] = (now, fits)
        return fits

    def suspend(self, job: PendingJob) -> str:
        """Leave a suspended Job pending with no clusters, and return why.

        Unlike `_pending`, its copies are not kept: a suspended Job runs no pods, so a copy
        holds nothing worth keeping, and removing it (as Kueue's MultiKueue deletes a
        worker cluster's copy of a workload no longer admitted) means the Job, once
        resumed, is admitted and placed afresh rather than tied to the member it left."""
        reason = suspended(job)
        self.result.reasons[str(job.ref)] = reason
        self._emit(binding_for(job, reason=reason))
        return reason

    def hold(self, job: PendingJob, reason: str, *, like: fw.JobRequest | None = None) -> None:
        """Leave the job pending with `reason`, found for an identical job this cycle
        (`like`: its request, whose verdicts it shares) or for the queue it waits in."""
        self._pending(job, reason, like=like)

    # -- checks

    def _charge(
        self, placed: pl.Placed, state: fw.CycleState
    ) -> tuple[ResourceList, dict[str, str | None]]:
        request = placed.request
        chips = placed.chips
        if chips is None:
            names = list(placed.placement)
            rows = np.array([state.snapshot.index[n] for n in names], dtype=np.int64)
            chips = dict(zip(names, quota.chip_on(request, state, rows), strict=True))
        if request.devices and request.copies_chips:
            chips = taken_mod.kept_chips(chips, request, state)
        charge: ResourceList | None = None
        cycle_charges = quota.charges(state)
        for name, replicas in placed.placement.items():
            if request.pod_sets:  # rare: charged per template, not remembered
                one = quota.copy_charge(
                    request.pod,
                    request.devices,
                    replicas,
                    chips[name],
                    state.snapshot.chip_devices,
                    shares=request.pod_sets,
                )
            else:
                one = cycle_charges.of(request.pod, request.devices, replicas, chips[name])
            charge = one if charge is None else charge + one
        return charge if charge is not None else ResourceList(), chips

    def _problem(
        self,
        placed: pl.Placed,
        state: fw.CycleState,
        *,
        charged: tuple[ResourceList, dict[str, str | None]] | None = None,
        spend: accounting.Usage | None = None,
    ) -> tuple[str, str] | None:
        job = placed.request.job
        charge, chips = charged or self._charge(placed, state)
        snapshot = state.snapshot
        # The budget first, against what the queue spent before any room was made
        # (`spend`): a job its budget holds back waits, and no victim is evicted, even one
        # a quota would also need, since evicting the queue's own work to free its budget
        # is not for admission to do.
        if self._budgeted(job.queue):
            costs = [
                self._cost(placed.request, state, name, chips[name], replicas)
                for name, replicas in placed.placement.items()
            ]
            known = [c for c in costs if c is not None]
            cost = sum(known, Decimal(0)) if len(known) == len(costs) else None
            notes = [
                snapshot.clusters[snapshot.index[name]].price_note
                for name, c in zip(placed.placement, costs, strict=True)
                if c is None
            ]
            over = budget.problem(
                job.queue,
                snapshot.queues,
                spend or state.usage,
                cost,
                currency=snapshot.currency,
                unpriced=next((n for n in notes if n), None),
                held=self._held(placed.request),
            )
            if over is not None:
                return over, "budget"  # waits: no room is made for a budget
        if state.holds_no_more(job, charge):
            return None
        queue = snapshot.queues.get(job.queue)
        found = None
        if queue is not None and queue.spec.capability is not None:
            used = state.usage.queue_totals(job.queue)
            found = accounting.capability_problem(queue, used, charge)
        if found is None and queue is not None and queue.spec.parent is not None:
            found = hierarchy.ancestor_problem(queue.name, snapshot.queues, state.usage, charge)
        ns = job.ref.namespace
        frq = snapshot.quotas.get(ns)
        if found is None and frq is not None:
            found = accounting.overall_problem(frq, state.usage.namespace_totals(ns), charge)
        if found is not None:
            return found, "quota"
        # Also for the default queue without a Queue object: it is guaranteed nothing, so
        # other queues' unused guarantees are not its to take.
        lend = accounting.lending_problem(
            job.queue,
            queues=snapshot.queues,
            usage=state.usage,
            capacity=snapshot.capacity,
            charge=charge,
        )
        return (lend, "lend") if lend else None

    def _held(self, request: fw.JobRequest) -> tuple[str, Decimal] | None:
        """The queue the job's running copies are charged to and what they cost an hour
        (None: it runs none). Why: the cycle places such a job without their charge, and a
        budget must pass a placement that costs no more than they do (`budget.problem`)."""
        if not request.holding:
            return None
        stored = self._stored(request.job.ref)
        if stored is None or not stored.spec.clusters:
            return None
        return stored.spec.queue, known_cost(stored.spec.clusters)

    def _within_budget(self, placed: pl.Placed, reason: str) -> tuple[pl.Placed | None, str]:
        """The job placed again on clusters that cost no more than its budget leaves, and
        the reason it waits when none does.

        Why: the scores weigh cost against packing, locality and affinity, so the chosen
        cluster need not be the cheapest; a queue at its budget should get the cheaper
        region it fits in rather than wait for its own work to finish.
        """
        request, snapshot = placed.request, self.state.snapshot
        left = budget.headroom(request.job.queue, snapshot.queues, self.state.usage)
        if request.cost_cap or left is None or left[0] <= 0:
            return None, reason
        amount, owner = left
        why = f"the {amount:.4f} {snapshot.currency}/h left in queue {owner}'s budget"
        outcome = self.scheduler.placer.place(request.within(float(amount), why), self.state)
        if isinstance(outcome, pl.Failed):
            # The tightest budget may be an ancestor's, while `reason` names the first one
            # broken: say whose, or the figure reads as this queue's and does not add up.
            whose = "" if owner == request.job.queue else f" (what queue {owner}'s budget leaves)"
            return None, f"{reason}, and no placement it fits in costs {amount:.4f} or less{whose}"
        if self._problem(outcome, self.state) is not None:
            return None, reason
        verdicts, counts = explain.summary(
            self.scheduler.placer, outcome.request, self.state, outcome
        )
        note = f"placed within {why}: the scores' first choice cost more"
        verdicts = [
            v.model_copy(update={"reasons": [*v.reasons, note]}) if v.selected else v
            for v in verdicts
        ]
        return dataclasses.replace(outcome, explained=(verdicts, counts)), reason

    def _budgeted(self, queue: str) -> bool:
        """Whether the queue or an ancestor has a budget, asked once per queue a cycle."""
        key = ("budgeted", queue)
        found = self.state.memo.get(key)
        if found is None:
            found = self.state.memo[key] = bool(budget.budgeted(queue, self.state.snapshot.queues))
        return bool(found)

    # -- making room

    def _make_room(
        self, job: PendingJob, request: fw.JobRequest, pool: list[accounting.Admission]
    ) -> bool:
        made = room.make(request, pool, state=self.state, admissible=self._admissible)
        if made is None:
            return False
        self.state = made.state
        self.result.usage = made.state.usage
        for gone in made.victims:
            self._evicted(gone, by=job)
        self._commit(made.placed, made.state)
        return True

    def _admissible(self, request: fw.JobRequest, state: fw.CycleState) -> pl.Placed | None:
        """Where the job goes in `state` when it is placed and passes every limit there,
        its budget judged by what its queue spent before room was made: victims make room,
        never budget."""
        outcome = self.scheduler.placer.place(request, state)
        spend = self.state.usage
        if isinstance(outcome, pl.Placed) and self._problem(outcome, state, spend=spend) is None:
            return outcome
        return None

    def _evicted(self, victim: accounting.Admission, *, by: PendingJob) -> None:
        reason = f"preempted by {by.ref} (priority {by.priority}, queue {by.queue})"
        if victim.queue != by.queue:
            reason = f"reclaimed by queue {by.queue} for {by.ref}"
        self.result.evicted.append((victim, reason))
        self.evicted_refs.add(str(victim.ref))
        self._victims.setdefault(victim.queue, []).append(victim)
        original = victim.job
        if isinstance(original, PendingJob):
            self.result.pending.add(original.with_reason(reason))
        tasks = [
            EvictionTask(
                cluster=c, reason=reason, creation_time=self.now, replicas=n, purge_mode="Directly"
            )
            for c, n in sorted(victim.placement.items())
        ]
        tasks += self._leaving(victim, skip={t.cluster for t in tasks})
        if isinstance(original, PendingJob):
            self._emit(binding_for(original, reason=reason, tasks=tasks))
        self.result.reasons[str(victim.ref)] = reason

    # -- outcomes

    def _commit(
        self,
        placed: pl.Placed,
        state: fw.CycleState,
        *,
        charged: tuple[ResourceList, dict[str, str | None]] | None = None,
    ) -> None:
        self.last_placed = placed
        request = placed.request
        job = request.job
        charge, chips = charged or self._charge(placed, state)
        hints = placed.flavors or {}
        # Replicas it runs there already hold their room (`capacity.running`): only the
        # added ones take more, or a later job found their room taken twice.
        kept = request.previous
        taken = tuple(
            (name, flavor, pods)
            for name, replicas in placed.placement.items()
            if replicas > kept.get(name, 0)
            for flavor, pods in taken_mod.take(
                state,
                request,
                state.snapshot.index[name],
                replicas - kept.get(name, 0),
                hints.get(name),
            )
        )
        taken = self._flavors.setdefault(taken, taken)  # a cycle repeats a few of them
        kinds = chips  # the chip each cluster's pods are charged for (CPU pods: none)
        if not request.devices:  # CPU pods: the arch they run on, where there is one
            kinds = {name: self._arch(request, name, taken) for name in placed.placement}
            if request.copies_chips and kept:
                kinds = taken_mod.kept_arches(kinds, request, taken)
        targets = [
            self._target(
                name,
                replicas,
                kinds[name],
                self._cost(request, state, name, chips[name], replicas),
            )
            for name, replicas in sorted(placed.placement.items())
        ]
        total_cost = hourly_total(targets)
        admission = accounting.admission(
            ref=job.ref,
            queue=job.queue,
            namespace=job.ref.namespace,
            priority=job.priority,
            seq=job.seq,
            charge=charge,
            placement=dict(placed.placement),
            pod=request.pod,
            chips={k: v for k, v in kinds.items() if v},
            job=job,
            flavors=taken,
            cost=total_cost if total_cost is not None else known_cost(targets),
            devices_as=state.snapshot.chip_devices,
        )
        state.usage.admit(admission)
        state.fresh.add(id(admission))
        self.result.admitted.append(admission)
        if self.result.reasons:
            self.result.reasons.pop(str(job.ref), None)
        verdicts, summary = explain.summary(self.scheduler.placer, request, state, placed)
        binding = binding_for(
            job,
            reason="",
            targets=targets,
            cost=total_cost,
            verdicts=verdicts,
            summary=summary,
            status=self._status_in(request, note=placed.note),
            pod=self._wire(request.pod),
            replicas=request.replicas,
            tasks=_handed_over(request, placed.placement, state, now=self.now),
        )
        self._emit(binding)

    def _status_in(self, request: fw.JobRequest, *, note: str = "") -> BindingStatus:
        """The Scheduled status, naming the `clusterAffinities` group the job was placed in
        when its policy has such groups: `describe` shows it, and a user reading why a
        workload runs in its fallback clusters need not work it out from their labels.
        `note`: its reason (`Placed.note`), what a running job kept on its member past the
        member's room waits for there."""
        term = request.terms[request.term]
        # Not getattr with a default: pydantic answers a missing name by raising, which
        # cost a few microseconds for every decision without groups.
        group = term.affinity_name if isinstance(term, ClusterAffinityTerm) else ""
        update: dict[str, str] = {}
        if group:
            update["scheduler_observing_affinity_name"] = group
        if note:
            update["reason"] = note
        return self._status.model_copy(update=update) if update else self._status

    def _wire(self, pod: ResourceList) -> dict[str, str]:
        """`pod.to_wire()`, once per pod shape in a cycle (never mutated once written).

        Found by the pod's identity first (jobs stamped from one template share it): by
        content, every lookup hashed the pod and compared it with an equal one."""
        hit = self._wires_by_id.get(id(pod))
        if hit is not None and hit[0] is pod:
            return hit[1]
        wire = self._wires.get(pod)
        if wire is None:
            wire = self._wires[pod] = pod.to_wire()
        self._wires_by_id[id(pod)] = (pod, wire)
        return wire

    def _arch(
        self, request: fw.JobRequest, name: str, taken: tuple[tuple[str, int, int], ...]
    ) -> str | None:
        """`fw.pod_arch` of the pods on one cluster, once per cycle for each answer's inputs
        (a cycle places thousands of pods on the same few flavors)."""
        flavors = tuple(f for n, f, _ in taken if n == name)
        key = (name, flavors, request.chips, request.arches)
        if key not in self._arches:
            cluster = self.state.snapshot.cluster(name)
            self._arches[key] = fw.pod_arch(request, cluster, flavors)
        return self._arches[key]

    def _target(
        self, name: str, replicas: int, chip: str | None, cost: Decimal | None
    ) -> TargetCluster:
        """One Binding target; equal targets share one (never mutated) model in a cycle."""
        key = (name, replicas, chip, cost)
        target = self._targets.get(key)
        if target is None:
            target = _built(
                TargetCluster, name=name, replicas=replicas, chip=chip, hourly_cost=cost
            )
            self._targets[key] = target
        return target

    def _cost(
        self,
        request: fw.JobRequest,
        state: fw.CycleState,
        name: str,
        chip: str | None,
        replicas: int,
    ) -> Decimal | None:
        """`explain.hourly_cost`, remembered for equal pods, capacity type and cluster."""
        if request.pod_sets:  # rare, and its cost is not its largest pod's
            return explain.hourly_cost(request, state.snapshot.cluster(name), chip, replicas)
        pod = request.pod
        quick = (id(pod), request.device_names, request.capacity_type, name, chip, replicas)
        hit = self._costs_by_pod.get(quick)
        if hit is not None and hit[0] is pod:
            return hit[1]
        key = (pod, *quick[1:])
        if key not in self._costs:
            cluster = state.snapshot.cluster(name)
            self._costs[key] = explain.hourly_cost(request, cluster, chip, replicas)
        self._costs_by_pod[quick] = (pod, self._costs[key])
        return self._costs[key]

    def _leaving(self, victim: accounting.Admission, *, skip: set[str]) -> list[EvictionTask]:
        """The eviction tasks the victim's stored Binding already has, on other clusters.

        Written alone, the preemption's tasks replaced them: the copy a graceful task was
        waiting to purge was never purged, and a cluster application failover barred the
        workload from was open to it again.
        """
        stored = self._stored(victim.ref)
        if stored is None:
            return []
        return [t for t in stored.spec.eviction_tasks if t.cluster not in skip]

    def _stored(self, ref: object) -> Binding | None:
        bindings = self.state.snapshot.bindings
        return bindings.get(str(ref)) if bindings else None

    def _pending(
        self,
        job: PendingJob,
        reason: str,
        *,
        tried: fw.JobRequest | None = None,
        like: fw.JobRequest | None = None,
    ) -> None:
        """Leave the job pending; where copies of it run already, they stay. `tried`:
        the request the placer failed to place; `like`: an identical job's (`_nowhere`).

        As in Karmada, a placement that fails keeps the last one: a workload being placed
        again (failover evicted it from one member, its replicas or policy changed) keeps
        its copies on the members it still has until it can be placed. Written with no
        clusters, the propagator removed healthy copies from members that never failed.
        """
        self.result.reasons[str(job.ref)] = reason
        stored = self._stored(job.ref)
        kept = [] if stored is None else stored.spec.clusters
        if kept:
            index = self.state.snapshot.index
            kept = [t for t in kept if t.name in index]  # a member gone keeps nothing
        if not kept:
            verdicts, summary = self._nowhere(stored, reason, tried=tried, like=like)
            self._emit(binding_for(job, reason=reason, verdicts=verdicts, summary=summary))
            return
        assert stored is not None
        cost = hourly_total(kept)
        names = ", ".join(t.name for t in kept)
        reason = f"{reason} (still running on {names})"
        verdicts, summary = self._nowhere(stored, reason, tried=tried, like=like)
        self._emit(
            binding_for(
                job,
                reason=reason,
                targets=kept,
                cost=cost,
                verdicts=verdicts,
                summary=summary,
                pod=stored.spec.pod_requests,
                queue=stored.spec.queue,  # the copies stay charged where they were admitted
            )
        )

    def _nowhere(
        self,
        stored: Binding | None,
        reason: str,
        *,
        tried: fw.JobRequest | None,
        like: fw.JobRequest | None,
    ) -> tuple[list[ClusterVerdict], dict[str, int]]:
        """The verdicts and filter counts of a Pending Binding (`explain.pending`): worked
        out for a request the placer `tried`, shared by an identical job held `like` it
        in the same cycle, none where no placement was tried (its queue refused it, it
        waits behind its queue's head). Kept from `stored` when that waited for the same
        reason: a job can wait cycle after cycle, and the filters run again over the fleet
        only when why it waits changes. Never on the path of an admitted job."""
        request = tried or like
        if request is None:
            return [], {}
        job = request.job  # what else decides its quota and priority verdicts
        key = (
            "nowhere",
            request.signature,
            job.queue,
            job.ref.namespace,
            job.priority,
            str(job.ref) if request.holding else "",
            len(self.result.evicted),
            len(self.result.admitted),
        )
        found: Any = None
        if (
            stored is not None
            and stored.status.phase == "Pending"
            and stored.status.reason == reason
            and stored.spec.explanation
        ):
            found = (stored.spec.explanation, stored.spec.filtered_summary)
        elif like is not None:
            found = self.state.memo.get(key)
        elif tried is not None:
            found = explain.pending(self.scheduler.placer, tried, self.state)
        if tried is not None:
            self.state.memo[key] = found
        return found if found is not None else ([], {})

    def _emit(self, binding: Binding) -> None:
        """Add the workload's Binding to the cycle's, replacing one it emitted earlier.

        A workload can be settled twice in a cycle: pending (keeping its copies) or
        admitted on its turn, then evicted by a later job. Its last Binding is the one that
        holds; two for one key made etcd refuse the whole transaction, every cycle.
        """
        w = binding.spec.workload
        key = (w.api_version, w.kind, w.namespace, w.name)
        earlier = self._emitted.get(key)
        bindings = self.result.bindings
        if earlier is not None:
            bindings[earlier] = binding  # written even when equal to the stored one
            return
        stored = self.state.snapshot.bindings
        if stored:  # nothing to compare with in a first cycle
            previous = stored.get(str(binder.binding_ref(binding)))
            if previous is not None and binder.same(previous, binding):
                return
        self._emitted[key] = len(bindings)
        bindings.append(binding)


def _handed_over(
    request: fw.JobRequest, placement: dict[str, int], state: fw.CycleState, *, now: dt.datetime
) -> list[EvictionTask]:
    """The graceful eviction tasks a running service's new placement needs: one for each
    member it leaves or keeps fewer replicas on while others gain some (`handover`).

    Why: the scheduler moves running work too (a service that no longer fits where it
    runs, a policy's weights edited, a member joining its static split); written as a bare
    placement, the old copy was deleted (or scaled down) the moment the new one was
    applied, so the service ran short until the new pods were ready. Batch work is left
    out: kept while its new copy starts, a job would run twice. A member gone from the
    fleet keeps nothing, as nothing there can be reached.
    """
    if not request.copies or request.job.workload.is_batch:
        return []
    index = state.snapshot.index
    old = {name: n for name, n in request.copies.items() if name in index}
    before = ", ".join(f"{n}:{r}" for n, r in sorted(old.items()))
    after = ", ".join(f"{n}:{r}" for n, r in sorted(placement.items()))
    return handover(old, placement, reason=f"Rescheduled: {before} -> {after}", now=now)


def binding_for(
    job: PendingJob,
    *,
    reason: str,
    targets: list[TargetCluster] | None = None,
    cost: Decimal | None = None,
    verdicts: Sequence[ClusterVerdict] | None = None,
    summary: dict[str, int] | None = None,
    tasks: list[EvictionTask] | None = None,
    status: BindingStatus | None = None,
    pod: dict[str, str] | None = None,
    queue: str | None = None,
    replicas: int | None = None,
) -> Binding:
    """A Binding for `job`: Scheduled with targets (and `status`), or Pending with `reason`.
    `pod` and `queue`: those its targets' copies were admitted with (default: the job's);
    `replicas`: those it was placed for (default: the workload's, which a Pending one
    waits to run, as Karmada's ResourceBinding carries the template's whatever it holds).

    Built without re-validation: every part comes from validated models or from the
    scheduler itself, and a cycle builds one per decision.
    """
    w = job.workload
    spec = _built(
        BindingSpec,
        workload=_built(
            WorkloadReference,
            api_version=w.api_version,
            kind=w.kind,
            namespace=job.ref.namespace,
            name=w.metadata.name,
            uid=w.metadata.uid,
        ),
        queue=queue or job.queue,
        priority=job.priority,
        clusters=targets or [],
        hourly_cost=cost,
        explanation=list(verdicts or []),
        filtered_summary=summary or {},
        eviction_tasks=tasks or [],
        replicas=w.replicas if replicas is None else replicas,
        pod_requests=pod or {},
    )
    return _built(
        Binding,
        api_version="fedctl.io/v1alpha1",
        kind="Binding",
        metadata=_meta(w.metadata.name, job.ref.namespace),
        spec=spec,
        status=status
        or _built(
            BindingStatus,
            phase="Pending",
            reason=reason,
            last_scheduled_time=None,
            scheduler_observing_affinity_name=None,
        ),
    )


_M = TypeVar("_M", bound=BaseModel)
_META_DEFAULTS = dict(ObjectMeta(name="-").__dict__)
_META_CONTAINERS = [k for k, v in _META_DEFAULTS.items() if isinstance(v, (dict, list))]


def _meta(name: str, namespace: str) -> ObjectMeta:
    """A Binding's metadata: the defaults of every other field, containers fresh each time."""
    fields = dict(_META_DEFAULTS)
    for key in _META_CONTAINERS:
        fields[key] = type(fields[key])()
    fields["name"], fields["namespace"] = name, namespace
    return _from_fields(ObjectMeta, fields)


def _built(cls: type[_M], **fields: Any) -> _M:
    """A model from trusted values given for every field: what `model_construct` does,
    without its walk over defaults (a cycle builds several per decision)."""
    return _from_fields(cls, fields)


def _from_fields(cls: type[_M], fields: dict[str, Any]) -> _M:
    """`_built` from a dict the model then owns.

    Given every field, the model's set of fields set is one set per class, shared: a cycle
    built four per decision, a quarter of the objects the collector then walks once the
    cycle ends. Sharing is safe for these frozen models: nothing assigns to them (which
    adds to the set), and pydantic copies the set before `model_copy` updates it."""
    obj = _new(cls)
    _set(obj, "__dict__", fields)
    every = _EVERY_FIELD.get(cls)
    if every is None:
        every = _EVERY_FIELD[cls] = set(cls.model_fields)
    # Callers name fields only, so as many names as the model has fields are all of them.
    _set(obj, "__pydantic_fields_set__", every if len(fields) == len(every) else set(fields))
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


_new = object.__new__
_set = object.__setattr__
_EVERY_FIELD: dict[type[BaseModel], set[str]] = {}
"""Per model class, the names of all its fields: the fields set `_from_fields` shares."""
