"""`suspension`: the clusters a policy's `spec.suspension` freezes, as Karmada reads it,
and the events that say so."""

from __future__ import annotations

from typing import Any

import pytest

from federation.propagation import suspension, works
from federation.registry import keys
from policies.models.propagation import PropagationPolicy
from policies.models.work import WorkStatus

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


def test_a_dependency_s_suspension_names_the_workloads_it_is_sent_for() -> None:
    """A dependency without a policy of its own is held by its needers' suspension: "by
    its policy" named a policy it does not have."""
    ref = keys.WorkloadRef("web", "ConfigMap", "cfg")
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}
    work = works.new_work(
        ref=ref,
        cluster="a",
        old=None,
        manifest=manifest,
        revision=0,
        status=WorkStatus(),
        uid=None,
        suspended=True,
    )
    needer = keys.WorkloadRef("web", "Deployment.apps", "app")
    ((name, reason, why),) = suspension.changes([("a", None, work)], needers={needer})
    assert (name, reason) == ("a", "DispatchingSuspended")
    assert why == (
        "dispatching to a suspended by its policy or that of web/Deployment.apps/app:"
        " its copy is left as it is"
    )
