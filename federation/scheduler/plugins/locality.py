"""Locality: stay where the workload already runs (Karmada's ClusterLocality).

Fed by the previous Binding's placement; feeds the runner. 100 for a cluster already
hosting replicas, 0 otherwise, so a reschedule after a small change moves nothing that
need not move. A score alone can be outweighed (cost's weight is higher), so a workload
that goes whole to one cluster is also kept on the one it runs on by the placer itself
while that one passes every filter (`placement._kept_host`).
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw

__all__ = ["Locality"]


class Locality:
    name = "locality"
    scale = "absolute"

    def __init__(self, settings: object = None) -> None:
        del settings

    def raw(self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState) -> float:
        return 100.0 if job.copies.get(cluster.name, 0) > 0 else 0.0

    def raw_all(
        self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
    ) -> snap.FloatArray:
        if not job.copies:
            return np.zeros(len(rows))
        index = state.snapshot.index
        hosts = {index[n] for n, r in job.copies.items() if r > 0 and n in index}
        return np.array([100.0 if r in hosts else 0.0 for r in rows.tolist()])
