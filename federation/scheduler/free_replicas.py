"""Free replicas of one request shape on every flavor of every cluster, kept current
across a cycle by replaying its log of touched flavors.

Fed by the cycle state (capacity left per flavor, the log of flavors it charged or gave
back) and a `JobRequest`'s shape; feeds the incremental decision (`incremental.py`) with
each cluster's free replicas, chosen flavor and totals. Why apart: this is node arithmetic,
the very arithmetic of `capacity.view` one flavor at a time, and is checked against it
(`tests/unit/scheduler/test_incremental.py`), while the incremental decision is about
scores and ties.
"""

from __future__ import annotations

import math

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from federation.scheduler import node_groups
from federation.scheduler.plugins import capacity

__all__ = ["REPLAY_LIMIT", "Shape"]

REPLAY_LIMIT = 32
"""Touched clusters beyond which a vectorised refresh is cheaper than replaying them."""


class Shape:
    """Per request shape: free replicas on every flavor of every cluster, the flavor the job
    would use and its totals, kept current by replaying the cycle's log of touched flavors
    with the very arithmetic of `capacity.view` (one flavor changes per charge)."""

    __slots__ = (
        "chip",
        "chip_need",
        "chips",
        "favail",
        "flavor",
        "grouped",
        "logpos",
        "mask",
        "need",
        "one_chip",
        "order",
        "pod_cost",
        "total",
    )

    def __init__(self, job: fw.JobRequest, state: fw.CycleState) -> None:
        _, _, mask, order, pod_cost = capacity.shape_arrays(job, state)
        self.pod_cost: list[list[float]] = pod_cost.tolist()
        self.chip: list[list[int]] = state.snapshot.flavor_chip.tolist()
        self.need = node_groups.asked(job.vector.tolist())
        """The resources one pod asks for, read once for the shape (`node_groups.asked`)."""
        self.mask: list[list[bool]] = mask.tolist()
        self.grouped: list[list[bool]] = state.snapshot.grouped.tolist()
        """Flavors whose free replicas are counted node by node alone (`capacity`)."""
        self.order: list[list[float]] = order.tolist()
        chip_of = state.snapshot.flavor_chip[mask]
        self.chips: tuple[str | None, ...] = (None,)
        """Every chip a job of this shape can be charged on (None: CPU-only work)."""
        if job.devices:
            names = state.snapshot.chips
            self.chips = tuple(
                sorted({names[i] if i >= 0 else None for i in chip_of.tolist()}, key=str)
            )
        self.one_chip = bool(job.devices) and len(self.chips) > 1
        """Free replicas count on the chosen flavor's chip only (`capacity.view`)."""
        self.chip_need = job.chip_need
        self.favail: list[list[int]] = []
        self.total: list[int] = []
        self.flavor: list[int] = []
        self.logpos = len(state.touched)
        self._rebuild(job, state, np.arange(state.snapshot.size, dtype=np.int64))

    def _rebuild(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> None:
        ints, _ = capacity.view(job, state)
        favail = capacity.flavor_available(job, state, rows).tolist()
        if not self.favail:
            self.favail = favail
            self.total = ints[:, capacity.AVAIL].tolist()
            self.flavor = ints[:, capacity.FLAVOR].tolist()
            return
        for i, row in enumerate(rows.tolist()):
            self.favail[row] = favail[i]
            self.total[row] = int(ints[row, capacity.AVAIL])
            self.flavor[row] = int(ints[row, capacity.FLAVOR])

    def sync(self, job: fw.JobRequest, state: fw.CycleState) -> None:
        log = state.touched
        if self.logpos == len(log):
            return
        # Read in log order, a flavor charged twice since is met twice: the second time it
        # has not moved, and is passed over (the cluster just chosen is charged again and
        # again). Only a long log is worth making distinct first.
        touched = log[self.logpos :]
        self.logpos = len(log)
        if len(touched) > REPLAY_LIMIT and len(distinct := set(touched)) > REPLAY_LIMIT:
            rows = np.array(sorted({c for c, _ in distinct}), dtype=np.int64)
            self._rebuild(job, state, rows)
            return
        moved: set[int] = set()
        met: set[tuple[int, int]] = set()
        for entry in touched:
            c, f = entry
            if not self.mask[c][f] or entry in met:
                continue
            met.add(entry)
            avail = self._available(state, c, f)
            row = self.favail[c]
            was = row[f]
            if was == avail:
                continue
            self.total[c] += avail - was
            row[f] = avail
            moved.add(c)
            order = self.order[c]
            best = self.flavor[c]
            if best != f and row[best] > 0 and order[best] < math.inf:
                # The best flavor stands and only `f` moved: `f` takes over only if it now
                # holds replicas and comes first (as the first minimum below would find).
                if was == 0 and (order[f] < order[best] or (order[f] == order[best] and f < best)):
                    self.flavor[c] = f
                continue
            if best == f and avail > 0 and order[f] < math.inf:
                continue  # still the best: its key did not change and it still holds some
            best, best_key = 0, math.inf  # numpy's argmin: first minimum, 0 when none
            for i, (a, k) in enumerate(zip(row, order, strict=True)):
                if a > 0 and k < best_key:
                    best, best_key = i, k
            self.flavor[c] = best
        if self.one_chip:
            self._on_one_chip(moved)

    def _available(self, state: fw.CycleState, c: int, f: int) -> int:
        """Free replicas on flavor `f` of cluster `c` now (`capacity.flavor_available`)."""
        if self.grouped[c][f]:
            return node_groups.fit_one(*state.groups(c, f), self.need)
        largest = state.largest[c, f].tolist()
        for r, w in self.need:
            if largest[r] < w:
                return 0
        free = state.free[c, f].tolist()
        avail = node_groups.fit_one(*state.groups(c, f), self.need)
        for r, w in self.need:
            by_free = free[r] // w
            if by_free < avail:  # noqa: PLR1730 - cheaper than calling min here
                avail = by_free
        return max(avail, 0)

    def _on_one_chip(self, moved: set[int]) -> None:
        """Recount moved clusters on one chip, chosen again when pods must share it."""
        for c in moved:
            chip_of = self.chip[c]
            if self.chip_need > 1:
                self.flavor[c] = capacity.chip_flavor(
                    self.favail[c], self.order[c], chip_of, self.chip_need
                )
            chosen = chip_of[self.flavor[c]]
            self.total[c] = sum(
                a for a, ch in zip(self.favail[c], chip_of, strict=True) if ch == chosen
            )
