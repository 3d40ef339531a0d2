"""Event-loop lag: how late a task that sleeps a fixed interval wakes up.

Fed by nothing but the loop itself; feeds `Metrics.observe_loop_lag` (the
`fedctl_event_loop_lag_seconds` histogram) and a rate-limited WARNING.

Why: the API, every watch, the monitor's probes and the leader lease's keepalive share one
event loop. A request or a parse that holds it for seconds (joining 144 members in one
apply re-parsed kubeconfigs for 40 s) showed only as a lost lease and leader transitions,
with nothing naming the cause. A sleeper that wakes late measures exactly that stall,
whatever blocked the loop, at the cost of one wake-up per interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from federation import clock as clock_mod

__all__ = ["INTERVAL", "WARN_AFTER", "WARN_EVERY", "follow"]

log = logging.getLogger(__name__)

INTERVAL = 0.5
"""Seconds between wake-ups: short enough to catch a stall of a second, rare enough to
cost nothing measurable."""

WARN_AFTER = 1.0
"""Seconds of lag that earn a WARNING: past this, watches and the lease keepalive (a third
of the lease TTL, 5 s by default) have visibly waited."""

WARN_EVERY = 60.0
"""Seconds between two WARNINGs at least: a loop blocked again and again logs once a
minute, counting the stalls it did not log, not a line per stall."""


async def follow(
    *,
    observe: Callable[[float], None],
    clock: clock_mod.Clock = clock_mod.real,
    interval: float = INTERVAL,
    warn_after: float = WARN_AFTER,
    warn_every: float = WARN_EVERY,
) -> None:
    """Sleep `interval`, report how late each wake-up came, until cancelled (a supervisor
    component)."""
    warned_at: float | None = None
    unlogged = 0
    while True:
        began = clock.monotonic()
        await clock.sleep(interval)
        woke = clock.monotonic()
        lag = max(0.0, woke - began - interval)
        observe(lag)
        if lag < warn_after:
            continue
        if warned_at is not None and woke - warned_at < warn_every:
            unlogged += 1
            continue
        log.warning(
            "event loop blocked for %.1f s: something ran on it without yielding (a large"
            " request or parse, a long synchronous call), and the API, the watches and the"
            " leader lease's keepalive waited meanwhile%s",
            lag,
            f" ({unlogged} more stalls over {warn_after:g} s since the last warning)"
            if unlogged
            else "",
        )
        warned_at, unlogged = woke, 0
