"""What-if over the live registry: the scheduler's own code, run on a copy, nothing written.

Fed by the registry (clusters joined with the monitor's statuses, policies, workloads with
their creation revisions, Bindings, workload statuses), read once into `Live`; feeds
`fedctl rebalance` and the failover controller's automatic fail-back (`candidates`: each
placed workload rated where it runs and where the scheduler would put it now, as
`failover.rebalance.Option`s) and `drill_plan` (which re-runs a scheduling cycle with one
member gone).

Why here: failover must not import the scheduler (they are sibling controllers), and this
needs both - the scheduler's pure `plan` and failover's rebalance rules. The runtime layer
sits above both, as the composition root does.

Why "fresh": the preferred placement is planned without the workload's previous placement
(which makes the real cycle sticky on purpose) and from the members' reported free
capacity: it answers "where would the policy put this now" for work that already runs
somewhere, so the capacity other admitted work holds but has not started is not counted
(`fedctl plan --live`, which plans new or edited work, does count it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

from federation import clock as clock_mod
from federation.cache import snapshot as snap
from federation.cache.currency import Currency
from federation.failover import rebalance
from federation.quota.accounting import Usage
from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.scheduler import cycle, explain
from federation.scheduler import framework as fw
from federation.scheduler import plan as planning
from federation.scheduler.plugins import affinity
from federation.settings import SchedulerSettings
from policies.models import propagation
from policies.models.accelerator import AcceleratorProfile
from policies.models.base import KubeObject
from policies.models.binding import CLAIMED_BY, Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.frq import FederatedResourceQuota
from policies.models.queue import Queue
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload

__all__ = ["Live", "candidates", "failback", "failback_of", "load"]

_POLICY_TYPES = (
    propagation.PropagationPolicy,
    propagation.ClusterPropagationPolicy,
    propagation.FedctlPropagationPolicy,
    propagation.FedctlClusterPropagationPolicy,
)


@dataclass
class Live:
    """The registry as the scheduler sees it, read once."""

    clusters: list[Cluster] = field(default_factory=list)
    statuses: dict[str, ClusterStatus] = field(default_factory=dict)
    policies: list[KubeObject] = field(default_factory=list)
    workloads: dict[str, codec.Stored[KubeObject]] = field(default_factory=dict)
    """By workload ref string."""
    bindings: dict[str, codec.Stored[Binding]] = field(default_factory=dict)
    """By Binding key."""
    phases: dict[str, str | None] = field(default_factory=dict)
    """Workload status phase by workload ref string."""

    def claiming(self) -> list[planning.AnyPolicy]:
        return [p for p in self.policies if isinstance(p, _POLICY_TYPES)]

    def workload(self, binding_key: str) -> Workload | None:
        stored = self.workloads.get(str(keys.parse_workload_key(binding_key)))
        return stored.obj if stored is not None and isinstance(stored.obj, Workload) else None

    def snapshot(
        self,
        *,
        statuses: dict[str, ClusterStatus] | None = None,
        bindings: Iterable[Binding] = (),
        currency: Currency | None = None,
    ) -> snap.Snapshot:
        return snap.build(
            self.clusters,
            statuses=statuses if statuses is not None else self.statuses,
            queues=[p for p in self.policies if isinstance(p, Queue)],
            quotas=[p for p in self.policies if isinstance(p, FederatedResourceQuota)],
            bindings=bindings,
            currency=currency or Currency(),
            profiles=[p for p in self.policies if isinstance(p, AcceleratorProfile)],
        )


async def load(store: st.Store) -> Live:
    """Everything a what-if needs, from one read of each prefix."""
    obj = codec.TypedStore(store, objects.ObjectCodec())
    live = Live()
    clusters = await codec.TypedStore(store, codec.Codec(Cluster)).list(keys.prefix("clusters"))
    live.clusters = [item.obj for item in clusters.items]
    statuses = await codec.TypedStore(store, codec.Codec(ClusterStatus)).list(
        keys.prefix("clusterstatus")
    )
    live.statuses = {keys.split(s.key)[-1]: s.obj for s in statuses.items}
    live.policies = [item.obj for item in (await obj.list(keys.prefix("policies"))).items]
    for item in (await obj.list(keys.prefix("workloads"))).items:
        live.workloads[str(keys.parse_workload_key(item.key))] = item
    bindings = await codec.TypedStore(store, codec.Codec(Binding)).list(keys.prefix("bindings"))
    live.bindings = {item.key: item for item in bindings.items}
    results = await codec.TypedStore(store, codec.Codec(WorkloadStatus)).list(
        keys.prefix("workloadstatus")
    )
    live.phases = {str(keys.parse_workload_key(r.key)): r.obj.phase for r in results.items}
    return live


def failback_of(policy: object) -> str:
    """`spec.fedctl.failback` of a claiming policy ("Never" when absent)."""
    ext = getattr(getattr(policy, "spec", None), "fedctl", None)
    return str(getattr(ext, "failback", "Never") or "Never")


def _groups(request: fw.JobRequest, snapshot: snap.Snapshot) -> dict[str, int]:
    """Each cluster's first matching affinity group (clusters in none are left out)."""
    out: dict[str, int] = {}
    for info in snapshot.clusters:
        for index, term in enumerate(request.terms):
            if affinity.matches(term, info) is None:
                out[info.name] = index
                break
    return out


def _group_name(request: fw.JobRequest, index: int | None) -> str:
    if index is None or len(request.terms) < 2:
        return ""
    return str(getattr(request.terms[index], "affinity_name", index))


def _option(
    placement: dict[str, int],
    chips: dict[str, str | None],
    costs: dict[str, Decimal | None],
    *,
    request: fw.JobRequest,
    groups: dict[str, int],
    scores: dict[str, int],
    currency: str,
) -> rebalance.Option:
    group = max((groups.get(n, len(request.terms)) for n in placement), default=None)
    total = sum(placement.values())
    known = [n for n in placement if n in scores]
    score = (
        sum(scores[n] * placement[n] for n in known) / max(total, 1)
        if known and len(known) == len(placement)
        else None
    )
    return rebalance.Option(
        placement=placement,
        chips=chips,
        costs=costs,
        group=group,
        group_name=_group_name(request, group),
        score=score,
        currency=currency,
    )


def _scores(
    scheduler: cycle.Scheduler,
    request: fw.JobRequest,
    snapshot: snap.Snapshot,
    names: Iterable[str],
) -> dict[str, int]:
    rows = np.array(sorted(snapshot.index[n] for n in set(names) if n in snapshot.index))
    if rows.size == 0:
        return {}
    state = fw.CycleState(snapshot, Usage(), scheduler.settings)
    scored = scheduler.placer.score(request, state, rows.astype(np.int64))
    return {
        snapshot.clusters[int(r)].name: int(t)
        for r, t in zip(scored.rows.tolist(), scored.total.tolist(), strict=True)
    }


def candidates(
    live: Live,
    *,
    settings: SchedulerSettings | None = None,
    only: Sequence[str] = (),
    automatic_only: bool = False,
) -> list[rebalance.Candidate]:
    """Every placed workload (or those in `only`, as `ns/Kind.group/name`) rated twice: as
    it runs, and as the scheduler would place it now. `automatic_only` keeps the workloads
    whose policy says `failback: Automatic`."""
    settings = settings or SchedulerSettings()
    scheduler = cycle.Scheduler(settings)
    # No Bindings: no previous placement, nothing evicting.
    snapshot = live.snapshot(currency=Currency.of(settings))
    policies = live.claiming()
    out = []
    wanted = set(only)
    for key, stored in sorted(live.bindings.items()):
        ref = str(keys.parse_workload_key(key))
        workload = live.workload(key)
        if workload is None or (wanted and ref not in wanted):
            continue
        if live.phases.get(ref) in ("Succeeded", "Failed"):
            continue
        recorded = stored.obj.metadata.annotations.get(CLAIMED_BY)
        policy = planning.claim(workload, policies, recorded=recorded)
        if automatic_only and failback_of(policy) != "Automatic":
            continue
        job = planning.job_for(workload, policy, settings=settings)
        request = scheduler.request(job, snapshot)
        planned = scheduler.plan(job, snapshot, Usage())
        binding = stored.obj
        current = binding.placement()
        groups = _groups(request, snapshot)
        scores = _scores(scheduler, request, snapshot, [*current, *planned.placement])
        chips = {t.name: t.chip for t in binding.spec.clusters}
        costs = {
            t.name: (
                explain.hourly_cost(
                    request,
                    snapshot.cluster(t.name),
                    t.chip if request.devices else None,
                    t.replicas,
                )
                if t.name in snapshot.index
                else None
            )
            for t in binding.spec.clusters
        }
        now = _option(
            current,
            chips,
            costs,
            request=request,
            groups=groups,
            scores=scores,
            currency=snapshot.currency,
        )
        preferred = None
        if planned.placement:
            preferred = _option(
                dict(planned.placement),
                dict(planned.chips),
                dict(planned.costs),
                request=request,
                groups=groups,
                scores=scores,
                currency=snapshot.currency,
            )
        out.append(
            rebalance.Candidate(
                key=key,
                revision=stored.revision,
                binding=binding,
                current=now,
                preferred=preferred,
                reason=planned.reason,
                batch=workload.is_batch,
                static_weights=request.strategy == "static_weight",
            )
        )
    return out


def failback(
    store: st.Store,
    *,
    guards: Callable[[], Sequence[st.Guard]] | None = None,
    settings: SchedulerSettings | None = None,
    clock: clock_mod.Clock = clock_mod.real,
) -> Callable[[], Awaitable[rebalance.Outcome]]:
    """The failover controller's automatic fail-back, run when a member recovers: every
    workload whose policy says `failback: Automatic` is decided and moved as `fedctl
    rebalance` would, each write fenced with the leader's `guards`."""
    typed = codec.TypedStore(store, codec.Codec(Binding))

    async def run() -> rebalance.Outcome:
        live = await load(store)
        # Planning every placed workload is seconds of CPU in a large fleet: in a worker
        # thread (over this run's own copy, `live`) the loop keeps renewing the lease.
        found = await asyncio.to_thread(candidates, live, settings=settings, automatic_only=True)
        verdicts = [rebalance.decide(c) for c in found]
        fence = tuple(guards()) if guards is not None else ()
        return await rebalance.apply(typed, verdicts, now=clock.now(), guards=fence)

    return run
