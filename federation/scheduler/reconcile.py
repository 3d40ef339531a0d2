"""What the next scheduling cycle must consider, read from the loop's registry cache.

Fed by the scheduling loop's mirrors (workloads with their creation revisions, Bindings,
workload statuses, policies, cluster names) and the fingerprints of what was admitted
(stored on each Scheduled Binding, remembered by the loop for Bindings written without one);
feeds `Scheduler.run_cycle` with the pending jobs and the admitted usage, and the loop with
the Bindings to delete. Pure, so the rules below are unit-tested without a registry.

Why rebuild from the cache rather than keep a running tally: the stored Scheduled Bindings
ARE the admissions. Rebuilding usage from them makes a restart (or a new leader) count
exactly what is bound - never admitting a job twice - and a finished or deleted workload
releases its share simply by no longer being counted. For the same reason the fingerprint a
workload was admitted under travels with its Binding (annotation `fedctl.io/fingerprint`):
an edit made while no controller led still differs from it when a leader starts. So does
the policy that claimed it (annotation `fedctl.io/policy`): as in Karmada, a claimed
workload stays with its policy rather than going to whichever policy would claim it first
(`plan.claimant`), and a workload whose policy was deleted keeps its placement. The loop
keeps the result across cycles (`Ledger`) and redoes it only for the workloads whose
entry, Binding or status changed: still read from the cache, never from its own decisions.

The rules, per workload:
 - status phase Succeeded/Failed  -> finished: not pending, not counted.
 - Scheduled Binding whose claiming policy is gone (deleted, or no longer selecting it)
   and no other policy claims it, every cluster still known
                                   -> admitted where it is (Karmada keeps the binding and
                                      the copies), its Binding amended to say so.
 - Scheduled Binding, same workload and claiming policy as when admitted (and, for a
   divided service, the same Ready clusters), every cluster still known
                                   -> admitted: counted in usage, left alone.
 - anything else (no Binding, Pending - including "Evicted from ..." - a spec, replica or
   policy change, another policy claiming it, a cluster gone)
                                   -> pending: the cycle places it (again).
 - of those, a Binding that still names known clusters: copies that run while the
   workload waits to be placed again (the placement it had before an edit, the members
   failover did not evict it from, or what it kept when placing it again failed)
                                   -> also waiting: its copies on known clusters are
                                      counted in usage, in the pods they run, as they hold
                                      quota and capacity, until it is placed.
A Binding whose workload is gone is deleted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob
from federation.quota import accounting
from federation.registry import keys, objects
from federation.resources import ResourceList, device_names
from federation.scheduler import plan
from federation.scheduler.binder import CLAIMED_BY, FINGERPRINT
from federation.scheduler.plugins import quota
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.work import FINISHED_PHASES
from policies.models.workload import Workload

__all__ = [
    "FINISHED",
    "Entry",
    "Ledger",
    "Prepared",
    "Work",
    "admitted_as",
    "claimed_as",
    "fingerprint",
    "on_known",
    "orphaned",
    "placeable",
    "reconcile",
    "ref_of",
    "resized",
]

FINISHED = FINISHED_PHASES


@dataclass(frozen=True)
class Entry:
    """One stored workload: the object and its creation revision (its FIFO arrival)."""

    workload: Workload
    created: int
    ref: keys.WorkloadRef | None = None
    """Its registry identity, when the reader has it already (read from it otherwise)."""


@dataclass
class Work:
    """What the cycle gets (pending, admitted) and what the loop tidies (stale Bindings)."""

    pending: list[PendingJob] = field(default_factory=list)
    admitted: list[accounting.Admission] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    """Binding keys whose workload was deleted."""
    fingerprints: dict[str, str] = field(default_factory=dict)
    """ref -> fingerprint of every admitted workload (adopted for Bindings found at start)."""
    admitted_keys: list[str] = field(default_factory=list)
    """The key of each of `admitted`, in order."""
    marks: dict[str, str] = field(default_factory=dict)
    """ref -> current fingerprint of every workload neither finished nor opaque."""
    claims: dict[str, str] = field(default_factory=dict)
    """ref -> the policy claiming each workload a policy claims (`Ledger.claims`)."""
    held: dict[str, str] = field(default_factory=dict)
    """ref -> the claim each workload's Binding stands for (`Ledger.held`)."""
    amends: list[Binding] = field(default_factory=list)
    """Bindings to write as they are but for the claim: their policy is gone (`orphaned`)."""
    waiting: list[accounting.Admission] = field(default_factory=list)
    """What the copies of pending workloads that still run somewhere hold (`Ledger.waiting`):
    counted in usage alongside `admitted`."""


def ref_of(workload: Workload) -> keys.WorkloadRef:
    return objects.workload_ref(workload)


def placeable(clusters: Iterable[snap.ClusterInfo]) -> list[str]:
    """The Ready clusters as a service's placement depends on them (`fingerprint`): each
    name with the taints that keep work off it.

    Why the taints: a member that came back Ready is tainted until its stale copies are
    purged; a Duplicated service placed in that window skipped it, and with the Ready set
    unchanged when the taint went, it never got its copy there (Karmada schedules a
    Duplicated binding again on every cluster change).
    """
    out = []
    for c in clusters:
        if not c.ready:
            continue
        marks = sorted(
            f"{t.key}={t.value or ''}:{t.effect}"
            for t in c.taints
            if t.effect != "PreferNoSchedule"
        )
        out.append(f"{c.name}|{','.join(marks)}" if marks else c.name)
    return out


def fingerprint(job: PendingJob, *, ready: Iterable[str] = ()) -> str:
    """What a placement depends on from the workload and its policy (not its metadata).

    A service (not a batch gang) also depends on which clusters are Ready, as in Karmada:
    a member joining or recovering gets its share, a lost one's share moves. One that goes
    to every cluster (Duplicated, or scaled to zero) depends on their taints too
    (`placeable`): a member losing its taint gets its copy. A divided service does not, so
    a cordon or a taint leaves divided work alone: Steady division would place it as it is.
    """
    w = job.workload
    fleet = ""
    if job.placement is not None and not w.is_batch:
        everywhere = job.placement.scheduling.replica_scheduling_type == "Duplicated"
        fleet = _fleet(ready, tainted=everywhere or (bool(w.pod_sets) and w.replicas == 0))
    parts = [
        w.model_dump_json(exclude={"metadata", "status"}),
        repr(sorted(w.metadata.labels.items())),
        repr(sorted(w.metadata.annotations.items())),
        job.placement.model_dump_json() if job.placement is not None else "",
        getattr(job.fedctl, "model_dump_json", lambda: "")(),
        job.queue,
        str(job.priority),
        fleet,
    ]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


_last_fleet: tuple[object, str, str] = ((), "", "")
"""The last `ready` given to `fingerprint`, joined with its taints and without: a pass
gives every workload the same list, and joining it per workload cost as much as the rest
of the digest at hundreds of clusters. Replaced whole, so a reader in another thread sees
one consistent entry."""


def _fleet(ready: Iterable[str], *, tainted: bool) -> str:
    global _last_fleet
    last = _last_fleet
    if last[0] is not ready:
        names = sorted(ready)
        bare = sorted(n.partition("|")[0] for n in names)
        last = _last_fleet = (ready, ",".join(names), ",".join(bare))
    return last[1] if tainted else last[2]


_Shapes = dict[object, tuple[ResourceList, int]]
_Charges = dict[tuple[ResourceList, tuple[tuple[int, str | None], ...]], ResourceList]


def admission_of(
    job: PendingJob,
    binding: Binding,
    *,
    device_resources: Collection[str],
    shapes: _Shapes | None = None,
    charges: _Charges | None = None,
    as_placed: bool = False,
) -> accounting.Admission:
    """The usage a Scheduled Binding stands for (the same charge the cycle computed).

    `as_placed`: charge the pods the Binding recorded when it was placed (`podRequests`),
    not the workload's: the copies a workload waiting to be placed again still runs are
    the old pods until it is, and a resize in between had them charged at the new size.

    Read from the pod's requests alone, not a whole `JobRequest`: a new leader reads one per
    admitted workload before its first cycle, and that read is its take-over time. Tens of
    thousands of admissions come in a few dozen pod shapes and placements, so `shapes` and
    `charges` (kept by the caller for one `device_resources`) read each shape and charge
    once; the admissions then share those objects, which later readers key by identity.
    """
    pod, devices = _pod_of(job.workload, device_resources, shapes)
    if as_placed:
        pod, devices = _placed_pod(binding, device_resources, shapes) or (pod, devices)
    targets = binding.spec.clusters
    split = tuple((t.replicas, t.chip if devices else None) for t in targets)
    charge = charges.get((pod, split)) if charges is not None else None
    if charge is None:
        charge = ResourceList()
        for replicas, chip in split:
            charge = charge + quota.charge_of(pod, devices, replicas, chip)
        if charges is not None:
            charges[(pod, split)] = charge
    chips = {t.name: t.chip for t in targets if t.chip} if devices else {}
    return accounting.admission(
        ref=job.ref,
        queue=job.queue,
        namespace=job.ref.namespace,
        priority=job.priority,
        seq=job.seq,
        charge=charge,
        placement=binding.placement(),
        pod=pod,
        chips=chips,
        job=job,
    )


def _pod_of(
    workload: Workload, device_resources: Collection[str], shapes: _Shapes | None
) -> tuple[ResourceList, int]:
    """One pod's requests and its accelerator count, one object per distinct shape."""
    key = tuple(s.requests for s in workload.pod_sets)
    hit = shapes.get(key) if shapes is not None else None
    if hit is None:
        pod = workload.pod_requests()
        hit = (pod, sum(pod.amount(n) for n in device_names(pod, device_resources)))
        if shapes is not None:
            shapes[key] = hit
    return hit


def on_known(binding: Binding, known: Collection[str]) -> Binding | None:
    """The Binding with only its targets on clusters still known (None: no such target).

    Why: copies on a member that was deleted are gone, but those on the members left still
    run and hold their room. Charged nothing because one target was gone, their room read
    as free and a later job was placed into it, beyond what the member holds.
    """
    targets = binding.spec.clusters
    if not targets:
        return None
    kept = [t for t in targets if t.name in known]
    if len(kept) == len(targets):
        return binding
    if not kept:
        return None
    return binding.model_copy(update={"spec": binding.spec.model_copy(update={"clusters": kept})})


def resized(
    workload: Workload,
    binding: Binding,
    *,
    device_resources: Collection[str],
    shapes: _Shapes | None = None,
) -> bool:
    """Whether the workload's pods differ from those its Binding recorded when placed: the
    controller places it again, and its copies are the old pods until it does."""
    placed = _placed_pod(binding, device_resources, shapes)
    return placed is not None and placed[0] != _pod_of(workload, device_resources, shapes)[0]


def _placed_pod(
    binding: Binding, device_resources: Collection[str], shapes: _Shapes | None
) -> tuple[ResourceList, int] | None:
    """`_pod_of` for the pod a Binding recorded (`BindingSpec.placed_pod`); None without one."""
    wire = binding.spec.pod_requests
    if not wire:
        return None
    key = ("placed", *sorted(wire.items()))
    hit = shapes.get(key) if shapes is not None else None
    if hit is None:
        pod = binding.spec.placed_pod()
        if pod is None:
            return None
        hit = (pod, sum(pod.amount(n) for n in device_names(pod, device_resources)))
        if shapes is not None:
            shapes[key] = hit
    return hit


def reconcile(
    *,
    workloads: Mapping[str, Entry],
    bindings: Mapping[str, Binding],
    phases: Mapping[str, str | None],
    policies: Sequence[plan.AnyPolicy],
    clusters: Iterable[str],
    fingerprints: Mapping[str, str],
    claims: Mapping[str, str] | None = None,
    ready: Iterable[str] = (),
    settings: SchedulerSettings,
    device_resources: Iterable[str] = (),
    memo: dict[str, tuple[Binding, str, accounting.Admission]] | None = None,
    prepared: Prepared | None = None,
) -> Work:
    """Sort every workload into finished, admitted or pending (rules in the module doc).

    `workloads`, `bindings` and `phases` are keyed by `str(WorkloadRef)`. `fingerprints`
    and `claims` are what the caller remembers each was admitted under and claimed by, for
    Bindings that do not record it (`admitted_as`, `claimed_as`). `memo` (kept by the
    caller across cycles) saves re-reading the charge of a Binding that did not change;
    `prepared` (likewise) saves re-reading the pending entry and fingerprint of a workload.
    """
    ledger = Ledger()
    ledger.update(
        None,
        workloads=workloads,
        bindings=bindings,
        phases=phases,
        policies=policies,
        clusters=clusters,
        fingerprints=fingerprints,
        claims=claims,
        ready=ready,
        settings=settings,
        device_resources=device_resources,
        memo=memo,
        prepared=prepared,
    )
    return Work(
        pending=list(ledger.pending.values()),
        admitted=list(ledger.admitted.values()),
        finished=[key for key in workloads if key in ledger.finished],
        stale=list(ledger.stale.values()),
        fingerprints=ledger.fingerprints(),
        admitted_keys=list(ledger.admitted),
        marks=ledger.marks,
        claims=ledger.claims,
        held=ledger.held(),
        amends=list(ledger.amends.values()),
        waiting=list(ledger.waiting.values()),
    )


_OPAQUE, _FINISHED, _PENDING, _ADMITTED = "opaque", "finished", "pending", "admitted"
_WAITING = "waiting"
"""Pending, with copies still running where its Binding names (their admission kept)."""

_Read = tuple[Workload, int, PendingJob | None, str, str | None, str, Binding | None, str | None]
"""What `_read` read of a workload: the object and its creation revision it read, its
pending entry and fingerprint, the claim it was read under and the policy claiming it, and
the Binding and remembered claim it took that claim from."""
_Sorted = tuple[
    str, PendingJob | None, str, accounting.Admission | None, str, str | None, Binding | None
]
"""A workload's kind, its pending entry, fingerprint, admission (when admitted), claiming
policy ("": none), the claim its Binding stands for (`Ledger.held`) and its Binding amended
to say its policy is gone (`orphaned`) or, written before claims were recorded, who claims
it (`with_claim`), when that must be written."""
_GONE: _Sorted = (_OPAQUE, None, "", None, "", None, None)


def _binding_key(binding: Binding) -> str:
    b = binding.spec.workload
    return keys.binding_key(
        keys.WorkloadRef(b.namespace, keys.kind_segment(b.api_version, b.kind), b.name)
    )


@dataclass
class _Sorter:
    """One `Ledger` pass's inputs, shared by every workload it sorts."""

    bindings: Mapping[str, Binding]
    phases: Mapping[str, str | None]
    policies: Sequence[plan.AnyPolicy]
    known: frozenset[str]
    fingerprints: Mapping[str, str]
    claims: Mapping[str, str]
    ready: Sequence[str]
    settings: SchedulerSettings
    devices: frozenset[str]
    memo: dict[str, tuple[Binding, str, accounting.Admission]] | None
    jobs: dict[str, _Read] | None
    trusted: bool
    shapes: _Shapes = field(default_factory=dict)
    charges: _Charges = field(default_factory=dict)
    _ids: frozenset[str] | None = None

    def one(self, key: str, entry: Entry) -> _Sorted:
        """A workload's kind, pending entry, fingerprint, admission, claim and amendment."""
        binding = self.bindings.get(key)
        job, mark, record, claimed = _read(
            self.jobs,
            key,
            entry,
            binding=binding,
            remembered=self.claims.get(key),
            policies=self.policies,
            settings=self.settings,
            ready=self.ready,
        )
        orphan = record is not None and not claimed  # its policy is gone, none claims it
        # The claim its Binding stands for: the one read until a Binding records another.
        held = record if record and claimed != record else (claimed or None)
        if job is None:  # an object without pods no policy claims: it stays as it is
            stays = orphan and binding is not None and _stands(binding, self.known)
            amend = self._amend(binding, record) if stays else None
            return _OPAQUE, None, "", None, "", held, amend
        if self.phases.get(key) in FINISHED:
            return _FINISHED, job, mark, None, claimed, held, None
        if binding is None:
            return _PENDING, job, mark, None, claimed, held, None  # unbound
        if record is not None and claimed and claimed != record:  # taken over
            waiting = self._waiting(job, binding)
            return _WAITING if waiting else _PENDING, job, mark, waiting, claimed, held, None
        memo = self.memo
        cached = memo.get(key) if memo is not None else None
        fresh = (
            cached[2]
            if cached and cached[0] is binding and cached[1] == mark and cached[2].seq == job.seq
            else None
        )  # the mark covers all an admission reads from the workload but its arrival
        if not (fresh is not None and self.trusted) and not (
            _stands(binding, self.known)
            and (orphan or admitted_as(binding, self.fingerprints.get(key), mark) == mark)
        ):  # kept where its deleted policy placed it, whatever that policy's fingerprint
            waiting = self._waiting(job, binding)
            return _WAITING if waiting else _PENDING, job, mark, waiting, claimed, held, None
        admitted = fresh
        if admitted is None:
            admitted = admission_of(
                job,
                binding,
                device_resources=self.devices,
                shapes=self.shapes,
                charges=self.charges,
            )
            if memo is not None:
                memo[key] = (binding, mark, admitted)
        if orphan:
            amend = self._amend(binding, record)
        elif claimed and CLAIMED_BY not in binding.metadata.annotations:
            amend = with_claim(binding, claimed)
        else:
            amend = None
        return _ADMITTED, job, mark, admitted, claimed, held, amend

    def _waiting(self, job: PendingJob, binding: Binding) -> accounting.Admission | None:
        """What the copies the Binding of a workload to place again still names hold
        (None: it names none).

        Why counted: those copies hold quota and capacity whatever the Binding's phase.
        Left out, the queue read as having room, another job took it (a namespace's static
        share on a member too), and the waiting workload's copies ran beyond the limit.
        """
        running = on_known(binding, self.known)
        if running is None:
            return None
        return admission_of(
            job,
            running,
            device_resources=self.devices,
            shapes=self.shapes,
            charges=self.charges,
            as_placed=True,
        )

    def _amend(self, binding: Binding | None, record: str | None) -> Binding | None:
        """The Binding to write for a workload kept where its policy `record` placed it:
        none once it says so (`record` empty: read from a Binding already amended)."""
        if binding is None or not record:
            return None
        if self._ids is None:
            self._ids = frozenset(plan.policy_id(p) for p in self.policies)
        return orphaned(binding, record, deleted=record not in self._ids)


@dataclass
class Ledger:
    """`reconcile`'s result kept by the loop across cycles and redone per workload: only
    for those whose inputs changed since the last pass.

    Why: with tens of thousands of workloads admitted, sorting every one of them each cycle
    was most of a cycle that had little to decide, although a workload's kind depends only
    on its own entry, Binding, phase and remembered fingerprint, and on what every workload
    shares (policies, Ready and known clusters, settings, device resources). The loop names
    the workloads whose own inputs changed; any change to the shared ones sorts everything
    again, as does a pass without names (`dirty=None`). The result is the one `reconcile`
    would give over the same inputs; `tests/unit/scheduler/test_ledger.py` holds both to it.
    """

    pending: dict[str, PendingJob] = field(default_factory=dict)
    admitted: dict[str, accounting.Admission] = field(default_factory=dict)
    waiting: dict[str, accounting.Admission] = field(default_factory=dict)
    """ref -> what the running copies of a pending workload hold (`_WAITING`); its entry
    is in `pending` too."""
    marks: dict[str, str] = field(default_factory=dict)
    """ref -> current fingerprint of every workload neither finished nor opaque."""
    claims: dict[str, str] = field(default_factory=dict)
    """ref -> the policy claiming each workload a policy claims (`plan.policy_id`): what
    the loop records on the Bindings it writes."""
    kept: dict[str, str] = field(default_factory=dict)
    """ref -> the claim a workload's Binding stands for, where not its claiming policy's:
    one taken over until its Binding records the new one, one whose policy is gone."""
    amends: dict[str, Binding] = field(default_factory=dict)
    """ref -> its Binding amended to say its policy is gone (`orphaned`) or who claims it
    (`with_claim`), until re-sorted."""
    finished: set[str] = field(default_factory=set)
    stale: dict[str, str] = field(default_factory=dict)
    """ref -> Binding key, for each Binding whose workload is gone."""
    _jobs: object = field(default=None, init=False, repr=False)
    _shared: tuple[object, ...] = field(default=(), init=False, repr=False)

    def fingerprints(self) -> dict[str, str]:
        """ref -> fingerprint of every admitted workload (`Work.fingerprints`)."""
        marks = self.marks
        return {key: marks[key] for key in self.admitted}

    def held(self) -> dict[str, str]:
        """ref -> the claim each workload's Binding stands for: what the loop remembers
        for Bindings that record none (`claimed_as`)."""
        return {**self.claims, **self.kept}

    def held_by(self, key: str) -> str | None:
        """`held()` of one workload."""
        return self.kept.get(key) or self.claims.get(key)

    def update(
        self,
        dirty: Iterable[str] | None,
        *,
        workloads: Mapping[str, Entry],
        bindings: Mapping[str, Binding],
        phases: Mapping[str, str | None],
        policies: Sequence[plan.AnyPolicy],
        clusters: Iterable[str],
        fingerprints: Mapping[str, str],
        claims: Mapping[str, str] | None = None,
        ready: Iterable[str] = (),
        settings: SchedulerSettings,
        device_resources: Iterable[str] = (),
        memo: dict[str, tuple[Binding, str, accounting.Admission]] | None = None,
        prepared: Prepared | None = None,
    ) -> dict[str, accounting.Admission | None] | None:
        """Sort the workloads named by `dirty` again (all of them when None or when what
        they share changed); returns the admissions that changed (None: possibly all).
        `claims`, `memo` and `prepared` as for `reconcile`; the loop always passes them.

        What the caller remembers of claims is what this ledger kept last (`held`), and
        reading a workload again under the claim kept yields the same again (`plan.claimant`
        keeps the policy recorded, and a claim taken over stays held until a Binding
        records the new one), so remembering one is no change to sort again for."""
        known = frozenset(clusters)
        ready_now = sorted(ready)
        devices = frozenset(device_resources)
        jobs = prepared.entries(policies, ready_now, settings) if prepared is not None else None
        if prepared is not None and memo is not None:
            prepared.trust(memo, known)
        shared = (known, devices)
        if dirty is None or jobs is not self._jobs or shared != self._shared:
            self._jobs, self._shared = jobs, shared
            self.pending, self.admitted, self.marks, self.waiting = {}, {}, {}, {}
            self.claims, self.kept, self.amends = {}, {}, {}
            self.finished, self.stale = set(), {}
            dirty = None
        everything = False
        sort = _Sorter(
            bindings=bindings,
            phases=phases,
            policies=policies,
            known=known,
            fingerprints=fingerprints,
            claims=claims if claims is not None else {},
            ready=ready_now,
            settings=settings,
            devices=devices,
            memo=memo,
            jobs=jobs,
            trusted=prepared is not None and memo is not None,
        )
        changes: dict[str, accounting.Admission | None] = {}
        if dirty is None:
            dirty = [*workloads, *(k for k in bindings if k not in workloads)]
            everything = True
        for key in dirty:
            self._sort(key, workloads.get(key), sort, changes)
        if everything:
            if memo is not None and len(memo) > len(self.admitted):
                for gone in set(memo) - set(self.admitted):
                    del memo[gone]
            if jobs is not None and len(jobs) > len(workloads):
                for gone in set(jobs) - set(workloads):
                    del jobs[gone]
            return None
        return changes

    def _sort(
        self,
        key: str,
        entry: Entry | None,
        sort: _Sorter,
        changes: dict[str, accounting.Admission | None],
    ) -> None:
        was = self.admitted.pop(key, None)
        if self.waiting and was is None:
            was = self.waiting.pop(key, None)
        self.pending.pop(key, None)
        self.marks.pop(key, None)
        self.claims.pop(key, None)
        if self.kept:
            self.kept.pop(key, None)
        if self.amends:
            self.amends.pop(key, None)
        self.finished.discard(key)
        self.stale.pop(key, None)
        if entry is None:  # deleted: its Binding, if any, goes too
            binding = sort.bindings.get(key)
            if binding is not None:
                self.stale[key] = _binding_key(binding)
            if sort.jobs is not None:
                sort.jobs.pop(key, None)
            kind, job, mark, admitted, claimed, held, amend = _GONE
        else:
            kind, job, mark, admitted, claimed, held, amend = sort.one(key, entry)
        if claimed:
            self.claims[key] = claimed
        if held and held != claimed:
            self.kept[key] = held
        if amend is not None:
            self.amends[key] = amend
        self._record(key, kind, job, mark, admitted)
        if kind != _ADMITTED and sort.memo is not None:
            sort.memo.pop(key, None)
        if admitted is not was:
            changes[key] = admitted

    def _record(
        self,
        key: str,
        kind: str,
        job: PendingJob | None,
        mark: str,
        admitted: accounting.Admission | None,
    ) -> None:
        if kind == _FINISHED:
            self.finished.add(key)
        elif kind != _OPAQUE:
            self.marks[key] = mark
            if kind == _ADMITTED:
                assert admitted is not None
                self.admitted[key] = admitted
            else:
                assert job is not None
                self.pending[key] = job
                if admitted is not None:
                    self.waiting[key] = admitted


def _read(
    jobs: dict[str, _Read] | None,
    key: str,
    entry: Entry,
    *,
    binding: Binding | None,
    remembered: str | None,
    policies: Sequence[plan.AnyPolicy],
    settings: SchedulerSettings,
    ready: Sequence[str],
) -> tuple[PendingJob | None, str, str | None, str]:
    """A workload's pending entry (None: opaque and unclaimed), fingerprint, the claim
    read from its Binding or memory (`claimed_as`) and the policy claiming it ("": none).

    Read again only when the workload or the claim changed: a Binding written with the
    claim it was read under (the usual next step) reads the same claim again. The claim
    is not even read from a Binding already read: reading each stored Binding's
    annotations, spread over memory, cost a pass over every workload half its time.
    """
    hit = jobs.get(key) if jobs is not None else None
    if hit is not None and hit[0] is entry.workload and hit[1] == entry.created:
        if hit[6] is binding and hit[7] == remembered:
            return hit[2], hit[3], hit[4], hit[5]
        record = claimed_as(binding, remembered)
        if jobs is not None and (record == hit[4] or record == hit[5]):
            jobs[key] = (*hit[:4], record, hit[5], binding, remembered)
            return hit[2], hit[3], record, hit[5]
    else:
        record = claimed_as(binding, remembered)
    policy = plan.claimant(entry.workload, policies, recorded=record)
    claimed = plan.policy_id(policy) if policy is not None else ""
    job: PendingJob | None = None
    mark = ""
    if policy is not None or not entry.workload.is_opaque:  # else: a ConfigMap no policy
        job = plan.job_for(  # else: claims stays in the federation only
            entry.workload, policy, settings=settings, seq=max(entry.created, 1), ref=entry.ref
        )
        mark = fingerprint(job, ready=ready)
    if jobs is not None:
        jobs[key] = (entry.workload, entry.created, job, mark, record, claimed, binding, remembered)
    return job, mark, record, claimed


@dataclass
class Prepared:
    """Each workload's pending entry and fingerprint, kept by the loop across cycles.

    Reading them (the claiming policy, the entry, a digest of the spec) is most of a
    cycle's cost once tens of thousands of workloads are admitted, and almost none of them
    change between two cycles. An entry stands while its workload is the very object the
    registry cache holds (a change replaces it) and the policies (by identity), the Ready
    clusters and the settings are those it was read under; any of those changing drops all.
    """

    policies: tuple[object, ...] = ()
    ready: tuple[str, ...] = ()
    known: frozenset[str] = frozenset()
    """The clusters the admissions memo was made against (see `reconcile`)."""
    settings: SchedulerSettings | None = None
    jobs: dict[str, _Read] = field(default_factory=dict)

    def trust(
        self, memo: dict[str, tuple[Binding, str, accounting.Admission]], known: frozenset[str]
    ) -> None:
        """Let an admission in `memo` made from the very Binding now stored, under the same
        fingerprint, stand without checking it again: it stood when made, and the one other
        thing it depends on, the known clusters, drops the memo here when it changes. So an
        unchanged admitted workload costs a cycle a few lookups."""
        if self.known != known:
            memo.clear()
            self.known = known

    def entries(
        self, policies: Sequence[object], ready: Sequence[str], settings: SchedulerSettings
    ) -> dict[str, _Read]:
        same = (
            len(policies) == len(self.policies)
            and all(a is b for a, b in zip(policies, self.policies, strict=True))
            and tuple(ready) == self.ready
            and settings is self.settings
        )
        if not same:
            self.policies, self.ready, self.settings = tuple(policies), tuple(ready), settings
            self.jobs = {}
        return self.jobs


def admitted_as(binding: Binding, remembered: str | None, now: str) -> str:
    """The fingerprint `binding` was admitted under: the one stored on it, else the one the
    loop remembers, else `now`.

    Stored first because it is the record of the placement actually in the registry: it
    survives a restart or a change of leader, and a write that never landed leaves the old
    one there, so the workload is placed again rather than counted on a stale placement.
    Failover and rebalance rewrite a Binding from the stored one, keeping it. A Binding
    without one (written before fingerprints were stored, or by hand) falls back to the
    loop's memory, then to `now`: adopted as it stands, as a restart always did.
    """
    return binding.metadata.annotations.get(FINGERPRINT) or remembered or now


def claimed_as(binding: Binding | None, remembered: str | None) -> str | None:
    """The policy (`plan.policy_id`) that claimed a workload: the one its Binding records,
    else the one the loop remembers claiming it, else None (no claim to keep).

    Recorded first for the reasons `admitted_as` gives. A Binding records "" once its
    policy is gone and it stays where it is (`orphaned`); one without a record (claimed by
    none, or written before claims were recorded) falls back to the loop's memory, which
    holds what the ledger kept last (`Ledger.held`).
    """
    if binding is not None:
        recorded = binding.metadata.annotations.get(CLAIMED_BY)
        if recorded is not None:
            return recorded
    return remembered


def orphaned(binding: Binding, claimant: str, *, deleted: bool) -> Binding:
    """`binding` kept where it is though `claimant`, the policy that claimed it, is gone
    and no other claims it: recorded as claimed by none, with a reason that says so.

    Why keep it: Karmada keeps the ResourceBinding and the copies in the members when the
    claiming policy is deleted, until another policy claims the template; placing it
    again through the no-policy path would delete its copies in all members but one.
    """
    gone = "was deleted" if deleted else "no longer selects it"
    reason = (
        f"Kept where it is: its policy {claimant} {gone} and no other policy claims it;"
        " it stays until one does"
    )
    notes = {**binding.metadata.annotations, CLAIMED_BY: ""}
    return binding.model_copy(
        update={
            "metadata": binding.metadata.model_copy(update={"annotations": notes}),
            "status": binding.status.model_copy(update={"reason": reason}),
        }
    )


def with_claim(binding: Binding, claimant: str) -> Binding:
    """`binding` recording `claimant`, the policy that claims it now.

    For a Binding written before claims were recorded: the loop remembered its claim only
    in memory, so a new leader, or a restart, after its policy was deleted re-placed it
    through the no-policy path instead of keeping it where it is (`orphaned`).
    """
    notes = {**binding.metadata.annotations, CLAIMED_BY: claimant}
    return binding.model_copy(
        update={"metadata": binding.metadata.model_copy(update={"annotations": notes})}
    )


def _stands(binding: Binding, known: frozenset[str]) -> bool:
    """Whether a stored Binding is a placement still there to count (fingerprint aside)."""
    return (
        binding.status.phase == "Scheduled"
        and bool(binding.spec.clusters)
        and all(t.name in known for t in binding.spec.clusters)
    )
