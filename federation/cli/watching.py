"""`fedctl get -w`: the table once, then each row again whenever it changes, as kubectl's
`get --watch` prints them.

Fed by the `get` command itself (one listing, rendered as the table it prints), polled every
`INTERVAL` seconds, or twice as long as the last listing took when that is longer; feeds
the terminal with the header, every row at first, then the rows whose cells changed since
the last poll (a workload moving during a failover drill, a cluster turning NotReady). The
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

__all__ = ["INTERVAL", "cells", "changed", "realigned", "watch"]

INTERVAL = 1.0
"""Seconds between polls: a failover drill's re-placement shows within a second or two."""

_TOKEN = re.compile(r"\S+")


def cells(header: str, row: str) -> tuple[str, ...]:
    """`row`'s cells, cut where `header`'s columns start, AGE left out."""
    starts = [(m.start(), m.group()) for m in _TOKEN.finditer(header)]
    out = []
    for i, (start, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else None
        if name != "AGE":
            out.append(row[start:end].strip())
    return tuple(out)


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
    failing = False
    while polls is None or polls > 0:
        polls = None if polls is None else polls - 1
        out, err = io.StringIO(), io.StringIO()
        began = clock.monotonic()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                await once()
        except errors.NotFound:
            pass  # a named object not there (yet): keep watching for it
        except errors.FedctlError as exc:
            if not failing:
                print(f"fedctl: {exc}; still watching", file=sys.stderr, flush=True)
            failing = True
        else:
            if failing:
                print("fedctl: the API answers again", file=sys.stderr, flush=True)
            failing = False
        lines = out.getvalue().splitlines()
        if lines:
            if header is None:
                header = lines[0]
                print(header)
            rows, last = changed(lines[0], lines[1:], last)
            for row in rows:
                print(realigned(header, lines[0], row))
            sys.stdout.flush()
        # A listing the server takes long to build (10,000 workloads: a second) is asked
        # for no more than a third of the time, so a watch left open never pins it.
        await clock.sleep(max(interval, 2 * (clock.monotonic() - began)))
    return 0
