"""Costs in one currency: a cluster priced in another is converted at the configured rate
before clusters are compared, costed or capped, or taken as unpriced (and says so) when
the federation has no rate for it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from federation import errors, settings
from federation.cache.currency import Currency
from federation.scheduler import plan
from federation.settings import SchedulerSettings
from policies.models.cluster import Prices

PROFILE = """
clusters:
  - name: us-cpu
    region: us-east
    nodePools: [{name: m, count: 2, arch: amd64, cpu: "32", memory: 128Gi}]
    prices:
      currency: USD
      onDemand: {cpuCoreHour: 0.05, memoryGiBHour: 0.005}
  - name: cn-cpu
    region: cn-north
    nodePools: [{name: m, count: 2, arch: amd64, cpu: "32", memory: 128Gi}]
    prices:
      currency: CNY
      onDemand: {cpuCoreHour: 0.28, memoryGiBHour: 0.028}
"""
# cn-cpu at 0.28 CNY a core-hour is 0.0392 USD at 0.14: cheaper than us-cpu's 0.05.

SERVICE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: web}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: c
          resources: {requests: {cpu: "4", memory: 8Gi}}
"""

CAPPED = """
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {name: api, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: api}]
  placement:
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}
  fedctl: {maxHourlyCost: "0.4"}
"""
# Two pods of 4 cores and 8 GiB: us-cpu 0.48/h, cn-cpu 2.688 CNY = 0.3763 USD/h.


def files(tmp_path: Path, *docs: str) -> tuple[list[Path], Path]:
    paths = []
    for i, doc in enumerate(docs):
        path = tmp_path / f"doc{i}.yaml"
        path.write_text(doc, encoding="utf-8")
        paths.append(path)
    profile = tmp_path / "fleet.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    return paths, profile


def test_a_cluster_priced_in_another_currency_is_compared_at_the_rate(tmp_path: Path) -> None:
    paths, profile = files(tmp_path, SERVICE)
    rated = SchedulerSettings(exchange_rates={"CNY": Decimal("0.14")})
    (planned,) = plan.plan_files(paths, profile=profile, settings=rated)
    assert planned.plan.placement == {"cn-cpu": 2}
    assert planned.plan.currency == "USD"
    # 2 x (4 x 0.28 + 8 x 0.028) CNY x 0.14
    assert planned.plan.costs["cn-cpu"] == Decimal("0.37632")
    assert "total cost 0.3763 USD/h" in plan.render(planned)
    # What one pod costs on each cluster that passed, in USD: what the cost score ranked.
    assert planned.plan.pod_costs == {"cn-cpu": Decimal("0.18816"), "us-cpu": Decimal("0.24")}
    assert "pod 0.1882 USD/h" in plan.render(planned)
    assert planned.plan.to_json()["podCosts"] == {"cn-cpu": "0.18816", "us-cpu": "0.240"}


def test_without_a_rate_the_cluster_is_unpriced_and_says_why(tmp_path: Path) -> None:
    paths, profile = files(tmp_path, SERVICE)
    (planned,) = plan.plan_files(paths, profile=profile, settings=SchedulerSettings())
    # Compared as numbers, 0.28 "dollars" a core lost to 0.05; now it is unpriced instead,
    # and the priced cluster wins on cost.
    assert planned.plan.placement == {"us-cpu": 2}
    verdict = {v.cluster: v for v in planned.plan.verdicts}["cn-cpu"]
    assert verdict.verdict == "ok" and verdict.scores["cost"] == 0
    assert verdict.reasons == [
        "priced in CNY, which has no exchange rate to USD (set"
        " FEDCTL_SCHEDULER__EXCHANGE_RATES=CNY=RATE): taken as unpriced"
    ]
    assert "(priced in CNY, which has no exchange rate to USD" in plan.render(planned)
    assert planned.plan.pod_costs["cn-cpu"] is None


def test_a_cap_names_the_missing_rate_not_a_missing_chip_price(tmp_path: Path) -> None:
    """Under maxHourlyCost, a cluster priced in a currency with no rate was filtered as
    `no price for the chip here`, though it priced everything it runs."""
    paths, profile = files(tmp_path, SERVICE, CAPPED)
    (planned,) = plan.plan_files(paths, profile=profile, settings=SchedulerSettings())
    verdict = {v.cluster: v for v in planned.plan.verdicts}["cn-cpu"]
    assert verdict.verdict == "unschedulable" and verdict.plugin == "max-cost"
    assert verdict.reasons == [
        "priced in CNY, which has no exchange rate to USD (set"
        " FEDCTL_SCHEDULER__EXCHANGE_RATES=CNY=RATE): taken as unpriced; maxHourlyCost is set"
    ]


def test_max_hourly_cost_is_held_in_the_federation_currency(tmp_path: Path) -> None:
    paths, profile = files(tmp_path, SERVICE, CAPPED)
    rated = SchedulerSettings(exchange_rates={"CNY": Decimal("0.14")})
    (planned,) = plan.plan_files(paths, profile=profile, settings=rated)
    assert planned.plan.placement == {"cn-cpu": 2}
    verdicts = {v.cluster: v for v in planned.plan.verdicts}
    assert verdicts["us-cpu"].plugin == "max-cost"
    # Without a rate the CNY cluster has no price the cap can be held against.
    (unrated,) = plan.plan_files(paths, profile=profile, settings=SchedulerSettings())
    assert not unrated.plan.placement
    assert {v.cluster: v.plugin for v in unrated.plan.verdicts} == {
        "cn-cpu": "max-cost",
        "us-cpu": "max-cost",
    }


def test_a_federation_in_another_currency_converts_every_foreign_price(tmp_path: Path) -> None:
    paths, profile = files(tmp_path, SERVICE)
    euro = SchedulerSettings(
        currency="EUR", exchange_rates={"USD": Decimal("0.9"), "CNY": Decimal("0.125")}
    )
    (planned,) = plan.plan_files(paths, profile=profile, settings=euro)
    assert planned.plan.currency == "EUR"
    assert planned.plan.placement == {"cn-cpu": 2}
    assert planned.plan.costs["cn-cpu"] == Decimal("0.336")  # 2.688 CNY x 0.125
    assert planned.plan.to_json()["currency"] == "EUR"


def test_conversion_scales_every_table_and_keeps_the_same_currency_as_is() -> None:
    prices = Prices.model_validate(
        {
            "currency": "CNY",
            "onDemand": {"cpu": "1", "memory": "0.1", "accelerators": {"ascend-910b": "20"}},
            "spot": {"cpu": "0.5"},
        }
    )
    money = Currency("USD", {"CNY": Decimal("0.14")})
    converted, note = money.convert(prices)
    assert note == "" and converted is not None
    assert converted.currency == "USD"
    assert converted.on_demand.cpu == Decimal("0.14")
    assert converted.on_demand.memory == Decimal("0.014")
    assert converted.on_demand.accelerators == {"ascend-910b": Decimal("2.80")}
    assert converted.spot is not None and converted.spot.cpu == Decimal("0.070")
    assert Currency("CNY").convert(prices) == (prices, "")
    assert money.convert(None) == (None, "")
    assert Currency("EUR").convert(prices)[0] is None
    assert money.problem(prices) is None
    assert "priced in CNY" in (Currency("EUR").problem(prices) or "")


def test_rates_are_read_from_the_environment_and_refused_with_the_variable_named() -> None:
    read = settings.from_env(
        {
            "FEDCTL_SCHEDULER__CURRENCY": "EUR",
            "FEDCTL_SCHEDULER__EXCHANGE_RATES": "USD=0.9, CNY=0.125",
        }
    )
    assert read.scheduler.currency == "EUR"
    assert read.scheduler.exchange_rates == {"USD": Decimal("0.9"), "CNY": Decimal("0.125")}
    for bad, said in [
        ("CNY", "expected CODE=RATE"),
        ("cny=0.1", "'cny' is not a currency code"),
        ("CNY=0", "the rate of CNY must be above 0"),
        ("CNY=cheap", "the rate of CNY is not a number"),
    ]:
        with pytest.raises(errors.Invalid, match="FEDCTL_SCHEDULER__EXCHANGE_RATES") as raised:
            settings.from_env({"FEDCTL_SCHEDULER__EXCHANGE_RATES": bad})
        assert said in str(raised.value)
    with pytest.raises(errors.Invalid, match="FEDCTL_SCHEDULER__CURRENCY"):
        settings.from_env({"FEDCTL_SCHEDULER__CURRENCY": "dollars"})


BUDGET = """
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata: {name: team}
spec: {maxHourlyCost: "5"}
"""

PINNED = """
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {name: api, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: api}]
  placement: {clusterAffinity: {clusterNames: [cn-cpu]}}
"""


def test_work_under_a_budget_names_the_missing_rate_not_a_missing_price(tmp_path: Path) -> None:
    """It waited with `what this placement costs is not known (a cluster with no price for
    it)`, though the cluster priced everything and only the exchange rate was missing."""
    queued = SERVICE.replace(
        "metadata: {name: api, namespace: web}",
        "metadata: {name: api, namespace: web, annotations: {fedctl.io/queue: team}}",
    )
    paths, profile = files(tmp_path, queued, PINNED, BUDGET)
    (planned,) = plan.plan_files(paths, profile=profile, settings=SchedulerSettings())
    assert planned.plan.placement == {}
    assert planned.plan.reason == (
        "queue team has an hourly budget and what this placement costs is not known (priced"
        " in CNY, which has no exchange rate to USD (set FEDCTL_SCHEDULER__EXCHANGE_RATES=CNY="
        "RATE): taken as unpriced): work under a budget must be priced, and no placement it"
        " fits in costs 5.0000 or less"
    )
