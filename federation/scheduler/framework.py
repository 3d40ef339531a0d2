"""The placement framework: plugin Protocols, verdict values, the plugin registry, timing.

Fed by the cycle, which turns each pending workload into a `JobRequest` and keeps a mutable
`CycleState` (capacity left after this cycle's earlier placements, usage so far) over the
immutable snapshot. Feeds the plugins in `federation.scheduler.plugins` (one file each) and
`explain`, which asks every plugin about every cluster.

Why verdicts are values: a filter that says no returns `Verdict.unschedulable(reason)`; it
never raises or logs. The runner keeps every cluster's verdict, so a Binding and
`fedctl plan` can say exactly which plugin turned a cluster down and why (Karmada
`framework.Result`). Plugins answer per cluster (`filter`, `raw`); the hot ones may also
answer for many clusters at once (`mask`, `raw_all`) over numpy arrays, and the runner uses
that when present. Both paths must agree; the benchmark compares them.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from federation.cache import snapshot as snap
from federation.cache.parts import request_amount
from federation.queue.pending import PendingJob
from federation.quota.accounting import Admission, Usage
from federation.resources import ResourceList, device_names
from federation.scheduler import held, node_groups
from federation.settings import SchedulerSettings
from policies.models.accelerator import is_arch
from policies.models.common import ClusterAffinity, SpreadConstraint, Toleration
from policies.models.placement_ext import FedctlPlacement
from policies.models.workload import PodSet, Workload

__all__ = [
    "CycleState",
    "FilterPlugin",
    "JobRequest",
    "Registry",
    "ScorePlugin",
    "Timings",
    "VectorFilter",
    "VectorScore",
    "Verdict",
    "accepted_chips",
    "accepts_chip",
    "chip_suits",
    "request_for",
    "workload_reads",
]

Code = Literal["ok", "unschedulable", "error"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """A filter's answer for one cluster: ok, unschedulable or error, with reasons."""

    code: Code
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.code == "ok"

    @classmethod
    def success(cls) -> Verdict:
        return _OK

    @classmethod
    def unschedulable(cls, *reasons: str) -> Verdict:
        return cls("unschedulable", reasons)

    @classmethod
    def failure(cls, *reasons: str) -> Verdict:
        return cls("error", reasons)


_OK = Verdict("ok")


@dataclass(frozen=True, slots=True)
class PodShare:
    """One pod template of a job whose templates differ: `count` pods of `requests`, each
    asking for `devices` accelerators (milli-units)."""

    requests: ResourceList
    count: int
    devices: int


def pod_shares(pod_sets: Sequence[PodSet], known: Iterable[str]) -> tuple[PodShare, ...]:
    """A workload's `PodSet`s as `PodShare`s when their requests differ, else () (read
    for every admission a new leader charges again: one template is the usual case)."""
    if len(pod_sets) < 2:
        return ()
    sets = [s for s in pod_sets if s.count > 0]
    if len({s.requests for s in sets}) < 2:
        return ()
    known = set(known)
    return tuple(
        PodShare(
            s.requests, s.count, sum(s.requests.amount(n) for n in device_names(s.requests, known))
        )
        for s in sets
    )


def _mean_pod(shares: tuple[PodShare, ...]) -> snap.FloatArray:
    """One pod's share of the templates' requests together, as `JobRequest.vector` lays
    a pod out (cpu, memory, devices, pods; milli-units)."""
    total = np.zeros(4, dtype=np.float64)
    for share in shares:
        total += share.count * np.array(
            [
                request_amount(share.requests.amount("cpu")),
                request_amount(share.requests.amount("memory")),
                request_amount(share.devices),
                1000,
            ],
            dtype=np.float64,
        )
    mean: snap.FloatArray = total / sum(share.count for share in shares)
    return mean


@dataclass(frozen=True, slots=True)
class JobRequest:
    """What one pending workload needs, read once from the workload and its policy."""

    job: PendingJob
    replicas: int
    pod: ResourceList
    vector: snap.IntArray  # [R] one pod: cpu, memory, devices, pods (milli)
    device_names: frozenset[str]
    chips: tuple[str, ...]
    arches: tuple[str, ...]
    tolerations: tuple[Toleration, ...]
    terms: tuple[ClusterAffinity, ...]
    term: int
    api: tuple[str, str]
    capacity_type: str
    max_hourly_cost: float | None
    duration_hours: float
    strategy: str
    single_cluster: bool
    spread: tuple[SpreadConstraint, ...]
    static_weights: tuple[tuple[ClusterAffinity, int], ...]
    previous: Mapping[str, int]
    signature: tuple[object, ...]
    shape: tuple[object, ...]
    """What capacity and price per pod depend on (pod, chips, arches, capacity type, and
    `chip_need`): jobs that differ only in duration or affinity, or in replicas when not a
    device gang, share their per-cluster capacity view."""
    evicting: frozenset[str] = frozenset()
    """Clusters the workload is being evicted from (the Binding's eviction tasks): refused."""
    copies: Mapping[str, int] = field(default_factory=dict)
    """Copies it runs per cluster, as its Binding names them: `previous` counted in the old
    pods. Where it runs is read from here (taints, health and API filters, locality, the
    observed affinity group), since resized pods may keep none of them in `previous`."""

    previous_sized: bool = True
    """`previous` is counted in the current pods: its Binding recorded the pods its copies
    run (or it runs none). A Binding written before `podRequests` existed did not, and its
    copies may be smaller than the pods now asked for."""

    copies_chips: Mapping[str, str | None] = field(default_factory=dict)
    """The chip or arch its Binding records per cluster where it runs copies: the arch
    copies of CPU pods are pinned to (none: either), which replicas it keeps there keep."""

    chip_need: int = 1
    """Device pods one cluster must hold on one chip for the job to pass there: all of them
    for a gang or a duplicate, else one. A cluster's chip is the most preferred that holds
    this many, so a gang the preferred chip cannot hold takes another chip it fits on."""

    cost_cap: str = ""
    """What set `max_hourly_cost` when the policy did not (empty: the policy's own, or
    none): what a queue's budget leaves, so a cluster it filters says so."""

    pod_sets: tuple[PodShare, ...] = ()
    """Its pod templates, when they differ (a Volcano Job's CPU launcher and GPU workers):
    a copy holding all its pods is charged and costed for each template's own pods, not
    as `replicas` of the largest (`pod`, which capacity still fits every pod to). Empty
    when every pod is alike, as for every Deployment or plain Job."""

    mean: snap.FloatArray | None = None
    """With `pod_sets`: one pod's share of the whole job's requests, what its cost per
    pod is counted from (cost is linear in requests, so `replicas` of it cost what the
    templates' pods cost together). None: `vector`."""

    devices: int = field(init=False)
    """Accelerators one pod asks for (`vector`'s device entry): read a few times for each
    decision, where indexing the numpy vector for it cost more than the checks it feeds."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "devices", int(self.vector[snap.DEVICES]))

    @property
    def holding(self) -> bool:
        """It runs copies already, even where `previous`, counted in resized pods, keeps
        none: the cycle places it without their charge."""
        return bool(self.copies)

    @property
    def affinity(self) -> ClusterAffinity:
        return self.terms[self.term]

    def for_job(self, job: PendingJob) -> JobRequest:
        """This request for another job stamped from the same spec, policy and annotations."""
        other = object.__new__(JobRequest)
        # The slots' own descriptors (no frozen-check detour), all read in one call.
        for put, value in zip(_REQUEST_SETTERS, _REQUEST_VALUES(self), strict=True):
            put(other, value)
        _JOB_SLOT.__set__(other, job)
        return other

    def with_chip_need(self, need: int) -> JobRequest:
        """The same request choosing each cluster's chip for `need` pods (`chip_need`)."""
        return dataclasses.replace(self, chip_need=need, shape=(*self.shape[:-1], need))

    def within(self, cap: float, why: str) -> JobRequest:
        """The same request allowed at most `cap` an hour (and its policy's limit), `why`
        naming the cap, so it is placed on clusters that cost no more (a budget's rest)."""
        limit = cap if self.max_hourly_cost is None else min(cap, self.max_hourly_cost)
        return dataclasses.replace(
            self,
            max_hourly_cost=limit,
            cost_cap=why if limit == cap else "",
            signature=(*self.signature[:-1], ("within", limit), self.signature[-1]),
        )

    def with_term(self, term: int) -> JobRequest:
        """The same request under another `clusterAffinities` group."""
        return dataclasses.replace(self, term=term, signature=(*self.signature[:-1], term))


_REQUEST_SLOTS: tuple[Any, ...] = tuple(
    JobRequest.__dict__[f.name] for f in dataclasses.fields(JobRequest)
)
_JOB_SLOT: Any = JobRequest.__dict__["job"]
_REQUEST_SETTERS: tuple[Any, ...] = tuple(slot.__set__ for slot in _REQUEST_SLOTS)
_REQUEST_VALUES: Any = operator.attrgetter(*(f.name for f in dataclasses.fields(JobRequest)))


def _strategy(job: PendingJob) -> tuple[str, bool]:
    """The division strategy, and whether the workload goes whole to one cluster.

    Only a workload no policy claims goes to the single best cluster. A policy's placement,
    even one that names no clusters and no replica scheduling, means what Karmada makes of
    it: every cluster its (empty) affinity lets through, each with all replicas."""
    placement = job.placement
    if placement is None:
        return "aggregated", True
    rs = placement.scheduling
    if rs.replica_scheduling_type == "Duplicated":
        return "duplicated", False
    if rs.division == "Aggregated":
        return "aggregated", False
    prefs = rs.weight_preference
    if prefs is not None and prefs.dynamic_weight:
        return "dynamic_weight", False
    return "static_weight", False


def _fitting(previous: Mapping[str, int], held: ResourceList, pod: ResourceList) -> dict[str, int]:
    """Per cluster, how many of the resized pods the room its running copies hold takes.

    A copy's room is counted as room the workload holds, so that a full member keeps the
    replicas it runs (Karmada's Steady division). Counted in copies after the pods grew,
    it was room for more than the member has: four 1-CPU copies on a 4-CPU member kept four
    2-CPU replicas there, half of which could never start.
    """
    out = {}
    for name, copies in previous.items():
        fit = min(
            [copies] + [held.amount(r) * copies // amount for r, amount in pod.items() if amount]
        )
        if fit > 0:
            out[name] = fit
    return out


def workload_reads(workload: Workload) -> tuple[object, ...]:
    """What `request_for` reads of a workload besides its kind and annotations (and the
    job's policy): workloads equal in all of these get equal requests.

    Kept beside `request_for` so that what it comes to read is added here too: a cycle
    shares one request among workloads of equal reads (`Scheduler._stamped`), and a read
    left out (whether a Job is Indexed) gave an Indexed Job the division of a plain Job of
    the same shape under the same policy, or the plain one the Indexed one's single member.
    """
    return (
        workload.is_batch,
        bool(workload.never_divided),
        tuple((p.count, p.requests) for p in workload.pod_sets),
    )


def request_for(
    job: PendingJob,
    *,
    settings: SchedulerSettings,
    device_resources: Iterable[str] = (),
    previous: Mapping[str, int] | None = None,
    evicting: Iterable[str] = (),
    held_pod: ResourceList | None = None,
    held_chips: Mapping[str, str | None] | None = None,
) -> JobRequest:
    """Read a pending workload into a `JobRequest` (done once per workload and policy).

    `held_pod` is one running copy's requests when placed (`previous` counts copies of it);
    `held_chips` the chip or arch the copies' Binding records per cluster.
    """
    workload = job.workload
    pod = workload.pod_requests()
    copies = dict(previous or {})
    if copies and held_pod is not None and held_pod != pod:
        previous = _fitting(copies, held_pod, pod)
    else:
        previous = copies
    known = set(device_resources)
    devices = device_names(pod, known)
    vector = np.array(
        [
            request_amount(pod.amount("cpu")),
            request_amount(pod.amount("memory")),
            request_amount(sum(pod.amount(n) for n in devices)),
            1000,
        ],
        dtype=np.int64,
    )
    shares = pod_shares(workload.pod_sets, known)
    mean = _mean_pod(shares) if shares else None
    ext = job.fedctl if isinstance(job.fedctl, FedctlPlacement) else None
    chips, arches = accepted_chips(job)
    placement = job.placement
    strategy, single = _strategy(job)
    if workload.is_batch and (
        strategy not in ("static_weight", "dynamic_weight") or workload.never_divided
    ):
        single = True  # a gang goes whole to one cluster unless the policy divides it
    duration = workload.expected_duration or (ext.expected_duration if ext else None)
    hours = duration / 3600 if duration else settings.default_duration_hours
    tolerations = tuple(placement.cluster_tolerations) if placement else ()
    terms = tuple(placement.affinity_terms) if placement else (ClusterAffinity(),)
    spread = tuple(placement.spread_constraints) if placement else ()
    weights: tuple[tuple[ClusterAffinity, int], ...] = ()
    if (
        placement
        and placement.replica_scheduling
        and placement.replica_scheduling.weight_preference
    ):
        weights = tuple(
            (w.target_cluster, w.weight)
            for w in placement.replica_scheduling.weight_preference.static_weight_list
        )
    cap_type = ext.capacity_type if ext else "on-demand"
    max_cost = float(ext.max_hourly_cost) if ext and ext.max_hourly_cost is not None else None
    replicas = workload.replicas  # an object without pods: none, so it needs no room
    api = (workload.api_version, workload.kind)
    whole = single or strategy == "duplicated"
    chip_need = replicas if devices and whole and replicas > 1 else 1
    signature = (
        tuple(vector.tolist()),
        replicas,
        chips,
        arches,
        tuple(t.model_dump_json() for t in tolerations),
        tuple(t.model_dump_json() for t in terms),
        api,
        cap_type,
        max_cost,
        hours,
        strategy,
        single,
        bool(copies),
        tuple(sorted(set(evicting))),
        None if mean is None else tuple(mean.tolist()),  # what it costs on a cluster
        0,
    )
    return JobRequest(
        job=job,
        replicas=replicas,
        pod=pod,
        vector=vector,
        device_names=devices,
        chips=chips,
        arches=arches,
        tolerations=tolerations,
        terms=terms,
        term=0,
        api=api,
        capacity_type=cap_type,
        max_hourly_cost=max_cost,
        duration_hours=hours,
        strategy=strategy,
        single_cluster=single,
        spread=spread,
        static_weights=weights,
        previous=previous,
        signature=signature,
        shape=(
            tuple(vector.tolist()),
            chips,
            arches,
            devices,
            cap_type,
            None if mean is None else tuple(mean.tolist()),
            chip_need,
        ),
        evicting=frozenset(evicting),
        copies=copies,
        copies_chips=dict(held_chips or {}),
        previous_sized=held_pod is not None or not copies,
        chip_need=chip_need,
        pod_sets=shares,
        mean=mean,
    )


def chip_rank(job: JobRequest, chip: str) -> int:
    """Preference rank of a chip for this job (0 best); len(chips) when not listed."""
    return job.chips.index(chip) if chip in job.chips else len(job.chips)


def pod_arch(job: JobRequest, cluster: snap.ClusterInfo, taken: Iterable[int] = ()) -> str | None:
    """The arch a CPU-only job's pods run on in `cluster`, as its Binding records it (the
    propagator pins them to it through that arch's AcceleratorProfile): that of the node
    flavors they took there, else that of every CPU flavor the job may use there; None
    when that is more than one arch.

    Why not simply the cluster's first flavor: pods that took its Arm nodes were pinned to
    amd64 and stayed Pending in the member; pods over both arches cannot be pinned to one.
    """
    flavors = cluster.flavors
    arches = {flavors[f].arch for f in taken if 0 <= f < len(flavors)}
    if not arches:
        arches = {
            f.arch
            for f in flavors
            if f.accelerator_model is None and accepts_chip(job, None, f.arch)
        }
    return next(iter(arches)) if len(arches) == 1 else None


def accepted_chips(job: PendingJob) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The chips and arches a job accepts: the workload's `fedctl.io/chips`, else its
    policy's `spec.fedctl.chips`; arches those its policy's `spec.fedctl.arches` and its
    pod templates' own `kubernetes.io/arch` constraints (`Workload.node_arches`) both allow.

    Why the template's too: a member's scheduler runs its pods on those nodes only, so an
    Arm-only service placed on an amd64-only cluster waited there for good. Both holding
    and sharing none, no arch is accepted (`_NO_ARCH`): the workload waits, saying so."""
    ext = job.fedctl if isinstance(job.fedctl, FedctlPlacement) else None
    chips = tuple(job.workload.chips) or (tuple(ext.chips) if ext else ())
    arches = tuple(ext.arches) if ext else ()
    own = job.workload.node_arches
    if own is None:
        return chips, arches
    if not arches:
        return chips, tuple(sorted(own)) or _NO_ARCH
    return chips, tuple(a for a in arches if a in own) or _NO_ARCH


_NO_ARCH = ("an arch both its pod template's kubernetes.io/arch and its policy allow",)
"""The arches of a job whose template and placement share none: no node's arch."""


def accepts_chip(job: JobRequest, chip: str | None, arch: str, resource: str | None = None) -> bool:
    """Whether a node flavor with accelerator `chip` (None: none) on `arch` suits the job.

    Without listed chip models, an accelerator job takes only flavors exposing the device
    resource it requests (`resource`; None skips that check, for callers that do it).
    """
    return chip_suits(
        job.chips,
        job.arches,
        job.devices > 0,
        job.device_names,
        chip=chip,
        arch=arch,
        resource=resource,
    )


def chip_suits(
    chips: tuple[str, ...],
    arches: tuple[str, ...],
    accelerated: bool,
    devices: frozenset[str],
    *,
    chip: str | None,
    arch: str,
    resource: str | None = None,
) -> bool:
    """`accepts_chip` from what it reads of a job (its chips and arches, whether its pods
    ask for devices and which), for readers that have the workload but no `JobRequest`
    (the fingerprint).

    Both lists hold when both are given: a listed chip on an arch `arches` leaves out is
    refused, as is a listed arch it leaves out. Chips alone used to win, and an image
    built for amd64 was sent to arm64 Ascend nodes.
    """
    if arches and arch not in arches:
        return False
    listed_arches = [c for c in chips if is_arch(c)]
    models = [c for c in chips if not is_arch(c)]
    if accelerated:
        if chip is None:
            return False
        if models:
            return chip in models
        return resource is None or resource in devices
    if chip is not None:
        return False  # CPU-only pods are not placed on accelerator nodes
    return not listed_arches or arch in listed_arches


class CycleState:
    """The mutable side of one cycle: capacity left and usage after earlier decisions.

    Starts from the snapshot's arrays less what admitted workloads hold and the monitor
    does not show yet (`held.effective_capacity`); `place` charges a placement and bumps the
    version of each touched cluster so cached per-signature results refresh only there.
    """

    def __init__(self, snapshot: snap.Snapshot, usage: Usage, settings: SchedulerSettings):
        self.snapshot = snapshot
        self.usage = usage
        self.settings = settings
        self.attribution: held.Attribution = {}
        """Where the cycle began by counting each group of admitted pods (`held`): a
        victim from an earlier cycle gives its room back there (`room.release`)."""
        self.holds: Admission | None = None
        """While a job with running copies is decided: what those copies were admitted
        with (released from `usage` for the decision), so a change that asks no more
        passes limits lowered below it (`holds_no_more`)."""
        self.fresh: set[int] = set()
        """`id` of each admission made against this state or its copies (shared): their
        pods are where they took them (`Admission.flavors`)."""
        self.free, self.largest, self.debt, self._group_free, self._group_count = (
            held.effective_capacity(snapshot, usage, attribution=self.attribution)
        )
        """`debt`: per flavor, admitted work beyond its room when the cycle began (None:
        none), which room a victim gives back pays first. The groups: each flavor's
        nodes grouped by free amounts ([C, F, G, R], [C, F, G]), which free replicas are
        counted from node by node (`node_groups`; read through `groups`, `group_arrays`)."""
        self._groups: dict[tuple[int, int], tuple[node_groups.Rows, list[int]]] = {}
        """The groups of flavors charged this cycle in plain Python, ahead of the arrays
        until `group_arrays` writes them back: a charge touches one flavor's few groups,
        and numpy costs more per call than the arithmetic itself."""
        self._grouped: list[list[bool]] = snapshot.grouped.tolist()
        self._vectors: dict[int, tuple[snap.IntArray, list[int], node_groups.Asked | None]] = {}
        """`_asked` by the vector's identity (the entry keeps the vector alive)."""
        self.version = np.zeros(snapshot.size, np.int64)
        self.free_total = self.free.sum(axis=1)
        self.memo: dict[tuple[object, ...], object] = {}
        """Per-cycle cache of request-only results (flavor masks), keyed by signature."""
        self.dyn: dict[tuple[object, ...], tuple[snap.IntArray, npt.NDArray[np.generic]]] = {}
        """Per-signature results that depend on capacity, with the versions they saw."""
        self.incremental: dict[tuple[object, ...], object] = {}
        """Per-signature scores of the incremental single-cluster path (`incremental`)."""
        self.touched: list[tuple[int, int]] = []
        """Every (cluster, flavor) charged or given back, in order: what the incremental
        path replays to bring its per-signature scores up to date."""
        self.touched_rows: list[int] = []
        """The clusters of `touched`, entry for entry (what the per-signature replay reads)."""

    def holds_no_more(self, job: PendingJob, charge: ResourceList) -> bool:
        """Whether `job` asks no more of any resource, in the same queue, than its running
        copies hold (`holds`): a capability, an ancestor's or a namespace's quota lowered
        below what it holds then passes it, as a ResourceQuota never refuses a change that
        lowers usage and Kueue keeps admitted work admitted. Refused, a scale-down turned
        Pending and the larger copies ran on."""
        own = self.holds
        if own is None or own.ref != job.ref or own.queue != job.queue:
            return False
        return all(need <= own.charge.get(name, 0) for name, need in charge.items())

    def copy(self) -> CycleState:
        other = CycleState.__new__(CycleState)
        other.snapshot, other.settings = self.snapshot, self.settings
        other.usage = self.usage.copy()
        other.free, other.largest = self.free.copy(), self.largest.copy()
        free, count = self.group_arrays()
        other._group_free, other._group_count = free.copy(), count.copy()
        other._groups, other._grouped, other._vectors = {}, self._grouped, self._vectors
        other.debt = self.debt.copy() if self.debt is not None else None
        other.version = self.version.copy()
        other.free_total = self.free_total.copy()
        other.memo = self.memo
        other.dyn = {}
        other.incremental = {}
        other.touched = []
        other.touched_rows = []
        other.attribution = dict(self.attribution)  # arrays replaced, never written
        other.holds = self.holds
        other.fresh = self.fresh
        return other

    def take(self, cluster: int, flavor: int, pods: int, vector: snap.IntArray) -> None:
        """Charge `pods` pods of `vector` to one flavor of one cluster. Where the status
        shows how its room is split over nodes, only those some node holds
        (`node_groups.charge`): the rest wait Pending on the member, holding no room, and
        charged they drove the emptiest node to nothing, so even a 10m pod was refused
        where nodes still had room. Elsewhere all of them, from the sums alone."""
        if self._grouped[cluster][flavor]:
            rows, counts = self.groups(cluster, flavor)
            plain, need = self._asked(vector)
            pods = node_groups.charge(rows, counts, pods, plain, need)
        used = vector * pods
        free = self.free[cluster, flavor]  # views, updated in place
        np.subtract(free, used, out=free)
        total = self.free_total[cluster]
        np.subtract(total, used, out=total)
        largest = self.largest[cluster, flavor]
        np.minimum(largest, free, out=largest)
        self.version[cluster] += 1
        self.touched.append((cluster, flavor))
        self.touched_rows.append(cluster)

    def _asked(self, vector: snap.IntArray) -> tuple[list[int], node_groups.Asked | None]:
        """A pod's vector in plain Python and what it asks for (`node_groups.asked`; None:
        nothing), read once per vector: jobs stamped from one template share theirs."""
        hit = self._vectors.get(id(vector))
        if hit is None or hit[0] is not vector:
            plain = vector.tolist()
            need = node_groups.asked(plain) if any(w > 0 for w in plain) else None
            hit = self._vectors[id(vector)] = (vector, plain, need)
        return hit[1], hit[2]

    def groups(self, cluster: int, flavor: int) -> tuple[node_groups.Rows, list[int]]:
        """One flavor's groups of nodes by free amounts, in plain Python; charges change
        them in place (`take`, `give_back`)."""
        key = (cluster, flavor)
        hit = self._groups.get(key)
        if hit is None:
            hit = (
                self._group_free[cluster, flavor].tolist(),
                self._group_count[cluster, flavor].tolist(),
            )
            self._groups[key] = hit
        return hit

    def group_arrays(self) -> tuple[snap.IntArray, snap.IntArray]:
        """Every flavor's groups, [C, F, G, R] amounts and [C, F, G] counts, with what
        this cycle charged written back (for the vectorised counts; read only)."""
        if self._groups:
            for (c, f), (rows, counts) in self._groups.items():
                self._group_free[c, f] = rows
                self._group_count[c, f] = counts
            self._groups = {}
        return self._group_free, self._group_count

    def give_back(self, cluster: int, flavor: int, pods: int, vector: snap.IntArray) -> None:
        """Return capacity released by a victim (bounded by the flavor's allocatable),
        less what work beyond the flavor's room owed when the cycle began (`debt`)."""
        back = vector * pods
        if self.debt is not None:
            owed = self.debt[cluster, flavor]  # a view, paid off in place
            paid = np.minimum(back, owed)
            if paid.any():
                np.subtract(owed, paid, out=owed)
                back = back - paid
        total = self.snapshot.alloc[cluster, flavor] * self.snapshot.nodes[cluster, flavor]
        before = self.free[cluster, flavor].copy()
        self.free[cluster, flavor] = np.minimum(self.free[cluster, flavor] + back, total)
        self.free_total[cluster] += self.free[cluster, flavor] - before
        self.largest[cluster, flavor] = np.minimum(
            self.largest[cluster, flavor] + back, self.snapshot.alloc[cluster, flavor]
        )
        need = vector > 0
        if self._grouped[cluster][flavor] and need.any():
            rows, counts = self.groups(cluster, flavor)
            pods = int(np.min(back[need] // vector[need]))  # what the debt left of them
            alloc = self.snapshot.alloc[cluster, flavor].tolist()
            node_groups.release(rows, counts, alloc, pods, vector.tolist())
        self.version[cluster] += 1
        self.touched.append((cluster, flavor))
        self.touched_rows.append(cluster)


@runtime_checkable
class FilterPlugin(Protocol):
    """Says whether one cluster can take the job. `static`: depends only on the request."""

    name: str
    static: bool

    def filter(self, job: JobRequest, cluster: snap.ClusterInfo, state: CycleState) -> Verdict: ...


@runtime_checkable
class VectorFilter(Protocol):
    """A filter that can also answer for many clusters at once."""

    def mask(self, job: JobRequest, state: CycleState, rows: snap.IntArray) -> snap.BoolArray: ...


@runtime_checkable
class ScorePlugin(Protocol):
    """Rates one feasible cluster. The runner scales `raw` to 0-100 as `scale` says:
    `absolute` (raw already 0-100), `max_best` or `min_best` (min-max over the candidates)."""

    name: str
    scale: str

    def raw(self, job: JobRequest, cluster: snap.ClusterInfo, state: CycleState) -> float: ...


@runtime_checkable
class VectorScore(Protocol):
    def raw_all(
        self, job: JobRequest, state: CycleState, rows: snap.IntArray
    ) -> snap.FloatArray: ...


def normalise(raw: snap.FloatArray, scale: str) -> snap.IntArray:
    """Raw plugin values to integers 0-100; NaN (cannot be rated) becomes 0."""
    values = np.asarray(raw, dtype=np.float64)
    finite_mask = np.isfinite(values)
    if scale == "absolute":
        out = np.clip(np.where(finite_mask, values, 0.0), 0, 100)
        clipped: snap.IntArray = np.rint(out).astype(np.int64)
        return clipped
    finite = values[finite_mask]
    if finite.size == 0:
        return np.zeros(values.shape, np.int64)
    low, high = float(finite.min()), float(finite.max())
    if math.isclose(low, high):
        scaled = np.full(values.shape, 100.0)
    elif scale == "min_best":
        scaled = (high - values) / (high - low) * 100
    else:
        scaled = (values - low) / (high - low) * 100
    scaled = np.where(finite_mask, scaled, 0.0)
    result: snap.IntArray = np.rint(scaled).astype(np.int64)
    return result


Factory = Callable[[SchedulerSettings], FilterPlugin | ScorePlugin]


class Registry:
    """Plugin factories by name; a second registration of a name is refused."""

    def __init__(self) -> None:
        self._factories: dict[str, Factory] = {}

    def register(self, name: str, factory: Factory) -> None:
        if name in self._factories:
            raise ValueError(f"plugin {name!r} is already registered")
        self._factories[name] = factory

    def names(self) -> list[str]:
        return list(self._factories)

    def build(self, settings: SchedulerSettings) -> list[FilterPlugin | ScorePlugin]:
        return [factory(settings) for factory in self._factories.values()]


@dataclass
class Timings:
    """Seconds spent per plugin (and per cycle step) and how often each ran."""

    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.calls[name] = self.calls.get(name, 0) + 1
