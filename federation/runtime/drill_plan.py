"""Drill prediction: where every workload on a member would go if it went down, touching nothing.

Fed by the live registry (`whatif.load`) and the member's name; feeds `fedctl drill plan`
with one `Prediction` per workload placed there: it stays (it tolerates the taint), or it
moves - with the clusters, replicas, chip and hourly cost the scheduler would give it - or
it would not fit, with the scheduler's reason. A finished job (Succeeded or Failed) is
`finished`: failover skips finished work, since moving it would only run it again, so it
neither moves nor counts as something that would not fit.

Why a whole scheduling cycle and not one plan per workload: the workloads leaving a member
compete for the same spare capacity elsewhere, so each must be charged before the next is
placed, under the same queue order, quotas and admitted usage as the real cycle. So the
prediction replays what failover and the scheduler would do: failover's own `eviction.judge`
and `evict` on each Binding (the member under a NoExecute `unreachable` taint), then
`reconcile` and `Scheduler.run_cycle` - the controller's code - on copies.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from federation.cache.currency import Currency
from federation.failover import eviction, taints
from federation.queue.pending import PendingStore
from federation.quota import accounting
from federation.registry import keys
from federation.runtime import whatif
from federation.scheduler import cycle, fingerprint, reconcile
from federation.scheduler import plan as planning
from federation.settings import SchedulerSettings
from policies.models.binding import CLAIMED_BY, Binding, TargetCluster
from policies.models.cluster import ClusterStatus, Taint
from policies.models.work import FINISHED_PHASES
from policies.models.workload import Workload

__all__ = ["Prediction", "predict", "table", "to_json"]

_ACTIONS = ("move", "stay", "pending", "finished")


@dataclass(frozen=True)
class Prediction:
    """One workload on the member: `stay`, `move` (to `targets`), `pending` (would not fit)
    or `finished` (its job has ended; failover leaves it where it ran)."""

    workload: str
    replicas: int
    action: str
    targets: list[TargetCluster] = field(default_factory=list)
    reason: str = ""

    @property
    def cost(self) -> Decimal | None:
        values = [t.hourly_cost for t in self.targets]
        if not values or any(v is None for v in values):
            return None
        return sum((v for v in values if v is not None), Decimal(0))


def _ref(binding: Binding) -> keys.WorkloadRef:
    w = binding.spec.workload
    return keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.name)


def predict(
    live: whatif.Live,
    cluster: str,
    *,
    now: dt.datetime,
    settings: SchedulerSettings | None = None,
) -> list[Prediction]:
    """What losing `cluster` would do to each workload placed there (sorted by ref)."""
    settings = settings or SchedulerSettings()
    taint = Taint(key=taints.UNREACHABLE, effect="NoExecute", time_added=now)
    policies = live.claiming()
    by_ref: dict[str, Binding] = {}
    moving: dict[str, tuple[int, str]] = {}
    out: list[Prediction] = []
    for stored in live.bindings.values():
        b = stored.obj
        ref = str(_ref(b))
        by_ref[ref] = b
        replicas = b.placement().get(cluster)
        workload = live.workload(stored.key)
        if replicas is None or workload is None:
            continue
        phase = live.phases.get(ref)
        if phase in FINISHED_PHASES:
            out.append(Prediction(ref, replicas, "finished", reason=str(phase)))
            continue
        policy = planning.claim(workload, policies, recorded=b.metadata.annotations.get(CLAIMED_BY))
        tolerations = policy.spec.placement.cluster_tolerations if policy is not None else []
        decisions = eviction.judge(b, {cluster: [taint]}, tolerations, now=now)
        if not decisions:
            why = "a namespace is never evicted" if eviction.never_evicted(b) else None
            out.append(Prediction(ref, replicas, "stay", reason=why or "tolerates the taint"))
            continue
        reason = decisions[0].reason
        if not decisions[0].due(now):
            reason += f" (leaves at {decisions[0].at.isoformat()})"
        moving[ref] = (replicas, reason)
        by_ref[ref] = eviction.evict(b, cluster, now=now, reason=reason)
    if moving:
        out.extend(_replace(live, cluster, taint, by_ref, moving, now=now, settings=settings))
    return sorted(out, key=lambda p: p.workload)


def _replace(
    live: whatif.Live,
    cluster: str,
    taint: Taint,
    bindings: dict[str, Binding],
    moving: dict[str, tuple[int, str]],
    *,
    now: dt.datetime,
    settings: SchedulerSettings,
) -> list[Prediction]:
    """One scheduling cycle over the evicted workloads, the rest admitted as they are."""
    statuses = dict(live.statuses)
    gone = statuses.get(cluster) or ClusterStatus()
    statuses[cluster] = gone.model_copy(update={"taints": [*gone.taints, taint]})
    snapshot = live.snapshot(
        statuses=statuses, bindings=bindings.values(), currency=Currency.of(settings)
    )
    work = reconcile.reconcile(
        workloads={
            ref: reconcile.Entry(s.obj, s.create_revision)
            for ref, s in live.workloads.items()
            if isinstance(s.obj, Workload)
        },
        bindings=bindings,
        phases=live.phases,
        policies=live.claiming(),
        clusters=[c.name for c in live.clusters],
        fingerprints={},
        ready=fingerprint.placeable(snapshot.clusters),
        settings=settings,
        device_resources=snapshot.device_resources,
        chip_devices=snapshot.chip_devices,
    )
    pending = PendingStore()
    for job in work.pending:
        if str(job.ref) in moving:
            pending.add(job)
    budget = max(settings.cycle_batch, len(moving))
    scheduler = cycle.Scheduler(settings.model_copy(update={"cycle_batch": budget}))
    result = scheduler.run_cycle(
        snapshot, pending, accounting.Usage([*work.admitted, *work.waiting]), now
    )
    placed = {str(_ref(b)): b for b in result.bindings}
    out = []
    for ref, (replicas, why) in moving.items():
        b = placed.get(ref)
        if b is not None and b.status.phase == "Scheduled" and b.spec.clusters:
            out.append(Prediction(ref, replicas, "move", list(b.spec.clusters), why))
            continue
        reason = result.reasons.get(ref) or (b.status.reason if b is not None else "") or why
        out.append(Prediction(ref, replicas, "pending", reason=reason))
    return out


def to_json(cluster: str, predictions: list[Prediction], *, currency: str) -> dict[str, Any]:
    """The `-o json` document; `currency`: what the predicted costs are in (the settings'
    the prediction ran with)."""
    return {
        "cluster": cluster,
        "currency": currency,
        "workloads": [
            {
                "workload": p.workload,
                "replicas": p.replicas,
                "action": p.action,
                "reason": p.reason,
                "targets": [
                    {
                        "cluster": t.name,
                        "replicas": t.replicas,
                        "chip": t.chip,
                        "hourlyCost": str(t.hourly_cost) if t.hourly_cost is not None else None,
                    }
                    for t in p.targets
                ],
            }
            for p in predictions
        ],
    }


def table(cluster: str, predictions: list[Prediction], *, currency: str) -> str:
    """The text form: one line per workload and target, then a count. The cost column
    names `currency`: the prediction prices in the caller's settings' currency, which
    may not be the controller's, so an unlabelled figure read as the controller's."""
    header = ("WORKLOAD", "FROM", "REPLICAS", "PREDICTED", "CHIP", f"COST/H({currency})")
    rows: list[tuple[str, ...]] = []
    for p in predictions:
        if p.action == "move":
            for i, t in enumerate(p.targets):
                cost = f"{t.hourly_cost:.4f}" if t.hourly_cost is not None else "unpriced"
                first = (p.workload, cluster, str(p.replicas)) if i == 0 else ("", "", "")
                rows.append((*first, f"{t.name}:{t.replicas}", t.chip or "-", cost))
        elif p.action == "stay":
            rows.append((p.workload, cluster, str(p.replicas), f"stays: {p.reason}", "-", "-"))
        elif p.action == "finished":
            shown = f"finished ({p.reason}): not moved"
            rows.append((p.workload, cluster, str(p.replicas), shown, "-", "-"))
        else:
            shown = f"would not fit: {p.reason}"
            rows.append((p.workload, cluster, str(p.replicas), shown, "-", "-"))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
        for r in [header, *rows]
    ]
    counts = {a: sum(p.action == a for p in predictions) for a in _ACTIONS}
    finished = f", {counts['finished']} finished" if counts["finished"] else ""
    lines.append(
        f"If {cluster} went down now: {counts['move']} would move, {counts['stay']} stay,"
        f" {counts['pending']} would not fit{finished}."
    )
    return "\n".join(lines)
