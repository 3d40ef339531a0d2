"""Taints from health: what a member's Ready condition and the time say its taints must be.

Fed by the ClusterStatus the monitor writes (its Ready condition: status, reason and when
it last changed), the eviction grace (global `FailoverSettings.eviction_grace`, or the
cluster's `spec.evictionGraceSeconds`) and `now`; feeds the failover controller, which
writes the result into `ClusterStatus.taints` (the monitor keeps that field as it finds
it), and through it the scheduler's taint filter and eviction. Pure (STYLE.md §12).

Why two steps: NoSchedule at once costs nothing (no new work lands on a sick member) while
NoExecute moves running work, so it waits out the grace, counted from the moment the
monitor declared the member down (the condition's transition time), not from when this
controller noticed: a controller that restarts mid-outage does not restart the clock.
Why two keys: a member that refuses connections or times out is `unreachable` (its copies
may still be running, so their return must be purged before new work is sent); one that
answers "not ready" is `not-ready`. An Unknown condition (no probe has finished) gets
NoSchedule only: there is no evidence to move work on. A member whose reason flips between
the two while it stays down swaps keys but not its NoExecute time: tolerationSeconds count
from when it first began to evict, not from the latest flip.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from policies.models.cluster import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    Cluster,
    ClusterStatus,
    Taint,
)

__all__ = [
    "MANAGED_PREFIX",
    "NOT_READY",
    "UNREACHABLE",
    "UNREACHABLE_REASONS",
    "TaintPlan",
    "desired",
    "grace_for",
    "reconcile",
]

MANAGED_PREFIX = "cluster.fedctl.io/"
NOT_READY = NOT_READY_TAINT
UNREACHABLE = UNREACHABLE_TAINT
UNREACHABLE_REASONS = frozenset(
    {"ConnectionRefused", "Timeout", "ConnectionLost", "ProbeTimeout", "ClusterNotReachable"}
)


@dataclass(frozen=True, slots=True)
class TaintPlan:
    """The taints to store and, when one will escalate later, how many seconds until then."""

    taints: list[Taint]
    recheck_after: float | None = None


def grace_for(cluster: Cluster | None, *, default: float) -> float:
    """The cluster's own eviction grace when it sets one, else the global setting."""
    if cluster is not None and cluster.spec.eviction_grace_seconds is not None:
        return float(cluster.spec.eviction_grace_seconds)
    return default


def desired(status: ClusterStatus | None, *, now: dt.datetime, grace: float) -> TaintPlan:
    """The failover-managed taints (key, effect; time_added left to `reconcile`)."""
    ready = status.condition("Ready") if status is not None else None
    if ready is not None and ready.status == "True":
        return TaintPlan([])
    if ready is None or ready.status == "Unknown":
        return TaintPlan([Taint(key=NOT_READY, effect="NoSchedule")])
    key = UNREACHABLE if ready.reason in UNREACHABLE_REASONS else NOT_READY
    down_for = (now - ready.last_transition_time).total_seconds()
    if down_for >= grace:
        return TaintPlan([Taint(key=key, effect="NoExecute")])
    return TaintPlan([Taint(key=key, effect="NoSchedule")], recheck_after=grace - down_for)


def reconcile(
    current: Sequence[Taint], wanted: Sequence[Taint], *, now: dt.datetime
) -> list[Taint]:
    """The stored taint list: foreign taints kept in place, ours replaced by `wanted`.

    A taint that stays (same key and effect) keeps its `time_added`, so tolerationSeconds
    count from when it first appeared; a new one is stamped `now`. A NoExecute taint that
    replaces another of ours (the member is still down, but its failure reason moved it
    from `unreachable` to `not-ready` or back) keeps the earliest of their times: the member
    has been evicting work since then, and a reason that changes every few minutes would
    otherwise put off a toleration's end for good.
    """
    kept = [t for t in current if not t.key.startswith(MANAGED_PREFIX)]
    before = {(t.key, t.effect): t for t in current if t.key.startswith(MANAGED_PREFIX)}
    executing = [t.time_added for t in before.values() if t.effect == "NoExecute" and t.time_added]
    ours = []
    for taint in wanted:
        old = before.get((taint.key, taint.effect))
        if old is not None and old.time_added:
            added = old.time_added
        elif taint.effect == "NoExecute" and executing:
            added = min(executing)
        else:
            added = now
        ours.append(taint.model_copy(update={"time_added": added}))
    return [*kept, *ours]
