"""Work that asks for spot capacity is placed only where a cluster offers spot.

Planned end to end with the offline planner, so the filter is seen in the scheduler's
registry and its verdict, not only on its own."""

from __future__ import annotations

from pathlib import Path

from federation.scheduler import plan
from federation.settings import SchedulerSettings

PROFILE = """
clusters:
  - name: a-on-demand
    region: us-east
    nodePools: [{name: m, count: 4, arch: amd64, cpu: "32", memory: 128Gi}]
    prices:
      onDemand: {cpuCoreHour: 0.01, memoryGiBHour: 0.001}
  - name: b-spot
    region: us-east
    nodePools: [{name: m, count: 1, arch: amd64, cpu: "32", memory: 128Gi}]
    prices:
      onDemand: {cpuCoreHour: 0.05, memoryGiBHour: 0.005}
      spot: {cpuCoreHour: 0.02, memoryGiBHour: 0.002}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {{name: batch, namespace: ml}}
spec:
  parallelism: {replicas}
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          resources: {{requests: {{cpu: "8", memory: 16Gi}}}}
---
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: batch, namespace: ml}}
spec:
  resourceSelectors: [{{apiVersion: batch/v1, kind: Job, name: batch}}]
  placement:
    replicaScheduling: {{replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}}
  fedctl: {{capacityType: {capacity}}}
"""


def planned(tmp_path: Path, *, capacity: str, replicas: int) -> plan.Planned:
    doc = tmp_path / "job.yaml"
    doc.write_text(JOB.format(capacity=capacity, replicas=replicas), encoding="utf-8")
    profile = tmp_path / "fleet.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    (result,) = plan.plan_files([doc], profile=profile, settings=SchedulerSettings())
    return result


def test_spot_work_goes_to_the_cluster_offering_spot(tmp_path: Path) -> None:
    result = planned(tmp_path, capacity="spot", replicas=2)
    assert result.plan.placement == {"b-spot": 2}
    verdicts = {v.cluster: v for v in result.plan.verdicts}
    assert verdicts["a-on-demand"].plugin == "spot"
    assert verdicts["a-on-demand"].reasons == [
        "capacityType is spot and this cluster offers no spot"
    ]


def test_spot_work_too_big_for_the_spot_offer_waits_rather_than_run_on_demand(
    tmp_path: Path,
) -> None:
    """Eight 8-CPU pods do not fit b-spot's one node; a-on-demand has room but no spot."""
    result = planned(tmp_path, capacity="spot", replicas=8)
    assert not result.plan.placement
    assert "capacityType is spot" in plan.render(result)


def test_any_capacity_still_takes_the_on_demand_cluster(tmp_path: Path) -> None:
    result = planned(tmp_path, capacity="any", replicas=8)
    assert sum(result.plan.placement.values()) == 8
    assert "a-on-demand" in result.plan.placement
