"""Placement: which member clusters run a workload and how many replicas each gets.

Fed by the scheduling cycle's snapshot (feasible clusters, scores, free capacity, the
previous Binding); feeds the Binding writer. Its core is pure so `fedctl plan` can run the
same decisions offline that the controller makes live. Import the modules and call through
them (`division.divide(...)`, `spread.select(...)`); this package re-exports nothing yet.
"""

from __future__ import annotations

__all__: list[str] = []
