"""The API speaks the scheduling loop's currency: a Cluster priced in a currency the
federation has no rate for is warned about where it is written, and the live plan costs in
the currency the controller was started with (its scheduler settings reach the API).

The real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import aiohttp
import pytest

from federation.api import app as api_app
from federation.registry.memory import MemoryStore
from federation.settings import SchedulerSettings
from tests.integration.test_scheduler_loop import registry_with_member
from tests.serving import fedctl, serving

pytestmark = pytest.mark.integration

CLUSTER = """\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata: {name: cn-north-cpu}
spec:
  region: cn-north
  chips: [{model: amd64, count: 3}]
  prices:
    currency: CNY
    onDemand: {cpu: "0.35", memory: "0.045"}
  connection: {context: cn-north-cpu}
"""

SERVICE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: web}
spec:
  replicas: 1
  template:
    spec:
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


async def test_a_cluster_in_a_currency_without_a_rate_is_warned_where_it_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER, encoding="utf-8")
    store = MemoryStore()
    async with serving(api_app.build_app(store)) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        out, err = capsys.readouterr()
        assert "cn-north-cpu created" in out
        (warning,) = [line for line in err.splitlines() if line.startswith("Warning:")]
        assert warning == (
            "Warning: Cluster cn-north-cpu: priced in CNY, which has no exchange rate to USD"
            " (set FEDCTL_SCHEDULER__EXCHANGE_RATES=CNY=RATE): taken as"
            " unpriced"
        )
    rated = SchedulerSettings(exchange_rates={"CNY": Decimal("0.14")})
    async with serving(api_app.build_app(store, scheduler=rated)) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert "Warning:" not in capsys.readouterr().err


async def test_the_live_plan_costs_in_the_controllers_currency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "api.yaml"
    path.write_text(SERVICE, encoding="utf-8")
    store, _ = await registry_with_member()  # cluster a, at 0.05 USD a core-hour
    euro = SchedulerSettings(currency="EUR", exchange_rates={"USD": Decimal("0.9")})
    async with serving(api_app.build_app(store, scheduler=euro)) as server:
        capsys.readouterr()
        assert await fedctl(server, "plan", "--live", "-f", str(path), "-o", "json") == 0
        (planned,) = json.loads(capsys.readouterr().out)
        assert planned["currency"] == "EUR"
        assert Decimal(planned["podCosts"]["a"]) == Decimal("0.045")  # 1 core, no memory
        assert await fedctl(server, "plan", "--live", "-f", str(path)) == 0
        out = capsys.readouterr().out
        assert "pod 0.0450 EUR/h" in out and "total cost 0.0450 EUR/h" in out


async def test_the_editor_check_warns_at_the_currency_line() -> None:
    async with (
        serving(api_app.build_app(MemoryStore())) as server,
        aiohttp.ClientSession() as session,
        session.post(
            f"{server}/apis/fedctl.io/v1alpha1/validate",
            data=CLUSTER,
            headers={"Content-Type": "application/yaml"},
        ) as answer,
    ):
        body = await answer.json()
    assert body["valid"]
    (finding,) = [f for f in body["findings"] if f["severity"] == "warning"]
    assert (finding["line"], finding["path"]) == (8, "spec.prices.currency")
    assert finding["message"].startswith("priced in CNY, which has no exchange rate to USD")
