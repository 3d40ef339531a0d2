"""`fedctl get queues`: each queue's place in the tree and what it holds and waits for.

Fed by the stored Queues and the read-only workload views of the REST API (each with its
Binding: queue and phase); feeds the terminal. Called from `objects_cmd` for the queues
resource only.

Why a view of its own: the questions asked of a queue are "how much of my department's
work is admitted, how much waits, and under which parent", which the Queue object alone
does not answer. A parent takes no work itself, so its counts are its whole subtree's;
a queue that Bindings name but nobody defined is listed too, since that is where a
workload with a mistyped queue waits (the default queue, which works without a Queue
object, is marked implicit instead).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from federation.cli import render

__all__ = ["table"]

DEFAULT_QUEUE = "default"
"""Where a workload naming no queue goes; it admits without a Queue object of its name."""

HEADERS = ["NAME", "PARENT", "WEIGHT", "PRIORITY", "ADMITTED", "PENDING", "AGE"]


def _counts(workloads: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Queue -> [admitted, pending] from each workload's Binding."""
    out: dict[str, list[int]] = {}
    for item in workloads:
        binding = item.get("binding") or {}
        queue = (binding.get("spec") or {}).get("queue") or "default"
        if not binding:
            continue
        scheduled = (binding.get("status") or {}).get("phase") == "Scheduled"
        out.setdefault(queue, [0, 0])[0 if scheduled else 1] += 1
    return out


def _subtrees(parents: dict[str, str | None]) -> dict[str, set[str]]:
    """Queue -> itself and every queue below it (loops and unknown parents end a chain)."""
    below: dict[str, set[str]] = {name: {name} for name in parents}
    for name, first in parents.items():
        seen = {name}
        parent = first
        while parent is not None and parent in parents and parent not in seen:
            below[parent].add(name)
            seen.add(parent)
            parent = parents[parent]
    return below


def table(
    queues: list[dict[str, Any]],
    workloads: list[dict[str, Any]],
    *,
    now: dt.datetime,
    only: str | None = None,
    wide: bool = False,
) -> str | None:
    """The queues in name order, with counts (parents count their subtree); with `only`,
    that queue's row alone; `wide` adds capability and guarantee. None when there is no
    row to show."""
    specs = {q["metadata"]["name"]: (q.get("spec") or {}) for q in queues}
    created = {q["metadata"]["name"]: q["metadata"].get("creationTimestamp") for q in queues}
    counts = _counts(workloads)
    below = _subtrees({name: spec.get("parent") for name, spec in specs.items()})
    rows: list[list[object]] = []
    for name in sorted(set(specs) | set(counts)):
        if only is not None and name != only:
            continue
        if name not in specs:
            admitted, pending = counts[name]
            implicit = "<implicit>" if name == DEFAULT_QUEUE else "<not defined>"
            rows.append([name, "-", "-", "-", admitted, pending, implicit])
            rows[-1] += ["-", "-"] if wide else []
            continue
        spec = specs[name]
        admitted = sum(counts.get(q, [0, 0])[0] for q in below[name])
        pending = sum(counts.get(q, [0, 0])[1] for q in below[name])
        rows.append(
            [
                name,
                spec.get("parent") or "-",
                spec.get("weight", 1),
                spec.get("priority", 0),
                admitted,
                pending,
                render.age(created[name], now=now),
            ]
        )
        if wide:
            rows[-1] += [_amounts(spec.get("capability")), _amounts(spec.get("guarantee"))]
    headers = HEADERS + (["CAPABILITY", "GUARANTEE"] if wide else [])
    return render.table(headers, rows) if rows else None


def _amounts(resources: dict[str, Any] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((resources or {}).items())) or "-"
