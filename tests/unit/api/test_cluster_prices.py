"""A Cluster's `status.defaultPrices`: its profiles' default chip prices, in its currency."""

from __future__ import annotations

from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest

from federation.api import cluster_prices
from federation.cache.currency import Currency
from policies.models.cluster import Cluster
from tests.unit.scheduler import fleet

USD = Currency("USD", MappingProxyType({"EUR": Decimal("1.25")}))


def shown(member: Cluster, currency: Currency = USD) -> dict[str, Any]:
    wire = member.to_wire()
    cluster_prices.fill(wire, member, {"nvidia-l4": Decimal("1.00")}, currency=currency)
    return dict(wire["status"].get("defaultPrices") or {})


def l4(**kw: Any) -> Cluster:
    return fleet.cluster("l4", fleet.flavor(chip="nvidia-l4", devices=4), **kw)


def priced_in(member: Cluster, code: str) -> Cluster:
    assert member.spec.prices is not None
    prices = member.spec.prices.model_copy(update={"currency": code})
    return member.model_copy(update={"spec": member.spec.model_copy(update={"prices": prices})})


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        pytest.param(l4(), {"nvidia-l4": "1.00"}, id="a chip its table leaves out"),
        pytest.param(l4(gpu_prices={"nvidia-l4": "0.5"}), {}, id="a chip it prices itself"),
        pytest.param(fleet.cluster("cpu"), {}, id="a chip it does not carry"),
        pytest.param(priced_in(l4(), "EUR"), {"nvidia-l4": "0.8"}, id="converted back to EUR"),
        pytest.param(priced_in(l4(), "CNY"), {}, id="a currency with no rate: unpriced"),
    ],
)
def test_a_default_is_shown_as_the_scheduler_charges_it(
    member: Cluster, expected: dict[str, str]
) -> None:
    assert shown(member) == expected
