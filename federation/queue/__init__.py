"""Pending work: per-queue ordering (priority, then FIFO) and weighted fair share across queues.

Fed by workload watches (through the controller) and by the scheduling cycle, which puts
back what it could not admit and the victims it evicted; feeds the cycle's heads step.
Kept apart from admitted usage (`federation.quota`) so neither store can corrupt the other.
"""

from __future__ import annotations

__all__: list[str] = []
