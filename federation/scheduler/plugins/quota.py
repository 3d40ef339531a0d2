"""Quota filter: the job's charge on this cluster's chip must fit its queue's capability (and
every ancestor queue's, `hierarchy`) and its namespace's FederatedResourceQuota overall; and
the pods it would put on this cluster must fit the namespace's share there
(`staticAssignments`, which the propagator writes as a ResourceQuota into that member).

Fed by admitted usage (in the cycle state), the queue and quota objects in the snapshot and
the chip the job would use on each cluster; feeds the runner. Per cluster because the
charge depends on the chip: a queue capped at `accelerator/nvidia-h100: 8` may still run on
A100s. Borrowing, reclaim and preemption are decided at admission, after placement.

Why the static share is checked here and not left to the member: the member's ResourceQuota
refuses pods beyond it, so a job placed there would wait for pods it can never create
while other members have room. Its room also caps how many replicas division may give that
member (`static_room`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from federation.cache import snapshot as snap
from federation.quota import accounting, hierarchy
from federation.resources import ResourceList
from federation.scheduler import framework as fw
from federation.scheduler.plugins import capacity
from policies.models.accelerator import ChipDevices
from policies.models.frq import counted_at_admission
from policies.models.queue import chip_resource

__all__ = [
    "Charges",
    "Quota",
    "charge_for",
    "charge_of",
    "charges",
    "copy_charge",
    "limited",
    "never",
    "share_excess",
    "static_hard",
    "static_room",
]

_UNLIMITED = np.iinfo(np.int64).max // 2


def charge_for(job: fw.JobRequest, chip: str | None, renames: ChipDevices) -> ResourceList:
    """What admitting the whole job charges its queue when it runs on `chip`."""
    return copy_charge(job.pod, job.devices, job.replicas, chip, renames, shares=job.pod_sets)


def copy_charge(
    pod: ResourceList,
    devices: int,
    replicas: int,
    chip: str | None,
    renames: ChipDevices,
    *,
    shares: Sequence[fw.PodShare],
) -> ResourceList:
    """What `replicas` pods on one cluster charge on `chip`: a whole copy of a job whose
    pod templates differ (`shares`), each template's own pods (a CPU launcher and two
    2-GPU workers hold 4 GPUs, not 6); any other count, `replicas` of the largest `pod`."""
    if not shares or replicas != sum(share.count for share in shares):
        return charge_of(pod, devices, replicas, chip, renames)
    charge = ResourceList()
    for share in shares:
        charge = charge + charge_of(share.requests, share.devices, share.count, chip, renames)
    return charge


def charge_of(
    pod: ResourceList, devices: int, replicas: int, chip: str | None, renames: ChipDevices
) -> ResourceList:
    """What `replicas` pods with these requests (`devices` accelerators each) charge on
    `chip`: their requests as the member runs them there (devices under the resource the
    chip's profile names, `renames`), plus `accelerator/<chip>` so a queue's capability
    can name a chip model (`charge_for` for a request; also read back from stored
    Bindings)."""
    charge = (renames.on(pod, chip) if devices else pod).scaled(replicas)
    if devices and chip:
        charge = charge + ResourceList({chip_resource(chip): devices * replicas})
    return charge


def limited(job: fw.JobRequest, state: fw.CycleState) -> bool:
    """Whether this filter can turn a cluster down: the job's queue has a capability or its
    namespace a FederatedResourceQuota."""
    queues = state.snapshot.queues
    queue = queues.get(job.job.queue)
    if queue is not None and queue.spec.capability is not None:
        return True
    if queue is not None and queue.spec.parent is not None:  # an ancestor's cap binds too
        above = hierarchy.tree_of(queues).ancestors.get(queue.name, ())
        if any(queues[a].spec.capability is not None for a in above):
            return True
    return job.job.ref.namespace in state.snapshot.quotas


class Charges:
    """`charge_of` for one cycle, remembered: by the pod's identity first (jobs stamped from
    one template share it), then by its content, so that equal pods share one charge object,
    which later readers (usage totals) key by identity. A cycle charges thousands of jobs
    with a few dozen distinct pods."""

    def __init__(self, renames: ChipDevices) -> None:
        self._renames = renames
        self._by_pod: dict[tuple[int, int, int, str | None], tuple[ResourceList, ResourceList]] = {}
        self._by_content: dict[tuple[ResourceList, int, int, str | None], ResourceList] = {}

    def of(self, pod: ResourceList, devices: int, replicas: int, chip: str | None) -> ResourceList:
        quick = (id(pod), devices, replicas, chip)
        hit = self._by_pod.get(quick)
        if hit is not None and hit[0] is pod:
            return hit[1]
        full = (pod, devices, replicas, chip)
        charge = self._by_content.get(full)
        if charge is None:
            charge = self._by_content[full] = charge_of(pod, devices, replicas, chip, self._renames)
        self._by_pod[quick] = (pod, charge)
        return charge


_CHARGES = ("quota-charges",)


def charges(state: fw.CycleState) -> Charges:
    """The cycle's `Charges` (kept in its memo, which a trial copy of the state shares)."""
    found = state.memo.get(_CHARGES)
    if not isinstance(found, Charges):
        found = state.memo[_CHARGES] = Charges(state.snapshot.chip_devices)
    return found


def problem(
    job: fw.JobRequest,
    state: fw.CycleState,
    chip: str | None,
    charge: ResourceList | None = None,
) -> str | None:
    """Why the job's charge on `chip` (`charge_for`, unless given) breaks its queue or
    namespace limit, or None."""
    if charge is None:
        charge = charge_for(job, chip, state.snapshot.chip_devices)
    if state.holds is not None and state.holds_no_more(job.job, charge):
        return None
    queues = state.snapshot.queues
    queue = queues.get(job.job.queue)
    found = accounting.capability_problem(queue, state.usage.queue_totals(job.job.queue), charge)
    if found is None and queue is not None and queue.spec.parent is not None:
        found = hierarchy.ancestor_problem(queue.name, queues, state.usage, charge)
    if found is None:
        namespace = job.job.ref.namespace
        found = accounting.overall_problem(
            state.snapshot.quotas.get(namespace), state.usage.namespace_totals(namespace), charge
        )
    return _gang_noted(job, found)


def _gang_noted(job: fw.JobRequest, found: str | None) -> str | None:
    """`found`, with a gang's note when it says the job can never be admitted: the limit
    is measured against every replica, and a Volcano user reading "needs 6" beside
    minAvailable 2 must learn that fedctl places them all at once."""
    if found is None or accounting.NEVER not in found:
        return found
    return found + capacity.whole_gang(job)


def never(job: fw.JobRequest, state: fw.CycleState) -> str | None:
    """Why no limit would ever let the job in, on any chip it may use, whatever else is
    released (its charge alone exceeds its queue's, an ancestor's or its namespace's
    limit), or None when some chip's charge fits an empty federation.

    Asked when placement fails for room or price: a job that waits for capacity would
    otherwise be told about the capacity and learn it can never run only once room frees.
    A job that may use any chip is judged by its physical requests alone."""
    if not limited(job, state):
        return None
    found = None
    for chip in job.chips if job.devices and job.chips else (None,):
        found = _over_on_its_own(job, state, chip)
        if found is None:
            return None
    return found


def _over_on_its_own(job: fw.JobRequest, state: fw.CycleState, chip: str | None) -> str | None:
    charge = charge_for(job, chip, state.snapshot.chip_devices)
    queues = state.snapshot.queues
    queue = queues.get(job.job.queue)
    found = accounting.capability_problem(queue, {}, charge)
    if found is None and queue is not None:
        for above in hierarchy.tree_of(queues).ancestors.get(queue.name, ()):
            found = accounting.capability_problem(queues[above], {}, charge, child=queue.name)
            if found is not None:
                break
    if found is None:
        quota = state.snapshot.quotas.get(job.job.ref.namespace)
        found = accounting.overall_problem(quota, {}, charge)
    return _gang_noted(job, found)


def chip_on(job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> list[str | None]:
    """The chip the job would use on each row's cluster (None for CPU-only work)."""
    if not job.devices:
        return [None] * len(rows)
    index = capacity.cluster_chip(job, state, rows)
    return [state.snapshot.chips[i] if i >= 0 else None for i in index.tolist()]


def static_hard(state: fw.CycleState, namespace: str) -> Mapping[str, ResourceList]:
    """Cluster → the namespace's static share there (the hard limits its member
    ResourceQuota holds), counting only what a pod's requests and number can exceed."""
    key = ("static-hard", namespace)
    found = state.memo.get(key)
    if found is None:
        frq = state.snapshot.quotas.get(namespace)
        found = {
            a.cluster_name: ResourceList(
                {n: v for n, v in a.hard.items() if n == "pods" or counted_at_admission(n)}
            )
            for a in (frq.spec.static_assignments if frq is not None else ())
        }
        state.memo[key] = found
    return found  # type: ignore[return-value]


def static_room(
    job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
) -> snap.IntArray | None:
    """Per row: how many more pods of `job` its namespace's static share on that cluster
    admits (a large number where it has none); None when the namespace has no share
    anywhere, which is the common case and costs one lookup."""
    namespace = job.job.ref.namespace
    hard = static_hard(state, namespace)
    if not hard:
        return None
    clusters = state.snapshot.clusters
    out = np.full(len(rows), _UNLIMITED, dtype=np.int64)
    for i, (row, chip) in enumerate(zip(rows.tolist(), chip_on(job, state, rows), strict=True)):
        limits = hard.get(clusters[row].name)
        if limits:
            used = state.usage.placed_totals(namespace, clusters[row].name)
            out[i] = _room(_pod_on(job, state, chip), limits, used)
    return out


def _pod_on(job: fw.JobRequest, state: fw.CycleState, chip: str | None) -> ResourceList:
    """One pod of the job as the member runs it on `chip`: its devices under the resource
    the chip's profile names, which the member's ResourceQuota counts."""
    return state.snapshot.chip_devices.on(job.pod, chip) if job.devices else job.pod


def _room(pod: ResourceList, limits: ResourceList, used: Mapping[str, int]) -> int:
    room = int(_UNLIMITED)
    for name, limit in limits.items():
        per_pod = 1000 if name == "pods" else pod.amount(name)
        if per_pod > 0:
            room = min(room, max(0, (limit - used.get(name, 0)) // per_pod))
    return room


def static_problem(
    job: fw.JobRequest, state: fw.CycleState, cluster: str, chip: str | None
) -> str | None:
    """Why the namespace's static share on `cluster` cannot take the pods the job needs
    there on `chip` (all of them for a gang or a duplicate, else one), or None."""
    namespace = job.job.ref.namespace
    limits = static_hard(state, namespace).get(cluster)
    if not limits:
        return None
    used = state.usage.placed_totals(namespace, cluster)
    need = capacity.needed_here(job)
    pod = _pod_on(job, state, chip)
    if _room(pod, limits, used) >= need:
        return None
    for name, limit in limits.items():
        per_pod = 1000 if name == "pods" else pod.amount(name)
        if per_pod > 0 and used.get(name, 0) + need * per_pod > limit:
            shown, held = _show(name, limit), _show(name, used.get(name, 0))
            return (
                f"namespace {namespace} may use {shown} {name} on {cluster}"
                f" (FederatedResourceQuota staticAssignments), {held} in use;"
                f" {need} more pod(s) would exceed it"
            )
    return None


def share_excess(
    job: fw.JobRequest, state: fw.CycleState, placement: Mapping[str, int]
) -> str | None:
    """Why a divided placement gives a member more pods than the namespace's static share
    there holds, or None.

    Division is capped by the share (`Placer.score`), but static weights ignore capacity
    and a Steady result keeps the replicas a member already has: a share lowered since,
    or one another job took meanwhile, still ends here rather than in a member
    ResourceQuota that refuses the pods.

    Only growth is checked: a member keeping or shedding replicas it runs already is
    never refused, so a scale-down under a share lowered since still applies. Replicas
    whose pods may have grown since they were placed (a Binding that did not record them)
    are growth too.
    """
    namespace = job.job.ref.namespace
    hard = static_hard(state, namespace)
    if not hard:
        return None
    previous = job.previous if job.previous_sized else {}
    for cluster, pods in sorted(placement.items()):
        limits = hard.get(cluster)
        if not limits or pods <= previous.get(cluster, 0):
            continue
        used = state.usage.placed_totals(namespace, cluster)
        [chip] = chip_on(job, state, np.array([state.snapshot.index[cluster]]))
        room = _room(_pod_on(job, state, chip), limits, used)
        if pods > room:
            return (
                f"{pods} replica(s) on {cluster} exceed namespace {namespace}'s static share"
                f" there (FederatedResourceQuota staticAssignments), which holds {room} more"
            )
    return None


def _show(name: str, milli: int) -> str:
    return str(ResourceList({name: milli}).to_wire().get(name, "0"))


class Quota:
    name = "quota"
    static = False

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        chip = chip_on(job, state, np.array([cluster.index]))[0]
        found = problem(job, state, chip) or static_problem(job, state, cluster.name, chip)
        return fw.Verdict.unschedulable(found) if found else fw.Verdict.success()

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        if not limited(job, state):
            return np.ones(len(rows), dtype=bool)
        chips = chip_on(job, state, rows)
        verdicts = {chip: problem(job, state, chip) is None for chip in set(chips)}
        keep = np.array([verdicts[c] for c in chips], dtype=bool)
        room = static_room(job, state, rows)
        if room is not None:
            keep &= room >= capacity.needed_here(job)
        return keep
