"""`fedctl get -w`: the table once, then each row again whenever it changes, as kubectl's
`get --watch` prints them.

Fed by the `get` command itself (one listing, rendered as the table it prints), polled every
`INTERVAL` seconds, or twice as long as the last listing took when that is longer; feeds
the terminal with the header, every row at first, then the rows whose cells changed since
the last poll (a workload moving during a failover drill, a cluster turning NotReady), and
the last row of an object no longer listed (deleted), as kubectl's `get -w` prints it. The
AGE column is left out of the comparison, so a row is not printed again because a minute
passed.

Why polling rather than the API's watch: the workload and queue tables are views computed
from several kinds (templates, Bindings, Works, statuses); the API's watch streams one kind's
objects. A poll renders exactly what `fedctl get` renders, for every resource, and rides out
a controller restarting under a drill by saying so and polling on.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Awaitable, Callable, Sequence

from federation import clock as clock_mod
from federation import errors

__all__ = ["INTERVAL", "cells", "changed", "departed", "realigned", "watch"]

INTERVAL = 1.0
"""Seconds between polls: a failover drill's re-placement shows within a second or two."""

_TOKEN = re.compile(r"\S+")


def _named(header: str, row: str) -> list[tuple[str, str]]:
    """`row`'s cells, cut where `header`'s columns start, each with its column's name."""
    starts = [(m.start(), m.group()) for m in _TOKEN.finditer(header)]
    out = []
    for i, (start, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else None
        out.append((name, row[start:end].strip()))
    return out


def cells(header: str, row: str) -> tuple[str, ...]:
    """`row`'s cells, cut where `header`'s columns start, AGE left out."""
    return tuple(cell for name, cell in _named(header, row) if name != "AGE")


_IDENTITY = ("NAMESPACE", "NAME", "KIND", "CLUSTER")
"""The columns that together say which object a row is (a Work is one per CLUSTER)."""


def _identity(header: str, row: str) -> tuple[str, ...] | None:
    """Which object `row` shows; None for a table without a NAME (events), whose rows
    are happenings, not objects that can go."""
    named = dict(_named(header, row))
    if "NAME" not in named:
        return None
    return tuple(named[column] for column in _IDENTITY if column in named)


def _columns(header: str) -> list[int]:
    return [m.start() for m in _TOKEN.finditer(header)]


def realigned(first: str, header: str, row: str) -> str:
    """`row`, laid out by `header` (its own poll's), moved to `first`'s columns: each poll
    pads to its own widest cell, so a row printed later ("Warning" in a column "Normal"
    alone had sized) shifted against the header printed at the start."""
    starts, targets = _columns(header), _columns(first)
    if len(starts) != len(targets) or starts == targets:
        return row
    out = ""
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else None
        cell = row[start:end].strip()
        if i:
            out += " " * max(2, targets[i] - len(out))  # kept apart when a cell overflows
        out += cell
    return out


def changed(
    header: str, rows: Sequence[str], last: set[tuple[str, ...]]
) -> tuple[list[str], set[tuple[str, ...]]]:
    """The rows to print (new, or changed since `last`) and this poll's cells to compare
    the next poll with."""
    now = set()
    out = []
    for row in rows:
        key = cells(header, row)
        now.add(key)
        if key not in last:
            out.append(row)
    return out, now


def departed(
    first: str, header: str, rows: Sequence[str], present: dict[tuple[str, ...], str]
) -> tuple[list[str], dict[tuple[str, ...], str]]:
    """The last rows (in `first`'s layout) of the objects `present` held that `rows`, a
    poll laid out by `header`, no longer shows, and the objects it shows, to compare the
    next poll with. kubectl's `get -w` prints a deleted object's last row; a row that
    just stopped being printed left a watcher of a failover drill or a clean-up unable
    to tell that a workload or queue had gone."""
    now: dict[tuple[str, ...], str] = {}
    for row in rows:
        identity = _identity(header, row)
        if identity is not None:
            now[identity] = realigned(first, header, row)
    return [row for identity, row in present.items() if identity not in now], now


async def watch(
    once: Callable[[], Awaitable[int]],
    *,
    interval: float = INTERVAL,
    clock: clock_mod.Clock = clock_mod.real,
    polls: int | None = None,
) -> int:
    """Poll `once` (a `get` that prints its table) until interrupted (or `polls` times,
    for tests), printing changes."""
    header: str | None = None
    last: set[tuple[str, ...]] = set()
    present: dict[tuple[str, ...], str] = {}
    failing = False
    while polls is None or polls > 0:
        polls = None if polls is None else polls - 1
        out, err = io.StringIO(), io.StringIO()
        began = clock.monotonic()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                await once()
        except errors.NotFound:
            pass  # a named object not there (yet, or any more): keep watching for it
        except errors.FedctlError as exc:
            if not failing:
                print(f"fedctl: {exc}; still watching", file=sys.stderr, flush=True)
            failing = True
            await clock.sleep(max(interval, 2 * (clock.monotonic() - began)))
            continue  # an API not answering deleted nothing
        else:
            if failing:
                print("fedctl: the API answers again", file=sys.stderr, flush=True)
            failing = False
        lines = out.getvalue().splitlines()
        if header is None and lines:
            header = lines[0]
            print(header)
        if header is not None:
            laid = lines[0] if lines else header
            gone, present = departed(header, laid, lines[1:], present)
            rows, last = changed(laid, lines[1:], last)
            for row in [*gone, *(realigned(header, laid, row) for row in rows)]:
                print(row)
            sys.stdout.flush()
        # A listing the server takes long to build (10,000 workloads: a second) is asked
        # for no more than a third of the time, so a watch left open never pins it.
        await clock.sleep(max(interval, 2 * (clock.monotonic() - began)))
    return 0
