"""`fedctl get queues` and the usage part of `fedctl describe queue`.

Fed by the queue status view of the REST API (`federation.api.queue_status`: per queue,
its place in the tree, admitted and pending counts, usage against capability and
guarantee, weighted dominant share); feeds the terminal. Called from `objects_cmd` for the
queues resource only.

Why a view of its own: the questions asked of a queue are "how much of its capability is
used, how many workloads wait, and under which parent", which the Queue object alone does
not answer. A parent's counts and usage are its whole subtree's.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from federation.cli import render

__all__ = [
    "HEADERS",
    "OVER",
    "OVER_BUDGET",
    "PATH",
    "costed",
    "documents",
    "merge",
    "over_capability",
    "table",
    "usage",
    "waiting",
]

PATH = "/apis/status.fedctl.io/v1alpha1/queues"
STATUS_VERSION = "status.fedctl.io/v1alpha1"
"""The group of what the status view shows of a queue with no stored object."""
HEADERS = ["NAME", "PARENT", "WEIGHT", "PRIORITY", "ADMITTED", "PENDING", "SHARE", "AGE"]


OVER = (
    "admitted work keeps running; nothing more is admitted to it until its usage falls"
    " below the capability"
)
"""What a queue over its capability does (a capability lowered below what it holds), as
Kueue does: admission is refused, nothing admitted is evicted for it."""
OVER_BUDGET = (
    "admitted work keeps running; nothing more is admitted to it until its cost falls"
    " below the budget"
)
"""The same for a budget (`spec.maxHourlyCost`) lowered below what the queue spends."""
ADOPTED = (
    "a parent takes no work itself: its admitted workloads keep running, and the waiting"
    " ones wait until their fedctl.io/queue names one of its leaf queues"
)
"""Why a queue given its first child while it holds work is worth a warning."""


def over_capability(used: dict[str, Any], capability: dict[str, Any]) -> list[str]:
    """`cpu 6 of 4` for each resource a queue uses more of than `capability` allows."""
    from federation.resources import QuantityError, parse_quantity

    over = []
    for name, limit in sorted(capability.items()):
        try:
            if parse_quantity(used.get(name, "0")) > parse_quantity(limit):
                over.append(f"{name} {used[name]} of {limit}")
        except QuantityError:
            continue
    return over


def costed(items: list[dict[str, Any]], costs: dict[str, Any]) -> list[dict[str, Any]]:
    """`items` each with what its placed work costs an hour (`costs`: the costs view by
    queue), a parent's being its whole subtree's as its counts are, and the currency.
    For a token that reads only some namespaces the costs cover its namespaces only,
    while the counts cover the whole queue: `costNamespaces` names them, and each view
    says so (a tenant read `Admitted: 1` beside `Cost: 0.0000`, and took it as wrong)."""
    own = {
        line["name"]: (
            Decimal(line["hourlyCost"]),
            int(line.get("replicas", 0)),
            int(line.get("unpricedReplicas", 0)),
        )
        for line in costs["items"]
    }
    children = {item["name"]: item.get("children") or [] for item in items}

    def subtree(name: str, seen: frozenset[str]) -> tuple[Decimal, int, int]:
        cost, replicas, unpriced = own.get(name, (Decimal(0), 0, 0))
        for child in children.get(name, ()):
            if child not in seen:
                more = subtree(child, seen | {child})
                cost, replicas, unpriced = cost + more[0], replicas + more[1], unpriced + more[2]
        return cost, replicas, unpriced

    currency = costs["currency"]
    cut = {"costNamespaces": costs["namespaces"]} if "namespaces" in costs else {}
    out = []
    for item in items:
        cost, replicas, unpriced = subtree(item["name"], frozenset({item["name"]}))
        out.append(
            {
                **item,
                "hourlyCost": cost,
                "pricedReplicas": replicas - unpriced,
                "unpricedReplicas": unpriced,
                "currency": currency,
                **cut,
            }
        )
    return out


def cost_text(item: dict[str, Any]) -> str:
    """The queue's cost an hour as every queue view shows it (`render.hourly`): its work
    that runs where no price is known said so, never 0.0000."""
    unpriced = int(item.get("unpricedReplicas", 0))
    priced = int(item.get("pricedReplicas", 0))
    return render.hourly(item["hourlyCost"], replicas=priced + unpriced, unpriced=unpriced)


def merge(view: list[dict[str, Any]], stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """View items, in name order, for the stored queues (their spec as stored, counts and
    usage from the view, none yet for one it has not seen) and for the undefined queues the
    view lists; a queue the view still shows as defined but no longer stored is left out."""
    seen = {item["name"]: item for item in view}
    specs = {q["metadata"]["name"]: q for q in stored}
    children: dict[str, list[str]] = {}
    for name, queue in specs.items():
        parent = (queue.get("spec") or {}).get("parent")
        if parent:
            children.setdefault(parent, []).append(name)
    items = [item for item in view if not item["defined"] and item["name"] not in specs]
    for name, queue in specs.items():
        spec = queue.get("spec") or {}
        counted = seen.get(name) or {"admitted": 0, "pending": 0, "used": {}, "share": 0.0}
        items.append(
            {
                **counted,
                "name": name,
                "defined": True,
                "implicit": False,
                "created": (queue.get("metadata") or {}).get("creationTimestamp"),
                "parent": spec.get("parent"),
                "children": sorted(children.get(name, [])),
                "weight": spec.get("weight", 1),
                "priority": spec.get("priority", 0),
                "capability": spec.get("capability"),
                "guarantee": spec.get("guarantee") or {},
                "maxHourlyCost": spec.get("maxHourlyCost"),
                "strategy": spec.get("dequeueStrategy", "BestEffortFIFO"),
            }
        )
    return sorted(items, key=lambda i: str(i["name"]))


def documents(
    items: list[dict[str, Any]], stored: list[dict[str, Any]], *, only: str | None = None
) -> list[dict[str, Any]]:
    """The rows of `table` for `-o json|yaml`: a stored queue as the Queue object stored,
    with the table's counts as its `status` (always the same keys).

    A queue with no stored object (the implicit `default`, a name only a workload's
    annotation gives) is no Queue: printed as one, a backup restored from the output
    created it, defined with default limits, and admitted what waited for it. So a list
    leaves it out, as `kubectl get` prints only objects that exist, and asked for by
    name (the table lists it) it is a `QueueStatus` of the status view, which no apply
    takes."""
    objects = {q["metadata"]["name"]: q for q in stored}
    docs = []
    for item in items:
        if only is not None and item["name"] != only:
            continue
        found = objects.get(item["name"])
        if found is None and only is None:
            continue
        doc = dict(
            found
            or {
                "apiVersion": STATUS_VERSION,
                "kind": "QueueStatus",
                "metadata": {"name": item["name"]},
            }
        )
        doc["status"] = {
            "defined": item["defined"],
            "implicit": item["implicit"],
            "admitted": item["admitted"],
            "pending": item["pending"],
            "share": item["share"],
            "used": item["used"],
            "children": item["children"],
        }
        if "hourlyCost" in item:  # a parent's is its subtree's, as its counts are
            doc["status"]["hourlyCost"] = f"{item['hourlyCost']:.4f}"
            doc["status"]["unpricedReplicas"] = item.get("unpricedReplicas", 0)
            doc["status"]["currency"] = item["currency"]
            if "costNamespaces" in item:
                doc["status"]["hourlyCostNamespaces"] = item["costNamespaces"]
        docs.append(doc)
    return docs


def _age(item: dict[str, Any], now: dt.datetime) -> str:
    if item["implicit"]:
        return "<implicit>"
    if not item["defined"]:
        return "<not defined>"
    return render.age(item.get("created"), now=now)


def table(
    items: list[dict[str, Any]], *, now: dt.datetime, only: str | None = None, wide: bool = False
) -> str | None:
    """The queues in name order; with `only`, that queue's row alone; `wide` adds its
    dequeue strategy (the first question of a Kueue user, whose `get clusterqueue` shows
    it), what each holds and its capability and guarantee. None when there is no row."""
    rows: list[list[object]] = []
    for item in items:
        if only is not None and item["name"] != only:
            continue
        defined = item["defined"]
        row: list[object] = [
            item["name"],
            item.get("parent") or "-",
            item["weight"] if defined else "-",
            item["priority"] if defined else "-",
            item["admitted"],
            item["pending"],
            f"{item['share'] * 100:.1f}%",
            _age(item, now),
        ]
        if wide:
            row += [
                item.get("strategy") or "-",
                _amounts(item["used"], held=True),
                _amounts(item.get("capability")),
                _amounts(item.get("guarantee")),
                cost_text(item) if "hourlyCost" in item else "-",
                _budget(item.get("maxHourlyCost")),
            ]
        rows.append(row)
    mine = ("YOURS",) if any("costNamespaces" in i for i in items) else ()
    currency = next((str(i["currency"]) for i in items if i.get("currency")), None)
    cost, budget = render.per_hour("COST/H", currency, *mine), render.per_hour("BUDGET/H", currency)
    wide_headers = ["STRATEGY", "USED", "CAPABILITY", "GUARANTEE", cost, budget]
    headers = HEADERS + (wide_headers if wide else [])
    return render.table(headers, rows) if rows else None


def _amounts(resources: dict[str, Any] | None, *, held: bool = False) -> str:
    """`k=v,…` in name order; `held`: without the zeros a queue keeps for resources its
    finished work used (`accelerator/nvidia-l4=0` told nothing)."""
    shown = sorted((resources or {}).items())
    if held:
        shown = [(k, v) for k, v in shown if str(v) != "0"]
    return ",".join(f"{k}={v}" for k, v in shown) or "-"


def _budget(value: Any) -> str:
    return "-" if value is None else f"{Decimal(str(value)):.4f}"


def usage(item: dict[str, Any]) -> str:
    """What one queue holds against its limits, resource by resource, as text."""
    cap = item.get("capability") or {}
    guarantee = item.get("guarantee") or {}
    used = item.get("used") or {}
    lines = [
        f"Admitted:    {item['admitted']}",
        f"Pending:     {item['pending']}",
        f"Share:       {item['share'] * 100:.1f}% (its dominant share of the fleet divided"
        f" by its weight, {item['weight']}: what fair share compares)",
    ]
    if item["children"]:
        lines.append(
            f"Children:    {', '.join(item['children'])} (it takes no work; counts and usage"
            " are theirs)"
        )
    if "hourlyCost" in item:
        limit = item.get("maxHourlyCost")
        budget = f" of its {Decimal(limit):.4f} budget" if limit is not None else ""
        mine = item.get("costNamespaces")
        whose = "" if mine is None else f" in your namespaces ({', '.join(mine) or 'none'})"
        unpriced = item.get("unpricedReplicas", 0)
        nowhere = f"{unpriced} replica(s) run where no price is known"
        if unpriced and not item.get("pricedReplicas", 0):
            lines.append(f"Cost:        {render.UNPRICED} (its {nowhere}: fedctl cost)")
        else:
            missing = f"; {nowhere} and are not in it" if unpriced else ""
            lines.append(
                f"Cost:        {item['hourlyCost']:.4f}{budget} {item['currency']}/h (what its"
                f" placed work{whose} costs an hour, as estimated when placed{missing}:"
                " fedctl cost"
                + ("; the counts above are the whole queue's)" if mine is not None else ")")
            )
    over = over_capability(used, cap)
    if over:
        lines.append(f"Over:        {', '.join(over)}: {OVER}")
    names = sorted(set(cap) | set(guarantee) | set(used))
    rows = [[n, used.get(n, "0"), guarantee.get(n, "-"), cap.get(n, "-")] for n in names]
    if not rows:
        lines.append("Usage:       <none>")
    else:
        body = render.table(["RESOURCE", "USED", "GUARANTEE", "CAPABILITY"], rows)
        lines.append("Usage:\n  " + body.replace("\n", "\n  "))
    return "\n".join(lines)


async def costs(api: Any) -> dict[str, Any]:
    """What each queue's placed work costs an hour (the costs view by queue), for
    `costed`; `api` is a `client.ApiClient`."""
    from federation.cli import workloads_view

    answer: dict[str, Any] = await api.request("GET", workloads_view.COSTS, params={"by": "queue"})
    return answer


SHOWN_WAITING = 20
"""How many waiting workloads `describe queue` lists: the next to be admitted are what a
user asks about; the rest are counted."""
_REASON_WIDTH = 100


def subtree(items: list[dict[str, Any]], name: str) -> set[str]:
    """`name` and every queue below it, by the view's `children`."""
    children = {item["name"]: item.get("children") or [] for item in items}
    found, todo = set(), [name]
    while todo:
        queue = todo.pop()
        if queue not in found:
            found.add(queue)
            todo.extend(children.get(queue, ()))
    return found


def waiting(workloads: list[dict[str, Any]], queues: set[str]) -> str:
    """The workloads waiting in `queues` (a queue's subtree), in the order its queue
    admits them: higher priority first, then arrival (the registry's create revision, then
    uid, as `registry.arrival` orders them). Only the token's namespaces are listed, as the
    workload view shows them; each with its reason, shortened to one line.

    Why: a Kueue user asks "what is ahead of my job?" of `pendingworkloads`; the queue's
    counts said how many, never which. Across several leaf queues of a parent, fair share
    decides which queue goes first, so the order is by queue, then within it."""
    rows = []
    for item in workloads:
        binding = item.get("binding") or {}
        spec = binding.get("spec") or {}
        if (binding.get("status") or {}).get("phase") != "Pending" or spec.get(
            "queue"
        ) not in queues:
            continue
        rows.append(item)
    rows.sort(
        key=lambda i: (
            str(i["binding"]["spec"].get("queue")),
            -int(i["binding"]["spec"].get("priority") or 0),
            int(i.get("createRevision") or 0),
            str(i.get("created") or ""),
            str((i["binding"]["spec"].get("workload") or {}).get("uid") or ""),
        )
    )
    if not rows:
        return "Waiting:     <none>"
    table = [
        [
            n,
            i["binding"]["spec"].get("queue"),
            f"{i['namespace']}/{i['name']}",
            i["kind"],
            i["binding"]["spec"].get("priority") or 0,
            _short((i["binding"].get("status") or {}).get("reason") or "-"),
        ]
        for n, i in enumerate(rows[:SHOWN_WAITING], start=1)
    ]
    body = render.table(["#", "QUEUE", "WORKLOAD", "KIND", "PRIORITY", "REASON"], table)
    more = len(rows) - SHOWN_WAITING
    tail = f"\n  … and {more} more (fedctl get workloads -A -o wide)" if more > 0 else ""
    return f"Waiting:     {len(rows)}, in admission order\n  " + body.replace("\n", "\n  ") + tail


def _short(reason: str) -> str:
    """A reason on one line of at most `_REASON_WIDTH` characters."""
    line = " ".join(reason.split())
    return line if len(line) <= _REASON_WIDTH else line[: _REASON_WIDTH - 1] + "…"
