"""Rows of `fedctl cluster list` from a Cluster and its observed status."""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from typing import Any

from federation.monitor import capacity, summary
from policies.models.cluster import Cluster, ClusterStatus, Condition
from tests.unit.monitor.kube_objects import node, pod

T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)


def cluster(**spec: Any) -> Cluster:
    return Cluster.model_validate(
        {"metadata": {"name": "us-east-a100"}, "spec": {"region": "us-east", **spec}}
    )


A100 = cluster(
    chips=[
        {"model": "nvidia-a100-80gb", "arch": "amd64", "count": 16},
        {"model": "amd64", "count": 1},
    ],
    prices={
        "onDemand": {
            "cpu": "0.05",
            "memory": "0.01",
            "accelerators": {"nvidia-a100-80gb": "3"},
        }
    },
)


def observed(ready: str = "True", reason: str = "ClusterReady") -> ClusterStatus:
    gpu_labels = {"fedctl.io/accelerator": "nvidia-a100-80gb"}
    cap = capacity.summarize(
        [
            node("sys", cpu="8", memory="32Gi"),
            node(
                "a0", cpu="96", memory="1152Gi", devices={"nvidia.com/gpu": "8"}, labels=gpu_labels
            ),
            node(
                "a1", cpu="96", memory="1152Gi", devices={"nvidia.com/gpu": "8"}, labels=gpu_labels
            ),
        ],
        [pod("train", node_name="a0", requests={"nvidia.com/gpu": "4", "cpu": "40"})],
    )
    return ClusterStatus(
        conditions=[
            Condition(type="Ready", status=ready, reason=reason, last_transition_time=T0)  # type: ignore[arg-type]
        ],
        flavors=list(cap.flavors),
        totals=cap.totals,
    )


def test_row_shows_capacity_by_chip_and_free_over_total() -> None:
    r = summary.row(A100, observed())
    assert r.chips == {"amd64": 1, "nvidia-a100-80gb": 16}
    assert summary.cells(r) == (
        "us-east-a100",
        "us-east",
        "amd64:1,nvidia-a100-80gb:16",
        "True",
        "160/200",
        "2336Gi/2336Gi",
        "nvidia-a100-80gb 12/16",
        # 200 cores x 0.05 + 2336 GiB x 0.01 + 16 GPUs x 3
        f"{Decimal('10') + Decimal('23.36') + Decimal('48'):.2f} USD",
    )


def test_the_price_is_shown_in_the_cluster_s_own_currency() -> None:
    # A fleet may price members in several currencies: the column names each one's.
    prices = {"currency": "CNY", "onDemand": {"cpu": "0.35", "memory": "0.05"}}
    local = cluster(chips=A100.spec.model_dump(by_alias=True)["chips"], prices=prices)
    # 200 cores x 0.35 + 2336 GiB x 0.05; the GPUs have no price here, so none at all.
    assert summary.cells(summary.row(local, observed()))[-1] == "-"
    prices["onDemand"]["accelerators"] = {"nvidia-a100-80gb": "20"}  # type: ignore[index]
    local = cluster(chips=A100.spec.model_dump(by_alias=True)["chips"], prices=prices)
    assert summary.cells(summary.row(local, observed()))[-1] == "506.80 CNY"


def test_never_observed_cluster_shows_declared_chips_and_no_amounts() -> None:
    r = summary.row(A100, None)
    assert r.chips == {"nvidia-a100-80gb": 16, "amd64": 1}
    assert summary.cells(r)[3:] == ("Unknown (NotProbed)", "-", "-", "-", "-")


def test_not_ready_shows_the_reason() -> None:
    r = summary.row(A100, observed("False", "ConnectionRefused"))
    assert summary.cells(r)[3] == "False (ConnectionRefused)"


def test_missing_accelerator_price_gives_no_hourly_price() -> None:
    cheap = cluster(prices={"onDemand": {"cpu": "0.05"}})
    assert summary.hourly_price(cheap, observed()) is None
    assert summary.hourly_price(cluster(), observed()) is None


def test_table_aligns_columns_and_sorts_by_name() -> None:
    other = Cluster.model_validate({"metadata": {"name": "a-cpu"}, "spec": {"region": "eu"}})
    text = summary.table([summary.row(A100, observed()), summary.row(other, None)])
    lines = text.splitlines()
    assert lines[0].split() == list(summary.HEADER)
    assert [line.split()[0] for line in lines[1:]] == ["a-cpu", "us-east-a100"]
    column = lines[0].index("REGION")
    assert lines[1][column:].startswith("eu ")
    assert lines[2][column:].startswith("us-east ")


def test_describe_lists_conditions_flavors_apis_taints_and_prices() -> None:
    text = summary.describe(A100, observed("False", "ConnectionRefused"))
    assert "Ready=False ConnectionRefused since 2026-01-01T00:00:00Z" in text
    assert "  nvidia-a100-80gb (amd64) x2: cpu=96, memory=1152Gi, nvidia.com/gpu=8" in text
    assert "largest free node: cpu=96, memory=1152Gi, nvidia.com/gpu=8" in text
    assert (
        "    free per node: 1x cpu=96, memory=1152Gi, nvidia.com/gpu=8;"
        " 1x cpu=56, memory=1152Gi, nvidia.com/gpu=4"
    ) in text
    assert (
        "Prices:      USD cpu=0.05/core-h memory=0.01/GiB-h, nvidia-a100-80gb=3/h (on demand)"
        in text
    )
    assert "Spot:        not offered" in text
    assert "Per hour:    81.36 USD (whole cluster)" in text
    assert summary.describe(A100, None).splitlines()[2] == "Status:      not observed yet"


def test_a_member_joined_twice_says_under_which_name_and_why_it_is_not_ready() -> None:
    """The second name of a Kubernetes cluster is kept not Ready by the monitor; list and
    describe say so, naming the first."""
    cond = Condition(
        type="Ready",
        status="False",
        reason="DuplicateCluster",
        message="the Kubernetes cluster already joined as us-east-cpu (kube-system uid u-1)",
        last_transition_time=T0,
    )
    status = observed().model_copy(
        update={"conditions": [cond], "cluster_id": "u-1", "duplicate_of": "us-east-cpu"}
    )
    assert summary.cells(summary.row(A100, status))[3] == "False (DuplicateCluster)"
    text = summary.describe(A100, status)
    assert "Cluster ID:  u-1 (also joined as us-east-cpu: see Ready)" in text
    assert "Ready=False DuplicateCluster since 2026-01-01T00:00:00Z: the Kubernetes" in text


def test_describe_shows_the_spot_table_spot_jobs_are_costed_by() -> None:
    spotted = cluster(
        prices={
            "onDemand": {"cpu": "0.05", "accelerators": {"nvidia-a100-80gb": "3"}},
            "spot": {"cpu": "0.02", "memory": "0.004", "accelerators": {"nvidia-a100-80gb": "1.2"}},
        }
    )
    text = summary.describe(spotted, observed())
    assert "Spot:        USD cpu=0.02/core-h memory=0.004/GiB-h, nvidia-a100-80gb=1.2/h" in text
