"""`suspension.clusters`: the clusters a policy's `spec.suspension` freezes, as Karmada reads it."""

from __future__ import annotations

from typing import Any

import pytest

from federation.propagation import suspension
from policies.models.propagation import PropagationPolicy

NAMES = ("a", "b", "c")


def spec(block: dict[str, Any] | None) -> Any:
    body: dict[str, Any] = {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]}
    if block is not None:
        body["suspension"] = block
    return PropagationPolicy.model_validate({"metadata": {"name": "p"}, "spec": body}).spec


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        pytest.param(None, set(), id="no suspension"),
        pytest.param({"dispatching": True}, set(NAMES), id="dispatching: true freezes all"),
        pytest.param({"dispatching": False}, set(), id="dispatching: false freezes none"),
        pytest.param(
            {"dispatchingOnClusters": {"clusterNames": ["b", "z"]}},
            {"b"},
            id="only the named clusters that are in play",
        ),
    ],
)
def test_the_clusters_a_suspension_freezes(
    block: dict[str, Any] | None, expected: set[str]
) -> None:
    assert suspension.clusters(spec(block), NAMES) == expected


def test_no_claiming_policy_freezes_nothing() -> None:
    assert suspension.clusters(None, NAMES) == frozenset()
