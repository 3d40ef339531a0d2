"""Application failover: a workload that stays unhealthy on a healthy member leaves it.

Fed by a Binding's targets, the workload's status (each member's health, read by the
propagator's interpreters), when each target was first seen unhealthy (kept by the failover
controller) and the policy's `failover.application`; feeds the failover controller, which
evicts the due clusters with the policy's purge mode (`eviction.evict`, producer
`ApplicationFailover`). Pure (STYLE.md §12).

As in Karmada's application failover controller: a member whose copy reports Unhealthy for
`decisionConditions.tolerationSeconds` (default 300) in a row is evicted; any other health
starts the count again. Why only Unhealthy, where Karmada's interpreters call every copy
that is not fully ready unhealthy: fedctl's interpreters keep Progressing for a copy still
rolling out or waiting for room, and say Unhealthy when the member itself gave up (a
ReplicaFailure such as a quota refusal, or Progressing=False past the Deployment's
progressDeadlineSeconds). Moving a workload that is merely slow to start would trade a
late start for a cold one elsewhere.

Why a workload unhealthy on every one of two or more members is left where it is: the
same failure everywhere says the workload is at fault (a bad rollout), not the members.
Evicting it from all of them at once took every copy down, and with nowhere better to go it
came back and failed again, in a loop. A workload on a single member is still moved: that
member may be all that is wrong.

Why the scheduler keeps off the cluster for as long as the task lasts, unlike a taint
eviction's graceful task: nothing about the member says it got better, and placing the
workload back would only fail the same way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from policies.models.work import WorkloadStatus

__all__ = ["DEFAULT_TOLERATION", "Verdict", "judge"]

DEFAULT_TOLERATION = 300.0
"""Karmada's default `decisionConditions.tolerationSeconds`."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The clusters to evict now (with why), when each still-unhealthy target was first
    seen so (the controller keeps it for the next pass) and when to look again."""

    due: list[tuple[str, str]] = field(default_factory=list)
    since: dict[str, dt.datetime] = field(default_factory=dict)
    recheck_after: float | None = None
    everywhere: bool = False
    """Every target (two or more) is unhealthy: none is due, whatever its time."""


def judge(
    targets: Sequence[str],
    status: WorkloadStatus | None,
    since: Mapping[str, dt.datetime],
    *,
    now: dt.datetime,
    toleration: float,
) -> Verdict:
    """Decide every target of one Binding."""
    rows = {r.cluster: r for r in status.clusters} if status is not None else {}
    due: list[tuple[str, str]] = []
    seen: dict[str, dt.datetime] = {}
    recheck: float | None = None
    for cluster in targets:
        row = rows.get(cluster)
        if row is None or not row.applied or row.health != "Unhealthy":
            continue
        first = seen[cluster] = since.get(cluster, now)
        waited = (now - first).total_seconds()
        if waited >= toleration:
            why = f": {row.message}" if row.message else ""
            due.append((cluster, f"application unhealthy for {toleration:g}s{why}"))
        else:
            left = toleration - waited
            recheck = left if recheck is None else min(recheck, left)
    if len(targets) > 1 and len(seen) == len(targets):
        return Verdict(since=seen, recheck_after=recheck, everywhere=True)
    return Verdict(due=due, since=seen, recheck_after=recheck)
