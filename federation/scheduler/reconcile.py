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
   and no other policy claims it, every cluster still known, not resized nor moved to
   another queue since
                                   -> admitted where it is (Karmada keeps the binding and
                                      the copies), its Binding amended to say so.
 - Scheduled Binding, same workload and claiming policy as when admitted (and, for a
   divided service, the same Ready clusters), every cluster still known
                                   -> admitted: counted in usage, left alone.
 - anything else (no Binding, Pending - including "Evicted from ..." - a spec, replica or
   policy change, another policy claiming it, a cluster gone, a Binding of an earlier
   object of the same name)
                                   -> pending: the cycle places it (again).
 - of those, a Binding that still names known clusters: copies that run while the
   workload waits to be placed again (the placement it had before an edit, the members
   failover did not evict it from, or what it kept when placing it again failed)
                                   -> also waiting: its copies on known clusters are
                                      counted in usage, in the pods they run, as they hold
                                      quota and capacity, until it is placed.
A Binding whose workload is gone is deleted.

A pending workload with no Binding at all (lost from the registry) whose status still
shows copies on known members is placed as if that Binding named them (`located`): their
pods are room it holds there, not room others took.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from federation.queue.pending import PendingJob
from federation.quota import accounting
from federation.registry import arrival, codec, keys, objects
from federation.scheduler import plan
from federation.scheduler.binder import CLAIMED_BY
from federation.scheduler.bound_usage import Charges, Shapes, admission_of, on_known
from federation.scheduler.fingerprint import fingerprint
from federation.scheduler.recorded import admitted_as, claimed_as, finished, orphaned, with_claim
from federation.settings import SchedulerSettings
from policies.models.accelerator import NO_DEVICE_RENAMES, ChipDevices
from policies.models.binding import Binding
from policies.models.work import FINISHED_PHASES, WorkloadStatus
from policies.models.workload import Workload

__all__ = ["FINISHED", "Entry", "Ledger", "Prepared", "Work", "located", "reconcile", "ref_of"]

FINISHED = FINISHED_PHASES


@dataclass(frozen=True)
class Entry:
    """One stored workload: the object and its creation revision, which with its uid is
    its FIFO arrival (`arrival.sequence`)."""

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
    chip_devices: ChipDevices = NO_DEVICE_RENAMES,
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
        chip_devices=chip_devices,
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


def located(
    pending: Mapping[str, PendingJob],
    *,
    bindings: Mapping[str, Binding],
    results: Mapping[str, codec.Stored[WorkloadStatus]],
    known: Collection[str],
) -> dict[str, dict[str, int]]:
    """Per pending workload (`pending` is keyed by ref) that has no Binding: the replicas
    its copies run on each known member, as the propagator last reported them (its
    workload status). Read for every pending workload each cycle, so a lookup each.

    Why: a Binding lost from the registry (deleted by hand, a partial restore) leaves its
    Works and running copies in place (the propagator keeps them), and placed afresh the
    workload read its own copies' pods as room others took: its member looked full, and a
    running Job was moved to another member and started from scratch. Only copies of this
    very object (its uid), not finished and not being left, are counted.
    """
    out: dict[str, dict[str, int]] = {}
    if not results:
        return out
    under = keys.prefix("workloadstatus")  # + the ref: its key, without checking it again
    for ref, job in pending.items():
        if ref in bindings:
            continue
        found = results.get(under + ref)
        stored = found.obj if found is not None else None
        if stored is None or stored.phase in FINISHED_PHASES:
            continue
        uid = job.workload.metadata.uid
        if uid is not None and stored.workload.uid not in (None, uid):
            continue  # an earlier object of this name
        where = {
            row.cluster: row.replicas
            for row in stored.clusters
            if row.replicas
            and row.cluster in known
            and not row.leaving
            and row.phase not in FINISHED_PHASES
        }
        if where:
            out[ref] = where
    return out


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
    chip_devices: ChipDevices
    memo: dict[str, tuple[Binding, str, accounting.Admission]] | None
    jobs: dict[str, _Read] | None
    trusted: bool
    shapes: Shapes = field(default_factory=dict)
    charges: Charges = field(default_factory=dict)
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
        phase = self.phases.get(key)
        if phase in FINISHED:
            assert phase is not None
            return _FINISHED, job, mark, None, claimed, held, finished(binding, phase)
        if binding is None:
            return _PENDING, job, mark, None, claimed, held, None  # unbound
        placed, uid = binding.spec.workload.uid, entry.workload.metadata.uid
        if placed is not None and uid is not None and placed != uid:
            # Its Binding placed an earlier object of this name (deleted and created again
            # since): admitted afresh, its quota checked; the propagator removes the copies.
            waiting = self._waiting(job, binding)
            return _WAITING if waiting else _PENDING, job, mark, waiting, claimed, held, None
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
            and (
                (orphan and not _changed(binding, job))
                or admitted_as(binding, self.fingerprints.get(key), mark) == mark
            )
        ):  # kept where its deleted policy placed it, whatever that policy's fingerprint,
            # unless resized or moved to another queue since: that queue admits it
            waiting = self._waiting(job, binding)
            return _WAITING if waiting else _PENDING, job, mark, waiting, claimed, held, None
        admitted = fresh
        if admitted is None:
            admitted = admission_of(
                job,
                binding,
                device_resources=self.devices,
                chip_devices=self.chip_devices,
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
        running = None if job.workload.is_suspended else on_known(binding, self.known)
        if running is None:  # a suspended Job's copies run no pods: Kubernetes deleted them
            return None
        return admission_of(
            job,
            running,
            device_resources=self.devices,
            chip_devices=self.chip_devices,
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
        chip_devices: ChipDevices = NO_DEVICE_RENAMES,
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
        shared = (known, devices, chip_devices)
        if dirty is None or jobs is not self._jobs or shared != self._shared:
            if memo and self._shared and self._shared[2] != chip_devices:
                memo.clear()  # charged in the device resources of profiles since changed
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
            chip_devices=chip_devices,
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
            entry.workload,
            policy,
            settings=settings,
            seq=arrival.sequence(entry.created, entry.workload.metadata.uid),
            ref=entry.ref,
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


def _changed(binding: Binding, job: PendingJob) -> bool:
    """Whether the workload's pods ask for other amounts than its Binding recorded when it
    was placed (not recorded: taken as the same), it was scaled, or it moved to another
    queue.

    Why it matters for a workload kept where its deleted policy placed it: the propagator
    renders the current template onto the kept targets, so resized pods ran there without
    admission, past the queue's capability or the namespace's quota; and one moved to
    another queue was charged to that queue, which never admitted it.
    """
    if binding.spec.queue != job.queue or _rescaled(binding, job):
        return True
    placed = binding.spec.placed_pod()
    return placed is not None and placed != job.workload.pod_requests()


def _rescaled(binding: Binding, job: PendingJob) -> bool:
    """Whether it was scaled since placed (its Binding's `replicas`; not recorded: taken
    as not). The propagator renders each target's replica count from the Binding, so a
    kept workload scaled (to 0, even) went on running at the old count."""
    recorded = binding.spec.replicas
    return recorded is not None and recorded != job.workload.replicas


def _stands(binding: Binding, known: frozenset[str]) -> bool:
    """Whether a stored Binding is a placement still there to count (fingerprint aside)."""
    return (
        binding.status.phase == "Scheduled"
        and bool(binding.spec.clusters)
        and all(t.name in known for t in binding.spec.clusters)
    )
