"""The pending store: workloads waiting for a placement, ordered inside each queue.

Fed by the controller (new and changed workloads), by the scheduling cycle (workloads it
could not admit go back with their reason) and by preemption and reclaim (victims are
re-queued, never lost). Feeds the cycle: `ordered(queue)` yields a queue's workloads by
priority (higher first) then arrival (FIFO); the cycle decides whether a head that does not
fit blocks the rest (StrictFIFO) or not (BestEffortFIFO).

Why heaps keyed by (-priority, sequence): a cycle looks at thousands of workloads per queue
and a re-queued victim must keep its original arrival so it is not punished twice. Why
`ordered` pops from a copy rather than sorting: a cycle takes its batch (a thousand) from a
backlog that may be a hundred times larger, and the controller builds the store afresh each
cycle, so its cost must follow what is taken, not what waits.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from federation.registry import keys
from policies.models.propagation import Placement
from policies.models.workload import Workload

__all__ = ["PendingJob", "PendingStore"]


@dataclass(frozen=True, slots=True, eq=False)
class PendingJob:
    """One workload waiting for placement, with the policy that claimed it.

    `seq` is the arrival order (FIFO); a victim re-queued keeps its first `seq`.
    `placement` is the claiming policy's placement (None: no policy, one cluster).
    """

    ref: keys.WorkloadRef
    workload: Workload
    queue: str
    priority: int = 0
    seq: int = 0
    placement: Placement | None = None
    fedctl: object | None = None
    """The policy's `spec.fedctl` (a FedctlPlacement) when the policy is a fedctl.io one."""
    reason: str = ""
    attempts: int = 0
    priority_class: str = ""
    """The queue's named priority the workload asked for; `priority` is its value once the
    cycle has looked it up in the queue (0 until then)."""

    def with_reason(self, reason: str) -> PendingJob:
        """The same job, noting why the last cycle left it pending."""
        return replace(self, reason=reason, attempts=self.attempts + 1)


@dataclass(slots=True)
class _Queue:
    heap: list[tuple[int, int, str]] = field(default_factory=list)


class PendingStore:
    """Pending workloads by queue; `copy()` gives an independent store for what-if work."""

    def __init__(self, jobs: Iterable[PendingJob] = ()) -> None:
        """A store holding `jobs` (each with its arrival `seq` set; 0 gets a new one)."""
        self._jobs: dict[str, PendingJob] = {}
        self._queues: dict[str, _Queue] = {}
        self._last_seq = 0
        for given in jobs:
            job = given if given.seq else replace(given, seq=self.next_seq())
            self._last_seq = max(self._last_seq, job.seq)
            key = str(job.ref)
            self._jobs[key] = job
            self._queues.setdefault(job.queue, _Queue()).heap.append((-job.priority, job.seq, key))
        for q in self._queues.values():
            heapq.heapify(q.heap)  # once, rather than a push per job

    def __len__(self) -> int:
        return len(self._jobs)

    def __contains__(self, ref: object) -> bool:
        return str(ref) in self._jobs

    def next_seq(self) -> int:
        """A fresh arrival number for a new workload."""
        self._last_seq += 1
        return self._last_seq

    def add(self, job: PendingJob) -> PendingJob:
        """Queue `job` (replacing an older entry for the same workload); seq 0 gets a new one."""
        if job.seq == 0:
            job = replace(job, seq=self.next_seq())
        self._last_seq = max(self._last_seq, job.seq)
        key = str(job.ref)
        self._jobs[key] = job
        heapq.heappush(
            self._queues.setdefault(job.queue, _Queue()).heap, (-job.priority, job.seq, key)
        )
        return job

    def remove(self, ref: keys.WorkloadRef) -> PendingJob | None:
        """Forget a workload (admitted, finished or deleted); its heap entry is skipped lazily."""
        return self._jobs.pop(str(ref), None)

    def get(self, ref: keys.WorkloadRef) -> PendingJob | None:
        return self._jobs.get(str(ref))

    def queues(self) -> list[str]:
        """Queues with at least one pending workload, by name."""
        return sorted(q for q in self._queues if self.head(q) is not None)

    def head(self, queue: str) -> PendingJob | None:
        """The first workload of a queue: highest priority, then earliest arrival."""
        q = self._queues.get(queue)
        if q is None:
            return None
        heap = q.heap
        while heap:
            if self._is_live(heap[0]):
                return self._jobs[heap[0][2]]
            heapq.heappop(heap)  # stale (admitted, removed or re-queued since): gone for good
        return None

    def ordered(self, queue: str) -> Iterator[PendingJob]:
        """A queue's workloads in scheduling order, as they stand now.

        The order is taken at this call and read lazily: what is added later (a job put
        back with its reason, a re-queued victim) is not met, what is removed is skipped,
        and taking k of n workloads costs one pass over n and k pops, not a sort of all n.
        """
        q = self._queues.get(queue)
        if q is None:
            return iter(())
        self._compact(q)
        return self._pop_in_order(list(q.heap))

    def _pop_in_order(self, heap: list[tuple[int, int, str]]) -> Iterator[PendingJob]:
        seen: set[str] = set()
        jobs = self._jobs  # `_is_live`, inline: a cycle takes every job through here
        while heap:
            priority, seq, key = heapq.heappop(heap)
            if key in seen:
                continue
            job = jobs.get(key)
            if job is not None and -job.priority == priority and job.seq == seq:
                seen.add(key)
                yield job

    def _compact(self, q: _Queue) -> None:
        live = [e for e in q.heap if self._is_live(e)]
        if len(live) != len(q.heap):
            heapq.heapify(live)
            q.heap = live

    def _is_live(self, entry: tuple[int, int, str]) -> bool:
        job = self._jobs.get(entry[2])
        return job is not None and (-job.priority, job.seq) == entry[:2]

    def counts(self) -> dict[str, int]:
        """How many workloads wait in each queue that has any."""
        out: dict[str, int] = {}
        for job in self._jobs.values():
            out[job.queue] = out.get(job.queue, 0) + 1
        return out

    def jobs(self) -> list[PendingJob]:
        """Every pending workload, in no particular order."""
        return list(self._jobs.values())

    def copy(self) -> PendingStore:
        """An independent copy (the cycle works on one; the caller swaps it in)."""
        other = PendingStore()
        other._jobs = dict(self._jobs)
        other._queues = {name: _Queue(list(q.heap)) for name, q in self._queues.items()}
        other._last_seq = self._last_seq
        return other
