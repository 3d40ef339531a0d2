"""What failover tells on a workload about its evictions, as Kubernetes events.

Fed by one of failover's writes of a Binding (the Binding before and after it), `now` and
whether a member answers; feeds the failover controller, which records the events in the
same transaction as the write, so they tell only of what landed (`registry.events`). Pure.

    Evicted      (Warning)  a member, or the copy on it, failed, and the workload leaves it
                            (as the kubelet's `Evicted`); new by cluster and time, so a
                            task that only changed its purge mode (an application
                            failover's bar, `graceful.barring`) is not a second eviction
    NowhereToGo  (Warning)  the scheduler found no member for an evicted workload: its kept
                            copy is its last (`graceful.judge`'s `holding`)
    PlacedBack   (Normal)   the workload went back to the member it was leaving, its copy
                            kept, before it was placed anywhere else: it ends the story an
                            `Evicted` began
    ShareReturned (Normal)  the same, for a workload that was placed elsewhere meanwhile
                            (a static split giving a recovered member its share again):
                            PlacedBack's "before it found room elsewhere" told of a failed
                            failover when the workload had moved and run elsewhere

Why "being placed again" and not "placed again elsewhere": where is the scheduler's to
say, after the eviction is written. Said as done, it told of a move to a workload placed
straight back on the same member, or on none.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Literal

from federation.registry import keys
from policies.models.binding import Binding, EvictionTask
from policies.models.work import Event

__all__ = ["told"]

Told = Callable[[], Event]


def told(
    before: Binding, after: Binding, *, now: dt.datetime, answers: Callable[[str], bool]
) -> tuple[list[EvictionTask], list[Told]]:
    """The eviction tasks `after` adds to `before`, and every event the change tells."""
    had = {(t.cluster, t.creation_time) for t in before.spec.eviction_tasks}
    evicted = [t for t in after.spec.eviction_tasks if (t.cluster, t.creation_time) not in had]
    out = [_evicted(after, t, now=now) for t in evicted]
    unplaced = {(t.cluster, t.creation_time) for t in before.spec.eviction_tasks if t.nowhere_since}
    out += [
        _nowhere(after, t, now=now, answers=answers(t.cluster))
        for t in after.spec.eviction_tasks
        if t.nowhere_since and (t.cluster, t.creation_time) not in unplaced
    ]
    out += [_placed_back(before, after, c, now=now) for c in _back(before, after)]
    return evicted, out


def _evicted(binding: Binding, task: EvictionTask, *, now: dt.datetime) -> Told:
    how = "its copy there stays until the new placement is ready"
    if task.at_once:
        how = "its copy there goes at once"
    n = task.replicas
    message = (
        f"evicted from {task.cluster} ({n} replica{'' if n == 1 else 's'}): {task.reason};"
        f" being placed again; {how}"
    )
    return _event(binding, task.cluster, "Evicted", message, now=now)


def _nowhere(binding: Binding, task: EvictionTask, *, now: dt.datetime, answers: bool) -> Told:
    if answers:
        how = "its copy there, the last, keeps running until it is placed elsewhere and ready"
        how += " there"
    else:
        how = (
            f"{task.cluster} does not answer, so its copy there is removed at the graceful"
            " timeout unless the member answers again by then"
        )
    message = (
        f"evicted from {task.cluster} with nowhere else to go ({binding.status.reason}); {how}"
    )
    return _event(binding, task.cluster, "NowhereToGo", message, now=now)


def _placed_back(before: Binding, after: Binding, cluster: str, *, now: dt.datetime) -> Told:
    """`PlacedBack` when the workload was placed nowhere else since the eviction (what
    `before` places it on, the write just before this one), else `ShareReturned`, naming
    where it ran meanwhile."""
    elsewhere = sorted(c for c in before.placement() if c != cluster)
    if not elsewhere:
        message = (
            f"placed back on {cluster} before it found room elsewhere: its copy there was"
            " kept, and the eviction ended"
        )
        return _event(after, cluster, "PlacedBack", message, now=now, kind="Normal")
    n = after.placement()[cluster]
    message = (
        f"{cluster} has its share again ({n} replica{'' if n == 1 else 's'}), beside"
        f" {', '.join(elsewhere)}, where the workload was placed meanwhile: its copy there"
        " was kept, and the eviction ended"
    )
    return _event(after, cluster, "ShareReturned", message, now=now, kind="Normal")


def _back(before: Binding, after: Binding) -> list[str]:
    """Clusters whose graceful eviction task this write ends because the workload is placed
    there again (`graceful.judge` drops such a task, its copy kept). Not a share a move
    shrank (`EvictionTask.keeps`): the workload never left that member, it is only scaled
    down to its share now that the rest runs elsewhere."""
    kept = {(t.cluster, t.creation_time) for t in after.spec.eviction_tasks}
    placed = after.placement()
    return [
        t.cluster
        for t in before.spec.eviction_tasks
        if not t.at_once
        and t.cluster in placed
        and not t.keeps(placed[t.cluster])
        and (t.cluster, t.creation_time) not in kept
    ]


def _event(
    binding: Binding,
    cluster: str,
    reason: str,
    message: str,
    *,
    now: dt.datetime,
    kind: Literal["Normal", "Warning"] = "Warning",
) -> Told:
    w = binding.spec.workload
    ref = keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.name)
    return lambda: Event(
        type=kind,
        reason=reason,
        message=message,
        cluster=cluster,
        object=str(ref),
        source="failover",
        time=now,
    )
