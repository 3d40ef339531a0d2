"""Queue budgets: the most a queue's admitted work may cost an hour (`spec.maxHourlyCost`).

Fed by the queue tree, the cycle's usage (`Usage.queue_spend`: each admission's cost as
placed) and the cost of the placement being admitted; feeds admission, which leaves a
workload over a budget pending with the reason from here. Why a budget beside capability:
capability caps resources, but a department's limit is often money, and the same GPUs cost
three times as much in one region as in another. A parent's budget caps its whole subtree,
as its capability does.

Like a lowered capability in Kueue, a budget only stops admissions: nothing admitted is
evicted to get under it, and no preemption or reclaim is tried for it (a job waiting on a
budget waits for the queue's own work to finish, or for the budget to be raised). A
placement whose cost is not known (a cluster with no price for it) is not admitted under a
budget, which could not be held otherwise. A placement the scores chose that the budget
cannot cover is tried once more on the clusters whose cost fits what the budget leaves
(`headroom`): a department at its limit gets the cheaper region rather than a wait.

A workload placed again (scaled, edited, moved) is judged by what it adds: a placement
costing no more than the copies it runs now (`held`) passes every budget that already
counts them, however far over it the queue is, as a ResourceQuota never refuses a change
that lowers usage. Refused, a scale-down left the larger, dearer copies running, and the
only ways under a lowered budget were deleting work or raising the budget.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from decimal import Decimal

from federation.quota import accounting
from policies.models.queue import Queue

__all__ = ["budgeted", "exhausted", "headroom", "problem"]


def budgeted(queue: str, queues: Mapping[str, Queue]) -> list[Queue]:
    """The queue and its ancestors that carry a budget, nearest first."""
    found: list[Queue] = []
    seen: set[str] = set()
    name: str | None = queue
    while name is not None and name not in seen:
        seen.add(name)
        q = queues.get(name)
        if q is None:
            break
        if q.spec.max_hourly_cost is not None:
            found.append(q)
        name = q.spec.parent
    return found


def _spending(
    queue: str, queues: Mapping[str, Queue], usage: accounting.Usage
) -> Iterator[tuple[Queue, Decimal, Decimal, Collection[str]]]:
    """For each budget over `queue`, nearest first: the queue holding it, the budget, what
    that queue's subtree's admitted work costs an hour, and the queues of that subtree."""
    limits = budgeted(queue, queues)
    members = accounting.subtrees(queues) if limits else {}
    for q in limits:
        limit = q.spec.max_hourly_cost
        assert limit is not None
        subtree = members.get(q.name, (q.name,))
        spent = sum((usage.queue_spend(m) for m in subtree), Decimal(0))
        yield q, limit, spent, subtree


def _who(holder: Queue, queue: str) -> str:
    return f"queue {holder.name}" + (f" (parent of {queue})" if holder.name != queue else "")


def problem(
    queue: str,
    queues: Mapping[str, Queue],
    usage: accounting.Usage,
    cost: Decimal | None,
    *,
    currency: str,
    unpriced: str | None = None,
    held: tuple[str, Decimal] | None = None,
) -> str | None:
    """Why admitting a placement costing `cost` an hour to `queue` would break a budget on
    it or an ancestor (None: it would not). `unpriced`: why a cluster of it has no cost,
    when that is not a missing price (a currency with no exchange rate). `held`: the queue
    the workload's running copies are charged to and what they cost an hour, when it is
    placed again; `usage` leaves them out, as the cycle places it without their charge.
    A budget whose subtree holds them passes a placement costing no more than they do."""
    limits = budgeted(queue, queues)
    if not limits:
        return None
    if cost is None:
        return (
            f"queue {limits[0].name} has an hourly budget and what this placement costs is not"
            f" known ({unpriced or 'a cluster with no price for it'}): work under a budget must"
            " be priced"
        )
    for q, limit, spent, subtree in _spending(queue, queues, usage):
        if held is not None and held[0] in subtree and cost <= held[1]:
            continue  # it lowers (or keeps) what this budget counts: never refused
        who = _who(q, queue)
        if cost > limit:
            return (
                f"{who} has a budget of {limit:.4f} {currency}/h and this placement alone costs"
                f" {cost:.4f}: it is not admitted at that budget"
            )
        if spent + cost > limit:
            return (
                f"{who} at its hourly budget: {spent:.4f} of {limit:.4f} {currency}/h spent,"
                f" this placement needs {cost:.4f}"
            )
    return None


def headroom(
    queue: str, queues: Mapping[str, Queue], usage: accounting.Usage
) -> tuple[Decimal, str] | None:
    """What the tightest budget over `queue` leaves an hour, and whose queue holds it (None:
    no budget applies). Why: a placement refused by a budget is placed again within this."""
    left: tuple[Decimal, str] | None = None
    for q, limit, spent, _ in _spending(queue, queues, usage):
        if left is None or limit - spent < left[0]:
            left = (limit - spent, q.name)
    return left


def exhausted(
    queue: str, queues: Mapping[str, Queue], usage: accounting.Usage, *, currency: str
) -> str | None:
    """Why nothing more can be admitted to `queue` whatever it costs: a budget over it is
    spent (None: none is). Why: a job refused for room or quota first must not make room
    by evicting when its budget would refuse it anyway, and its reason should say so."""
    for q, limit, spent, _ in _spending(queue, queues, usage):
        if spent >= limit:
            return (
                f"{_who(q, queue)} has spent its hourly budget: {spent:.4f} of {limit:.4f}"
                f" {currency}/h"
            )
    return None
