"""Events: short records of what happened to a workload, and why, for people to read.

Fed by the controllers that act on workloads: the propagator (applied somewhere for the
first time, refused by Abort, a member's rejection, removed from a cluster), the scheduler
(a preemption or reclaim evicting it) and failover (a taint or an unhealthy copy evicting
it from a member); feeds `fedctl get events` and `fedctl describe workload`. Each event
carries a lease of `ttl` seconds, so the registry forgets it by itself; one lease is shared
until half its life is spent. The caller commits the operations `Recorder.ops` returns,
ideally in the transaction that makes what they tell true (the propagator's go with the
Works they explain), so an event never tells of a write that did not land.

Why here, below the controllers: they may not import one another (docs/architecture.md),
and each of them writes events under the same keys, read by the same API.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from federation import clock as clock_mod
from federation.registry import codec, keys
from federation.registry import store as st
from policies.models.work import Event

__all__ = ["EVENTS", "Recorder", "event_prefix"]

EVENTS = codec.Codec(Event)


def event_prefix(ref: keys.WorkloadRef) -> str:
    """Where a workload's events live: `/fedctl/events/<ns>/<Kind.group:name>/`."""
    return keys.event_key(ref.namespace, f"{ref.kind}:{ref.name}", "x")[:-1]


class Recorder:
    """Turns events into registry operations under a shared, expiring lease.

    `source` ends each event's id: two recorders of one process (the propagator's and the
    scheduler's) count their events apart, and two events stamped in the same microsecond
    with the same count would otherwise share a key, the later one replacing the other.
    """

    def __init__(
        self,
        store: st.Store,
        *,
        clock: clock_mod.Clock,
        ttl: int = 3600,
        source: str = "propagator",
    ) -> None:
        self._store = store
        self._clock = clock
        self._ttl = ttl
        self._source = source
        self._lease: st.Lease | None = None
        self._granted = 0.0
        self._seq = itertools.count()

    async def _lease_id(self) -> int:
        now = self._clock.monotonic()
        if self._lease is None or now - self._granted > self._ttl / 2:
            self._lease = await self._store.grant(self._ttl)
            self._granted = now
        return self._lease.id

    async def ops(self, ref: keys.WorkloadRef, events: list[Callable[[], Event]]) -> list[st.Op]:
        """Put operations for `events` (built lazily, so a pass with none costs nothing)."""
        if not events:
            return []
        lease = await self._lease_id()
        stamp = self._clock.now().strftime("%Y%m%dT%H%M%S%f")
        obj = f"{ref.kind}:{ref.name}"
        return [
            st.Put(
                keys.event_key(ref.namespace, obj, f"{stamp}-{next(self._seq):06d}-{self._source}"),
                EVENTS.encode(make()),
                lease,
            )
            for make in events
        ]
