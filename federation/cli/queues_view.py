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
from typing import Any

from federation.cli import render

__all__ = ["HEADERS", "PATH", "table", "usage"]

PATH = "/apis/status.fedctl.io/v1alpha1/queues"
HEADERS = ["NAME", "PARENT", "WEIGHT", "PRIORITY", "ADMITTED", "PENDING", "SHARE", "AGE"]


def _age(item: dict[str, Any], now: dt.datetime) -> str:
    if item["implicit"]:
        return "<implicit>"
    if not item["defined"]:
        return "<not defined>"
    return render.age(item.get("created"), now=now)


def table(
    items: list[dict[str, Any]], *, now: dt.datetime, only: str | None = None, wide: bool = False
) -> str | None:
    """The queues in name order; with `only`, that queue's row alone; `wide` adds what
    each holds and its capability and guarantee. None when there is no row to show."""
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
                _amounts(item["used"]),
                _amounts(item.get("capability")),
                _amounts(item.get("guarantee")),
            ]
        rows.append(row)
    headers = HEADERS + (["USED", "CAPABILITY", "GUARANTEE"] if wide else [])
    return render.table(headers, rows) if rows else None


def _amounts(resources: dict[str, Any] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((resources or {}).items())) or "-"


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
    names = sorted(set(cap) | set(guarantee) | set(used))
    rows = [[n, used.get(n, "0"), guarantee.get(n, "-"), cap.get(n, "-")] for n in names]
    if not rows:
        lines.append("Usage:       <none>")
    else:
        body = render.table(["RESOURCE", "USED", "GUARANTEE", "CAPABILITY"], rows)
        lines.append("Usage:\n  " + body.replace("\n", "\n  "))
    return "\n".join(lines)
