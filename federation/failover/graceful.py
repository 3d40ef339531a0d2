"""Graceful eviction: when an evicted copy may go, as a pure function of (tasks, now, status).

Fed by a Binding's eviction tasks, the clusters of its new placement with whether the
workload is ready in each, the clusters that hold no copy any more (the propagator's
workload status), those whose NoExecute taints evict it and those whose member is away,
the graceful timeout and `now`; feeds the failover controller, which drops the tasks this
returns from the Binding, and the purge step, which deletes the old copies it names
(STYLE.md §12; Karmada `gracefuleviction/evictiontask.go`).

The purge modes, as in Karmada (old spellings accepted):

    Directly   (Immediately)  the old copy goes at once; the task stays only as the record
                              that keeps the scheduler off the leaving cluster until the
                              copy there is gone and no NoExecute taint evicts the workload
                              from it, or the new placement is ready, or the timeout
    Gracefully (Graciously)   the old copy stays until every cluster of the new placement
                              reports the workload ready, or until the timeout

The timeout is the task's own `grace_period_seconds` when it has one (application
failover's `gracePeriodSeconds`), else the global graceful timeout.

Policies may not say `Never` for cluster failover (Karmada refuses it too); a task recorded
with it ends as a Gracefully one does.

A graceful task whose workload the scheduler placed nowhere else, on a member that still
answers, outlives the timeout (`holding`): its copy is the workload's last, and deleting
it took a running service to zero because a drain (an unjoin, a user's NoExecute taint)
found no other member for it, where `kubectl drain` waits on a PodDisruptionBudget. It
ends once the workload is placed and ready elsewhere, is placed back there, or the member
stops answering (nothing there can be kept running for sure, and an unjoin of a dead
member would wait on it for good). Placed at last, the new copy gets a whole timeout,
counted from that placement, to turn ready (`_timed_from`).

A graceful task whose cluster is among the targets again (the member recovered before the
workload found room elsewhere, and the scheduler placed it back) ends at once: the copy
there is the new placement's, not a leftover. Unless the target holds fewer replicas than
the task keeps there (`EvictionTask.keeps`: a move took part of that member's share
elsewhere): the copy there runs its old count until the new placement is ready (or the
timeout), and then only shrinks to its share, nothing is purged.

A task whose cluster is away (unreachable, or back but not yet settled) is kept whatever
the new placement or the timeout say: its copy cannot be deleted while the member does not
answer, so ending the task then only queued the deletion to land the moment the member
answered again, before the scheduler could place the workload back there. A service placed
back lost its running copy and got a new one, while the members that had covered for it
shrank: a capacity dip on every fail-back. Kept, the task ends on the member's return by
the rules above: placed back there, the copy is the placement's; else it goes.

Why "every cluster ready" and not "some": a workload split 2:1:1 that lost one cluster is
only whole again when all of its new targets run it; dropping the old copy earlier would
open the very capacity gap graceful eviction exists to close.

Why a Directly task may end before either: it keeps nothing running, so all it guards is
the scheduler placing the workload back where it is leaving. While the old copy is still
there, that would run the workload twice on one member (or let the stale copy pass for the
new one); while a NoExecute taint would evict it, failover would only evict it again. Past
both, the bar guards nothing. A preempted or reclaimed job (the scheduler evicts it Directly
from a healthy cluster) would otherwise be kept off the cluster it fits best, even an
empty one, until the timeout. An application failover's task is the exception: it left a
member where the workload failed, and ending it early would let the scheduler put it back
there to fail again.

How long an application failover's task lasts: its old copy goes as the purge mode says
(once the new placement is ready, or at its grace period), but the task stays, turned
Directly, until the longer of its grace period and the global graceful timeout has passed
since the eviction (`bar_of`). Nothing about the member says it got better, and ended with
its copy (as Karmada's task ends), the task freed the member within seconds of the new
placement turning ready: the next re-division of the workload (a static-weight split is
divided again on every change in the fleet's health) placed it back there, where it failed
and was evicted again, six times in thirteen minutes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from federation.failover import eviction
from policies.models.binding import Binding, EvictionTask
from policies.models.work import WorkloadStatus

__all__ = [
    "Outcome",
    "bar_of",
    "barring",
    "gone",
    "judge",
    "placed_nowhere",
    "purges_at_once",
    "stranded",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """Tasks to keep and to drop, clusters whose old copy must be deleted now, and when the
    next timeout falls (seconds from `now`; None when no task is waiting on one)."""

    keep: list[EvictionTask] = field(default_factory=list)
    drop: list[EvictionTask] = field(default_factory=list)
    purge: list[str] = field(default_factory=list)
    recheck_after: float | None = None


def placed_nowhere(binding: Binding) -> bool:
    """Whether the scheduler looked for a place for the evicted workload and found none:
    Pending, on no member, with its own reason (not failover's "re-placing")."""
    status = binding.status
    return (
        not binding.spec.clusters
        and status.phase == "Pending"
        and bool(status.reason)
        and not status.reason.endswith(eviction.RE_PLACING)
    )


def stranded(task: EvictionTask, now: dt.datetime) -> EvictionTask:
    """A kept copy's task, marked with when its workload was found placed nowhere else."""
    if task.at_once or task.nowhere_since is not None:
        return task
    return task.model_copy(update={"nowhere_since": now})


def purges_at_once(task: EvictionTask) -> bool:
    return task.at_once


def gone(
    tasks: Sequence[EvictionTask], status: WorkloadStatus | None, *, revision: int
) -> set[str]:
    """The clusters of Directly tasks that hold no copy of the workload any more.

    Read from the propagator's workload status, which lists a cluster for as long as a Work
    (so a copy) is there, and only from a status written for this revision of the Binding
    (`revision`) or a later one: an older status may predate a copy that a pass still in
    flight for an older Binding puts there.
    """
    if status is None or status.binding_revision < revision:
        return set()
    present = {c.cluster for c in status.clusters}
    return {t.cluster for t in tasks if purges_at_once(t)} - present


def bar_of(task: EvictionTask, timeout: float) -> float:
    """Seconds from its creation that an application failover's task keeps the workload
    off its member: the longer of its own grace period and the global graceful timeout."""
    return max(float(task.grace_period_seconds or 0), timeout)


def barring(task: EvictionTask) -> EvictionTask:
    """`task` once its copy may go: purged at once, still barring its member (Directly)."""
    if task.at_once:
        return task
    return task.model_copy(update={"purge_mode": "Directly"})


def _timed_from(task: EvictionTask, placed_at: dt.datetime | None) -> dt.datetime:
    """When a task's graceful timeout starts: at the eviction, or, for a copy kept because
    the workload had nowhere else to go, at the placement that ended that (its new copy
    gets a whole timeout to turn ready, as after any eviction)."""
    if task.nowhere_since is not None and placed_at is not None and placed_at > task.nowhere_since:
        return placed_at
    return task.creation_time


def judge(
    tasks: Sequence[EvictionTask],
    *,
    targets: Sequence[str],
    ready: Mapping[str, bool],
    now: dt.datetime,
    timeout: float,
    gone: Collection[str] = (),
    evicting: Collection[str] = (),
    placed: Mapping[str, int] | None = None,
    holding: Collection[str] = (),
    placed_at: dt.datetime | None = None,
    away: Collection[str] = (),
) -> Outcome:
    """Decide every task of one Binding.

    `gone`: clusters known to hold no copy of the workload any more; `evicting`: clusters
    whose NoExecute taints evict the workload, now or once its toleration runs out. A
    Directly task on a cluster that is gone and not evicting has done its work: it is
    dropped, with nothing left there to purge. `placed`: the replicas of each target
    (None: not known, a target placed back ends its task). `holding`: clusters whose kept
    copy is the workload's last (placed nowhere else, the member answers): no timeout ends
    their task. `placed_at`: when the scheduler last placed the workload; a task held so
    counts its timeout from then (`_timed_from`). `away`: clusters whose copies wait for
    the member's return to be judged; their tasks are kept (placed back there, dropped).
    """
    healthy = bool(targets) and all(ready.get(name, False) for name in targets)
    keep: list[EvictionTask] = []
    drop: list[EvictionTask] = []
    purge: list[str] = []
    recheck: float | None = None
    for task in tasks:
        waited = (now - _timed_from(task, placed_at)).total_seconds()
        limit = task.grace_period_seconds or timeout
        expired = waited >= limit
        shrinking = task.cluster in targets and task.keeps((placed or {}).get(task.cluster))
        if task.cluster in targets and not shrinking:
            drop.append(task)  # placed back: the copy there is the placement's own
            continue
        if task.cluster in away:
            keep.append(task)  # judged on its return; a change of its status looks again
            continue
        if task.cluster in holding and not purges_at_once(task) and not healthy:
            keep.append(task)  # the last copy: the scheduler placing it ends the wait
            continue
        evicted = (now - task.creation_time).total_seconds()
        if task.from_application and (healthy or expired) and evicted < bar_of(task, timeout):
            barred = barring(task)  # the copy goes; the member stays barred
            if barred is not task:
                drop.append(task)
            keep.append(barred)
            purge.append(task.cluster)
            left = bar_of(task, timeout) - evicted
            recheck = left if recheck is None else min(recheck, left)
            continue
        if healthy or expired:
            drop.append(task)
            if not shrinking:  # a shrinking share is scaled down, not purged
                purge.append(task.cluster)
            continue
        if (
            purges_at_once(task)
            and not task.from_application  # its bar is on the member, not the copy
            and task.cluster in gone
            and task.cluster not in evicting
        ):
            drop.append(task)
            continue
        keep.append(task)
        if purges_at_once(task):
            purge.append(task.cluster)
        left = limit - waited
        recheck = left if recheck is None else min(recheck, left)
    return Outcome(keep=keep, drop=drop, purge=purge, recheck_after=recheck)
