"""The failover controller: health becomes taints, taints become evictions, evictions end.

Fed by the registry (mirrors of Clusters, ClusterStatus, Bindings, workloads, policies and
workload status, each watch only queuing keys) and, for a member returning from
`unreachable`, the member itself; feeds ClusterStatus.taints and Binding eviction tasks,
both written with compare-and-swap and, under HA, the leader's fence (`guards`).

Two kinds of key, each converged level-based by one worker at a time (STYLE.md §7, §12):

    c/<cluster>   Ready condition + time → taints (taints.desired); a member back from
                  unreachable keeps its taints until stale copies are purged (purge.py)
    b/<binding>   NoExecute taints + tolerations → due evictions, through the rate limiter
                  (eviction.py); a copy Unhealthy past the policy's application failover
                  toleration → evicted (application.py); eviction tasks + new placement
                  readiness + copies the propagator removed → tasks dropped (graceful.py)
    f/            a member recovered (our taints lifted): workloads whose policy says
                  `failback: Automatic` move back to where it prefers now (rebalance.py,
                  through the injected `failback`, which plans with the scheduler's code)
    e/<cluster>   a member's evictions quiet for a while: one WARNING sums them up
                  (tally.py; each workload's own line is INFO after the first)

Every action is also appended to `timeline`, which drills and benchmarks read to measure
detection and re-placement times without scraping logs. Each eviction is also told where
people and dashboards look: a Warning `Evicted` event on the workload (and `NowhereToGo`,
`PlacedBack` as it goes on, told.py), written in the same transaction as the Binding that
evicts it (so it tells only of evictions that landed), and `metrics.eviction` by cluster
and cause (`taint`, or `failover` for an unhealthy copy).
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from clusters import member as member_mod
from clusters.kube import connector
from federation import clock as clock_mod
from federation import errors
from federation.failover import (
    application,
    eviction,
    faults,
    graceful,
    purge,
    rebalance,
    taints,
    tally,
)
from federation.failover import told as tell
from federation.failover.mirror import Mirror
from federation.registry import codec, events, keys, objects
from federation.registry import store as st
from federation.settings import FailoverSettings, MemberSettings
from federation.workqueue import WorkQueue
from policies.models.base import KubeObject
from policies.models.binding import CLAIMED_BY, Binding
from policies.models.cluster import (
    RECOVERING_TAINT,
    UNJOINING_TAINT,
    Cluster,
    ClusterStatus,
    Taint,
)
from policies.models.common import Toleration
from policies.models.propagation import ApplicationFailoverBehavior, Placement
from policies.models.work import FINISHED_PHASES, WorkloadStatus
from policies.models.workload import Workload

__all__ = [
    "Claim",
    "Connect",
    "EvictionMetrics",
    "Failback",
    "FailoverController",
    "Mark",
    "Terms",
]

log = logging.getLogger(__name__)

Claim = Callable[..., Any]
"""`(workload, candidate policies, *, recorded=None)`: `scheduler.plan.claim`."""
"""Picks the PropagationPolicy claiming a workload (the scheduler's rule, passed in)."""
Connect = Callable[[Cluster], Awaitable[member_mod.Member]]
Guards = Callable[[], tuple[st.Guard, ...]]
Failback = Callable[[], Awaitable[rebalance.Outcome]]
"""Decides and applies automatic fail-back over the whole registry (`runtime.whatif`)."""


class EvictionMetrics(Protocol):
    """Where the evicted replicas are counted (`Metrics.eviction`)."""

    def eviction(self, cluster: str, reason: str, *, replicas: int = 1) -> None: ...


RECOVERING = RECOVERING_TAINT
_FAILBACK = "f/"
_TALLY = "e/"
"""Key prefix: close a member's burst of evictions once it is quiet (`tally.py`)."""
_QUIET = 5.0
"""Seconds without an eviction from a member that end its burst and log its summary."""
_RETRY = 1.0
_NOT_PROBED = "NotProbed"
"""The Ready reason of a member no probe has answered yet (the monitor's `probe.Health`)."""


@dataclass(frozen=True, slots=True)
class Terms:
    """What a workload's policy says about failover."""

    tolerations: tuple[Toleration, ...] = ()
    purge_mode: str = "Gracefully"
    batch: bool = False
    application: ApplicationFailoverBehavior | None = None
    returns: bool = False
    """The scheduler places the workload again on a member that comes back: a service
    Duplicated or divided by static weights, under one cluster affinity (`_returns`)."""


@dataclass(frozen=True, slots=True)
class Mark:
    """One thing failover did, for drills: when, what, where, to which workload."""

    at: dt.datetime
    what: str
    cluster: str
    workload: str = ""
    detail: str = ""


def _kube_connect(settings: MemberSettings, clock: clock_mod.Clock) -> Connect:
    async def make(cluster: Cluster) -> member_mod.Member:
        return await connector.connect(
            cluster.name, cluster.spec.connection, settings=settings, clock=clock
        )

    return make


class FailoverController:
    """`await run()` until cancelled (the supervisor runs it only while leading)."""

    def __init__(
        self,
        store: st.Store,
        *,
        settings: FailoverSettings | None = None,
        clock: clock_mod.Clock = clock_mod.real,
        claim: Claim | None = None,
        connect: Connect | None = None,
        member_settings: MemberSettings | None = None,
        guards: Guards | None = None,
        failback: Failback | None = None,
        workers: int = 4,
        metrics: EvictionMetrics | None = None,
    ) -> None:
        self.settings = settings or FailoverSettings()
        self._store = store
        self._metrics = metrics
        self._recorder = events.Recorder(store, clock=clock, source="failover")
        self.clock = clock
        self._claim = claim
        self._connect = connect or _kube_connect(member_settings or MemberSettings(), clock)
        self._guards = guards or (lambda: ())
        self._failback = failback
        self.workers = workers
        self.queue = WorkQueue(clock)
        self.limiter = eviction.RateLimiter(
            rate=self.settings.eviction_rate,
            secondary_rate=self.settings.secondary_eviction_rate,
            unhealthy_threshold=self.settings.unhealthy_threshold,
            now=clock.monotonic(),
            burst=self.settings.eviction_burst,
        )
        self.timeline: collections.deque[Mark] = collections.deque(maxlen=100_000)
        self.tally = tally.EvictionTally(log, quiet=_QUIET)
        self._unhealthy: dict[str, dict[str, dt.datetime]] = {}
        """Binding key → target → when its copy was first seen Unhealthy (application.py)."""
        self._leaving: set[str] = set()
        """Clusters being unjoined (`UNJOINING_TAINT`), kept as their specs change."""
        self._back: dict[str, dt.datetime] = {}
        self._unjudged: set[str] = set()
        """Members tainted only for not being probed yet (their taint changes log at INFO)."""
        """Cluster → when failover last lifted its own taints from it (`_held`)."""
        self._untimed: dict[tuple[str, str, str | None], dt.datetime] = {}
        """(cluster, key, value) → when an untimed NoExecute taint was first seen."""
        self._disrupted = False
        """No member Ready and some judged down (`taints.fully_disrupted`), as last seen."""
        self._calm_since: dt.datetime | None = None
        """When the last full disruption ended: the eviction grace counts from then at
        the earliest (`taints.desired`)."""
        obj_codec = objects.ObjectCodec()
        self.clusters = Mirror(
            codec.TypedStore(store, codec.Codec(Cluster)), keys.prefix("clusters"),
            on_change=self._cluster_changed,
        )  # fmt: skip
        self.statuses = Mirror(
            codec.TypedStore(store, codec.Codec(ClusterStatus)), keys.prefix("clusterstatus"),
            on_change=self._status_changed,
        )  # fmt: skip
        self.bindings = Mirror(
            codec.TypedStore(store, codec.Codec(Binding)), keys.prefix("bindings"),
            on_change=self._binding_changed,
        )  # fmt: skip
        self.workloads = Mirror[KubeObject](
            codec.TypedStore(store, obj_codec), keys.prefix("workloads"),
            on_change=lambda key: self._binding_of(keys.parse_workload_key(key)),
        )  # fmt: skip
        self.policies = Mirror[KubeObject](
            codec.TypedStore(store, obj_codec), keys.prefix("policies"),
            on_change=lambda key: self._all_bindings(),
        )  # fmt: skip
        self.workload_status = Mirror(
            codec.TypedStore(store, codec.Codec(WorkloadStatus)), keys.prefix("workloadstatus"),
            # A copy reported gone may free its namespace on a member being unjoined.
            on_change=lambda key: self._binding_changed(
                keys.binding_key(keys.parse_workload_key(key))
            ),
        )  # fmt: skip
        self._mirrors: list[Mirror[Any]] = [
            self.clusters, self.statuses, self.policies, self.workloads,
            self.workload_status, self.bindings,
        ]  # fmt: skip

    # -- feeding the queue -------------------------------------------------------------------

    def _cluster_changed(self, key: str) -> None:
        """A spec edit may carry a user's NoExecute taint (`fedctl cluster taint`, a taint
        drill): the bindings on the cluster look again now, not at the next status write."""
        name = keys.split(key)[-1]
        (self._leaving.add if self._unjoining(name) else self._leaving.discard)(name)
        self.queue.add("c/" + name)
        self._all_bindings(name)

    def _binding_changed(self, key: str) -> None:
        """Look again at the Binding; while a member is being unjoined, at its namespace's
        too, which leaves the member only after the namespace's last workload has."""
        self.queue.add("b" + key)
        if self._leaving:
            namespace = keys.parse_workload_key(key).namespace
            if namespace != keys.CLUSTER_SCOPE:
                ns = keys.WorkloadRef(keys.CLUSTER_SCOPE, "Namespace", namespace)
                self.queue.add("b" + keys.binding_key(ns))

    def _status_changed(self, key: str) -> None:
        """A status write may carry new taints: its cluster and the bindings on it look again."""
        name = keys.split(key)[-1]
        self.queue.add("c/" + name)
        self._all_bindings(name)

    def _binding_of(self, ref: keys.WorkloadRef) -> None:
        self.queue.add("b" + keys.binding_key(ref))

    def _all_bindings(self, cluster: str | None = None) -> None:
        for key, stored in self.bindings.items.items():
            spec = stored.obj.spec
            names = {t.name for t in spec.clusters} | {t.cluster for t in spec.eviction_tasks}
            if cluster is None or cluster in names:
                self.queue.add("b" + key)

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for mirror in self._mirrors:
                    await mirror.load()
                for mirror in self._mirrors:
                    group.create_task(mirror.run(), name=f"failover-watch-{mirror.prefix}")
                for i in range(self.workers):
                    group.create_task(self._worker(), name=f"failover-worker-{i}")
        finally:
            self.queue.close()

    async def _worker(self) -> None:
        while True:
            item = await self.queue.get()
            try:
                if item.startswith("c/"):
                    await self.converge_cluster(item[2:])
                elif item == _FAILBACK:
                    await self.fail_back()
                elif item.startswith(_TALLY):
                    self._close_tally(item[len(_TALLY) :])
                else:
                    await self.converge_binding(item[1:])
            except (errors.Conflict, errors.AlreadyExists, errors.NotFound):
                self.queue.add_after(item, 0.05)  # the watch brings the newer value
            except errors.FedctlError as exc:
                log.warning("failover %s: not converged: %s", item, exc)
                self.queue.add_after(item, _RETRY)
            except Exception:
                # A fault in judging one Binding or member (stored input nothing foresaw)
                # must not stop failover for all the others, nor, stored as it is, stop
                # every leader after this one: logged, and tried again much later.
                log.exception("failover %s: failed; trying again in %gs", item, _RETRY * 20)
                self.queue.add_after(item, _RETRY * 20)
            finally:
                self.queue.done(item)

    def _mark(self, what: str, cluster: str, workload: str = "", detail: str = "") -> None:
        self.timeline.append(Mark(self.clock.now(), what, cluster, workload, detail))

    # -- clusters ----------------------------------------------------------------------------

    async def converge_cluster(self, name: str) -> None:
        stored = self.statuses.items.get(keys.cluster_status_key(name))
        spec = self.clusters.get(keys.cluster_key(name))
        if spec is not None:
            await self._end_abandoned_drill(spec)
        if stored is None or spec is None:
            return
        status = stored.obj
        grace = taints.grace_for(spec, default=self.settings.eviction_grace)
        plan = taints.desired(
            status,
            now=self.clock.now(),
            grace=grace,
            disrupted=self._disruption(),
            calm_since=self._calm_since,
        )
        wanted = plan.taints
        returning = status.ready() and any(
            t.key in (taints.UNREACHABLE, RECOVERING) for t in status.taints
        )
        if returning and not await self._purged(spec):
            wanted = [Taint(key=RECOVERING, effect="NoSchedule")]
            self.queue.add_after("c/" + name, _RETRY * 2)
        new = taints.reconcile(status.taints, wanted, now=self.clock.now())
        if [(t.key, t.effect) for t in new] != [(t.key, t.effect) for t in status.taints]:
            update = status.model_copy(update={"taints": new})
            lifting = bool(_ours(status.taints)) and not _ours(new)
            if lifting:
                # Before the write: its watch event may bring the member's Bindings to
                # another worker while this one waits on it (`_held` reads this).
                self._back[name] = self.clock.now()
            await self.statuses.typed.update(
                stored.key, update, revision=stored.revision, guards=self._guards()
            )
            shown = ", ".join(f"{t.key}:{t.effect}" for t in new if t.key in _ours(new)) or "none"
            self._mark("taints", name, detail=shown)
            # WARNING, the default level: a member tainted (work leaves it, none comes) or
            # untainted is what an on-call engineer reads first, as kube-controller-manager
            # logs a NotReady node's taints. INFO for a member not probed yet (just joined,
            # or a new leader's first look) and its first probe lifting that: routine, and
            # a fleet of 144 joining said it 288 times.
            ready = status.condition("Ready")
            unjudged = ready is None or ready.reason == _NOT_PROBED
            if unjudged:
                self._unjudged.add(name)
            routine = unjudged or (lifting and name in self._unjudged)
            if not unjudged:
                self._unjudged.discard(name)
            log.log(
                logging.INFO if routine else logging.WARNING,
                "cluster %s: failover taints now %s",
                name,
                shown,
            )
            if lifting and self._failback is not None:
                self.queue.add(_FAILBACK)  # recovered: work may want to come back
        if plan.recheck_after is not None:
            self.queue.add_after("c/" + name, plan.recheck_after + 0.01)

    async def _end_abandoned_drill(self, cluster: Cluster) -> None:
        """Lift a drill taint past the end it carries (`faults.BACKSTOP`): the drill that
        set it died without healing (its CLI killed, the leader that ran it lost), and the
        member would stay drained for good. A drill taint without an end is left alone."""
        now = self.clock.now().timestamp()
        for taint in cluster.spec.taints:
            if taint.key != faults.DRILL_TAINT:
                continue
            left = faults.drill_taint_left(taint.value, now=now)
            if left is None:
                continue
            if left > 0:
                self.queue.add_after("c/" + cluster.name, left + 0.01)
                continue

            def lifted(current: Cluster | None, ended: Taint = taint) -> Cluster | None:
                if current is None:
                    return None
                kept = [t for t in current.spec.taints if t != ended]
                return current.model_copy(
                    update={"spec": current.spec.model_copy(update={"taints": kept})}
                )

            await self.clusters.typed.mutate(
                keys.cluster_key(cluster.name), lifted, guards=self._guards()
            )
            log.warning(
                "cluster %s: drill taint lifted %.0fs past its end: the drill that set it"
                " did not heal it",
                cluster.name, -left,
            )  # fmt: skip
            self._mark("drill-abandoned", cluster.name)

    async def _purged(self, cluster: Cluster) -> bool:
        """Delete stale copies from a returning member; False when it could not finish."""
        try:
            member = await self._connect(cluster)
        except errors.FedctlError as exc:
            log.warning("cluster %s: cannot connect to purge: %s", cluster.name, exc)
            return False
        try:
            report = await purge.purge(
                member,
                cluster=cluster.name,
                bindings=[s.obj for s in self.bindings.items.values()],
            )
        except errors.FedctlError as exc:
            log.warning("cluster %s: purge incomplete: %s", cluster.name, exc)
            return False
        finally:
            await member.close()
        for ref in report.deleted:
            self._mark("purged", cluster.name, detail=ref)
        log.info(
            "cluster %s returned: %d stale copies deleted, %d kept",
            cluster.name, len(report.deleted), report.kept,
        )  # fmt: skip
        return True

    async def fail_back(self) -> None:
        """Automatic fail-back after a recovery; again later while moves are held up."""
        if self._failback is None:
            return
        outcome = await self._failback()
        for ref in outcome.moved:
            self._mark("failback", "", ref)
        if outcome.moved:
            log.info("failback: %d workloads moved back", len(outcome.moved))
        if outcome.waiting or outcome.changed:
            self.queue.add_after(_FAILBACK, _RETRY * 2)

    # -- bindings ----------------------------------------------------------------------------

    def terms(self, binding: Binding) -> Terms:
        """Tolerations and purge mode from the policy that claims the workload."""
        ref = _ref(binding)
        workload = self.workloads.get(keys.workload_key(ref))
        if not isinstance(workload, Workload):
            return Terms()
        batch = workload.is_batch
        if self._claim is None:
            return Terms(batch=batch)
        candidates = [
            s.obj for s in self.policies.items.values() if s.obj.kind.endswith("PropagationPolicy")
        ]
        recorded = binding.metadata.annotations.get(CLAIMED_BY)
        policy = self._claim(workload, candidates, recorded=recorded)
        spec = getattr(policy, "spec", None)
        placement = getattr(spec, "placement", None)
        tolerations = tuple(getattr(placement, "cluster_tolerations", ()) or ())
        failover = getattr(spec, "failover", None)
        mode = failover.cluster.purge_mode if failover and failover.cluster else "Gracefully"
        app = failover.application if failover else None
        return Terms(
            tolerations=tolerations,
            purge_mode=mode,
            batch=batch,
            application=app,
            returns=not batch and _returns(placement),
        )

    def _disruption(self) -> bool:
        """Whether the fleet is fully disrupted now (`taints.fully_disrupted`); on a change,
        says so once at WARNING and looks again at every member's taints.

        Entering it, no member's own health taint evicts any more (they step back to
        NoSchedule): a replica that cannot reach any member (its network, a kubeconfig or
        key it lacks) took the lease, judged the whole fleet down and evicted healthy work
        everywhere, running jobs restarted from zero. Leaving it, evictions resume, each
        member down getting a whole grace from then (Kubernetes' node lifecycle
        controller does both)."""
        names = [s.obj.name for s in self.clusters.items.values()]
        down = taints.fully_disrupted(
            self.statuses.get(keys.cluster_status_key(name)) for name in names
        )
        if down == self._disrupted:
            return down
        self._disrupted = down
        if down:
            log.warning(
                "failover: none of the %d members is Ready: the likeliest cause is this"
                " controller's own network or configuration, not the fleet; no member's"
                " work is evicted for its health until one is Ready again",
                len(names),
            )
        else:
            self._calm_since = self.clock.now()
            log.warning(
                "failover: a member is Ready again: evictions resume, for members still"
                " down once the eviction grace has passed from now"
            )
        for name in names:
            self.queue.add("c/" + name)
        return down

    def _taints(self) -> dict[str, list[Taint]]:
        out: dict[str, list[Taint]] = {}
        seen: dict[tuple[str, str, str | None], dt.datetime] = {}
        disrupted = self._disruption()
        for stored in self.clusters.items.values():
            status = self.statuses.get(keys.cluster_status_key(stored.obj.name))
            found = stored.obj.with_status(status).effective_taints()
            if disrupted:
                # Before this controller has written them back to NoSchedule, too.
                found = taints.held_back(found)
            if any(t.effect == "NoExecute" and t.time_added is None for t in found):
                found = [self._timed(stored.obj.name, t, seen) for t in found]
            out[stored.obj.name] = found
        self._untimed = seen
        return out

    def _timed(
        self, cluster: str, taint: Taint, seen: dict[tuple[str, str, str | None], dt.datetime]
    ) -> Taint:
        """A NoExecute taint stored without `timeAdded` (written before the API stamped
        them) counts from when this controller first saw it. Timed afresh on every pass,
        its toleration never ran out."""
        if taint.effect != "NoExecute" or taint.time_added is not None:
            return taint
        key = (cluster, taint.key, taint.value)
        seen[key] = self._untimed.get(key) or self.clock.now()
        return taint.model_copy(update={"time_added": seen[key]})

    def _health(self) -> None:
        names = [s.obj.name for s in self.clusters.items.values()]
        sick = 0
        for name in names:
            status = self.statuses.get(keys.cluster_status_key(name))
            sick += status is None or not status.ready()
        self.limiter.set_health(unhealthy=sick, total=len(names))

    def _ready(self, ref: keys.WorkloadRef, *, revision: int) -> dict[str, bool]:
        """Readiness per cluster, from a status the propagator wrote for this revision of
        the Binding or a later one. An older status describes the placement before the
        scheduler re-divided it: a cluster that ran 2 of 2 replicas there reads ready while
        its share grew to 3, and the evicted copy would go before the new replicas run."""
        status = self.workload_status.get(keys.workload_status_key(ref))
        if status is None or status.binding_revision < revision:
            return {}
        return {c.cluster: c.up for c in status.clusters}

    def _finished(self, ref: keys.WorkloadRef) -> bool:
        status = self.workload_status.get(keys.workload_status_key(ref))
        return status is not None and status.phase in FINISHED_PHASES

    async def converge_binding(self, key: str) -> None:
        stored = self.bindings.items.get(key)
        if stored is None:
            self._unhealthy.pop(key, None)
            return
        terms = self.terms(stored.obj)
        binding = self._evict_due(key, stored.obj, terms)
        binding = self._evict_unhealthy(key, binding, terms)
        binding = self._end_tasks(key, binding, terms, revision=stored.revision)
        if binding != stored.obj:
            old_tasks = stored.obj.spec.eviction_tasks
            evicted, told = tell.told(
                stored.obj, binding, now=self.clock.now(), answers=self._answers
            )
            ops: list[st.Op] = [
                self.bindings.typed.update_op(key, binding, revision=stored.revision)
            ]
            if evicted:
                # Decided on this reading of the workload's status (a finished job is never
                # evicted: moving it runs it again); a status written since, by a member
                # reporting the job done, fails the write as a conflict, read again.
                status_key = keys.workload_status_key(_ref(binding))
                seen = self.workload_status.items.get(status_key)
                ops.append(st.Check(status_key, seen.revision if seen is not None else 0))
            ops += await self._recorder.ops(_ref(binding), told)
            await self._store.commit(ops, guards=self._guards())
            for task in evicted:
                self.tally.evicted(
                    workload=str(_ref(binding)),
                    cluster=task.cluster,
                    replicas=task.replicas,
                    reason=task.reason,
                    now=self.clock.monotonic(),
                )
                self.queue.add_after(_TALLY + task.cluster, _QUIET)
            if self._metrics is not None:
                for task in evicted:
                    cause = "failover" if task.producer == "ApplicationFailover" else "taint"
                    self._metrics.eviction(task.cluster, cause, replicas=task.replicas)
            before = {t.cluster for t in old_tasks}
            after = {t.cluster for t in binding.spec.eviction_tasks}
            ref = str(_ref(binding))
            for cluster in sorted(after - before):
                self._mark("evicted", cluster, ref)
            for cluster in sorted(before - after):
                self._mark("task-ended", cluster, ref)

    def _close_tally(self, cluster: str) -> None:
        left = self.tally.close(cluster, now=self.clock.monotonic())
        if left is not None:
            self.queue.add_after(_TALLY + cluster, left)

    def _answers(self, cluster: str) -> bool:
        status = self.statuses.get(keys.cluster_status_key(cluster))
        return status is not None and status.ready()

    def _evict_due(self, key: str, binding: Binding, terms: Terms) -> Binding:
        if self._finished(_ref(binding)) or eviction.never_evicted(binding):
            # Nothing runs any more: moving it would only run it again. Or a namespace,
            # whose deletion would delete all in it.
            return self._off_leaving(binding)
        decisions = eviction.judge(binding, self._taints(), terms.tolerations, now=self.clock.now())
        if not decisions:
            return binding
        self._health()
        now = self.clock.now()
        mode = "Directly" if terms.batch else terms.purge_mode
        for decision in decisions:
            if not decision.due(now):
                self.queue.add_after("b" + key, (decision.at - now).total_seconds() + 0.01)
                continue
            mono = self.clock.monotonic()
            if not self.limiter.try_acquire(mono):
                self.queue.add_after("b" + key, self.limiter.wait_time(mono))
                continue
            binding = eviction.evict(
                binding, decision.cluster, now=now, reason=decision.reason, purge_mode=mode
            )
        return binding

    def _off_leaving(self, binding: Binding) -> Binding:
        """A finished job's (or a namespace's) targets that are being unjoined, dropped
        (not moved), so the propagator takes its copy off them. Kept there, its Binding
        named the member for good and `fedctl cluster unjoin` waited out its timeout behind
        every Job that had ever completed there. Its status stays Succeeded or Failed: the
        scheduler never places a finished job again."""
        namespace = binding.spec.workload.name if eviction.never_evicted(binding) else None
        kept = [
            t
            for t in binding.spec.clusters
            if t.name not in self._leaving
            or (namespace is not None and self._holds(t.name, namespace))
        ]
        if len(kept) == len(binding.spec.clusters):
            return binding
        return binding.model_copy(
            update={"spec": binding.spec.model_copy(update={"clusters": kept})}
        )

    def _holds(self, cluster: str, namespace: str) -> bool:
        """Whether a workload of `namespace` still has a copy on `cluster`, placed or being
        evicted. Its namespace stays until none has: deleting a namespace deletes all in
        it, and the copies a graceful eviction keeps until their replacements are ready
        would go at once."""
        mine = keys.prefix("bindings") + namespace + "/"  # a string test: cheap at 20,000
        for key, stored in self.bindings.items.items():
            if not key.startswith(mine):
                continue
            spec = stored.obj.spec
            if any(t.name == cluster for t in spec.clusters):
                return True
            tasks = [t for t in spec.eviction_tasks if t.cluster == cluster]
            if not tasks:
                continue
            # A Directly task stays while the member's taint still evicts (it bars the
            # member), after its copy is gone: a job waiting for room elsewhere held the
            # namespace, and the unjoin, for good.
            status = self.workload_status.get(keys.workload_status_key(_ref(stored.obj)))
            if cluster not in graceful.gone(tasks, status, revision=stored.revision):
                return True
        return False

    def _unjoining(self, cluster: str) -> bool:
        stored = self.clusters.items.get(keys.cluster_key(cluster))
        return stored is not None and any(
            t.key == UNJOINING_TAINT and t.effect == "NoExecute" for t in stored.obj.spec.taints
        )

    def _evict_unhealthy(self, key: str, binding: Binding, terms: Terms) -> Binding:
        """Application failover (application.py): when the policy asks for it, a target
        whose copy stayed Unhealthy for the toleration leaves it.

        When each target turned unhealthy is kept here only, as Karmada keeps it: a new
        leader counts from when it first sees the copy unhealthy, so a failover takes at
        most one toleration longer across a leader change, never less.
        """
        app = terms.application
        if app is None or self._finished(_ref(binding)):
            self._unhealthy.pop(key, None)
            return binding
        now = self.clock.now()
        toleration = app.decision_conditions.toleration_seconds
        verdict = application.judge(
            [t.name for t in binding.spec.clusters],
            self.workload_status.get(keys.workload_status_key(_ref(binding))),
            self._unhealthy.get(key, {}),
            now=now,
            toleration=application.DEFAULT_TOLERATION if toleration is None else toleration,
        )
        self._unhealthy[key] = verdict.since
        if verdict.recheck_after is not None:
            self.queue.add_after("b" + key, verdict.recheck_after + 0.01)
        mode = "Directly" if terms.batch else eviction.normalise_purge_mode(app.purge_mode)
        grace = app.grace_period_seconds if mode == "Gracefully" else None
        if verdict.due:
            # The rate for the fleet's health now: set only by a taint eviction otherwise,
            # a blip long over kept application failover at the slow rate (or stopped, at
            # a secondary rate of 0).
            self._health()
        for cluster, reason in verdict.due:
            mono = self.clock.monotonic()
            if not self.limiter.try_acquire(mono):  # the same brake as a taint's evictions
                self.queue.add_after("b" + key, self.limiter.wait_time(mono))
                continue
            binding = eviction.evict(
                binding,
                cluster,
                now=now,
                reason=reason,
                purge_mode=mode,
                application=True,
                grace_period_seconds=grace,
            )
            # Its first-unhealthy time stays until the write lands: the cluster is no
            # longer a target then, and the next judgement drops it. Forgotten here, a
            # lost compare-and-swap started the whole toleration again.
        return binding

    def _end_tasks(self, key: str, binding: Binding, terms: Terms, *, revision: int) -> Binding:
        tasks = binding.spec.eviction_tasks
        if not tasks:
            return binding
        placed = binding.placement() if binding.status.phase == "Scheduled" else {}
        targets = list(placed)
        now = self.clock.now()
        status = self.workload_status.get(keys.workload_status_key(_ref(binding)))
        gone = graceful.gone(tasks, status, revision=revision)
        effective = self._taints() if gone else {}
        evicting = {
            name for name in gone if eviction.evicts(effective.get(name, ()), terms.tolerations)
        }
        away, settle = self._held(binding, terms, now=now)
        if settle is not None:
            self.queue.add_after("b" + key, settle + 0.01)
        nowhere = graceful.placed_nowhere(binding)
        if nowhere:
            tasks = [graceful.stranded(t, now) for t in tasks]
        outcome = graceful.judge(
            tasks,
            targets=targets,
            ready=self._ready(_ref(binding), revision=revision),
            now=now,
            timeout=self.settings.graceful_timeout,
            gone=gone,
            evicting=evicting,
            placed=placed,
            holding={t.cluster for t in tasks if self._answers(t.cluster)} if nowhere else (),
            placed_at=binding.status.last_scheduled_time if placed else None,
            away=away,
        )
        if outcome.recheck_after is not None:
            self.queue.add_after("b" + key, outcome.recheck_after + 0.01)
        if not outcome.drop and tasks == binding.spec.eviction_tasks:
            return binding
        spec = binding.spec.model_copy(update={"eviction_tasks": outcome.keep})
        return binding.model_copy(update={"spec": spec})

    def _held(
        self, binding: Binding, terms: Terms, *, now: dt.datetime
    ) -> tuple[set[str], float | None]:
        """The clusters of the Binding's tasks whose copies wait for their member's return
        to be judged (`graceful.judge`'s `away`), and in how many seconds the first of
        those that are back stops waiting (None: none is).

        A member away (`ClusterStatus.away`): nothing there can be deleted now; unless it
        is being unjoined, which it will not come back from (its unjoin waits on the task,
        which the timeout ends). A member back, for a graceful task of a workload the
        scheduler places back on a member that returns (`Terms.returns`): until it has
        placed the Binding since failover lifted the member's taints, for at most the
        graceful timeout (a controller that did not lift them does not wait). Ended sooner,
        the task let the propagator delete the copy the scheduler was about to place back
        there, as the two both answer the same taints going. A workload that stays where
        it is (Steady division, an earlier affinity group) does not wait: nothing would
        end the wait but the timeout. Nor does a Directly task: its copy goes on return
        whatever the scheduler says next.
        """
        held: set[str] = set()
        settle: float | None = None
        placed = binding.status.last_scheduled_time
        for task in binding.spec.eviction_tasks:
            status = self.statuses.get(keys.cluster_status_key(task.cluster))
            if status is None:
                continue
            if status.away():
                if task.cluster not in self._leaving:
                    held.add(task.cluster)
                continue
            back = self._back.get(task.cluster)
            if task.at_once or not terms.returns or back is None or not status.ready():
                continue
            left = self.settings.graceful_timeout - (now - back).total_seconds()
            if left > 0 and (placed is None or placed < back):
                held.add(task.cluster)
                settle = left if settle is None else min(settle, left)
        return held, settle


def _returns(placement: Placement | None) -> bool:
    """Whether the scheduler places a service again on a member that comes back (docs:
    concepts, Failover 7): Duplicated, or divided by static weights (which ignore where
    replicas run), under a single cluster affinity (a return to an earlier affinity group
    waits for a move)."""
    if placement is None or len(placement.affinity_terms) > 1:
        return False
    scheduling = placement.scheduling
    if scheduling.replica_scheduling_type == "Duplicated":
        return True
    weights = scheduling.weight_preference
    return scheduling.division == "Weighted" and not (weights and weights.dynamic_weight)


def _ours(taint_list: Sequence[Taint]) -> set[str]:
    return {t.key for t in taint_list if t.key.startswith(taints.MANAGED_PREFIX)}


def _ref(binding: Binding) -> keys.WorkloadRef:
    w = binding.spec.workload
    return keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.name)
