"""What a preemption or reclaim leaves behind once its eviction is committed: an event on
the victim and the evictions counter.

Fed by the scheduling loop with the cycle's victims (`CycleResult.evicted`: the admission
evicted and the reason admission gave) whose Binding the binder committed; feeds the
event recorder (`fedctl get events`, `fedctl describe workload`) and the loop's metrics
(`fedctl_evictions_total{reason="preempted"|"reclaimed"}`).

Why an event: the victim's Binding says `preempted by …` only until the next cycle, which
gives the reason it waits now (`queue team-a at capability …`), so a preemption left no
trace of who took the room or why. Why only once committed: an eviction the binder
dropped (another writer moved the victim first) or never wrote (the victim finished while
the cycle ran) did not happen, and must not be told or counted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from federation.quota import accounting
from policies.models.work import Event

__all__ = ["event", "kind"]

RECLAIMED = "reclaimed by "
"""How admission begins the reason of a victim taken from another queue (`_evicted`);
every other victim was preempted inside its own queue."""


def kind(reason: str) -> str:
    """`Reclaimed` or `Preempted`: the event reason (lower case: the counter's label)."""
    return "Reclaimed" if reason.startswith(RECLAIMED) else "Preempted"


def _where(placement: dict[str, int]) -> str:
    return ", ".join(
        f"{name} ({n} replica{'' if n == 1 else 's'})" for name, n in sorted(placement.items())
    )


def event(victim: accounting.Admission, reason: str, *, now: dt.datetime) -> Callable[[], Event]:
    """The victim's event: who evicted it, why, from where, and what becomes of it.

    Normal, as Kubernetes records a pod's preemption: the scheduler did what its
    priorities and guarantees ask, nothing failed.
    """
    placement = dict(victim.placement)
    why = (
        f"{reason}: queue {victim.queue} had borrowed that capacity beyond its guarantee"
        if kind(reason) == "Reclaimed"
        else f"{reason}: it held room that job needed, at the lower priority {victim.priority}"
    )
    message = (
        f"{why}. Evicted from {_where(placement) or 'no cluster'}; it waits in queue"
        f" {victim.queue} with its original arrival and is placed again when it fits."
    )
    only = next(iter(placement)) if len(placement) == 1 else None
    return lambda: Event(
        type="Normal",
        reason=kind(reason),
        message=message,
        cluster=only,
        object=str(victim.ref),
        source="scheduler",
        time=now,
    )
