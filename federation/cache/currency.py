"""One currency for every cost the scheduler compares, records and caps.

A Cluster's prices are in its own currency (`spec.prices.currency`): a fleet bought from
providers in several countries is billed in several. The cost score ranks clusters by
their prices, a Binding adds its targets' costs together, and `maxHourlyCost` is one
number for every cluster, so all of them need one currency: the federation's
(`FEDCTL_SCHEDULER__CURRENCY`, USD unless set), with `FEDCTL_SCHEDULER__EXCHANGE_RATES`
saying what one unit of each other currency is worth in it. Without this, a cluster priced
7 CNY an hour was compared as if it cost 7 USD.

Fed by the scheduler settings; feeds the snapshot build (`parts.compute`), which converts
each cluster's prices once per part, and the API, which warns when a Cluster is written in
a currency it cannot convert. A cluster priced in a currency with no rate is taken as
unpriced (cost score 0, no cost in its Bindings, filtered out by `maxHourlyCost`), and its
verdicts say why, rather than being compared at a wrong price.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType

from federation.settings import SchedulerSettings
from policies.models.cluster import Prices

__all__ = ["Currency"]


@dataclass(frozen=True)
class Currency:
    """The federation's currency and what other currencies are worth in it."""

    code: str = "USD"
    rates: Mapping[str, Decimal] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(cls, settings: SchedulerSettings) -> Currency:
        return cls(settings.currency, MappingProxyType(dict(settings.exchange_rates)))

    def convert(self, prices: Prices | None) -> tuple[Prices | None, str]:
        """`prices` in this currency, or None with the reason it cannot be converted."""
        if prices is None or prices.currency == self.code:
            return prices, ""
        rate = self.rates.get(prices.currency)
        if rate is None:
            return None, self.unconvertible(prices.currency)
        spot = prices.spot.scaled(rate) if prices.spot is not None else None
        return Prices(currency=self.code, on_demand=prices.on_demand.scaled(rate), spot=spot), ""

    def unconvertible(self, currency: str) -> str:
        return (
            f"priced in {currency}, which has no exchange rate to {self.code}"
            f" (set FEDCTL_SCHEDULER__EXCHANGE_RATES={currency}=RATE):"
            " taken as unpriced"
        )

    def problem(self, prices: Prices | None) -> str | None:
        """Why these prices cannot be compared with the fleet's, or None when they can."""
        if prices is None or prices.currency == self.code or prices.currency in self.rates:
            return None
        return self.unconvertible(prices.currency)
