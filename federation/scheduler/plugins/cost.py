"""Cost: the score that prefers the cheapest cluster, and the filter for `maxHourlyCost`.

Fed by each cluster's prices (on-demand or spot, as the policy's `capacityType` says) and
the job's requests, replica count and expected duration; feeds the runner and the Binding's
cost estimate. The job's expected cost on a cluster = requests x replicas x duration x
price of the flavor it would use there (SkyPilot's $/h x hours x count); the cheapest
candidate scores 100, the dearest 0. A cluster with no price for the chip scores 0.
"""

from __future__ import annotations

import math

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from federation.scheduler.plugins import capacity

__all__ = ["Cost", "MaxCost", "hourly_cost"]


def hourly_cost(job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.FloatArray:
    """Per row: what one pod costs per hour on the flavor the job would use there."""
    return capacity.cluster_pod_cost(job, state, rows)


class Cost:
    name = "cost"
    scale = "min_best"

    def __init__(self, settings: object = None) -> None:
        del settings

    def raw(self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState) -> float:
        value = float(hourly_cost(job, state, np.array([cluster.index]))[0])
        return value * job.replicas * job.duration_hours

    def raw_all(
        self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
    ) -> snap.FloatArray:
        return hourly_cost(job, state, rows) * (job.replicas * job.duration_hours)


class MaxCost:
    """Filters clusters where the whole job would cost more per hour than the policy allows."""

    name = "max-cost"
    static = False

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        if job.max_hourly_cost is None:
            return fw.Verdict.success()
        per_pod = float(hourly_cost(job, state, np.array([cluster.index]))[0])
        total = per_pod * job.replicas
        if math.isnan(total):
            if job.cost_cap:
                return fw.Verdict.unschedulable("no price for the chip here: work under a budget")
            return fw.Verdict.unschedulable("no price for the chip here; maxHourlyCost is set")
        if total > job.max_hourly_cost:
            if job.cost_cap:
                return fw.Verdict.unschedulable(f"costs {total:.4f}/h, more than {job.cost_cap}")
            return fw.Verdict.unschedulable(
                f"costs {total:.2f}/h, above maxHourlyCost {job.max_hourly_cost:.2f}"
            )
        return fw.Verdict.success()

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        if job.max_hourly_cost is None:
            return np.ones(len(rows), dtype=bool)
        total = hourly_cost(job, state, rows) * job.replicas
        return np.asarray(np.nan_to_num(total, nan=np.inf) <= job.max_hourly_cost)
