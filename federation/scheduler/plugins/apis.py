"""API enablement filter: the member must serve the workload's kind.

Fed by the API list the monitor reports per cluster and the workload's apiVersion/kind;
feeds the runner. Like Karmada's APIEnablement plugin, a cluster already hosting the
workload always passes (a partial API list must not delete running work), and a cluster
that reported no API list at all is given the benefit of the doubt (the monitor has not
discovered it yet; the propagator fails loudly if the kind is really missing).
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw

__all__ = ["ApiEnablement"]


class ApiEnablement:
    name = "api-enablement"
    static = True

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        if not cluster.apis or job.api in cluster.apis or cluster.name in job.copies:
            return fw.Verdict.success()
        version, kind = job.api
        return fw.Verdict.unschedulable(f"API {version} {kind} is not served")

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        key = ("api", job.api)
        served = state.memo.get(key)
        if served is None:
            served = np.array(
                [not c.apis or job.api in c.apis for c in state.snapshot.clusters], dtype=bool
            )
            state.memo[key] = served
        result: snap.BoolArray = served[rows]  # type: ignore[index]
        if job.copies:
            index = state.snapshot.index
            hosts = [
                i
                for i, r in enumerate(rows.tolist())
                if state.snapshot.clusters[r].name in job.copies
            ]
            result = result.copy()
            result[hosts] = True
            del index
        return result
