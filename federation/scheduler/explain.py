"""Explanations: every cluster's verdict for a job - which filter said no and why, or the
score breakdown - and the exact hourly cost of a placement.

Fed by the placer (its plugins and a job's outcome) and the cycle state; feeds Bindings
(a short explanation: the chosen clusters, the best runners-up and counts of filtered
clusters, so a Binding stays small in a 1,000-cluster fleet; for a Pending one, the
clusters that came nearest, `pending`) and `fedctl plan` (every cluster, in full).
Costs here use the exact Decimal prices of the cluster's PriceTable, not the float
arrays the hot path ranks with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from federation.scheduler import incremental
from federation.scheduler import placement as pl
from federation.scheduler.plugins import quota
from policies.models.binding import ClusterVerdict
from policies.models.cluster import PriceTable

__all__ = ["PENDING_LISTED", "Plan", "hourly_cost", "money", "pending", "plan", "summary"]

_RUNNERS_UP = 3


def hourly_cost(
    job: fw.JobRequest, cluster: snap.ClusterInfo, chip: str | None, replicas: int
) -> Decimal | None:
    """Exact cost per hour of `replicas` pods of `job` on `cluster` using `chip`.

    A job whose pod templates differ (`pod_sets`) costs what each template's pods cost
    together, in proportion when the cluster runs only some of its pods."""
    prices = cluster.prices
    if prices is None:
        return None
    tables: dict[str, list[PriceTable | None]] = {
        "on-demand": [prices.on_demand],
        "spot": [prices.spot],
        "any": [prices.on_demand, prices.spot],
    }
    costs = []
    device = next(iter(sorted(job.device_names)), None)
    for table in tables[job.capacity_type]:
        if table is None:
            continue
        if job.pod_sets:
            whole: Decimal | None = Decimal(0)
            for share in job.pod_sets:
                part = table.hourly_cost(
                    share.requests, accelerator_resource=device, accelerator_model=chip
                )
                whole = None if part is None or whole is None else whole + part * share.count
            if whole is not None:
                costs.append(whole if replicas == job.replicas else whole * replicas / job.replicas)
            continue
        cost = table.hourly_cost(job.pod, accelerator_resource=device, accelerator_model=chip)
        if cost is not None:
            costs.append(cost * replicas)
    return min(costs) if costs else None


AGGREGATED = (
    "Aggregated: as few clusters as hold the replicas, those with the most free replicas"
    " first (those it runs on before them); scores and cost do not order them"
)
DYNAMIC = (
    "dynamic weights: replicas shared by each cluster's free replicas; scores and cost do"
    " not weigh them"
)


def chosen_by(job: fw.JobRequest) -> str | None:
    """Why the chosen clusters were chosen, when the scores did not choose them (None:
    they did). Why: Aggregated and dynamic-weight division follow free replicas, as
    Karmada's do, so a dearer cluster with more room is chosen over a cheaper, higher-scored
    one, and the Binding must say so or it reads as the scores' mistake."""
    if job.single_cluster:
        return None
    return {"aggregated": AGGREGATED, "dynamic_weight": DYNAMIC}.get(job.strategy)


def _scored_verdicts(
    state: fw.CycleState, scored: pl.Scored, chosen: set[str], *, why: str | None = None
) -> list[ClusterVerdict]:
    out = []
    for i, row in enumerate(scored.rows.tolist()):
        cluster = state.snapshot.clusters[row]
        name = cluster.name
        reasons = [cluster.price_note] if cluster.price_note else []
        if why is not None and name in chosen:
            reasons.append(why)
        out.append(
            ClusterVerdict.model_construct(
                cluster=name,
                verdict="ok",
                plugin=None,
                reasons=reasons,
                score=int(scored.total[i]),
                scores={k: int(v[i]) for k, v in scored.parts.items()},
                selected=name in chosen,
            )
        )
    return out


def summary(
    placer: pl.Placer, job: fw.JobRequest, state: fw.CycleState, placed: pl.Placed
) -> tuple[list[ClusterVerdict], dict[str, int]]:
    """The chosen clusters and the best runners-up, plus filtered counts by plugin."""
    if placed.explained is not None:
        return placed.explained
    scored = placed.scored
    assert scored is not None  # only the incremental path leaves it out, with `explained`
    index = state.snapshot.index
    targets = np.array([index[n] for n in placed.placement], dtype=np.int64)
    picked = np.nonzero(np.isin(scored.rows, targets))[0].tolist()
    count = min(len(picked) + _RUNNERS_UP, len(scored.total))
    order = incremental.top_order(scored.rank, count)  # ties: name order, deterministic
    runners = [int(i) for i in order if int(i) not in picked][:_RUNNERS_UP]
    keep = np.array(picked + runners, dtype=np.int64)
    top = pl.Scored(
        scored.rows[keep],
        scored.total[keep],
        {k: v[keep] for k, v in scored.parts.items()},
        scored.available[keep],
        scored.rank[keep],
    )
    verdicts = _scored_verdicts(state, top, set(placed.placement), why=chosen_by(job))
    chosen = [v for v in verdicts if v.selected]
    others = [v for v in verdicts if not v.selected]
    _, counts = placer.static_rows(job, state)
    counts = dict(counts)
    passed_static = state.snapshot.size - sum(counts.values())
    dynamic = passed_static - len(scored.rows)
    if dynamic > 0:
        counts["capacity/cost/quota"] = dynamic
    return chosen + others[:_RUNNERS_UP], counts


def _filtered(cluster: str, plugin: str, verdict: fw.Verdict) -> ClusterVerdict:
    """A cluster's verdict from the filter that turned it down."""
    return ClusterVerdict(
        cluster=cluster,
        verdict="error" if verdict.code == "error" else "unschedulable",
        plugin=plugin,
        reasons=list(verdict.reasons),
    )


PENDING_LISTED = 20
"""At most this many clusters' verdicts in a Pending Binding (`pending`); the Binding
model's description of `explanation` says the same figure."""


def pending(
    placer: pl.Placer, job: fw.JobRequest, state: fw.CycleState
) -> tuple[list[ClusterVerdict], dict[str, int]]:
    """Why a job was placed nowhere, for its Pending Binding: how many clusters each
    filter turned down (static and dynamic, by plugin), and the verdicts of up to
    `PENDING_LISTED` clusters, those that came nearest first: each that passed every
    filter (scored; the job waits on its queue, quota or division), then each turned down
    by the last filter that turned any down, and so back to the first.

    Why: a Pending workload is when its owner asks which member failed which filter
    ("which two lack the API?"), and the reason carries only the counts. Why nearest
    first and bounded: in a large fleet most clusters fall to affinity, which the policy
    says already, and a Binding stays small. Built only for a pending decision, never for
    an admitted one: the filters run again here over the whole fleet.
    """
    rows = np.arange(state.snapshot.size, dtype=np.int64)
    counts: dict[str, int] = {}
    turned_down: list[tuple[fw.FilterPlugin, list[int]]] = []
    for plugin in [*placer.static, *placer.dynamic]:
        if rows.size == 0:
            break
        keep = placer.keep(plugin, job, state, rows)
        dropped = rows[~keep]
        if dropped.size:
            counts[plugin.name] = int(dropped.size)
            turned_down.append((plugin, dropped.tolist()))
            rows = rows[keep]
    verdicts: list[ClusterVerdict] = []
    if rows.size:
        passed = _scored_verdicts(state, placer.score(job, state, rows), set())
        verdicts = sorted(passed, key=lambda v: (-(v.score or 0), v.cluster))[:PENDING_LISTED]
    clusters = state.snapshot.clusters
    for plugin, rejected in reversed(turned_down):
        for row in rejected[: PENDING_LISTED - len(verdicts)]:
            said = plugin.filter(job, clusters[row], state)
            verdicts.append(_filtered(clusters[row].name, plugin.name, said))
    return verdicts, counts


@dataclass
class Plan:
    """A what-if placement: every cluster's verdict, then the division, chips and cost."""

    workload: str
    verdicts: list[ClusterVerdict] = field(default_factory=list)
    placement: dict[str, int] = field(default_factory=dict)
    chips: dict[str, str | None] = field(default_factory=dict)
    costs: dict[str, Decimal | None] = field(default_factory=dict)
    reason: str = ""
    preempts: list[str] = field(default_factory=list)
    """Admitted work the placement would evict first (preemption or reclaim), with why."""
    currency: str = "USD"
    """What the costs are in: the federation's currency."""
    pod_costs: dict[str, Decimal | None] = field(default_factory=dict)
    """What one pod costs an hour on each cluster that passed the filters, on the chip it
    would use there (None: unpriced): the figures the cost score ranks, so a plan answers
    "how much dearer is that region" and not only which cluster won."""

    expected_hours: float | None = None
    """How long a batch job is expected to run (`expectedDuration`, else the default): the
    cost score's duration. Ranking clusters by hourly cost or by cost over a duration comes
    to the same, so the duration shows here, as what the whole run is expected to cost."""

    @property
    def expected_cost(self) -> Decimal | None:
        """What the whole run is expected to cost: the hourly total over `expected_hours`."""
        total = self.total_cost
        if total is None or self.expected_hours is None:
            return None
        return total * Decimal(str(self.expected_hours))

    @property
    def total_cost(self) -> Decimal | None:
        values = list(self.costs.values())
        if not values or any(v is None for v in values):
            return None
        return sum((v for v in values if v is not None), Decimal(0))

    def to_json(self, policy: str | None = None) -> dict[str, Any]:
        """The one wire form of a plan: the plan API, the dashboard and both modes of
        `fedctl plan -o json` give it, so a script reads an offline and a live plan alike."""
        total = self.total_cost
        return {
            "workload": self.workload,
            "policy": policy,
            "scheduled": bool(self.placement),
            "placement": self.placement,
            "chips": self.chips,
            "costs": {k: (str(v) if v is not None else None) for k, v in self.costs.items()},
            "totalCost": str(total) if total is not None else None,
            "expectedHours": self.expected_hours,
            "expectedCost": money(self.expected_cost),
            "currency": self.currency,
            "podCosts": {k: (str(v) if v is not None else None) for k, v in self.pod_costs.items()},
            "reason": self.reason,
            "preempts": self.preempts,
            "verdicts": [
                v.model_dump(mode="json", by_alias=True, exclude_none=True) for v in self.verdicts
            ],
        }


def plan(
    placer: pl.Placer, job: fw.JobRequest, state: fw.CycleState, outcome: pl.Placed | pl.Failed
) -> Plan:
    """Every cluster's verdict (each filter asked in order) and the outcome."""
    result = Plan(
        workload=str(job.job.ref),
        currency=state.snapshot.currency,
        expected_hours=job.duration_hours if job.job.workload.is_batch else None,
    )
    passing: list[int] = []
    request = outcome.request
    for cluster in state.snapshot.clusters:
        for plugin in placer.filters:
            verdict = plugin.filter(request, cluster, state)
            if not verdict.ok:
                result.verdicts.append(_filtered(cluster.name, plugin.name, verdict))
                break
        else:
            passing.append(cluster.index)
    chosen: set[str] = set(outcome.placement) if isinstance(outcome, pl.Placed) else set()
    if passing:
        rows = np.array(passing, dtype=np.int64)
        scored = placer.score(request, state, rows)
        result.verdicts.extend(_scored_verdicts(state, scored, chosen, why=chosen_by(request)))
        for row, chip in zip(passing, quota.chip_on(request, state, rows), strict=True):
            cluster = state.snapshot.clusters[row]
            result.pod_costs[cluster.name] = hourly_cost(request, cluster, chip, 1)
    result.verdicts.sort(key=lambda v: v.cluster)
    if isinstance(outcome, pl.Failed):
        result.reason = outcome.reason
        return result
    result.placement = dict(sorted(outcome.placement.items()))
    rows = np.array([state.snapshot.index[n] for n in result.placement], dtype=np.int64)
    chips = quota.chip_on(request, state, rows)
    for (name, replicas), chip in zip(result.placement.items(), chips, strict=True):
        cluster = state.snapshot.cluster(name)
        hint = (outcome.flavors or {}).get(name)
        result.chips[name] = chip or (
            None if request.devices else fw.pod_arch(request, cluster, [hint[0]] if hint else ())
        )
        result.costs[name] = hourly_cost(request, cluster, chip, replicas)
    return result


def money(value: Decimal | None) -> str | None:
    """A cost on the wire: four places, as every cost is shown."""
    return None if value is None else str(value.quantize(Decimal("0.0001")))
