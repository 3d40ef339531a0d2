"""An override that makes a workload's copies run more than its template is told where
it is written: admission, queues and cost counted the template, not the copies."""

from __future__ import annotations

from typing import Any

import pytest

from federation.propagation import override_counts
from policies.models.override import OverridePolicy
from policies.models.workload import Workload

TAIL = (
    ": queues, FederatedResourceQuota and cost count the template, not what an override"
    " makes of it (as Karmada's quota does), so the members may run more than was"
    " admitted; change the template to have it counted"
)


def big() -> Workload:
    return Workload.model_validate(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "big", "namespace": "qb"},
            "spec": {
                "replicas": 1,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "nginx",
                                "resources": {"requests": {"cpu": "500m"}},
                            }
                        ]
                    }
                },
            },
        }
    )


def scale(*plaintext: dict[str, Any], target: dict[str, Any] | None = None) -> OverridePolicy:
    rule: dict[str, Any] = {"overriders": {"plaintext": list(plaintext)}}
    if target:
        rule["targetCluster"] = target
    return OverridePolicy.model_validate(
        {
            "metadata": {"name": "scale", "namespace": "qb"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "overrideRules": [{"overriders": {"labelsOverrider": []}}, rule],
            },
        }
    )


REPLICAS = "/spec/replicas"
CPU = "/spec/template/spec/containers/0/resources/requests/cpu"
IMAGE = "/spec/template/spec/containers/0/image"


@pytest.mark.parametrize(
    ("edits", "said"),
    [
        pytest.param(
            [{"path": REPLICAS, "operator": "replace", "value": 8}],
            "OverridePolicy qb/scale overrideRules[1].plaintext[0]: Deployment qb/big runs 8"
            " pod(s) where its template has 1" + TAIL,
            id="replicas raised",
        ),
        pytest.param(
            [
                {"path": "/metadata/labels", "operator": "add", "value": {"a": "b"}},
                {"path": CPU, "operator": "replace", "value": "2"},
            ],
            "OverridePolicy qb/scale overrideRules[1].plaintext[1]: Deployment qb/big asks"
            " for cpu 2 in all where its template asks for cpu 500m" + TAIL,
            id="a pod's requests raised, by the second edit",
        ),
        pytest.param(
            [{"path": REPLICAS, "operator": "replace", "value": 0}], None, id="replicas lowered"
        ),
        pytest.param(
            [{"path": IMAGE, "operator": "replace", "value": "nginx:2"}],
            None,
            id="an edit that counts nothing",
        ),
        pytest.param(
            [{"path": "/spec/replicass", "operator": "remove"}], None, id="an edit that fails"
        ),
    ],
)
def test_an_override_that_raises_what_a_workload_runs_is_told(
    edits: list[dict[str, Any]], said: str | None
) -> None:
    assert override_counts.notes([scale(*edits)], [big()]) == ([said] if said else [])


def test_a_rule_for_one_cluster_is_told_too() -> None:
    """A per-cluster replica count is a use Karmada allows: told, not refused."""
    one = scale(
        {"path": REPLICAS, "operator": "replace", "value": 3},
        target={"clusterNames": ["us-east-cpu"]},
    )
    (note,) = override_counts.notes([one], [big()])
    assert note.startswith("OverridePolicy qb/scale overrideRules[1].plaintext[0]: Deployment")
