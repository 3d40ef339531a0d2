"""What `cluster join` makes of a joined Cluster: its flags over the stored spec."""

from __future__ import annotations

import argparse
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
