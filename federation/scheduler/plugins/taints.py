"""Taint filter: a cluster's NoSchedule and NoExecute taints keep out work that does not
tolerate them.

Fed by the cluster's taints (user's spec and those failover applied) and the policy's
`clusterTolerations`; feeds the runner. As in Karmada's TaintToleration plugin, a cluster
that already hosts the workload keeps it under any taint: moving it off a NoExecute one is
failover's job, which honours the toleration's `tolerationSeconds` and the graceful purge
and then bars the cluster with an eviction task. Refused here, a workload placed again for
any other reason (a replica change, another member joining) left at once, its copy deleted
before its toleration ran out. PreferNoSchedule only lowers the affinity score.

A cluster the workload holds an eviction task for is refused by the eviction filter
(`eviction`), which runs first.
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw

__all__ = ["Taints"]


class Taints:
    name = "taints"
    static = True

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        hosting = cluster.name in job.copies
        for taint in cluster.taints:
            if hosting or not taint.refuses(job.tolerations):
                continue
            shown = f"{taint.key}={taint.value}" if taint.value else taint.key
            return fw.Verdict.unschedulable(f"untolerated taint {shown}:{taint.effect}")
        return fw.Verdict.success()

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        if not state.snapshot.tainted:
            return np.ones(len(rows), dtype=bool)
        clusters = state.snapshot.clusters
        return np.array(
            [self.filter(job, clusters[r], state).ok for r in rows.tolist()], dtype=bool
        )
