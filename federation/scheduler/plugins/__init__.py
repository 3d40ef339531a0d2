"""The built-in filter and score plugins, one per file, and the default registry.

Fed by `SchedulerSettings` (each plugin is built from it); feeds the scheduling cycle and
`explain`. Filters run cheapest and most selective first; the static ones (whose answer
depends only on the request and the snapshot) are cached per request signature.
"""

from __future__ import annotations

from federation.scheduler import framework as fw
from federation.scheduler.plugins import (
    affinity,
    apis,
    binpack,
    capacity,
    chips,
    cost,
    eviction,
    health,
    locality,
    preference,
    quota,
    spot,
    taints,
)

__all__ = ["default_registry"]


def default_registry() -> fw.Registry:
    """Every built-in plugin: filters in the order they run, then scores."""
    registry = fw.Registry()
    registry.register("eviction", eviction.Eviction)
    registry.register("health", health.Health)
    registry.register("taints", taints.Taints)
    registry.register("affinity", affinity.Affinity)
    registry.register("api-enablement", apis.ApiEnablement)
    registry.register("chips", chips.Chips)
    registry.register("spot", spot.SpotOffer)
    registry.register("capacity", capacity.Capacity)
    registry.register("max-cost", cost.MaxCost)
    registry.register("quota", quota.Quota)
    registry.register("score:cost", cost.Cost)
    registry.register("score:binpack", binpack.Binpack)
    registry.register("score:locality", locality.Locality)
    registry.register("score:affinity", preference.Preference)
    return registry
