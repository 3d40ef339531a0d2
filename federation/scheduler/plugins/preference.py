"""Affinity preference: the job's preferred chips first, and clusters it does not have to
tolerate a PreferNoSchedule taint on.

Fed by the chip preference order (`fedctl.io/chips`, `spec.fedctl.chips`), the flavor the
job would use on each cluster and the cluster taints; feeds the runner. The most preferred
chip scores 100, each step down the list less; an untolerated PreferNoSchedule halves it.
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from federation.scheduler.plugins import capacity

__all__ = ["Preference"]


class Preference:
    name = "affinity"
    scale = "absolute"

    def __init__(self, settings: object = None) -> None:
        del settings

    def raw(self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState) -> float:
        return float(self.raw_all(job, state, np.array([cluster.index]))[0])

    def raw_all(
        self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
    ) -> snap.FloatArray:
        s = state.snapshot
        if job.chips and job.devices:
            chip_index = capacity.cluster_chip(job, state, rows)
            cached = state.memo.get(("chip-rank", job.chips))
            if cached is None:
                cached = np.array([fw.chip_rank(job, c) for c in s.chips] + [len(job.chips)] * 2)
                state.memo[("chip-rank", job.chips)] = cached
            rank_of: snap.IntArray = cached  # type: ignore[assignment]
            ranks = rank_of[chip_index].astype(np.float64)
            score: snap.FloatArray = 100.0 * (1 - ranks / len(job.chips))
        else:
            score = np.full(len(rows), 100.0)
        if not s.soft_tainted:
            return score
        for i, row in enumerate(rows.tolist()):
            for taint in s.clusters[row].taints:
                if taint.effect == "PreferNoSchedule" and not taint.tolerated_by(job.tolerations):
                    score[i] /= 2
                    break
        return score
