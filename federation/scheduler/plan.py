"""What-if placement for `fedctl plan`: workloads and policies from files, a fleet from a
simulator profile, the real scheduler code, nothing written.

Fed by YAML files (workloads, PropagationPolicies, Queues, FederatedResourceQuotas, through
`policies.loading`) and a profile (`offline.load`); feeds the CLI the plans and their
text form (`render_wire`, which the live plan prints too, from the API's answer).
The policy that claims each workload is chosen as Karmada does: a namespaced
PropagationPolicy before a ClusterPropagationPolicy, then higher `priority`, then the
most specific selector (name over label over kind), then the policy name. A plan has no
Bindings, so nothing here has claimed a workload before: `claim` is that first choice.
The workloads of the files are planned in file order, each against what the ones before it
took (capacity, queues, quotas), as the controller admits them one after another: planned
each against the empty fleet, 520 small services all landed on the same six clusters, 2,600
replicas where 880 fit.
The scheduler also has the policy a workload's Binding records (`claimant`): as in
Karmada, that one keeps it unless a policy allowed to preempt it takes over.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from federation import clock, errors
from federation.cache import snapshot as snap
from federation.cache.currency import Currency
from federation.queue.pending import PendingJob, PendingStore
from federation.quota.accounting import Usage
from federation.registry import keys, objects
from federation.scheduler import cycle, explain, offline
from federation.scheduler.plugins import affinity
from federation.settings import SchedulerSettings
from policies import loading
from policies.loading import LoadResult
from policies.loading.findings import Finding
from policies.models.accelerator import AcceleratorProfile
from policies.models.frq import FederatedResourceQuota
from policies.models.propagation import (
    ClusterPropagationPolicy,
    FedctlClusterPropagationPolicy,
    FedctlPropagationPolicy,
    PropagationPolicy,
)
from policies.models.queue import Queue
from policies.models.workload import Workload

__all__ = [
    "Planned",
    "claim",
    "claimant",
    "is_namespaced",
    "job_for",
    "plan_files",
    "policy_id",
    "render",
    "render_wire",
    "specificity_for",
]

AnyPolicy = (
    PropagationPolicy
    | ClusterPropagationPolicy
    | FedctlPropagationPolicy
    | FedctlClusterPropagationPolicy
)


@dataclass(frozen=True)
class Planned:
    """One workload's plan and the policy that claimed it (None: no policy matched)."""

    plan: explain.Plan
    policy: str | None


def _specificity(policy: AnyPolicy, workload: Workload) -> int | None:
    best: int | None = None
    for sel in policy.spec.resource_selectors:
        if (sel.api_version, sel.kind) != (workload.api_version, workload.kind):
            continue
        if sel.namespace and sel.namespace != workload.namespace:
            continue
        if sel.name:
            level = 2 if sel.name == workload.metadata.name else None
        elif sel.label_selector is not None:
            matched = affinity.selector_matches(sel.label_selector, _labels(workload))
            level = 1 if matched else None
        else:
            level = 0
        if level is not None:
            best = level if best is None else max(best, level)
    return best


def _labels(workload: Workload) -> dict[str, str]:
    """The workload's labels, plus the name label Kubernetes gives every Namespace."""
    if workload.kind == "Namespace" and workload.api_version == "v1":
        return {**workload.metadata.labels, "kubernetes.io/metadata.name": workload.metadata.name}
    return dict(workload.metadata.labels)


def is_namespaced(policy: AnyPolicy) -> bool:
    """Whether `policy` is a PropagationPolicy (selects in its namespace only)."""
    return isinstance(policy, PropagationPolicy | FedctlPropagationPolicy)


def specificity_for(policy: AnyPolicy, workload: Workload) -> int | None:
    """How closely `policy` selects `workload`: 2 by name, 1 by label, 0 by kind alone;
    None when it does not select it. A namespaced policy only selects in its own
    namespace, so never a cluster-scoped object (whose namespace is empty)."""
    if is_namespaced(policy) and (policy.metadata.namespace or "default") != workload.namespace:
        return None
    return _specificity(policy, workload)


def _ranked(workload: Workload, policies: Sequence[AnyPolicy]) -> list[AnyPolicy]:
    """The policies that match `workload`, in Karmada's order of claim."""
    ranked = []
    for policy in policies:
        level = specificity_for(policy, workload)
        if level is None:
            continue
        ranked.append(
            (
                (
                    0 if is_namespaced(policy) else 1,
                    -policy.spec.priority,
                    -level,
                    policy.metadata.name,
                ),
                policy,
            )
        )
    ranked.sort(key=lambda pair: pair[0])
    return [policy for _, policy in ranked]


def claim(
    workload: Workload, policies: Sequence[AnyPolicy], *, recorded: str | None = None
) -> AnyPolicy | None:
    """The policy that claims `workload`, Karmada's order; None when none matches.

    `recorded`: the claimant its Binding records (`binder.CLAIMED_BY`), when the caller
    has the Binding: failover and the propagator read a workload's tolerations, purge mode
    and conflict resolution from the policy that really claims it (`claimant`)."""
    if recorded is not None:
        return claimant(workload, policies, recorded=recorded)
    ranked = _ranked(workload, policies)
    return ranked[0] if ranked else None


def policy_id(policy: AnyPolicy) -> str:
    """How a Binding records its claiming policy: `PropagationPolicy/<namespace>/<name>` or
    `ClusterPropagationPolicy/<name>` (the registry holds one per kind, namespace and name,
    whichever API group it came in)."""
    if is_namespaced(policy):
        return f"{policy.kind}/{policy.metadata.namespace or 'default'}/{policy.metadata.name}"
    return f"{policy.kind}/{policy.metadata.name}"


def claimant(
    workload: Workload, policies: Sequence[AnyPolicy], *, recorded: str | None
) -> AnyPolicy | None:
    """The policy that claims `workload` now that `recorded` (a `policy_id`) claimed it.

    Karmada's rule (`spec.preemption`, `Never` by default): a claimed template stays with
    its policy while that policy exists and still selects it, unless a matching policy
    with `preemption: Always` outranks it - a PropagationPolicy of higher priority, or any
    PropagationPolicy over a ClusterPropagationPolicy. A ClusterPropagationPolicy never
    takes a template from a PropagationPolicy. With nothing recorded, or the recorded
    policy gone or no longer selecting the workload, the first choice (`claim`) claims it.
    """
    ranked = _ranked(workload, policies)
    if recorded:
        for policy in ranked:
            if policy_id(policy) != recorded:
                continue
            for other in ranked:  # in rank order: the first that may preempt it wins
                if other is policy or (
                    other.spec.preemption == "Always" and _preempts(other, policy)
                ):
                    return other
    return ranked[0] if ranked else None


def _preempts(policy: AnyPolicy, held: AnyPolicy) -> bool:
    """Whether `policy` may take a template `held` claims (its `preemption` aside)."""
    if is_namespaced(policy) != is_namespaced(held):
        return is_namespaced(policy)
    return policy.spec.priority > held.spec.priority


def job_for(
    workload: Workload,
    policy: AnyPolicy | None,
    *,
    settings: SchedulerSettings,
    seq: int = 1,
    ref: keys.WorkloadRef | None = None,
) -> PendingJob:
    """A pending entry for a workload under its claiming policy (`ref`: its registry
    identity, when the caller has read it already)."""
    fedctl = getattr(policy.spec, "fedctl", None) if policy is not None else None
    return PendingJob(
        ref=ref if ref is not None else objects.workload_ref(workload),
        workload=workload,
        queue=workload.queue or settings.default_queue,
        priority=workload.priority or 0,
        priority_class=workload.priority_class or "",
        seq=seq,
        placement=policy.spec.placement if policy is not None else None,
        fedctl=fedctl,
    )


def plan_files(
    paths: Sequence[str | Path],
    *,
    profile: str | Path,
    settings: SchedulerSettings | None = None,
    warn: Callable[[str], None] | None = None,
    checks: Callable[[LoadResult], Iterable[Finding]] | None = None,
) -> list[Planned]:
    """Plan every workload in `paths` against the fleet in `profile`.

    `checks`: more warnings of the files, from layers this one may not use (the override
    edits that match no container), given to `warn` with the others.

    `warn` is given each warning of the input, members the profile does not hold among
    them, and a note for each policy that claims less than it selects (`claims.notes`): a
    policy that silently selects or places nothing is what plan is run to catch.
    """
    loaded = loading.load_paths(paths)
    if not loaded.ok:
        raise errors.Invalid("invalid input", findings=[str(f) for f in loaded.errors])
    from federation.scheduler import claims  # it builds on this module's claim rules

    fleet = offline.load(profile)
    if warn is not None:
        judged = claims.against(loaded, fleet)
        if checks is not None:
            judged = judged.with_findings(checks(loaded))
        for finding in judged.warnings:
            warn(str(finding))
    models = [o.model for o in loaded.objects]
    workloads = [m for m in models if isinstance(m, Workload) and not m.is_opaque]
    if not workloads:
        raise errors.Invalid("no workload with pods in the given files (Deployment, Job, ...)")
    policies = [m for m in models if isinstance(m, AnyPolicy)]
    if warn is not None:
        every = [m for m in models if isinstance(m, Workload)]  # opaque ones are claimed too
        for note in claims.notes(policies, every, policies):
            warn(f"note: {note}")
    settings = settings or SchedulerSettings()
    snapshot = snap.build(
        fleet,
        queues=[m for m in models if isinstance(m, Queue)],
        quotas=[m for m in models if isinstance(m, FederatedResourceQuota)],
        currency=Currency.of(settings),
        profiles=[m for m in models if isinstance(m, AcceleratorProfile)],
    )
    scheduler = cycle.Scheduler(settings)
    out = []
    usage, now = Usage(), clock.real.now()
    for seq, workload in enumerate(workloads, start=1):
        policy = claim(workload, policies)
        job = job_for(workload, policy, settings=settings, seq=seq)
        planned = scheduler.plan(job, snapshot, usage)
        out.append(Planned(planned, policy.metadata.name if policy else None))
        if planned.placement:
            usage = _taken(scheduler, job, snapshot, usage, now=now)
    return out


def _taken(
    scheduler: cycle.Scheduler,
    job: PendingJob,
    snapshot: snap.Snapshot,
    usage: Usage,
    *,
    now: dt.datetime,
) -> Usage:
    """`usage` with `job` admitted as the scheduling cycle admits it (its pods charged to
    the node flavors they take, its queue and quota charged), so the next plan counts it.

    A plan given no Queue files places a job whatever queue it names (`Scheduler.plan_in`);
    the cycle would refuse a queue not defined, so it is admitted to the default one."""
    if not snapshot.queues:
        job = replace(job, queue=scheduler.settings.default_queue)
    pending = PendingStore()
    pending.add(job)
    return scheduler.run_cycle(snapshot, pending, usage, now, batch=1).usage


def render(planned: Planned, *, every: bool = False) -> str:
    """The human-readable form of an offline plan (`render_wire` of its wire form)."""
    return render_wire(planned.plan.to_json(planned.policy), every=every)


def render_wire(plan: Mapping[str, Any], *, every: bool = False) -> str:
    """The human-readable form of a plan's wire form (`explain.Plan.to_json`): the clusters
    that passed the filters under a header row, the others counted by filter in one line
    (`every`, or a plan that places nothing: each of them on its own row, with its reason,
    as that is why it waits), then the division, chip and cost. The offline plan and the
    live one (whose plans come as the API returns them) both print it, so the two modes
    read alike; costs show four decimals, as exact figures would show as many digits as
    their prices happen to carry. Scripts read `-o json`, which holds every verdict.

    Why not every row by default: at 144 members each workload took 153 lines, 38 of them
    the same affinity refusal, the answer to "where would it go" lost among them. A note
    every selected cluster carries (how dynamic weights divide) is said once, below them.
    """
    policy = plan.get("policy") or "(none: best single cluster)"
    currency = plan.get("currency", "USD")
    verdicts = plan.get("verdicts") or []
    every = every or not plan.get("placement")  # why it waits is in the rows refused
    shown = verdicts if every else [v for v in verdicts if v.get("verdict") == "ok"]
    selected = [v for v in verdicts if v.get("verdict") == "ok" and v.get("selected")]
    shared = [
        reason
        for reason in (selected[0].get("reasons") or [] if len(selected) > 1 else [])
        if all(reason in (v.get("reasons") or []) for v in selected)
    ]
    lines = [f"workload {plan['workload']}  policy: {policy}"]
    width = max([len(v["cluster"]) for v in shown] + [7])
    if shown:
        lines.append(f"  {'CLUSTER':<{width}}  {'VERDICT':<13}  {'SCORE':>5}  DETAILS")
    for v in shown:
        cluster = v["cluster"]
        if v.get("verdict") == "ok":
            own = [r for r in v.get("reasons") or [] if not (v.get("selected") and r in shared)]
            details = _ok_details(
                v.get("scores") or {},
                own,
                plan.get("podCosts") or {},
                cluster,
                currency,
            )
            mark = "  <- selected" if v.get("selected") else ""
            score = v.get("score") or 0
            lines.append(f"  {cluster:<{width}}  {'ok':<13}  {score:>5}  {details}{mark}")
        else:
            reason = "; ".join(v.get("reasons") or [])
            verdict = v.get("verdict", "")
            lines.append(
                f"  {cluster:<{width}}  {verdict:<13}  {'-':>5}  {v.get('plugin')}: {reason}"
            )
    lines.extend(f"  selected clusters: {reason}" for reason in shared)
    if not every:
        filtered = _filtered(verdicts)
        if filtered:
            lines.append(filtered)
    if not plan.get("placement"):
        lines.append(f"  pending: {plan.get('reason', '')}")
        return "\n".join(lines)
    for victim in plan.get("preempts") or ():
        lines.append(f"  first evicts {victim}")
    costs, chips = plan.get("costs") or {}, plan.get("chips") or {}
    for name, replicas in plan["placement"].items():
        cost = costs.get(name)
        shown = f"{Decimal(cost):.4f} {currency}/h" if cost is not None else "unpriced"
        lines.append(
            f"  place {replicas} replica(s) on {name}  chip {chips.get(name) or 'any'}"
            f"  cost {shown}"
        )
    total = plan.get("totalCost")
    lines.append(
        f"  total cost {Decimal(total):.4f} {currency}/h"
        if total is not None
        else "  total cost: unknown"
    )
    hours = float(plan.get("expectedHours") or 1)
    if plan.get("expectedCost") is not None and hours != 1:  # an hour's is the total shown
        lines[-1] += f", {Decimal(plan['expectedCost']):.4f} {currency} over {hours:g}h expected"
    return "\n".join(lines)


def _filtered(verdicts: Sequence[Mapping[str, Any]]) -> str:
    """The clusters the filters turned down, counted by filter, as `fedctl describe`
    counts them; "" when none was."""
    counts: dict[str, int] = {}
    for v in verdicts:
        if v.get("verdict") != "ok":
            plugin = str(v.get("plugin") or v.get("verdict") or "-")
            counts[plugin] = counts.get(plugin, 0) + 1
    if not counts:
        return ""
    total = sum(counts.values())
    by = ", ".join(f"{n} by {plugin}" for plugin, n in sorted(counts.items()))
    more = "more " if len(verdicts) > total else ""
    return f"  Filtered: {total} {more}cluster{'s' if total != 1 else ''} ({by}); -v lists each"


def _ok_details(
    scores: Mapping[str, int],
    reasons: Sequence[str],
    pods: Mapping[str, str | None],
    cluster: str,
    currency: str,
) -> str:
    """A passing cluster's line of a plan after its score: each plugin's part, any note
    (a currency it cannot be priced in), and one pod's hourly cost there when the plan has
    it."""
    details = " ".join(f"{k}={n}" for k, n in scores.items())
    details += f" ({'; '.join(reasons)})" if reasons else ""
    if cluster in pods:
        pod = pods[cluster]
        details += f"  pod {Decimal(pod):.4f} {currency}/h" if pod is not None else "  unpriced"
    return details
