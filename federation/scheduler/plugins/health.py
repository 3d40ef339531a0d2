"""Health filter: only clusters the monitor last saw Ready take new work.

Fed by the snapshot's joined ClusterStatus (the monitor's Ready condition); feeds the
runner. Failover decides what leaves an unhealthy cluster; this only stops new placements.
A cluster that already hosts the workload passes: otherwise any re-schedule while a member
is down (a Duplicated policy's fleet changing, a replica edit) would drop it at once,
bypassing the eviction grace and the policy's `clusterTolerations` (as in Karmada, whose
scheduler judges a hosting cluster by its NoExecute taints only).
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw

__all__ = ["Health"]


class Health:
    name = "health"
    static = True

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        if cluster.ready or cluster.name in job.copies:
            return fw.Verdict.success()
        return fw.Verdict.unschedulable("cluster is not Ready")

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        ready = state.snapshot.ready[rows]
        if not job.copies:
            return ready
        index = state.snapshot.index
        hosting = np.isin(rows, [index[name] for name in job.copies if name in index])
        return ready | hosting
