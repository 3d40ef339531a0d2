"""When a stored object arrived: the uid the API gives an object it creates, ordered by
its creation, and the FIFO sequence a queue orders workloads by (`sequence`).

Fed by the API, which asks `new_uid` for every object it creates; feeds the scheduler's
reconcile, which reads each workload's `sequence` from its etcd create revision and uid.

Why the uid: every object one apply creates is written in one etcd transaction (a
hundred at a time), so they share one create revision. etcd numbers the puts inside a
transaction, but its API never shows that number, and tied on the revision, a queue's
FIFO fell back to the key: `step-10` ran before `step-9` of the same file, which
Kubernetes and Kueue, where `kubectl apply -f` creates one document after another, order
by creation. The uid is an RFC 9562 UUIDv7: its first 64 bits are the creation instant in
milliseconds and a counter that grows with every uid this process makes, so the objects
of one transaction, made in document order by one API process, sort in that order. An
update keeps the uid and the create revision, so a workload applied again keeps its
place: FIFO is by creation, not by the last edit. A uid of another form (given to an
object written before uids were ordered) orders nothing: ties among those still fall to
the key.
"""

from __future__ import annotations

import datetime as dt
import secrets
import threading
import uuid

__all__ = ["Uids", "new_uid", "sequence"]

_COUNTER = 0xFFF
"""The largest value of the 12-bit counter beside the milliseconds (RFC 9562, method 1)."""


class Uids:
    """A maker of UUIDv7 uids that grow strictly, whatever the clock does between calls.

    Within one millisecond the counter grows; past its 4,096 values, or when the clock
    steps back, the milliseconds of the last uid are carried on, as RFC 9562 lets a
    generator do, so a later uid never sorts before an earlier one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = (0, 0)  # (milliseconds, counter) of the last uid made

    def new(self, now: dt.datetime) -> str:
        """A uid for an object created at `now`, later in order than any made before."""
        wanted = int(now.timestamp() * 1000)
        with self._lock:
            millis, counter = self._last
            if wanted > millis:
                millis, counter = wanted, 0
            elif counter < _COUNTER:
                counter += 1
            else:
                millis, counter = millis + 1, 0
            self._last = (millis, counter)
        value = (millis & (2**48 - 1)) << 80 | 0x7 << 76 | counter << 64
        value |= 0b10 << 62 | secrets.randbits(62)
        return str(uuid.UUID(int=value))


_UIDS = Uids()


def new_uid(now: dt.datetime) -> str:
    """A uid for an object the API creates at `now` (one maker for the whole process)."""
    return _UIDS.new(now)


def sequence(created: int, uid: str | None) -> int:
    """A workload's place in its queue's FIFO: its create revision, then, among objects
    created in the same transaction, the order of their uids (`Uids`). Unbounded: only
    compared, never stored."""
    return max(created, 1) << 64 | _order(uid)


def _order(uid: str | None) -> int:
    """The instant and counter of a UUIDv7 uid (its first 64 bits); 0 for any other."""
    if not uid:
        return 0
    try:
        parsed = uuid.UUID(uid)
    except ValueError:
        return 0
    return parsed.int >> 64 if parsed.version == 7 else 0
