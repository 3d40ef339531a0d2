"""Events: short records of what happened to a workload, and why, for people to read.

Fed by the controllers that act on workloads: the propagator (applied somewhere for the
first time, refused by Abort, a member's rejection, removed from a cluster), the scheduler
(a preemption or reclaim evicting it) and failover (a taint or an unhealthy copy evicting
it from a member); feeds `fedctl get events` and `fedctl describe workload`. Each event
carries a lease of `ttl` seconds, so the registry forgets it by itself; one lease is shared
until half its life is spent. The caller commits the operations `Recorder.ops` returns,
ideally in the transaction that makes what they tell true (the propagator's go with the
Works they explain), so an event never tells of a write that did not land.

An event that happens again (`Again`: a member rejecting a copy at each retry, with the
same reason and message) is counted on the one already recorded, as Kubernetes' event
correlator counts a repeat: its `count` goes up, its `lastTime` moves to now and its lease
is renewed, so a failure still going on reads as such, not as a one-off whose age keeps
growing. The recorder remembers the events it wrote (the last `REMEMBERED`, as the
correlator's cache does) and, for one it does not (another leader wrote it, or a restart
forgot it), looks among the workload's stored events; one the registry has forgotten
(kept about an hour since it was last seen) starts again at 1.

Why here, below the controllers: they may not import one another (docs/architecture.md),
and each of them writes events under the same keys, read by the same API.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from federation import clock as clock_mod
from federation import errors
from federation.registry import codec, keys
from federation.registry import store as st
from policies.models.work import Event

__all__ = ["EVENTS", "Again", "Recorder", "Told", "event_prefix", "last_seen"]

EVENTS = codec.Codec(Event)


REMEMBERED = 4096
"""Events a recorder remembers for counting repeats (Kubernetes' correlator keeps 4096)."""

Told = Callable[[], Event]

_Identity = tuple[str, str | None, str, str, str, str]
"""What makes two events one that happened twice: object, cluster, type, reason, message
and source."""


class Again:
    """An event that happened before (`make` builds it anew): counted on the one already
    recorded rather than recorded a second time."""

    def __init__(self, make: Told) -> None:
        self.make = make

    def __call__(self) -> Event:
        return self.make()


def _identity(event: Event) -> _Identity:
    return (event.object, event.cluster, event.type, event.reason, event.message, event.source)


def last_seen(wire: Mapping[str, Any]) -> str:
    """An event's wire form's last-seen time (`lastTime`, else `time`), as a key that
    sorts events oldest first: the registry keeps them by workload, then by first time,
    and a list in key order put an old event of one workload after a new one of another
    (`kubectl get events` orders by last seen)."""
    return str(wire.get("lastTime") or wire.get("time") or "")


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
        self._written: OrderedDict[_Identity, tuple[str, Event, float]] = OrderedDict()
        """Identity → (key, event, monotonic time its lease ends) of the last `REMEMBERED`
        events written, the latest last."""

    async def _lease_id(self) -> int:
        now = self._clock.monotonic()
        if self._lease is None or now - self._granted > self._ttl / 2:
            self._lease = await self._store.grant(self._ttl)
            self._granted = now
        return self._lease.id

    async def ops(self, ref: keys.WorkloadRef, events: list[Told]) -> list[st.Op]:
        """Put operations for `events` (built lazily, so a pass with none costs nothing);
        an `Again` one puts the event it repeats, counted once more."""
        if not events:
            return []
        lease = await self._lease_id()
        ends = self._granted + self._ttl
        stamp = self._clock.now().strftime("%Y%m%dT%H%M%S%f")
        obj = f"{ref.kind}:{ref.name}"
        ops: dict[str, st.Op] = {}  # by key: etcd refuses a transaction naming one twice
        for make in events:
            event = make()
            earlier = await self._earlier(ref, event) if isinstance(make, Again) else None
            if earlier is None:
                key = keys.event_key(
                    ref.namespace, obj, f"{stamp}-{next(self._seq):06d}-{self._source}"
                )
            else:
                key, first = earlier
                event = first.model_copy(update={"count": first.count + 1, "last_time": event.time})
            ops[key] = st.Put(key, EVENTS.encode(event), lease)
            self._remember(event, key, ends)
        return list(ops.values())

    async def _earlier(self, ref: keys.WorkloadRef, event: Event) -> tuple[str, Event] | None:
        """The recorded event `event` repeats (key and event), if the registry still has
        it: the one this recorder wrote while its lease lives, else the latest stored."""
        known = self._written.get(_identity(event))
        if known is not None and self._clock.monotonic() < known[2]:
            return known[0], known[1]
        same = _identity(event)
        for kv in reversed((await self._store.list(event_prefix(ref))).items):
            try:
                stored = EVENTS.decode(kv.key, kv.value)
            except errors.Invalid:  # a hand edit: not the one to count on
                continue
            if _identity(stored) == same:
                return kv.key, stored
        return None

    def _remember(self, event: Event, key: str, ends: float) -> None:
        identity = _identity(event)
        self._written.pop(identity, None)
        self._written[identity] = (key, event, ends)
        while len(self._written) > REMEMBERED:
            self._written.popitem(last=False)
