"""Bin-pack or spread: prefer fuller clusters (keep big holes for big jobs) or emptier ones.

Fed by the cycle state's free capacity and each cluster's allocatable totals; feeds the
runner. Settings decide the direction (`SchedulerSettings.binpack`). The value is the
cluster's utilisation of the resources the job asks for (largest of them), in percent.
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from federation.settings import SchedulerSettings

__all__ = ["Binpack"]


class Binpack:
    name = "binpack"
    scale = "absolute"

    def __init__(self, settings: SchedulerSettings) -> None:
        self.pack = settings.binpack

    def raw(self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState) -> float:
        return float(self.raw_all(job, state, np.array([cluster.index]))[0])

    def raw_all(
        self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
    ) -> snap.FloatArray:
        used = job.vector > 0
        key = ("binpack", tuple(used.tolist()))
        cached = state.dyn.get(key)
        if cached is None:
            versions = np.full(state.snapshot.size, -1, dtype=np.int64)
            percent = np.zeros(state.snapshot.size, dtype=np.float64)
            state.dyn[key] = (versions, percent)
        else:
            versions, percent = cached  # type: ignore[assignment]
        stale = np.nonzero(versions != state.version)[0]
        if stale.size:
            total = state.snapshot.allocatable_total[stale][:, used]
            free = state.free_total[stale][:, used]
            with np.errstate(divide="ignore", invalid="ignore"):
                util = np.where(total > 0, 1 - free / total, 0.0)
            percent[stale] = np.clip(util.max(axis=1), 0, 1) * 100
            versions[stale] = state.version[stale]
        values = percent[rows]
        result: snap.FloatArray = values if self.pack else 100 - values
        return result
