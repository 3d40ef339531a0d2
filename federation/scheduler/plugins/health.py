"""Health filter: only clusters the monitor last saw Ready take new work.

Fed by the snapshot's joined ClusterStatus (the monitor's Ready condition); feeds the
runner. Failover decides what leaves an unhealthy cluster; this only stops new placements.
"""

from __future__ import annotations

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
        if cluster.ready:
            return fw.Verdict.success()
        return fw.Verdict.unschedulable("cluster is not Ready")

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        return state.snapshot.ready[rows]
