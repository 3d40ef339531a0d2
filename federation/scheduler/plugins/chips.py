"""Chip and arch filter: the cluster must have a node flavor with an acceptable chip.

Fed by the workload's `fedctl.io/chips` (or the policy's `spec.fedctl.chips`/`arches`) and
the device resources its pods request, and the node flavors in the snapshot; feeds the
runner and, through `flavor_mask`, the capacity filter and cost score (which only look at
flavors that carry an acceptable chip). CPU-only pods never land on accelerator flavors.
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from policies.models.accelerator import is_arch

__all__ = ["Chips", "flavor_mask"]


def flavor_mask(job: fw.JobRequest, state: fw.CycleState) -> snap.BoolArray:
    """[C, F]: which node flavors of which clusters carry a chip and arch the job accepts."""
    key = ("flavors", job.shape)
    cached = state.memo.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    s = state.snapshot
    table = np.zeros((len(s.chips) + 1, len(s.arches) + 1), dtype=bool)
    for ai, arch in enumerate(s.arches):
        for ci, chip in enumerate(s.chips):
            table[ci, ai] = fw.accepts_chip(job, chip, arch)
        table[len(s.chips), ai] = fw.accepts_chip(job, None, arch)
    chip_index = np.where(s.flavor_chip >= 0, s.flavor_chip, len(s.chips))
    arch_index = np.where(s.flavor_arch >= 0, s.flavor_arch, len(s.arches))
    mask = table[chip_index, arch_index] & (s.flavor_chip != -2)
    if job.devices > 0 and not [c for c in job.chips if c in s.chips or not is_arch(c)]:
        mask &= _resource_mask(job, state)
    state.memo[key] = mask
    result: snap.BoolArray = mask
    return result


def _resource_mask(job: fw.JobRequest, state: fw.CycleState) -> snap.BoolArray:
    key = ("resources", job.device_names)
    cached = state.memo.get(key)
    if cached is None:
        s = state.snapshot
        cached = np.zeros(s.flavor_chip.shape, dtype=bool)
        for ci, names in enumerate(s.flavor_resource):
            for fi, name in enumerate(names):
                cached[ci, fi] = name in job.device_names
        state.memo[key] = cached
    return cached  # type: ignore[return-value]


class Chips:
    name = "chips"
    static = True

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        for flavor in cluster.flavors:
            model, resource = flavor.accelerator_model, flavor.accelerator_resource
            if fw.accepts_chip(job, model, flavor.arch, resource if model else None):
                return fw.Verdict.success()
        return fw.Verdict.unschedulable(_refusal(job, cluster))

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        any_flavor = np.asarray(flavor_mask(job, state).any(axis=1), dtype=bool)
        result: snap.BoolArray = any_flavor[rows]
        return result


def _refusal(job: fw.JobRequest, cluster: snap.ClusterInfo) -> str:
    """What the job wants and the cluster has. With both chips and arches named, either
    may be what fails, so both are shown, and the arch of each accelerator."""
    both = bool(job.arches) and bool(job.chips)
    have = sorted(
        {
            f"{f.accelerator_model} on {f.arch}"
            if both and f.accelerator_model
            else f.accelerator_model or f.arch
            for f in cluster.flavors
        }
    ) or ["no nodes"]
    if job.devices > 0:
        wanted = ", ".join(c for c in job.chips if not is_arch(c)) or (
            ", ".join(sorted(job.device_names))
        )
    else:
        wanted = ", ".join(job.chips or job.arches) or "CPU nodes"
    if both:
        wanted += f" on {' or '.join(job.arches)}"
    return f"no node flavor with {wanted} (has {', '.join(have)})"
