"""A service scaled to zero runs no pods: it is charged nothing and placed, as Karmada
places it, on every selected cluster with 0 replicas, so each member keeps its copy.

Counted as one replica, scaling a service to zero ran a pod, charged its queue for it and
could wait for room it would never use."""

from __future__ import annotations

from typing import Any

import pytest

from federation.cache import snapshot as snap
from tests.unit.scheduler.fleet import cluster, flavor, frq, job, placed, run, workload

DIVIDED: dict[str, Any] = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }
}
AGGREGATED = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Aggregated",
    }
}
DUPLICATED = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


@pytest.mark.parametrize(
    "policy", [DIVIDED, AGGREGATED, DUPLICATED], ids=["divided", "aggregated", "duplicated"]
)
def test_a_service_scaled_to_zero_goes_to_every_selected_cluster_with_no_replicas(
    policy: dict[str, Any],
) -> None:
    web = job(workload("web", kind="Deployment", replicas=0), placement=policy)

    result = run([cluster("a"), cluster("b")], [web])

    assert placed(result) == {"web": {"a": 0, "b": 0}}
    (binding,) = result.bindings
    assert binding.status.phase == "Scheduled"
    assert binding.spec.hourly_cost == 0
    (admission,) = result.admitted
    assert all(amount == 0 for amount in admission.charge.values())


def test_a_service_scaled_to_zero_needs_no_room_and_no_quota() -> None:
    """Full members and a spent quota: nothing to run, nothing to wait for."""
    full = [cluster("a", flavor(cpu="0", nodes=1))]
    web = job(workload("web", kind="Deployment", replicas=0), placement=DIVIDED)

    result = run(full, [web], quotas=[frq("team", cpu="0")])

    assert placed(result) == {"web": {"a": 0}}, result.reasons


def test_scaling_down_to_zero_and_back_keeps_the_members_it_ran_on() -> None:
    fleet = [cluster("a", flavor(cpu="2", nodes=1)), cluster("b", flavor(cpu="2", nodes=1))]
    four = job(workload("web", kind="Deployment", replicas=4), placement=DIVIDED)
    first = run(fleet, [four])
    assert placed(first) == {"web": {"a": 2, "b": 2}}
    zero = job(workload("web", kind="Deployment", replicas=0), placement=DIVIDED)

    paused = run(fleet, [zero], snapshot=snap.build(fleet, bindings=first.bindings))

    assert placed(paused) == {"web": {"a": 0, "b": 0}}
    again = run(fleet, [four], snapshot=snap.build(fleet, bindings=paused.bindings))
    assert placed(again) == {"web": {"a": 2, "b": 2}}
