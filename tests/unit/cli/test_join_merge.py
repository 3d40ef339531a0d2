"""What `cluster join` makes of a joined Cluster: its flags over the stored spec."""

from __future__ import annotations

import argparse
import re
from decimal import Decimal
from typing import Any

import pytest

from federation import errors
from federation.cli import cluster_cmd, cluster_join

STORED: dict[str, Any] = {
    "apiVersion": "fedctl.io/v1alpha1",
    "kind": "Cluster",
    "metadata": {"name": "x86", "labels": {"tier": "web"}, "resourceVersion": "7"},
    "spec": {
        "region": "us-east",
        "zone": "us-east-1b",
        "taints": [{"key": "cluster.fedctl.io/unjoining", "value": "", "effect": "NoExecute"}],
        "prices": {"currency": "EUR", "onDemand": {"cpu": "0.04"}, "spot": {"cpu": "0.01"}},
        "evictionGraceSeconds": 120,
        "connection": {"kubeconfigPath": "/k", "context": "x86"},
    },
    "status": {"clusterId": "u"},
}


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cluster_cmd.register(parser.add_subparsers())
    return parser.parse_args(["cluster", "join", "x86", *argv])


def test_flags_set_their_fields_and_keep_every_other() -> None:
    """A re-join dropped the drain taint, the spot prices, zone and grace it was not
    given again."""
    doc, changes = cluster_join.merge_flags(
        _args("--label", "owner=platform", "--taint", "team=ml:NoSchedule",
              "--spot-price", "nvidia-a100-80gb=1.2"),
        STORED,
    )  # fmt: skip
    spec = doc["spec"]
    assert [t["key"] for t in spec["taints"]] == ["cluster.fedctl.io/unjoining", "team"]
    assert spec["prices"] == {
        "currency": "EUR",
        "onDemand": {"cpu": "0.04"},
        "spot": {"cpu": "0.01", "accelerators": {"nvidia-a100-80gb": "1.2"}},
    }
    assert (spec["zone"], spec["evictionGraceSeconds"]) == ("us-east-1b", 120)
    assert spec["connection"] == STORED["spec"]["connection"]
    assert doc["metadata"]["labels"] == {"tier": "web", "owner": "platform"}
    assert doc["metadata"]["resourceVersion"] == "7" and "status" not in doc
    assert changes == ["label owner=platform", "taint team=ml:NoSchedule", "prices"]


@pytest.mark.parametrize(
    ("argv", "stored", "said"),
    [
        pytest.param(
            ["--context", "other"],
            {**STORED, "spec": {**STORED["spec"], "connection": {"kubeconfig": "<redacted>"}}},
            "--context: this Cluster's kubeconfig is stored inline",
            id="a context for an inline kubeconfig it cannot show",
        ),
        pytest.param(
            ["--region", "r", "--kubeconfig", "/k", "--spot-price", "cpu=0.01"],
            None,
            "--spot-price and --currency need on-demand prices too",
            id="spot prices without on-demand ones",
        ),
        pytest.param(["--kubeconfig", "/k"], None, "needs --region", id="a new one, no region"),
    ],
)
def test_what_a_join_cannot_do_is_refused_by_name(
    argv: list[str], stored: dict[str, Any] | None, said: str
) -> None:
    with pytest.raises(errors.Invalid, match=said):
        cluster_join.merge_flags(_args(*argv), stored)


@pytest.mark.parametrize(
    ("price", "said"),
    [
        pytest.param("cpu=1e400", "price must be at most 1000000 an hour, got 1e+400", id="absurd"),
        pytest.param("cpu=inf", "expected RESOURCE=PER_HOUR with a non-negative", id="infinite"),
        pytest.param(
            "cpu=nan", "expected RESOURCE=PER_HOUR with a non-negative", id="not a number"
        ),
        pytest.param("cpu=-1", "price must not be negative, got -1", id="negative"),
        pytest.param("cpus=0.05", "did you mean cpu?", id="a misspelt cpu"),
        pytest.param("mem=0.01", "did you mean memory?", id="a short memory"),
    ],
)
def test_a_price_that_is_no_price_is_refused_before_anything_is_stored(
    price: str, said: str
) -> None:
    """`cpu=1e400` was stored and printed as 400 digits in every view; `cpus=0.05` priced
    a chip called cpus and left the cores as they were, without a word."""
    with pytest.raises(errors.Invalid, match=re.escape(f"price '{price}': {said}")):
        cluster_join.merge_flags(_args("--price", price), STORED)


def test_a_join_gives_the_warnings_apply_gives_for_the_same_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """apply warned of a price for a chip the cluster does not list, a join of the same
    price said nothing; a cpu price alone now says the memory it leaves out is free."""
    chips = {"chips": [{"model": "nvidia-a100-80gb", "arch": "amd64", "count": 8}]}
    stored = {**STORED, "spec": {**STORED["spec"], **chips}}
    cluster_join._models(_args("--price", "nvidia-a100=3.0", "--no-verify"), stored)
    assert capsys.readouterr().err.splitlines() == [
        "Warning: cluster x86: spec.prices.onDemand: no memory price: memory is priced at 0"
        " (free) here; give memory: 0 to say so",
        "Warning: cluster x86: spec.prices.onDemand.accelerators.nvidia-a100: this cluster"
        " lists no chip 'nvidia-a100' (did you mean 'nvidia-a100-80gb'?), so this price is"
        " never used; its chips: nvidia-a100-80gb",
    ]


def test_a_spot_price_for_a_chip_keeps_the_on_demand_cpu_and_memory_prices() -> None:
    """`--spot-price CHIP=X` on a cluster with no spot table made its CPU and memory free
    for spot work, which the cost score then sent there."""
    on_demand = {"onDemand": {"cpu": "0.04", "memory": "0.005"}}
    stored = {**STORED, "spec": {**STORED["spec"], "prices": on_demand}}
    (model,), _ = cluster_join._models(_args("--spot-price", "nvidia-l4=0.3"), stored)
    spot = model.spec.prices.spot
    assert (spot.cpu, spot.memory) == (Decimal("0.04"), Decimal("0.005"))
    assert spot.accelerators == {"nvidia-l4": Decimal("0.3")}
