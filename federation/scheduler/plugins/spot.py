"""Spot filter: work that asks for spot capacity only goes where spot is offered.

Fed by each cluster's prices (their `spot` table, "absent when not offered") and the
policy's `capacityType`; feeds the runner. A job with `capacityType: spot` is priced at
spot prices only; without this filter a cluster that offers no spot passed as merely
"unpriced", was chosen, and ran the job on capacity the policy did not ask for. `any`
accepts either capacity and `on-demand` (the default) is offered everywhere, so only
`spot` is filtered. A cluster whose prices cannot be used at all (a currency with no
exchange rate) cannot be shown to offer spot either, and is filtered with that reason.
"""

from __future__ import annotations

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw

__all__ = ["SpotOffer"]

_SPOT = 1
"""The spot column of the snapshot's price arrays (NaN where not offered)."""


class SpotOffer:
    name = "spot"
    static = True

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        if job.capacity_type != "spot":
            return fw.Verdict.success()
        if cluster.prices is not None and cluster.prices.spot is not None:
            return fw.Verdict.success()
        if cluster.price_note:
            return fw.Verdict.unschedulable(
                f"capacityType is spot and this cluster's prices are not usable: "
                f"{cluster.price_note}"
            )
        return fw.Verdict.unschedulable("capacityType is spot and this cluster offers no spot")

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        if job.capacity_type != "spot":
            return np.ones(len(rows), dtype=bool)
        return np.asarray(~np.isnan(state.snapshot.price_cpu[rows, _SPOT]))
