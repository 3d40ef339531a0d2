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

__all__ = ["order", "share"]


def share(usage: ResourceList, capacity: Mapping[str, int], *, weight: int = 1) -> Fraction:
    """usage's dominant share of `capacity`, divided by `weight` (>= 1)."""
    return usage.dominant_share(capacity) / max(weight, 1)


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
