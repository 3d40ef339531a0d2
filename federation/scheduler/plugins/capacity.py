"""Capacity filter: every pod must fit on some node of an acceptable flavor, counting the
placements this cycle already made.

Fed by the cycle state (free and emptiest-node amounts per cluster and node flavor, copied
from the snapshot and charged as the cycle places work) and the chip filter's flavor mask;
feeds the runner, replica division (free replicas per cluster) and the pending reason.

Why per flavor: 16 free GPUs spread as 4 per node cannot host an 8-GPU pod, so totals are
not enough (DESIGN.md). Nor is the sum with one emptiest node: five 8-CPU nodes with 5,
8, 4.4, 1.5 and 4.4 CPU free have 23.3 CPU, room for 7 pods of 3 CPU by the sum but for 5
node by node, and the 2 more waited Pending on the member for good. A flavor's free
replicas are counted node by node over its groups of nodes by free amounts
(`node_groups.fit`), which alone decide where the status reports them; a status without
groups reads as every node empty, and the count is capped by min(free // request) over
resources and zero unless one pod fits on the emptiest node, as before.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from federation.cache import snapshot as snap
from federation.quota import accounting
from federation.resources import format_quantity
from federation.scheduler import framework as fw
from federation.scheduler import node_groups
from federation.scheduler.plugins import chips

__all__ = [
    "AVAIL",
    "CHIP",
    "FLAVOR",
    "Capacity",
    "best_flavor",
    "chip_flavor",
    "chosen_flavor",
    "cluster_available",
    "cluster_chip",
    "cluster_pod_cost",
    "flavor_available",
    "kept_chip",
    "needed_here",
    "on_kept_chips",
    "one_flavor_available",
    "pod_hour_cost",
    "running",
    "shape_arrays",
    "shortage",
    "view",
    "whole_gang",
]


def flavor_available(
    job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
) -> snap.IntArray:
    """[len(rows), F]: how many more pods of `job` each acceptable flavor can hold."""
    pod = job.vector
    need = pod > 0
    wanted = pod[need]
    mask = chips.flavor_mask(job, state)[rows]
    return _available(state, rows, need, wanted, mask)


def _available(
    state: fw.CycleState,
    rows: snap.IntArray,
    need: snap.BoolArray,
    wanted: snap.IntArray,
    mask: snap.BoolArray,
) -> snap.IntArray:
    """[len(rows), F] free replicas: node by node where the status shows how the room is
    split (the sums and the emptiest node can only say more there), else also capped by
    the sums and zero unless one pod fits on the emptiest node."""
    grouped = state.snapshot.grouped[rows]
    fits = (grouped | np.all(state.largest[rows][..., need] >= wanted, axis=-1)) & mask
    by_free = np.min(state.free[rows][..., need] // wanted, axis=-1)
    free, count = state.group_arrays()
    by_node = node_groups.fit(free[rows], count[rows], need, wanted)
    avail = np.where(grouped, by_node, np.minimum(by_free, by_node))
    return np.where(fits, np.maximum(avail, 0), 0)


AVAIL, FLAVOR, CHIP = 0, 1, 2
"""Columns of `view`'s integer array: free replicas, flavor to use, its chip index."""


def view(job: fw.JobRequest, state: fw.CycleState) -> tuple[snap.IntArray, snap.FloatArray]:
    """Per cluster, cached per request signature: [C, 3] ints (free replicas, flavor to use,
    its chip index) and [C] one pod's hourly cost there.

    Device pods count free replicas on the chosen flavor's chip only: a Binding records
    one chip per cluster and the propagator pins every pod there to it, so pods counted
    on a second chip's nodes were pinned to the first chip's, which had no room for them.

    Only clusters whose capacity changed since the cached answer (their version moved) are
    recomputed, so identical requests across a cycle share the work.
    """
    key = ("view", job.shape)
    cached = state.dyn.get(key)
    if cached is None:
        size = state.snapshot.size
        versions = np.full(size, -1, dtype=np.int64)
        ints: snap.IntArray = np.zeros((size, 3), dtype=np.int64)
        cost = np.zeros(size, dtype=np.float64)
        state.dyn[key] = (versions, ints)
        state.dyn[("cost", job.shape)] = (versions, cost)
    else:
        versions, ints = cached  # type: ignore[assignment]
        cost = state.dyn[("cost", job.shape)][1]  # type: ignore[assignment]
    stale = np.flatnonzero(versions != state.version)
    if stale.size:
        need, wanted, mask, order, pod_cost = shape_arrays(job, state)
        avail = _available(state, stale, need, wanted, mask[stale])
        chip_of = state.snapshot.flavor_chip[stale]
        flavors = _choose(avail, order[stale], chip_of, job.chip_need)
        chosen = chip_of[np.arange(stale.size), flavors]
        if job.devices:  # one chip per cluster: its Binding target records one
            avail = np.where(chip_of == chosen[:, None], avail, 0)
        ints[stale, AVAIL] = avail.sum(axis=1)
        ints[stale, FLAVOR] = flavors
        ints[stale, CHIP] = chosen
        cost[stale] = pod_cost[stale, flavors]
        versions[stale] = state.version[stale]
    return ints, cost


def _choose(
    avail: snap.IntArray, order: snap.FloatArray, chip_of: snap.IntArray, need: int
) -> snap.IntArray:
    """Per row, the flavor to use: the most preferred chip, then cheapest, among flavors
    with room. Device pods that must share a chip (`chip_need`) choose among the chips
    that hold them all, or when none does among those holding the most (the room the
    shortage names)."""
    key = np.where(avail > 0, order, np.inf)
    if need > 1:
        room = np.zeros_like(avail)
        for chip in np.unique(chip_of).tolist():
            on = chip_of == chip
            room += np.where(on, np.where(on, avail, 0).sum(axis=1, keepdims=True), 0)
        enough = np.minimum(room.max(axis=1, keepdims=True), need)
        key = np.where(room >= enough, key, np.inf)
    chosen: snap.IntArray = np.argmin(key, axis=1)
    return chosen


def chip_flavor(
    avail: Sequence[int], order: Sequence[float], chip_of: Sequence[Hashable], need: int
) -> int:
    """`_choose` for one cluster in plain Python, over its flavors' free replicas, keys and
    chips: the first best-ordered flavor with room, among those whose chip holds `need`
    pods, or the most when none does (0: none has room)."""
    room: dict[Hashable, int] = {}
    for a, chip in zip(avail, chip_of, strict=True):
        room[chip] = room.get(chip, 0) + a
    enough = min(max(room.values()), need)
    best, best_key = 0, math.inf
    for i, (a, key, chip) in enumerate(zip(avail, order, chip_of, strict=True)):
        if a > 0 and room[chip] >= enough and key < best_key:
            best, best_key = i, key
    return best


def shape_arrays(
    job: fw.JobRequest, state: fw.CycleState
) -> tuple[snap.BoolArray, snap.IntArray, snap.BoolArray, snap.FloatArray, snap.FloatArray]:
    """What `view` needs that depends on the request shape only, over every cluster: the
    resources asked for, the flavor mask, the flavor preference key of `best_flavor` and
    one pod's hourly cost per flavor."""
    key = ("view-static", job.shape)
    cached = state.memo.get(key)
    if cached is None:
        s = state.snapshot
        rows = np.arange(s.size, dtype=np.int64)
        pod = job.vector
        need = pod > 0
        wanted = pod[need]
        rank_of = np.array(
            [fw.chip_rank(job, c) for c in s.chips] + [len(job.chips), len(job.chips)],
            dtype=np.float64,
        )
        pod_cost = pod_hour_cost(job, state, rows)
        order = rank_of[s.flavor_chip] * 1e15 + np.nan_to_num(pod_cost, nan=1e12)
        cached = (need, wanted, chips.flavor_mask(job, state), order, pod_cost)
        state.memo[key] = cached
    return cached  # type: ignore[return-value]


def chosen_flavor(job: fw.JobRequest, state: fw.CycleState, row: int) -> int:
    """The flavor the job would use on one cluster (most preferred chip, then cheapest)."""
    return int(view(job, state)[0][row, FLAVOR])


def one_flavor_available(job: fw.JobRequest, state: fw.CycleState, row: int, flavor: int) -> int:
    """Free replicas of the job on one flavor of one cluster (0 when not acceptable)."""
    if not chips.flavor_mask(job, state)[row, flavor]:
        return 0
    pod = job.vector
    need = pod > 0
    wanted = pod[need]
    asked = [(r, w) for r, w in enumerate(pod.tolist()) if w > 0]
    by_node = node_groups.fit_one(*state.groups(row, flavor), asked)
    if state.snapshot.grouped[row, flavor]:
        return by_node
    if (state.largest[row, flavor][need] < wanted).any():
        return 0
    by_free = int((state.free[row, flavor][need] // wanted).min())
    return max(0, min(by_free, by_node))


def kept_chip(job: fw.JobRequest, state: fw.CycleState, name: str) -> int | None:
    """Index (into `snapshot.chips`) of the chip a device workload's replicas kept on a
    cluster run on, as its Binding records it; None: not a device workload, nothing kept
    there, or a chip the fleet no longer has."""
    if not job.devices or not job.previous.get(name):
        return None
    chip = job.copies_chips.get(name)
    chips = state.snapshot.chips
    return chips.index(chip) if chip in chips else None


def on_kept_chips(
    job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray, available: snap.IntArray
) -> snap.IntArray:
    """`available`, but where a device workload keeps replicas: free replicas on their chip
    alone, which the replicas added there join (`taken.take`)."""
    if not job.devices or not job.copies_chips:
        return available
    names = state.snapshot.clusters
    kept = {
        i: chip
        for i, row in enumerate(rows.tolist())
        if (chip := kept_chip(job, state, names[row].name)) is not None
    }
    if not kept:
        return available
    per_flavor = flavor_available(job, state, rows)
    out = available.copy()
    for i, chip in kept.items():
        out[i] = int(per_flavor[i][state.snapshot.flavor_chip[rows[i]] == chip].sum())
    return out


def cluster_available(
    job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
) -> snap.IntArray:
    """Per row: free replicas of `job` over all its acceptable flavors."""
    return np.asarray(view(job, state)[0][rows, AVAIL], dtype=np.int64)


def cluster_chip(job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.IntArray:
    """Per row: index (into `snapshot.chips`) of the chip the job would use; -1: none."""
    return np.asarray(view(job, state)[0][rows, CHIP], dtype=np.int64)


def cluster_pod_cost(
    job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
) -> snap.FloatArray:
    """Per row: one pod's hourly cost on the flavor the job would use (NaN: unpriced)."""
    return np.asarray(view(job, state)[1][rows], dtype=np.float64)


def pod_hour_cost(job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.FloatArray:
    """[len(rows), F]: what one pod costs per hour on each flavor (NaN: not priced)."""
    s = state.snapshot
    pod = job.vector if job.mean is None else job.mean  # templates that differ: their mean
    columns = {"on-demand": [0], "spot": [1], "any": [0, 1]}[job.capacity_type]
    best = None
    for col in columns:
        cost = (
            s.price_cpu[rows, col][:, None] * (pod[snap.CPU] / 1000)
            + s.price_mem[rows, col][:, None] * snap.gib_hours(int(pod[snap.MEMORY]))
            + (s.price_dev[rows, :, col] * (pod[snap.DEVICES] / 1000) if job.devices else 0.0)
        )
        cost = np.broadcast_to(cost, s.flavor_chip[rows].shape)
        best = cost if best is None else np.fmin(best, cost)
    assert best is not None
    return best


def best_flavor(
    job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray, avail: snap.IntArray
) -> snap.IntArray:
    """Per row, the flavor to use: most preferred chip, then cheapest, among those with room."""
    s = state.snapshot
    rank_of = np.array(
        [fw.chip_rank(job, c) for c in s.chips] + [len(job.chips), len(job.chips)], dtype=np.float64
    )
    ranks = rank_of[s.flavor_chip[rows]]
    cost = np.nan_to_num(pod_hour_cost(job, state, rows), nan=1e12)
    key = np.where(avail > 0, ranks * 1e15 + cost, np.inf)
    chosen: snap.IntArray = np.argmin(key, axis=1).astype(np.int64)
    return chosen


def needed_here(job: fw.JobRequest) -> int:
    """Replicas one cluster must hold to pass: all of them for a gang or duplicate, else one
    (none for a workload scaled to zero)."""
    whole = job.single_cluster or job.strategy == "duplicated"
    return job.replicas if whole else min(job.replicas, 1)


def _label(job: fw.JobRequest, state: fw.CycleState, column: int) -> str:
    if column == snap.DEVICES:
        models = [c for c in job.chips if c in state.snapshot.chips]
        return ", ".join(models) if len(models) == 1 else "/".join(sorted(job.device_names))
    return snap.RESOURCES[column]


def _request(job: fw.JobRequest, column: int) -> int:
    """One pod's request in `column` as written: the vector caps what no node could hold
    (`parts.REQUEST_CAP`), which a reason must not show in its place."""
    if column == snap.CPU:
        return job.pod.amount("cpu")
    if column == snap.MEMORY:
        return job.pod.amount("memory")
    if column == snap.DEVICES:
        return sum(job.pod.amount(n) for n in job.device_names)
    return int(job.vector[column])


def _amount(column: int, milli: int) -> str:
    return format_quantity(int(milli), binary=column == snap.MEMORY)


def shortage(job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> str:
    """The sentence for a job no eligible cluster can hold, naming the closest cluster."""
    if rows.size == 0:
        return "no eligible cluster"
    pod = job.vector
    mask = chips.flavor_mask(job, state)[rows]
    columns = [c for c in range(len(pod)) if pod[c] > 0]
    # A pod larger than any eligible node even when empty waits for the fleet to change,
    # not for work to finish: say so, or "best is X with 8" reads as a matter of time.
    s = state.snapshot
    whole = np.where((mask & (s.nodes[rows] > 0))[..., None], s.alloc[rows], -1)
    never = [c for c in columns if whole[..., c].max() < pod[c]]
    if never:
        column = min(never, key=lambda c: whole[..., c].max() / pod[c])
        per_cluster = whole[..., column].max(axis=1)
        best = int(np.argmax(per_cluster))
        label = _label(job, state, column)
        return (
            f"no eligible cluster has a node with {_amount(column, _request(job, column))} {label}"
            f" even when empty; the largest, on {s.clusters[int(rows[best])].name}, has"
            f" {_amount(column, max(int(per_cluster[best]), 0))}: shrink the request or add"
            " larger nodes"
        )
    most = _most_held(job, state, rows)
    if most.max() < needed_here(job):  # the gang outgrows every member, however idle
        best = int(np.argmax(most))
        return (
            f"no eligible cluster could hold {needed_here(job)} replicas of {job.pod} even"
            f" when empty; the largest, {s.clusters[int(rows[best])].name}, holds"
            f" {int(most[best])}: {accounting.NEVER} (shrink the request or add capacity)"
        ) + whole_gang(job)
    largest = np.where(mask[..., None], state.largest[rows], -1)
    # The scarcest resource: the one whose best single node is furthest below the pod.
    ratios = {c: largest[..., c].max() / pod[c] for c in columns}
    column = min(columns, key=lambda c: ratios[c])
    if ratios[column] >= 1:
        avail = on_kept_chips(job, state, rows, cluster_available(job, state, rows))
        best = int(np.argmax(avail))
        name = state.snapshot.clusters[int(rows[best])].name
        return (
            f"no eligible cluster has room for {needed_here(job)} replicas of"
            f" {job.pod}; best is {name} with {int(avail[best])}"
        ) + whole_gang(job)
    per_cluster = largest[..., column].max(axis=1)
    best = int(np.argmax(per_cluster))
    name = state.snapshot.clusters[int(rows[best])].name
    wanted = _amount(column, _request(job, column))
    return (
        f"no eligible cluster has a node with {wanted} free {_label(job, state, column)};"
        f" best is {name} with {_amount(column, max(int(per_cluster[best]), 0))}"
    )


def whole_gang(job: fw.JobRequest) -> str:
    """What a shortage adds for a gang smaller than its replicas (`fedctl.io/min-available`,
    Volcano's or a PyTorchJob's `minAvailable`): Volcano starts that many together and
    the rest as room frees, but fedctl places every replica on one member at once, so a
    reason counting all of them must say why: this filter's shortage and the quota
    filter's limit a workload can never fit alike."""
    needed = needed_here(job)
    gang = job.job.workload.min_available if job.single_cluster else None
    if gang is None or gang >= needed:
        return ""
    return (
        "; every replica of a gang is placed on one member at once, so minAvailable"
        f" {gang} does not let it start with fewer than {needed}"
    )


def _most_held(job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.IntArray:
    """Per row: the most pods of `job` the cluster's acceptable flavors could hold were it
    empty, on one chip for device pods (a Binding pins a cluster's pods to one).

    Why totals rather than free room: a gang larger than this waits for nothing that work
    finishing would bring, and its reason must say so rather than name the room left."""
    need, wanted, mask, _, _ = shape_arrays(job, state)
    s = state.snapshot
    held = np.min(s.alloc[rows][..., need] // wanted, axis=-1) * s.nodes[rows]
    whole = np.where(mask[rows], np.maximum(held, 0), 0)
    if not job.devices:
        return np.asarray(whole.sum(axis=1), dtype=np.int64)
    chip_of = state.snapshot.flavor_chip[rows]
    per_chip = [np.where(chip_of == c, whole, 0).sum(axis=1) for c in np.unique(chip_of).tolist()]
    return np.asarray(np.max(per_chip, axis=0), dtype=np.int64)


class Capacity:
    name = "capacity"
    static = False

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        """Plain per-flavor loop (the reference the vector path is checked against)."""
        pod = job.vector.tolist()
        room: list[tuple[int, str | None, int]] = []  # (free replicas, chip, flavor)
        emptiest: list[int] = [0] * len(pod)
        biggest: list[int] = [0] * len(pod)  # one node's allocatable, whatever runs there
        for fi, flavor in enumerate(cluster.flavors):
            model, resource = flavor.accelerator_model, flavor.accelerator_resource
            if not fw.accepts_chip(job, model, flavor.arch, resource if model else None):
                continue
            largest = state.largest[cluster.index, fi].tolist()
            free = state.free[cluster.index, fi].tolist()
            alloc = state.snapshot.alloc[cluster.index, fi].tolist()
            emptiest = [max(a, b) for a, b in zip(emptiest, largest, strict=True)]
            if flavor.node_count > 0:
                biggest = [max(a, b) for a, b in zip(biggest, alloc, strict=True)]
            asked = [(r, p) for r, p in enumerate(pod) if p > 0]
            by_node = node_groups.fit_one(*state.groups(cluster.index, fi), asked)
            if state.snapshot.grouped[cluster.index, fi]:  # node by node alone
                room.append((by_node, model, fi))
                continue
            if any(p > 0 and lf < p for p, lf in zip(pod, largest, strict=True)):
                continue
            by_free = min(f // p for f, p in zip(free, pod, strict=True) if p > 0)
            room.append((max(0, min(by_free, by_node)), model, fi))
        total = sum(n for n, _, _ in room)
        if job.devices and room:  # one chip per cluster: the kept one, else the chosen one
            total = sum(n for n, c, _ in room if c == self._one_chip(job, cluster, state, room))
        need = needed_here(job)
        total += job.previous.get(cluster.name, 0)  # its own pods there: room it holds
        if total >= need:
            return fw.Verdict.success()
        if total == 0:
            never = [c for c, p in enumerate(pod) if p > 0 and biggest[c] < p]
            if never:
                c = never[0]
                return fw.Verdict.unschedulable(
                    f"no node with {_amount(c, _request(job, c))} {_label(job, state, c)}"
                    f" even when empty (largest has {_amount(c, biggest[c])})"
                )
            short = [c for c, p in enumerate(pod) if p > 0 and emptiest[c] < p]
            if short:
                c = short[0]
                return fw.Verdict.unschedulable(
                    f"no node with {_amount(c, _request(job, c))} free {_label(job, state, c)}"
                    f" (emptiest has {_amount(c, max(emptiest[c], 0))})"
                )
        return fw.Verdict.unschedulable(f"room for {total} of {need} replicas")

    @staticmethod
    def _one_chip(
        job: fw.JobRequest,
        cluster: snap.ClusterInfo,
        state: fw.CycleState,
        room: list[tuple[int, str | None, int]],
    ) -> str | None:
        """The chip a device job's pods there share: the one its kept replicas run on,
        else that of the flavor `view` would choose (`_choose`)."""
        kept = kept_chip(job, state, cluster.name)
        if kept is not None:
            return state.snapshot.chips[kept]
        if not any(n > 0 for n, _, _ in room):
            return None
        _, _, _, order, _ = shape_arrays(job, state)
        keys = [float(order[cluster.index, fi]) for _, _, fi in room]
        best = chip_flavor([n for n, _, _ in room], keys, [c for _, c, _ in room], job.chip_need)
        return room[best][1]

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        available = on_kept_chips(job, state, rows, cluster_available(job, state, rows))
        if job.previous:
            available = available + running(job, state, rows)
        return available >= needed_here(job)


def running(job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.IntArray:
    """Per row: the replicas the job's current placement has there.

    A cluster passes the capacity filter with them: they are room the job holds already.
    Filtered on free room alone, a full member lost every replica it ran when the job was
    scaled (down as well as up) or placed again after a failover, where Karmada's Steady
    mode keeps them.
    """
    index = state.snapshot.index
    where = {row: i for i, row in enumerate(rows.tolist())}
    out = np.zeros(len(rows), dtype=np.int64)
    for name, replicas in job.previous.items():
        i = where.get(index.get(name, -1))
        if i is not None:
            out[i] = replicas
    return out
