"""The chip prices a Cluster's own tables leave out and the scheduler charges anyway: each
AcceleratorProfile's `defaultPricePerHour`, shown with the Cluster on read.

Fed by the AcceleratorProfiles stored and the federation's currency; feeds the objects
API's presentation of a Cluster (`status.defaultPrices`), which `fedctl cluster list`,
`cluster describe` and `get clusters -o wide` price with. Why: the scheduler prices a
chip a cluster's on-demand table does not list at its profile's default
(`cache.snapshot.build`), while those views read the table alone, so a cluster charged
0.85 an hour per L4 showed no L4 price and a lower whole-cluster price, and nothing said
where a Binding's cost came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from federation.cache.currency import Currency
from policies.models.cluster import Cluster

__all__ = ["fill"]


def fill(
    wire: dict[str, Any],
    cluster: Cluster,
    prices: Mapping[str, Decimal],
    *,
    currency: Currency,
) -> None:
    """Set `status.defaultPrices` on the Cluster's `wire` document: each default of a chip
    it carries and its on-demand table leaves out, in the cluster's currency (converted
    back at the federation's rate, as the scheduler converts the table forward). Nothing
    for a cluster with no prices (the scheduler keeps it unpriced), one in a currency with
    no rate, or one never observed (no status to carry it)."""
    table, status = cluster.spec.prices, wire.get("status")
    if table is None or status is None or not prices:
        return
    rate = Decimal(1)
    if table.currency != currency.code:
        found = currency.rates.get(table.currency)
        if not found:
            return
        rate = found
    carried = {c.model for c in cluster.spec.chips}
    carried |= {
        f["acceleratorModel"] for f in status.get("flavors") or () if f.get("acceleratorModel")
    }
    missing = {
        model: str(price / rate)
        for model, price in sorted(prices.items())
        if model in carried and model not in table.on_demand.accelerators
    }
    if missing:
        status["defaultPrices"] = missing
