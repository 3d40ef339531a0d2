"""Eviction filter: a cluster the workload holds an eviction task for is refused.

Fed by the Binding's eviction tasks (`JobRequest.evicting`), whatever the cluster's taints;
feeds the runner. Why: the evicted copy is still there (or failover still evicts the
workload from it), and placing the workload back would run it twice on one member.
Failover ends the task once that copy is gone (`federation.failover.graceful`). A filter of
its own, as Karmada's ClusterEviction plugin, so a pending reason says what the job waits
for ("1 waiting for its evicted copy to be removed"), not a taint it does not have. A
batch job preempted or reclaimed from a healthy member is barred from every cluster until
that copy is gone (`cycle._barred`): a gang must not run on two members at once.
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw

__all__ = ["Eviction"]


class Eviction:
    name = "eviction"
    static = True

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        if cluster.name in job.evicting:
            if len(job.evicting) > 1 and job.job.workload.is_batch:  # a gang waits everywhere
                return fw.Verdict.unschedulable("waiting for its evicted copy to be removed")
            return fw.Verdict.unschedulable(
                f"waiting for its evicted copy to be removed from {cluster.name}"
            )
        return fw.Verdict.success()

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        if not job.evicting:
            return np.ones(len(rows), dtype=bool)
        clusters = state.snapshot.clusters
        return np.array([clusters[r].name not in job.evicting for r in rows.tolist()], dtype=bool)
