"""Weighted dominant-resource fair share: which queue is served next.

Fed by the admitted usage of each queue (`federation.quota.accounting`), the federation's
total capacity (from the snapshot) and each queue's weight; feeds the cycle, which always
takes the next workload from the queue with the smallest share, so a queue that holds
little of its dominant resource is served before one that holds much.

Why DRF: GPU teams and CPU teams must be comparable. A queue's share is the largest, over
resources, of its usage divided by the federation's capacity of that resource, divided by
its weight (Ghodsi et al., "Dominant Resource Fairness", NSDI 2011; Volcano `drf`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from federation.resources import ResourceList
from policies.models.queue import CHIP_RESOURCE_PREFIX

__all__ = ["ShareKey", "order", "share", "shared_capacity"]


def shared_capacity(capacity: Mapping[str, int]) -> dict[str, int]:
    """The federation's capacity as fair share reads it: without the per-chip-model
    pseudo resources (`accelerator/nvidia-l4`), which exist to cap queues by model.

    Why: counted as resources of their own, a queue's share depended on which GPU model
    the cost score had picked for it (3 of 12 L4s outweighed 5 of 36 GPUs), so a queue of
    weight 3 could end with fewer GPUs than one of weight 1. Its GPUs are counted once,
    as `nvidia.com/gpu`, whatever their model.
    """
    return {r: v for r, v in capacity.items() if not r.startswith(CHIP_RESOURCE_PREFIX)}


def share(usage: ResourceList, capacity: Mapping[str, int], *, weight: int = 1) -> Fraction:
    """usage's dominant share of `capacity`, divided by `weight` (>= 1)."""
    return usage.dominant_share(capacity) / max(weight, 1)


class ShareKey:
    """A queue's weighted dominant share as a sort key: exact, yet cheap to compare.

    Compares by a float first and by the exact Fraction only when the floats tie. Exact
    because each float is the correctly rounded value of its Fraction (Python divides ints
    with one rounding), and rounding never reverses an order; so the cycle, which re-keys a
    queue after every admission, orders queues as `share` would without building Fractions.
    """

    __slots__ = ("_exact", "_pairs", "_top", "approx")

    def __init__(self, used: Mapping[str, int], capacity: Mapping[str, int], weight: int) -> None:
        w = max(weight, 1)
        pairs: list[tuple[int, int]] = []
        approx = 0.0  # every ratio below is positive, so this is `max(..., default=0.0)`
        for name, amount in used.items():
            if amount > 0 and (cap := capacity.get(name, 0)) > 0:
                pairs.append((amount, cap * w))
                ratio = amount / (cap * w)
                if ratio > approx:  # noqa: PLR1730 - cheaper than calling max here
                    approx = ratio
        self._pairs = pairs
        self.approx = approx
        self._exact: Fraction | None = None
        self._top: tuple[int, int] | None = None

    def _ratio(self) -> tuple[int, int]:
        """The largest usage/capacity pair, found by exact integer cross-multiplication
        (denominators are positive): the value of `exact()` without building Fractions."""
        if self._top is None:
            best = (0, 1)
            for a, d in self._pairs:
                if a * best[1] > best[0] * d:
                    best = (a, d)
            self._top = best
        return self._top

    def exact(self) -> Fraction:
        if self._exact is None:
            self._exact = max((Fraction(a, d) for a, d in self._pairs), default=Fraction(0))
        return self._exact

    def __lt__(self, other: ShareKey) -> bool:
        if self.approx != other.approx:
            return self.approx < other.approx
        (a, d), (b, e) = self._ratio(), other._ratio()
        return a * e < b * d

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShareKey):
            return NotImplemented
        if self.approx != other.approx:
            return False
        (a, d), (b, e) = self._ratio(), other._ratio()
        return a * e == b * d

    __hash__ = None  # type: ignore[assignment]


def order(
    queues: Sequence[str],
    *,
    usage: Mapping[str, ResourceList],
    capacity: Mapping[str, int],
    weights: Mapping[str, int],
    priorities: Mapping[str, int] | None = None,
) -> list[str]:
    """Queues from most to least deserving: higher queue priority, lower share, then name."""
    prio = priorities or {}

    def key(name: str) -> tuple[int, Fraction, str]:
        used = usage.get(name, ResourceList())
        return (-prio.get(name, 0), share(used, capacity, weight=weights.get(name, 1)), name)

    return sorted(queues, key=key)
