"""Eviction log lines: one WARNING per member per burst of evictions, not one per workload.

Fed by the failover controller after each Binding write that evicted (`evicted`) and by its
queue once a member's evictions have gone quiet (`close`); feeds the controller's logger.

Why: a busy member lost logged one WARNING per workload it held, 220 lines for one member
at fleet scale, burying the taint line that says what happened. An on-call engineer wants
to read that a member's work is leaving, then how much left; the names are at INFO and on
each workload's `Evicted` event. The first eviction of a burst keeps its WARNING (a single
evicted workload reads as it always did, at once); the rest of the burst is INFO, and a
WARNING summary closes a burst of more than one once no eviction from that member came for
`quiet` seconds (at the secondary rate evictions come seconds apart, and still make one
burst).
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass, field

__all__ = ["EvictionTally"]


@dataclass(slots=True)
class _Burst:
    first: float
    last: float
    workloads: int = 0
    replicas: int = 0
    reasons: collections.Counter[str] = field(default_factory=collections.Counter)


class EvictionTally:
    """Counts each member's evictions since its burst began; times are monotonic seconds."""

    def __init__(self, logger: logging.Logger, *, quiet: float) -> None:
        self._log = logger
        self.quiet = quiet
        self._open: dict[str, _Burst] = {}

    def evicted(
        self, *, workload: str, cluster: str, replicas: int, reason: str, now: float
    ) -> None:
        """Log one eviction: WARNING when it opens its member's burst, INFO after that."""
        burst = self._open.get(cluster)
        if burst is None:
            burst = self._open[cluster] = _Burst(first=now, last=now)
        level = logging.WARNING if burst.workloads == 0 else logging.INFO
        burst.workloads += 1
        burst.replicas += replicas
        burst.reasons[reason] += 1
        burst.last = now
        self._log.log(
            level,
            "evicted %s from %s (%d replica%s): %s",
            workload, cluster, replicas, "" if replicas == 1 else "s", reason,
        )  # fmt: skip

    def close(self, cluster: str, *, now: float) -> float | None:
        """End `cluster`'s burst if it has been quiet long enough, logging its summary;
        otherwise the seconds to wait before asking again (None: nothing is open)."""
        burst = self._open.get(cluster)
        if burst is None:
            return None
        left = burst.last + self.quiet - now
        if left > 0:
            return left
        del self._open[cluster]
        if burst.workloads > 1:
            reason, count = burst.reasons.most_common(1)[0]
            others = burst.workloads - count
            self._log.warning(
                "evicted %d workloads (%d replicas) from %s in %.1fs: %s%s",
                burst.workloads, burst.replicas, cluster, burst.last - burst.first, reason,
                f" (and {others} for other reasons)" if others else "",
            )  # fmt: skip
        return None
