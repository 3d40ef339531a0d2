"""What a stored Binding's copies hold: its admission, read back from the registry.

Fed by the Scheduled Bindings (`reconcile`), the Bindings of workloads waiting to be
placed again, and the API's queue view when no scheduling loop answers; feeds usage, so
quota and capacity count what is bound rather than what the controller remembers.
"""

from __future__ import annotations

from collections.abc import Collection

from federation.queue.pending import PendingJob
from federation.quota import accounting
from federation.resources import ResourceList, device_names
from federation.scheduler import framework as fw
from federation.scheduler.plugins import quota
from policies.models.accelerator import ChipDevices
from policies.models.binding import Binding, known_cost
from policies.models.workload import Workload

__all__ = ["Charges", "Shapes", "admission_of", "on_known", "resized"]


Shapes = dict[object, tuple[ResourceList, int]]
"""A caller's cache of pod shapes: requests key -> (one pod's requests, accelerators)."""
Charges = dict[
    tuple[ResourceList, tuple[tuple[int, str | None], ...], tuple[object, ...]], ResourceList
]
"""A caller's cache of charges: (pod, (replicas, chip) per target, pod shares) -> what
they charge."""


def admission_of(
    job: PendingJob,
    binding: Binding,
    *,
    device_resources: Collection[str],
    chip_devices: ChipDevices,
    shapes: Shapes | None = None,
    charges: Charges | None = None,
    as_placed: bool = False,
) -> accounting.Admission:
    """The usage a Scheduled Binding stands for (the same charge the cycle computed).

    `as_placed`: charge the pods the Binding recorded when it was placed (`podRequests`),
    not the workload's, to the queue that admitted them (its `queue`): the copies a
    workload waiting to be placed again still runs are the old pods until it is, and a
    resize in between had them charged at the new size; moved to another queue in between,
    they were charged to a queue that never admitted them, past its capability.

    Read from the pod's requests alone, not a whole `JobRequest`: a new leader reads one per
    admitted workload before its first cycle, and that read is its take-over time. Tens of
    thousands of admissions come in a few dozen pod shapes and placements, so `shapes` and
    `charges` (kept by the caller for one `device_resources` and `chip_devices`, the device
    resource each chip's profile names, which a pod is charged in) read each shape and charge
    once; the admissions then share those objects, which later readers key by identity.
    """
    pod, devices = _pod_of(job.workload, device_resources, shapes)
    shares = fw.pod_shares(job.workload.pod_sets, device_resources)
    if as_placed:
        placed = _placed_pod(binding, device_resources, shapes)
        if placed is not None:  # its copies' pods, not the template's now: one shape each
            (pod, devices), shares = placed, ()
    targets = binding.spec.clusters
    split = tuple((t.replicas, t.chip if devices else None) for t in targets)
    charge = charges.get((pod, split, shares)) if charges is not None else None
    if charge is None:
        charge = ResourceList()
        for replicas, chip in split:
            charge = charge + quota.copy_charge(
                pod, devices, replicas, chip, chip_devices, shares=shares
            )
        if charges is not None:
            charges[(pod, split, shares)] = charge
    chips = {t.name: t.chip for t in targets if t.chip}  # CPU pods: the arch pinned
    return accounting.admission(
        ref=job.ref,
        queue=binding.spec.queue if as_placed else job.queue,
        namespace=job.ref.namespace,
        # A named priority (`fedctl.io/priority: high`) reads 0 on a workload until a cycle
        # looks it up in its queue; the Binding records the value it was admitted at. Read
        # as 0, equal work preempted itself without end, and any number outranked it.
        priority=binding.spec.priority if job.priority_class else job.priority,
        seq=job.seq,
        charge=charge,
        # An object without pods holds no room, whatever count a Binding written before
        # such objects had no replicas gives it (it held a pod slot on every member).
        placement=binding.placement()
        if job.workload.pod_sets
        else dict.fromkeys(binding.placement(), 0),
        pod=pod,
        chips=chips,
        job=job,
        cost=known_cost(targets),
        devices_as=chip_devices,
    )


def _pod_of(
    workload: Workload, device_resources: Collection[str], shapes: Shapes | None
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
    shapes: Shapes | None = None,
) -> bool:
    """Whether the workload's pods differ from those its Binding recorded when placed: the
    controller places it again, and its copies are the old pods until it does."""
    placed = _placed_pod(binding, device_resources, shapes)
    return placed is not None and placed[0] != _pod_of(workload, device_resources, shapes)[0]


def _placed_pod(
    binding: Binding, device_resources: Collection[str], shapes: Shapes | None
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
