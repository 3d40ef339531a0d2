"""Each queue's usage against its limits, as the status view (`api.queue_status`) serves it.

Fed either by the scheduling loop, which publishes a `Tally` after every cycle from what
that cycle charged, or by a read of the whole registry (`api.plan_routes.LiveState`) on a
replica that does not lead; both turn it into the same items here.

Why the loop publishes: the registry read decodes every workload and Binding and charges
each admitted one again. At 20,000 admitted that held the event loop for about 2 s and took
3 s more of CPU per answer, and a dashboard left open on a busy federation asked for one
every 2 s, taking that CPU from the controller it watched. The leading loop holds those
charges already (its `Usage`, kept across cycles), so its tally costs a pass over the
queues, not over the workloads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from federation.cache import snapshot as snap
from federation.queue import fairshare
from federation.quota import hierarchy
from federation.quota.accounting import Usage
from federation.resources import ResourceList
from policies.models.queue import Queue

__all__ = ["Edition", "Published", "Tally", "items", "tally"]


@dataclass(frozen=True, slots=True)
class Tally:
    """What the status view needs of one moment: the queues, the federation's capacity,
    and per queue what its admitted workloads hold, how many there are and how many wait.
    Never changed once made, so it may be read from any thread."""

    queues: Mapping[str, Queue]
    capacity: Mapping[str, int]
    used: Mapping[str, Mapping[str, int]]
    admitted: Mapping[str, int]
    pending: Mapping[str, int]


def tally(
    snapshot: snap.Snapshot,
    usage: Usage,
    pending: Mapping[str, int],
    waiting: Mapping[str, int] | None = None,
) -> Tally:
    """A tally of `usage` (what is admitted) and `pending` (how many wait, by queue).

    `waiting`: per queue, how many of the pending still hold what their running copies use
    (`reconcile.Ledger.waiting`): in `usage`, but counted as waiting, not admitted.
    """
    counts = usage.counts()
    for queue, n in (waiting or {}).items():
        if queue in counts:
            counts[queue] = max(0, counts[queue] - n)
    return Tally(
        queues=dict(snapshot.queues),
        capacity=dict(snapshot.capacity.items()),
        used={q: dict(usage.queue_totals(q)) for q in counts},
        admitted=counts,
        pending=dict(pending),
    )


def items(t: Tally, *, default: str) -> list[dict[str, Any]]:
    """One item per queue, defined or holding or awaiting work, in name order; a parent's
    usage and counts are its whole subtree's. The `default` queue is always one: a
    workload naming no queue goes there, defined or not, so it is there before any does."""
    queues = t.queues
    tree = hierarchy.tree_of(queues)
    names = (
        set(queues)
        | {default}
        | {q for q, n in t.admitted.items() if n}
        | {q for q, n in t.pending.items() if n}
    )
    shared = fairshare.shared_capacity(t.capacity)
    out = []
    for name in sorted(names):
        members = tree.members.get(name, (name,))
        totals: dict[str, int] = {}
        for member in members:
            for resource, amount in t.used.get(member, {}).items():
                totals[resource] = totals.get(resource, 0) + amount
        used = ResourceList(totals)
        queue = queues.get(name)
        spec = queue.spec if queue is not None else None
        weight = spec.weight if spec is not None else 1
        out.append(
            {
                "name": name,
                "defined": queue is not None,
                "implicit": queue is None and name == default,
                "created": queue.metadata.creation_timestamp if queue is not None else None,
                "parent": spec.parent if spec is not None else None,
                "children": list(tree.children.get(name, ())),
                "weight": weight,
                "priority": spec.priority if spec is not None else 0,
                "admitted": sum(t.admitted.get(m, 0) for m in members),
                "pending": sum(t.pending.get(m, 0) for m in members),
                "used": used.to_wire(),
                "capability": spec.capability.to_wire()
                if spec is not None and spec.capability is not None
                else None,
                "guarantee": spec.guarantee.to_wire() if spec is not None else {},
                "share": round(float(fairshare.ShareKey(used, shared, weight).approx), 6),
            }
        )
    return out


@dataclass(frozen=True, slots=True)
class Edition:
    """A published tally: the registry revision its cycle had seen, and when (monotonic)."""

    tally: Tally
    revision: int
    at: float


class Published:
    """The leading loop's latest tally, shared with the API in the same process.

    The loop publishes from its worker thread and withdraws when its term ends, so a replica
    that stops leading falls back to reading the registry; `waiting` says whether changes
    have arrived that no cycle has read yet (the answer is then behind, and says so).
    """

    def __init__(self) -> None:
        self._edition: Edition | None = None
        self._waiting: Callable[[], bool] | None = None
        self._lock = threading.Lock()

    def publish(self, edition: Edition, waiting: Callable[[], bool]) -> None:
        """`waiting` tells whether changes wait for a cycle; it is asked on every read."""
        with self._lock:
            self._edition, self._waiting = edition, waiting

    def withdraw(self) -> None:
        with self._lock:
            self._edition, self._waiting = None, None

    def latest(self) -> tuple[Edition, bool] | None:
        """The latest edition and whether it is behind the watches, or None."""
        with self._lock:
            edition, waiting = self._edition, self._waiting
        if edition is None:
            return None
        return edition, waiting() if waiting is not None else False
