"""Spread constraints hold after replicas are divided by free room, not only at selection.

Binpack scores the fullest clusters highest, so a region's best cluster may have a replica
or two of room; dividing by free room then gives it nothing and its region drops out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from federation.queue.pending import PendingJob
from federation.resources import ResourceList
from federation.scheduler import division, spread
from federation.scheduler.spread import Constraint, ScoredCluster
from policies.models.cluster import NodeFlavor
from tests.unit.scheduler.fleet import DYNAMIC_WEIGHT, cluster, flavor, job, placed, run, workload

THREE_REGIONS = {
    "replicaScheduling": DYNAMIC_WEIGHT,
    "spreadConstraints": [
        {"spreadByField": "cluster", "minGroups": 3, "maxGroups": 6},
        {"spreadByField": "region", "minGroups": 3, "maxGroups": 3},
    ],
}


def nearly_full(cpu: str) -> NodeFlavor:
    """One node with `cpu` free: the fullest, so binpack scores it highest."""
    room = ResourceList.from_wire({"cpu": cpu, "memory": "64Gi", "pods": "110"})
    return flavor(nodes=1).model_copy(update={"free": room, "largest_free": room})


def service(replicas: int) -> list[PendingJob]:
    web = workload("web", kind="Deployment", replicas=replicas, cpu="100m")
    return [job(web, placement=THREE_REGIONS)]


def regions(placement: dict[str, int]) -> set[str]:
    return {name.split("-")[0] for name in placement}


def test_full_high_scoring_clusters_do_not_take_regions_the_division_then_drops() -> None:
    fleet = [
        cluster("r1-busy", nearly_full("300m"), region="r1"),
        cluster("r2-busy", nearly_full("300m"), region="r2"),
        cluster("r3-busy", nearly_full("300m"), region="r3"),
        cluster("r3-empty", flavor(), region="r3"),
        cluster("r4-empty", flavor(), region="r4"),
        cluster("r5-empty", flavor(), region="r5"),
    ]
    result = run(fleet, service(6))
    web = placed(result)["web"]
    assert len(regions(web)) == 3, web
    assert len(web) >= 3 and all(n > 0 for n in web.values())
    assert sum(web.values()) == 6


def test_a_spread_the_division_cannot_meet_is_unschedulable_and_says_which() -> None:
    fleet = [
        cluster("r1-busy", nearly_full("100m"), region="r1"),
        cluster("r2-busy", nearly_full("100m"), region="r2"),
        cluster("r3-empty", flavor(), region="r3"),
    ]
    result = run(fleet, service(6))
    assert placed(result) == {}
    reason = result.reasons["team/Deployment.apps/web"]
    assert "spread by region needs at least 3 regions" in reason
    assert "dividing 6 replicas by free room places them in 1: r3" in reason
    assert "too full to take a share (r1-busy, r2-busy)" in reason


def _divide(
    clusters: list[ScoredCluster], previous: dict[str, int] | None, replicas: int
) -> Callable[[Sequence[str]], dict[str, int]]:
    room = {c.name: c.available for c in clusters}

    def divide(chosen: Sequence[str]) -> dict[str, int]:
        candidates = [division.Candidate(n, available=room[n]) for n in chosen]
        return division.divide("dynamic_weight", replicas, candidates, previous=previous)

    return divide


@pytest.mark.parametrize("replicas", [6, 4, 8], ids=["kept", "scaled down", "scaled up"])
def test_a_placed_workload_is_divided_steady_and_not_chosen_again(replicas: int) -> None:
    """Steady division works from the replicas a workload holds: a re-choice cannot move
    them, and failing would only turn a running workload's new size into a Pending one."""
    clusters = [
        ScoredCluster("r1-a", 90, 1, region="r1"),
        ScoredCluster("r2-a", 90, 1, region="r2"),
        ScoredCluster("r3-a", 10, 100, region="r3"),
    ]
    previous = {"r3-a": 6}
    got = spread.select_divided(
        clusters,
        [Constraint("region", min_groups=3, max_groups=3)],
        strategy="dynamic_weight",
        replicas=replicas,
        divide=_divide(clusters, previous, replicas),
        previous=previous,
    )
    assert got == {"r3-a": replicas}


def test_a_minimum_above_the_replicas_counts_as_the_replicas() -> None:
    clusters = [ScoredCluster(f"r{i}-a", 50, 10, region=f"r{i}") for i in range(1, 5)]
    got = spread.select_divided(
        clusters,
        [Constraint("cluster", min_groups=4, max_groups=4)],
        strategy="dynamic_weight",
        replicas=2,
        divide=lambda chosen: division.divide(
            "dynamic_weight", 2, [division.Candidate(n, available=10) for n in chosen]
        ),
    )
    assert sum(got.values()) == 2 and len(got) == 2
