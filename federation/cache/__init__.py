"""Read views for the scheduler: the frozen per-cycle snapshot of clusters, policies, bindings.

Fed by the registry (through the controller's informers, or by `fedctl plan` from files);
feeds the scheduling cycle and explanations. Nothing here mutates what it was given.
"""

from __future__ import annotations

__all__: list[str] = []
