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

Why no NoExecute while no member is Ready (`fully_disrupted`): the whole fleet down at
once is far likelier the controller's own view than the fleet, as Kubernetes' node
lifecycle controller reasons when it stops evicting in "full disruption".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
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
    "fully_disrupted",
    "grace_for",
    "held_back",
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


def fully_disrupted(statuses: Iterable[ClusterStatus | None]) -> bool:
    """Whether no member is Ready and at least one is judged down (Ready=False): the
    fleet's "full disruption", in which Kubernetes' node lifecycle controller stops all
    evictions. Every member unhealthy at once is far likelier the controller's own view
    (its network, a kubeconfig or key it cannot read) than the whole fleet failing, and
    with no Ready member an evicted workload has nowhere to go anyway. Members never
    judged (no status, Unknown) alone do not count, so a fleet starting up is not one."""
    judged = [s.condition("Ready") for s in statuses if s is not None]
    states = {c.status for c in judged if c is not None}
    return "True" not in states and "False" in states


def held_back(found: Sequence[Taint]) -> list[Taint]:
    """`found` with failover's own NoExecute health taints read as NoSchedule: what they
    mean while the fleet is fully disrupted (`fully_disrupted`). A user's NoExecute taint
    (a drill, an unjoin) is a deliberate act and still evicts."""
    return [
        t.model_copy(update={"effect": "NoSchedule"})
        if t.effect == "NoExecute" and t.key in (NOT_READY, UNREACHABLE)
        else t
        for t in found
    ]


def desired(
    status: ClusterStatus | None,
    *,
    now: dt.datetime,
    grace: float,
    disrupted: bool = False,
    calm_since: dt.datetime | None = None,
) -> TaintPlan:
    """The failover-managed taints (key, effect; time_added left to `reconcile`).

    `disrupted`: the fleet is fully disrupted (`fully_disrupted`), so a member down stays
    NoSchedule however long it has been down, as Kubernetes lifts its NoExecute taints
    then. `calm_since`: when the last full disruption ended; the grace counts from then
    at the earliest, as Kubernetes restarts every node's clock when it leaves that mode,
    so the members the controller could not see get a whole grace to be seen again."""
    ready = status.condition("Ready") if status is not None else None
    if ready is not None and ready.status == "True":
        return TaintPlan([])
    if ready is None or ready.status == "Unknown":
        return TaintPlan([Taint(key=NOT_READY, effect="NoSchedule")])
    key = UNREACHABLE if ready.reason in UNREACHABLE_REASONS else NOT_READY
    if disrupted:
        return TaintPlan([Taint(key=key, effect="NoSchedule")])
    since = ready.last_transition_time
    if calm_since is not None and calm_since > since:
        since = calm_since
    down_for = (now - since).total_seconds()
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
