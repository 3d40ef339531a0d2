"""Cost: the score that prefers the cheapest cluster, and the filter for `maxHourlyCost`.

Fed by each cluster's prices (on-demand or spot, as the policy's `capacityType` says) and
the job's requests, replica count and expected duration; feeds the runner and the Binding's
cost estimate. The job's expected cost on a cluster = requests x replicas x duration x
price of the flavor it would use there (SkyPilot's $/h x hours x count); the cheapest
candidate scores 100, the dearest 0. A cluster with no price for the chip scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from federation.scheduler.plugins import capacity

__all__ = ["Cost", "MaxCost", "copies_problem", "hourly_cost"]


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


_ROUNDING = 1e-9
"""Relative slack for sums of float prices: four copies at 0.055/h are within a 0.22 cap."""


def copies_problem(
    job: fw.JobRequest, state: fw.CycleState, placement: Mapping[str, int]
) -> str | None:
    """Why the copies of a `Duplicated` placement cost more per hour together than its cap
    allows, or None.

    `maxHourlyCost` is what the placement may cost, all replicas together; under
    Duplicated every cluster runs all of them and each copy is paid for, so the cap holds
    their sum. The filter (`MaxCost`) sees one cluster at a time, which is each copy's
    cost; four copies at 0.1/h each passed a 0.2 cap.
    """
    cap = job.max_hourly_cost
    if cap is None or job.strategy != "duplicated" or len(placement) < 2:
        return None
    index = state.snapshot.index
    rows = np.array([index[name] for name in placement], dtype=np.int64)
    per_pod = hourly_cost(job, state, rows)
    replicas = np.array(list(placement.values()), dtype=np.float64)
    total = math.fsum((np.nan_to_num(per_pod, nan=0.0) * replicas).tolist())
    if total <= cap * (1 + _ROUNDING):
        return None
    copies = f"its {len(placement)} copies (Duplicated: each cluster runs all {job.replicas}"
    if job.cost_cap:
        return f"{copies} replica(s)) cost {total:.4f}/h together, more than {job.cost_cap}"
    return (
        f"{copies} replica(s)) cost {total:.4f}/h together, above maxHourlyCost {cap:.4f}:"
        " select fewer clusters or raise the cap"
    )


class MaxCost:
    """Filters clusters where the whole job would cost more per hour than the policy allows
    (under `Duplicated`, one copy: `copies_problem` holds their sum to the cap)."""

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
            why = _unpriced(cluster)
            if job.cost_cap:
                return fw.Verdict.unschedulable(f"{why}: work under a budget")
            return fw.Verdict.unschedulable(f"{why}; maxHourlyCost is set")
        if total > job.max_hourly_cost:
            if job.cost_cap:
                return fw.Verdict.unschedulable(f"costs {total:.4f}/h, more than {job.cost_cap}")
            # Four places, as every other cost: at two, 0.0488 above a cap of 0.048 read
            # "0.05/h, above maxHourlyCost 0.05" and a cap of 0.045 read 0.04.
            what = "its copy costs" if job.strategy == "duplicated" else "costs"
            return fw.Verdict.unschedulable(
                f"{what} {total:.4f}/h, above maxHourlyCost {job.max_hourly_cost:.4f}"
            )
        return fw.Verdict.success()

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        if job.max_hourly_cost is None:
            return np.ones(len(rows), dtype=bool)
        total = hourly_cost(job, state, rows) * job.replicas
        return np.asarray(np.nan_to_num(total, nan=np.inf) <= job.max_hourly_cost)


def _unpriced(cluster: snap.ClusterInfo) -> str:
    """Why a cluster's cost is unknown: a currency with no rate (it read "no price for the
    chip here" though every chip had one), no prices at all, or none for the chip."""
    if cluster.price_note:
        return cluster.price_note
    if cluster.prices is None:
        return "this cluster lists no prices"
    return "no price for the chip here"
