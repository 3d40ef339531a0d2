"""Pause the cyclic garbage collector around bulk work that allocates long-lived objects.

Used by the registry's bulk decode (a new leader lists every workload and Binding) and the
scheduling cycle. Such work creates tens of thousands of objects that all outlive it; each
collection the allocations trigger walks every object alive so far, so the cost grows with
the registry: at 10,000 workloads most of a start-up's time went to collections that found
nothing to free. Pausing is safe because the paused code makes no reference cycles that
must be freed meanwhile; the collector resumes, as it was, when the block ends.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block (re-entrant: an inner block leaves it off)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
