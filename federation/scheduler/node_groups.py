"""Pods counted node by node over a flavor's groups of nodes by free amounts, and those
groups kept current as a cycle places pods and gives room back.

Fed by the snapshot's groups (`NodeFlavor.free_nodes`, at most a few per flavor) through
the cycle state, which charges every placement here (`CycleState.take`, `.give_back`) as
does the count of admitted pods the monitor does not show yet (`held`); feeds every free
replicas count (`capacity`, `free_replicas`).

Why: a flavor's free sum overstates what fits when the room is spread thin. 3 CPU free on
each of two nodes is 6 CPU, two 3-CPU pods, but one 4-CPU pod at most; counted from the
sum, the member got pods its nodes could not hold and they waited Pending there for good.
Like Karmada's scheduler estimator, pods are counted per node: a group holds `count` times
the pods one of its nodes holds (min over resources of free // request).

Charging follows the member's default scheduler, which spreads (least allocated first):
pods go one per node to the group whose nodes hold the most, so a group splits in two at
most once per charge. A flavor has a few spare slots for those splits; when none is left,
the new group joins the one closest to it, both keeping the least of each amount, so a
count may fall short of what fits but never exceeds it. Pods no node holds are not
charged: on the member they wait Pending, holding no node's room.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np

from federation.cache import snapshot as snap

__all__ = ["SPARE", "Asked", "Rows", "asked", "charge", "fit", "fit_one", "release", "with_spare"]

Rows = list[list[int]]
"""One flavor's groups in plain Python: each group's free amounts of one node."""

Asked = tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]
"""What one pod asks for as `fit_one` reads it (`asked`)."""

SPARE = 3
"""Empty group slots added per flavor for the splits a cycle's charges make."""


def with_spare(free: snap.IntArray, count: snap.IntArray) -> tuple[snap.IntArray, snap.IntArray]:
    """Writable copies of [C, F, G, R] group amounts and [C, F, G] counts, `SPARE` empty
    slots added per flavor."""
    pad = ((0, 0), (0, 0), (0, SPARE))
    return np.pad(free, (*pad, (0, 0))), np.pad(count, pad)


def fit(
    free: snap.IntArray, count: snap.IntArray, need: snap.BoolArray, wanted: snap.IntArray
) -> snap.IntArray:
    """[...]: pods of one shape (`wanted`, the amounts asked of the `need` resources) the
    groups hold, from [..., G, R] amounts and [..., G] counts."""
    per_node = np.maximum(np.min(free[..., need] // wanted, axis=-1), 0)
    held: snap.IntArray = np.sum(per_node * count, axis=-1)
    return held


def asked(vector: Sequence[int]) -> Asked:
    """The (resource, amount) pairs one pod of `vector` asks for, as `fit_one` reads them:
    four, the last repeated (a minimum is unchanged by a repeat). Why four: every pod asks
    for pod slots and at most three more resources, so a count over them is four
    divisions written out, where a loop over a list cost three times as much per group."""
    need = [(r, w) for r, w in enumerate(vector) if w > 0]
    return _padded(need)


def _padded(need: Sequence[tuple[int, int]]) -> Asked:
    if not need or len(need) > 4:
        raise ValueError(f"a pod asks for one to four resources, not {len(need)}")
    a, b, c, d = (*need, *[need[-1]] * (4 - len(need)))
    return a, b, c, d


def fit_one(rows: Rows, counts: list[int], need: Sequence[tuple[int, int]]) -> int:
    """`fit` for one flavor in plain Python: `need` lists (resource, amount) asked, best
    as `asked` gives it."""
    pairs = cast(Asked, need) if len(need) == 4 else _padded(need)
    total = 0
    for row, n in zip(rows, counts, strict=False):  # as long: one count per group
        if not n:
            break  # groups are kept together, empty slots last
        most = _most(row, pairs)
        if most > 0:
            total += most * n
    return total


def charge(
    rows: Rows, counts: list[int], pods: int, vector: Sequence[int], need: Asked | None = None
) -> int:
    """Put `pods` pods of `vector` on one flavor's groups (amounts and counts, updated in
    place), spread as the member's scheduler spreads; returns how many some node held (the
    rest would wait Pending). `need`: `asked(vector)`, when the caller has it already."""
    if pods <= 0:
        return 0
    if need is None:
        pairs = [(r, w) for r, w in enumerate(vector) if w > 0]
        if not pairs:
            return pods
        need = _padded(pairs)
    most = [_most(row, need) if n else 0 for row, n in zip(rows, counts, strict=True)]
    left = pods
    while left > 0:
        top = max(most)
        if top <= 0:
            break
        tied = [g for g, m in enumerate(most) if m == top]
        nodes = sum([counts[g] for g in tied])
        if left >= nodes:  # every node of the emptiest groups takes k pods, down to the next
            below = max([m for m in most if m < top], default=0)
            k = max(1, min(left // nodes, top - below))
            for g in tied:
                rows[g] = _less(rows[g], vector, k)
                most[g] = top - k
            left -= k * nodes
            continue
        for g in tied:  # `left` of their nodes take one pod each: one group splits
            n = min(left, counts[g])
            row = _less(rows[g], vector, 1)
            if n == counts[g]:
                rows[g], most[g] = row, top - 1
            else:
                counts[g] -= n
                _add(rows, counts, row, n)
            left -= n
            if not left:
                break
    return pods - left


def _most(row: list[int], need: Asked) -> int:
    """The pods one node of a group holds (`fit_one`, for one group)."""
    (a, x), (b, y), (c, z), (d, w) = need
    most = row[a] // x
    if (m := row[b] // y) < most:
        most = m
    if (m := row[c] // z) < most:
        most = m
    if (m := row[d] // w) < most:
        most = m
    return most


def _less(row: list[int], vector: Sequence[int], k: int) -> list[int]:
    """A group's free amounts after `k` pods of `vector` on each of its nodes (the four
    resources of `snap.RESOURCES`, written out: a comprehension cost more than this)."""
    return [
        row[0] - k * vector[0],
        row[1] - k * vector[1],
        row[2] - k * vector[2],
        row[3] - k * vector[3],
    ]


def release(
    rows: Rows, counts: list[int], alloc: Sequence[int], pods: int, vector: Sequence[int]
) -> None:
    """Give back the room of `pods` pods of `vector` on one flavor's groups (in place), one
    pod per node, fullest nodes first, never past a node's allocatable. Which nodes the
    pods ran on is not known; the fullest are where pods that left most likely ran."""
    need = [(r, w) for r, w in enumerate(vector) if w > 0]
    left = pods
    for _ in range(len(rows)):
        if left <= 0 or not need:
            return
        order = sorted(
            (g for g, n in enumerate(counts) if n > 0),
            key=lambda g: min(rows[g][r] // w for r, w in need),
        )
        for g in order:
            if left <= 0:
                break
            back = [min(a + v, t) for a, v, t in zip(rows[g], vector, alloc, strict=True)]
            n = min(left, counts[g])
            if n == counts[g]:
                rows[g] = back
            else:
                counts[g] -= n
                _add(rows, counts, back, n)
            left -= n


def _add(rows: Rows, counts: list[int], row: list[int], n: int) -> None:
    """Add `n` nodes with free amounts `row` to the groups: to an equal group, else an
    empty slot, else joined to the closest group (by CPU and memory, relative to the
    larger amount), both keeping the least of each amount."""
    empty = -1
    for g, (other, c) in enumerate(zip(rows, counts, strict=True)):
        if c > 0 and other == row:
            counts[g] += n
            return
        if c == 0 and empty < 0:
            empty = g
    if empty >= 0:
        rows[empty], counts[empty] = row, n
        return
    cpu, memory = row[0], row[1]
    closest, distance = 0, math.inf
    for g, other in enumerate(rows):
        a, b = other[0], other[1]
        d = abs(a - cpu) / (max(a, cpu) or 1) + abs(b - memory) / (max(b, memory) or 1)
        if d < distance:
            closest, distance = g, d
    rows[closest] = [min(a, b) for a, b in zip(rows[closest], row, strict=True)]
    counts[closest] += n
