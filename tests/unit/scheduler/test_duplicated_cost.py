"""`maxHourlyCost` caps all replicas together, and under `Duplicated` every cluster runs
all of them and each copy is paid for: the cap holds the copies' sum. It was checked one
cluster at a time, so four copies costing 0.42/h together were placed under a 0.2 cap
without a word. A duplicated workload whose copies cost more than the cap together now
waits (or tries its next affinity group), and the reason gives the sum and the cap."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.scheduler import framework as fw
from federation.scheduler import plan
from federation.scheduler.plugins import cost
from federation.settings import SchedulerSettings
from tests.unit.scheduler.fleet import cluster, flavor, job, placed, run, workload

DUPLICATED: dict[str, Any] = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
# One 1-CPU 1-GiB pod: 0.05 + 0.005 = 0.055/h a copy on each, 0.22/h for the four copies.
FLEET = [cluster(name, flavor()) for name in ("a", "b", "c", "d")]


def _run(cap: str, placement: dict[str, Any] = DUPLICATED) -> Any:
    w = workload("cache", kind="Deployment")
    return run(FLEET, [job(w, placement=placement, fedctl={"maxHourlyCost": cap})])


def test_copies_whose_sum_is_above_the_cap_are_not_placed() -> None:
    result = _run("0.2")
    assert placed(result) == {}
    assert result.reasons["team/Deployment.apps/cache"] == (
        "its 4 copies (Duplicated: each cluster runs all 1 replica(s)) cost 0.2200/h together,"
        " above maxHourlyCost 0.2000: select fewer clusters or raise the cap"
    )


def test_copies_within_the_cap_together_are_placed_everywhere() -> None:
    assert placed(_run("0.22")) == {"cache": {"a": 1, "b": 1, "c": 1, "d": 1}}


def test_a_divided_placement_is_held_to_the_cap_as_before() -> None:
    divided = {"replicaScheduling": {"replicaSchedulingType": "Divided"}}
    assert placed(_run("0.06", divided)) == {"cache": {"a": 1}}


def test_the_next_affinity_group_is_tried_when_the_copies_cost_too_much() -> None:
    groups = {
        **DUPLICATED,
        "clusterAffinities": [
            {"affinityName": "all", "clusterNames": ["a", "b", "c", "d"]},
            {"affinityName": "two", "clusterNames": ["a", "b"]},
        ],
    }
    assert placed(_run("0.2", groups)) == {"cache": {"a": 1, "b": 1}}


PROFILE = """
clusters:
  - name: %s
    region: r
    labels: {tier: general}
    nodePools: [{name: cpu, count: 2, arch: amd64, cpu: "16", memory: 64Gi}]
    prices: {onDemand: {cpuCoreHour: 0.05, memoryGiBHour: 0.005}}
"""

DOCS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: cache, namespace: hx}
spec:
  replicas: 2
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {name: cache, namespace: hx}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: cache}]
  placement:
    clusterAffinity: {labelSelector: {matchLabels: {tier: general}}}
    replicaScheduling: {replicaSchedulingType: Duplicated}
  fedctl: {maxHourlyCost: "0.2"}
"""


def test_the_plan_shows_the_sum_against_the_cap(tmp_path: Path) -> None:
    profile = tmp_path / "fleet.yaml"
    profile.write_text(
        "clusters:\n" + "".join((PROFILE % n).split("clusters:\n", 1)[1] for n in "ab"),
        encoding="utf-8",
    )
    path = tmp_path / "in.yaml"
    path.write_text(DOCS, encoding="utf-8")
    (planned,) = plan.plan_files([path], profile=profile)
    assert planned.plan.placement == {}
    assert planned.plan.reason == (
        "its 2 copies (Duplicated: each cluster runs all 2 replica(s)) cost 0.2200/h together,"
        " above maxHourlyCost 0.2000: select fewer clusters or raise the cap"
    )
    # each cluster alone is within the cap: its verdict is ok, with its score
    assert [(v.cluster, v.verdict) for v in planned.plan.verdicts] == [("a", "ok"), ("b", "ok")]
    assert planned.plan.pod_costs == {"a": Decimal("0.055"), "b": Decimal("0.055")}


def test_a_cluster_whose_one_copy_is_above_the_cap_says_it_is_a_copy() -> None:
    dear = cluster("dear", flavor(), cpu_price="1.0")
    s = snap.build([dear])
    state = fw.CycleState(s, Usage(), SchedulerSettings())
    w = workload("cache", kind="Deployment")
    request = fw.request_for(
        job(w, placement=DUPLICATED, fedctl={"maxHourlyCost": "0.2"}),
        settings=SchedulerSettings(),
    )
    assert cost.MaxCost().filter(request, s.clusters[0], state).reasons == (
        "its copy costs 1.0050/h, above maxHourlyCost 0.2000",
    )
