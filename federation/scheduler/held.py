"""Capacity a cycle starts from: the monitor's free capacity less what admitted work holds
that the monitor does not show yet.

Fed by the snapshot (the monitor's per-flavor free, emptiest node and allocatable) and the
admitted usage (rebuilt from the Scheduled Bindings); feeds `CycleState`, so the controller,
`fedctl plan` and drill plans start every cycle from the same numbers.

Why: the monitor writes a status only on a meaningful change or at its heartbeat, and pods
reach a member only after propagation, so work bound in an earlier cycle can still read as
free and be placed twice. The member's own scheduler would refuse the overcommit, but the
pods would wait Pending there instead of going to a cluster with room. Like the Kubernetes
scheduler's assumed pods, but without state: recomputed from the Bindings every cycle, so
a restart or a new leader starts from the same answer.
"""

from __future__ import annotations

import threading

import numpy as np

from federation.cache import snapshot as snap
from federation.cache.parts import request_amount
from federation.quota.accounting import Admission, Usage
from federation.resources import ResourceList, device_names
from federation.scheduler import node_groups
from policies.models.accelerator import is_arch

__all__ = ["Attribution", "effective_capacity", "group_of"]


_Shape = tuple[tuple[int, ...], frozenset[str], str | None]
"""A group of held pods: one pod's [R] vector, its device resource names, its chip there."""


Attribution = dict[_Shape, snap.IntArray]
"""Per group of held pods (`group_of`): how many of them `effective_capacity` counted on
each flavor of each cluster, [C, F]."""


def group_of(snapshot: snap.Snapshot, admission: Admission, cluster: str) -> _Shape:
    """The group an admission's pods on one cluster are held in (`Attribution`)."""
    vector, names = _pod_shape(admission.pod, snapshot.device_resources)
    return vector, names, admission.chips.get(cluster) if admission.chips else None


def effective_capacity(
    snapshot: snap.Snapshot, usage: Usage, *, attribution: Attribution | None = None
) -> tuple[snap.IntArray, snap.IntArray, snap.IntArray | None, snap.IntArray, snap.IntArray]:
    """Free and emptiest-node amounts [C, F, R] a cycle starts from: the monitor's, less
    what admitted workloads hold that the monitor does not show yet.

    The monitor writes a status only on a meaningful change or at its heartbeat, and pods
    reach a member only after propagation, so work bound in an earlier cycle can still
    read as free. Per flavor, free is the monitor's free less the held pods it does not
    show yet, clipped at 0: held pods are first matched to usage the monitor shows
    (`_spread_held`), those are in its free already and are not counted twice, and pods
    the federation did not place stay visible through its free. (Bounding by allocatable
    less everything held instead let others' pods hide ours: 5 of 8 cores used by others
    and 3 of ours not shown yet read as 3 free.) The emptiest node is bounded by what is
    left, as after a placement (`CycleState.take`). With nothing admitted the snapshot's
    arrays are returned as they are (copied).

    The third array is what the clip at 0 hides: admitted work beyond a flavor's room
    (static weights ignore capacity). Releasing such work first pays that back
    (`CycleState.give_back`), or a victim gave back room it never had. None: no debt.

    `attribution`, when given, is filled with where each group's pods were counted, so a
    victim gives its room back where the cycle began by counting it (`room.release`).

    The last two arrays are each flavor's nodes grouped by free amounts, with spare slots
    (`node_groups.with_spare`), the pods not shown yet charged to them. Where the status
    reports those groups, held pods that no node can hold are not counted at all: on the
    member they wait Pending and hold no room, and counted they hid the room nodes still
    had (a 10m pod was refused on nodes with 2 CPU free).
    """
    free, largest = snapshot.free.copy(), snapshot.largest.copy()
    group_free, group_count = node_groups.with_spare(snapshot.group_free, snapshot.group_count)
    groups = _groups(snapshot, usage) if len(usage) else {}
    if not groups:
        return free, largest, None, group_free, group_count
    total = snapshot.alloc * snapshot.nodes[:, :, None]
    fresh = np.zeros_like(total)
    unseen = np.maximum(total - free, 0)  # in use by the monitor, not yet matched to ours
    nodes = (group_free, group_count)
    for shape in sorted(groups, key=_group_order):
        counted = _spread_held(
            snapshot, shape, groups[shape], fresh=fresh, unseen=unseen, nodes=nodes
        )
        if attribution is not None and counted is not None:
            attribution[shape] = counted
    holding = (fresh > 0).any(axis=-1, keepdims=True)
    left = free - fresh
    effective = np.where(holding, np.maximum(left, 0), free)
    debt = np.where(holding, np.maximum(-left, 0), 0)
    return (
        effective,
        np.where(holding, np.minimum(largest, effective), largest),
        debt if debt.any() else None,
        group_free,
        group_count,
    )


class _Tally:
    """Pods held per (pod shape, chip) as a [C] count per group, kept for one fleet and
    brought up to each usage asked about by the admissions that differ from the last one.

    Why kept: a cycle that follows an admitting one sees every admission it made come back
    from its Binding, so the usage changes almost every busy cycle, and grouping every
    admission again cost tens of milliseconds per cycle at 50,000 admitted. Comparing the
    admitted set by identity and re-counting only what changed costs a fraction of that.
    Any usage works (a plan's, a preemption trial's): the difference is simply larger.
    """

    def __init__(self, fleet: tuple[str, ...], devices: frozenset[str]) -> None:
        self.fleet, self.devices = fleet, devices
        self.version = 0
        self.held: dict[str, Admission] = {}
        """ref -> the admission counted."""
        self.keys: dict[_Shape, int] = {}
        self.counts = np.zeros((0, len(fleet)), np.int64)
        self.pods: dict[int, tuple[ResourceList, _PodShape]] = {}
        """Pod shapes by pod object (the object kept alongside): admissions read apart
        still share a few dozen pod objects, so this is nearly always the answer."""
        self.shapes: dict[ResourceList, _PodShape] = {}
        """Pod shapes by value, for pod objects not met before."""

    def groups(self, snapshot: snap.Snapshot, usage: Usage) -> dict[_Shape, snap.IntArray]:
        if self.version != usage.version:
            self._update(snapshot, usage)
            self.version = usage.version
        counts = self.counts
        return {key: counts[g].copy() for key, g in self.keys.items() if counts[g].any()}

    def _update(self, snapshot: snap.Snapshot, usage: Usage) -> None:
        held, current = self.held, usage.by_ref()
        index = dict(snapshot.index)
        flat: tuple[list[int], list[int], list[int]] = ([], [], [])  # group, row, pods
        for key, admission in current.items():
            was = held.get(key)
            if was is admission:
                continue
            if was is not None:
                self._count(was, index, flat, -1)
            self._count(admission, index, flat, 1)
            held[key] = admission
        if len(held) != len(current):
            for key in [k for k in held if k not in current]:
                self._count(held.pop(key), index, flat, -1)
        if not flat[0]:
            return
        if len(self.keys) > len(self.counts):
            extra = np.zeros((len(self.keys) - len(self.counts), len(self.fleet)), np.int64)
            self.counts = np.concatenate([self.counts, extra])
        groups, rows, pods = (np.array(column, np.int64) for column in flat)
        np.add.at(self.counts, (groups, rows), pods)

    def _count(
        self,
        admission: Admission,
        index: dict[str, int],
        flat: tuple[list[int], list[int], list[int]],
        sign: int,
    ) -> None:
        """Add (or take back) an admission's pods: the same entries both ways, since its
        pod, placement and chips never change and a group keeps its number."""
        pod = admission.pod
        hit = self.pods.get(id(pod))
        if hit is None or hit[0] is not pod:
            found = self.shapes.get(pod)
            if found is None:
                found = self.shapes[pod] = _pod_shape(pod, self.devices)
            if len(self.pods) > max(_PODS_LIMIT, 2 * len(self.held)):
                self.pods.clear()
            hit = self.pods[id(pod)] = (pod, found)
        vector, names = hit[1]
        chips = admission.chips
        groups, rows, pods = flat
        for cluster, replicas in admission.placement.items():
            row = index.get(cluster)
            if row is None or replicas <= 0:
                continue  # a cluster that left the fleet holds nothing of ours any more
            key = (vector, names, chips.get(cluster) if chips else None)
            group = self.keys.get(key)
            if group is None:
                group = self.keys[key] = len(self.keys)
            groups.append(group)
            rows.append(row)
            pods.append(sign * replicas)


_TALLY: list[_Tally] = []
"""The tally of the last fleet asked about (one: the controller's)."""
_TALLY_LOCK = threading.Lock()
"""The cycle's thread and a plan served on the event loop may ask at once."""


_PodShape = tuple[tuple[int, ...], frozenset[str]]
"""One pod's vector and its device resource names."""
_PODS_LIMIT = 4096


def _groups(snapshot: snap.Snapshot, usage: Usage) -> dict[_Shape, snap.IntArray]:
    """Pods held per (pod shape, chip) as a [C] count: 100k admissions come down to a few
    dozen groups, so everything after this is per group and vectorised."""
    fleet = tuple(c.name for c in snapshot.clusters)
    with _TALLY_LOCK:
        if not _TALLY or _TALLY[0].fleet != fleet or _TALLY[0].devices != snapshot.device_resources:
            _TALLY[:] = [_Tally(fleet, snapshot.device_resources)]
        return _TALLY[0].groups(snapshot, usage)


def _pod_shape(pod: ResourceList, known: frozenset[str]) -> _PodShape:
    """One pod's vector and device names, read as `request_for` reads them."""
    names = device_names(pod, known)
    devices = sum(pod.amount(n) for n in names)
    amounts = (pod.amount("cpu"), pod.amount("memory"), devices)
    return (*(request_amount(a) for a in amounts), 1000), names


def _group_order(shape: _Shape) -> tuple[int, bool, int, int, str, str]:
    """Most constrained first: device pods (tied to their chip's flavors), pods pinned to
    a chip or arch before those that may sit on any of the kind's flavors, then larger
    pods. An unpinned group counted first took the room of the flavors a pinned one must
    use on a cluster of both arches, which then read as in debt while the other arch's
    room it could have used read as free."""
    vector, names, chip = shape
    return (
        -vector[snap.DEVICES],
        chip is None,
        -vector[snap.CPU],
        -vector[snap.MEMORY],
        chip or "",
        ",".join(sorted(names)),
    )


def _held_flavors(snapshot: snap.Snapshot, shape: _Shape) -> snap.BoolArray:
    """[C, F]: the flavors a held pod can be on. A device pod only on its chip's flavors
    (or, without a recorded chip, those exposing its device resource); a CPU-only pod only
    on flavors without accelerators (of the recorded arch, when one is); and only where
    one pod fits on a node."""
    vector, names, chip = shape
    kinds = snapshot.flavor_chip
    if vector[snap.DEVICES] > 0:
        if chip is not None and not is_arch(chip):
            known = chip in snapshot.chips
            mask = kinds == snapshot.chips.index(chip) if known else np.zeros(kinds.shape, bool)
        else:
            offers = [[r in names for r in row] for row in snapshot.flavor_resource]
            exposes = np.zeros(kinds.shape, bool)
            for ci, row in enumerate(offers):
                exposes[ci, : len(row)] = row
            mask = (kinds >= 0) & exposes
    else:
        mask = kinds == -1
        if chip is not None and is_arch(chip):
            arch = snapshot.arches.index(chip) if chip in snapshot.arches else -2
            mask &= snapshot.flavor_arch == arch
    pod = np.asarray(vector, np.int64)
    need = pod > 0
    per_node = np.min(snapshot.alloc[..., need] // pod[need], axis=-1)
    result: snap.BoolArray = mask & (per_node > 0)
    return result


def _spread_held(
    snapshot: snap.Snapshot,
    shape: _Shape,
    count: snap.IntArray,
    *,
    fresh: snap.IntArray,
    unseen: snap.IntArray,
    nodes: tuple[snap.IntArray, snap.IntArray],
) -> snap.IntArray | None:
    """Put one group's held pods on flavors, adding those the monitor does not show yet to
    `fresh` (in place); returns how many went on each flavor of each cluster, [C, F]
    (None: none anywhere).

    Which flavor a member's own scheduler chose is not known, so first each cluster's
    pods are matched to usage the monitor already shows on the candidate flavors (most of
    it first): those are running and must not be counted again. What is left has not
    reached the monitor; it goes where it fits best (most room first, as the member's
    scheduler spreads by default; where the status shows how a flavor's room is split over
    nodes, no more than its nodes hold, charged to its node groups) and any remainder to
    the largest flavor, so all of it is subtracted somewhere, except where that flavor's
    node groups are known: there no node holds the remainder, it waits Pending on the
    member and holds no room. A cluster without any candidate flavor for the group (its
    flavor is gone) holds nothing of it.

    Which shown usage is ours is not known either: others' pods that look like ours (or
    add up to them) are taken for ours while some of ours are not shown yet, so room can
    then read high by up to others' usage, never beyond allocatable less all we hold.
    Taking shown usage for others' instead would count every running pod of ours twice.
    """
    candidates = _held_flavors(snapshot, shape)
    rows = np.flatnonzero((count > 0) & candidates.any(axis=1))
    if rows.size == 0:
        return None
    counted = np.zeros(candidates.shape, np.int64)
    pod = np.asarray(shape[0], np.int64)
    need = pod > 0
    seen_by = need.copy()
    if need.sum() > 1:
        seen_by[snap.PODS] = False  # a member may not report pod slots as used
    mask = candidates[rows]
    left = count[rows]
    shown = np.min(unseen[rows][..., seen_by] // pod[seen_by], axis=-1)
    matched = _fill(left, np.where(mask, np.maximum(shown, 0), 0))
    left = left - matched.sum(axis=1)
    unseen[rows] = np.maximum(unseen[rows] - matched[..., None] * pod, 0)
    counted[rows] += matched
    if not left.any():
        return counted
    total = snapshot.alloc[rows] * snapshot.nodes[rows][..., None]
    room = np.maximum(snapshot.free[rows] - fresh[rows], 0)
    fits = np.minimum(
        np.min(room[..., need] // pod[need], axis=-1),
        node_groups.fit(nodes[0][rows], nodes[1][rows], need, pod[need]),
    )
    placed = _fill(left, np.where(mask, fits, 0))
    left = left - placed.sum(axis=1)
    capacity = np.where(mask, np.min(total[..., need] // pod[need], axis=-1), -1)
    largest = np.argmax(capacity, axis=1)
    # Past every node's room a pod waits Pending where the status shows how room is split.
    left = np.where(snapshot.grouped[rows, largest], 0, left)
    placed[np.arange(rows.size), largest] += left
    for i, f in zip(*np.nonzero((placed > 0) & snapshot.grouped[rows]), strict=True):
        c = int(rows[i])
        groups, counts = nodes[0][c, f].tolist(), nodes[1][c, f].tolist()
        node_groups.charge(groups, counts, int(placed[i, f]), shape[0])
        nodes[0][c, f], nodes[1][c, f] = groups, counts
    fresh[rows] += placed[..., None] * pod
    counted[rows] += placed
    return counted


def _fill(left: snap.IntArray, room: snap.IntArray) -> snap.IntArray:
    """[n, F]: `left[i]` pods poured into row i's flavors, most room first, each flavor up
    to its room (ties by flavor order); what does not fit is not placed."""
    order = np.argsort(-room, axis=1, kind="stable")
    ranked = np.take_along_axis(room, order, axis=1)
    before = np.cumsum(ranked, axis=1) - ranked
    taken = np.clip(left[:, None] - before, 0, ranked)
    out = np.zeros_like(room)
    np.put_along_axis(out, order, taken, axis=1)
    return out
