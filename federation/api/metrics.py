"""Prometheus metrics for the controller, served at `/metrics`.

Role: one `Metrics` object per process that the components report into — the scheduler
(`observe_decision`, `observe_write`, `observe_cycle`; `eviction` for the preemptions and
reclaims it committed), the event loop's own lag (`follow_loop_lag`, `loop_lag`),
propagation (`propagation_error`, from the applier), failover (`eviction` for taints and
unhealthy copies), leader election (`set_leader`: the role, and its changes), the API's two
limiters (`rate_limited`), every API answer by route and code (`middleware`, the outermost,
so refusals count too), every etcd call by operation and gRPC code (`etcd_request`, the
registry's observer) — plus gauges derived at scrape time: each joined cluster's region,
zone and provider (`fedctl_cluster_info`, to join other series on, as kube-state-metrics'
`*_info` series are), cluster readiness, capacity by chip and last heartbeat from the
monitor's ClusterStatus, admitted and pending workloads per queue, and what the placed work
costs an hour by queue, namespace, cluster and chip (`scheduler.spend`, the figures of
`fedctl cost`). Each series is listed in docs/concepts.md (Metrics). The queue counts are
the leading scheduler's own, from the tally its latest cycle published for the queue view
(`queue_view.Published`), so `/metrics` and `fedctl get queues` agree; a replica that does
not lead counts the Bindings instead (a finished job, whose Binding stays, is neither).
Every defined Queue has both series, zeros included, so an alert or a dashboard sees a
queue before its first workload. `RegistryCache.run` keeps the registry's part in memory
from a list and a watch, so a scrape never touches etcd. Feeds Prometheus through
`handler`.

Why a private `CollectorRegistry`: several apps (and tests) live in one process; the
global default registry would make the second one fail on duplicate names. Why derived
gauges are computed at scrape time: they then always match the cache, with no stale series
left behind for a cluster that was removed, or a queue's count left from a term that ended.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping
from decimal import Decimal
from typing import Any

import tenacity
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from federation import clock as clock_mod
from federation import errors
from federation.api import limits, loop_lag
from federation.api.limits import Handler
from federation.api.watch import WATCH_PATH
from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.scheduler import queue_view as qv
from federation.scheduler import spend
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.queue import Queue
from policies.models.work import FINISHED_PHASES, WorkloadStatus
from policies.models.workload import WORKLOAD_KINDS

__all__ = ["Metrics", "RegistryCache"]

log = logging.getLogger(__name__)

DECISION_BUCKETS = (
    *(0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005),
    *(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
"""From 10 µs: a decision takes tens to hundreds of µs (docs/architecture.md), a slow one
(a spread over many zones, a preemption search) up to seconds."""

ETCD_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
"""From 0.5 ms (a read of a local etcd) to 10 s (its request timeout is 5 s by default)."""

COST_PLACES = Decimal("0.000001")
"""What `fedctl_hourly_cost` is rounded to: a millionth of the currency an hour, finer
than any price list, and short enough that a dashboard shows no float noise."""

LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""From 1 ms (an idle loop) to a minute (the 40 s stall that cost a leader its lease)."""

WRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""From 1 ms (one transaction to a local etcd) to 30 s (thousands of Bindings, or an etcd
that retries)."""


class RegistryCache:
    """Clusters' region, zone and provider, cluster statuses, per-binding (queue, phase,
    what it runs), the workloads that finished (each keyed by workload ref) and the defined
    queues' names, kept current from registry watches."""

    def __init__(self) -> None:
        self.clusters: dict[str, tuple[str, str, str]] = {}
        """Per cluster: its region, zone and provider ("" when not set)."""
        self.statuses: dict[str, ClusterStatus] = {}
        self.bindings: dict[str, tuple[str, str, list[spend.Charge], bool]] = {}
        """Per workload: its queue, phase, what it costs, and whether it runs pods (a
        Namespace is bound like work, but nobody queued it)."""
        self.finished: dict[str, bool] = {}
        self.queues: dict[str, bool] = {}

    async def run(self, store: st.Store) -> None:
        """List, then follow changes until cancelled (a supervisor component)."""
        async with asyncio.TaskGroup() as tasks:
            for kind in _FOLLOWED:
                tasks.create_task(self._follow(store, kind))

    async def _follow(self, store: st.Store, kind: str) -> None:
        """List and watch `kind`, again after the registry was away.

        Every replica runs this from its start, leading or not: a replica started while
        etcd restarts found the list refused past the store's own retries, and the error
        stopped the whole process. The watch itself rides out an etcd restart."""
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(errors.RetryableError),
            wait=tenacity.wait_random_exponential(multiplier=0.2, max=5.0),
            before_sleep=lambda state: log.warning(
                "metrics: %s not followed yet: %s",
                kind,
                state.outcome and state.outcome.exception(),
            ),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                await self._list_and_watch(store, kind)

    async def _list_and_watch(self, store: st.Store, kind: str) -> None:
        prefix, read = _FOLLOWED[kind]
        typed: codec.TypedStore[Any] = codec.TypedStore(store, read)
        listed = await typed.list(prefix)
        self._replace(kind, listed.items)
        async for event in typed.watch(prefix, start_revision=listed.revision + 1):
            if isinstance(event, codec.Resync):
                self._replace(kind, event.items)
            elif isinstance(event, codec.Put):
                self._set(kind, event.item.key, event.item.obj)
            elif isinstance(event, codec.Deleted):
                self._target(kind).pop(self._name(kind, event.key), None)

    def _target(self, kind: str) -> dict[str, Any]:
        if kind == "clusters":
            return self.clusters
        if kind == "clusterstatus":
            return self.statuses
        if kind == "queues":
            return self.queues
        return self.bindings if kind == "bindings" else self.finished

    @staticmethod
    def _name(kind: str, key: str) -> str:
        if kind in ("clusters", "clusterstatus", "queues"):
            return key.rsplit("/", 1)[-1]
        return str(keys.parse_workload_key(key))

    def _replace(self, kind: str, items: list[codec.Stored[Any]]) -> None:
        self._target(kind).clear()
        for item in items:
            self._set(kind, item.key, item.obj)

    def _set(self, kind: str, key: str, obj: Any) -> None:
        if isinstance(obj, Cluster):
            spec = obj.spec
            self.clusters[obj.name] = (spec.region, spec.zone or "", spec.provider or "")
        elif isinstance(obj, ClusterStatus):
            self.statuses[self._name(kind, key)] = obj
        elif isinstance(obj, Binding):
            ref = self._name(kind, key)
            charges = spend.charges(ref, obj)
            # A placement records its pods; a Binding held at admission records none, so
            # its kind tells whether it waits for room (as the leader's tally counts it).
            w = obj.spec.workload
            pods = bool(obj.spec.pod_requests) or bool(charges)
            if obj.status.phase == "Pending":
                pods = pods or (w.api_version, w.kind) in WORKLOAD_KINDS
            self.bindings[ref] = (obj.spec.queue, obj.status.phase, charges, pods)
        elif isinstance(obj, WorkloadStatus):
            self.finished[self._name(kind, key)] = obj.phase in FINISHED_PHASES
        elif isinstance(obj, Queue):
            self.queues[self._name(kind, key)] = True


class _Derived(Collector):
    """Gauges computed from the cache on every scrape."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        cache = self.metrics.cache
        ready = GaugeMetricFamily(
            "fedctl_cluster_ready",
            "1 when the member's Ready condition is True.",
            labels=["cluster"],
        )
        capacity = GaugeMetricFamily(
            "fedctl_cluster_capacity",
            "Capacity by chip: devices per accelerator model, CPU cores of every node"
            " (accelerator nodes' included) per architecture.",
            labels=["cluster", "chip", "state"],
        )
        heartbeat = GaugeMetricFamily(
            "fedctl_cluster_last_heartbeat_timestamp_seconds",
            "Unix time of the member's last successful probe, as the monitor last wrote it:"
            " time() minus this far past FEDCTL_MONITOR__HEARTBEAT means the monitor is"
            " behind or the member unreachable.",
            labels=["cluster"],
        )
        for name, status in sorted(cache.statuses.items()):
            ready.add_metric([name], 1.0 if status.ready() else 0.0)
            if status.last_heartbeat is not None:
                heartbeat.add_metric([name], status.last_heartbeat.timestamp())
            for (chip, state), amount in sorted(_capacity(status).items()):
                capacity.add_metric([name, chip, state], amount)
        info = GaugeMetricFamily(
            "fedctl_cluster_info",
            "1 per joined cluster, naming its region, zone and provider: join on cluster"
            " to sum another series by them.",
            labels=["cluster", "region", "zone", "provider"],
        )
        for name, (region, zone, provider) in sorted(cache.clusters.items()):
            info.add_metric([name, region, zone, provider], 1.0)
        yield info
        yield ready
        yield capacity
        yield heartbeat
        defined, pending, admitted = self.metrics.queue_counts()
        depth = GaugeMetricFamily(
            "fedctl_queue_pending_workloads",
            "Workloads waiting in a queue (the leading scheduler's count).",
            labels=["queue"],
        )
        taken = GaugeMetricFamily(
            "fedctl_queue_admitted_workloads",
            "Workloads admitted from a queue and not finished.",
            labels=["queue"],
        )
        held = {q for q, n in pending.items() if n} | {q for q, n in admitted.items() if n}
        for queue in sorted(set(defined) | held):
            depth.add_metric([queue], float(pending.get(queue, 0)))
            taken.add_metric([queue], float(admitted.get(queue, 0)))
        yield depth
        yield taken
        # Summed in Decimal and rounded once: float sums of the per-workload figures
        # exported 0.9197999999999973 where `fedctl cost` said 0.9198.
        costs: dict[tuple[str, str, str, str], Decimal] = defaultdict(Decimal)
        for ref, (_, _, charges, _) in cache.bindings.items():
            if cache.finished.get(ref):
                continue  # costs nothing
            for c in charges:
                if c.hourly is not None:
                    costs[(c.queue, c.namespace, c.cluster, c.chip)] += c.hourly
        cost = GaugeMetricFamily(
            "fedctl_hourly_cost",
            "What the placed replicas cost an hour, as estimated when they were placed, in"
            " the federation's currency (FEDCTL_SCHEDULER__CURRENCY); finished jobs excluded."
            " chip: the accelerator model or arch they run on; by region through"
            " fedctl_cluster_info.",
            labels=["queue", "namespace", "cluster", "chip"],
        )
        for labels, value in sorted(costs.items()):
            cost.add_metric(list(labels), float(value.quantize(COST_PLACES)))
        yield cost


_FOLLOWED: dict[str, tuple[str, codec.Codec[Any]]] = {
    "clusters": (keys.prefix("clusters"), codec.Codec(Cluster)),
    "clusterstatus": (keys.prefix("clusterstatus"), codec.Codec(ClusterStatus)),
    "bindings": (keys.prefix("bindings"), codec.Codec(Binding)),
    "workloadstatus": (keys.prefix("workloadstatus"), codec.Codec(WorkloadStatus)),
    "queues": (keys.policy_prefix("Queue"), objects.ObjectCodec()),
}
"""What the cache follows: its prefix in the registry and how to read what is there."""


def _route(request: web.Request) -> str:
    """The matched route's pattern, so that the series are bounded by the routes, not by
    the names in the paths; `unmatched` for a path no route serves."""
    info = request.match_info
    resource = info.route.resource if info is not None and info.route is not None else None
    if resource is None or info.http_exception is not None:
        return "unmatched"
    return resource.canonical


def _watching(request: web.Request) -> bool:
    """A watch of one kind (`?watch=1`) or of several (the `/watch` route)."""
    return request.query.get("watch") in ("1", "true") or request.path == WATCH_PATH


def _capacity(status: ClusterStatus) -> dict[tuple[str, str], float]:
    """(chip, allocatable|free) → amount, summed over the status's node flavors: devices
    per accelerator model, and every node's CPU cores per architecture, accelerator nodes'
    included (a GPU job is also held by the CPU of GPU nodes; `fedctl cluster list` counts
    them too)."""
    out: dict[tuple[str, str], float] = defaultdict(float)
    for flavor in status.flavors:
        counted: list[tuple[str, str]] = [(flavor.arch, "cpu")]
        if flavor.accelerator_model and flavor.accelerator_resource:
            counted.append((flavor.accelerator_model, flavor.accelerator_resource))
        for chip, resource in counted:
            allocatable = flavor.node_count * flavor.allocatable.amount(resource)
            out[(chip, "allocatable")] += allocatable / 1000
            out[(chip, "free")] += flavor.free.amount(resource) / 1000
    return out


class Metrics:
    """The process's metric families; components call the small methods below."""

    def __init__(
        self, *, queue_view: qv.Published | None = None, clock: clock_mod.Clock = clock_mod.real
    ) -> None:
        """`queue_view`: where this process's scheduling loop publishes each cycle's queue
        tally while it leads (the one the queue status view reads); `clock` times the API's
        requests."""
        self._clock = clock
        self.registry = CollectorRegistry(auto_describe=True)
        self.cache = RegistryCache()
        self.queue_view = queue_view
        r = self.registry
        self._decisions = Histogram(
            "fedctl_scheduling_decision_seconds",
            "Time to decide one workload's placement: from placing it to its admission"
            " settled (its Binding built, not yet written), one observation per decision.",
            buckets=DECISION_BUCKETS,
            registry=r,
        )
        self._writes = Histogram(
            "fedctl_scheduling_binding_write_seconds",
            "Time a scheduling cycle took to write its changed Bindings to etcd (batched"
            " transactions), one observation per cycle that wrote any.",
            buckets=WRITE_BUCKETS,
            registry=r,
        )
        self._propagation_errors = Counter(
            "fedctl_propagation_errors",
            "Applies and deletes on members that failed: operation apply, delete or release;"
            " reason Refused (conflictResolution Abort), Rejected or Unavailable.",
            ["cluster", "operation", "reason"],
            registry=r,
        )
        self._gc_deleted = Counter(
            "fedctl_gc_deleted",
            "Copies garbage collection deleted from members because no Work in the registry"
            " wants them (after an etcd restore: everything submitted since the snapshot).",
            ["cluster", "kind"],
            registry=r,
        )
        self._evictions = Counter(
            "fedctl_evictions",
            "Replicas evicted from a member, once the eviction was written: reason preempted"
            " or reclaimed (the scheduler), taint or failover (an unhealthy copy).",
            ["cluster", "reason"],
            registry=r,
        )
        self._leader = Gauge("fedctl_leader", "1 while this replica holds the lease.", registry=r)
        self._leading = False
        self._transitions = Counter(
            "fedctl_leader_transitions",
            "Changes of this replica's role: to leader (a term began) or to follower (it"
            " ended); a step-down and re-election between two scrapes shows here, not in"
            " fedctl_leader.",
            ["to"],
            registry=r,
        )
        for to in ("leader", "follower"):  # both series from the start, zeros included
            self._transitions.labels(to=to)
        self._limited = Counter(
            "fedctl_api_rate_limited_requests",
            "Requests answered 429, by limiter: rate (a client's request rate) or"
            " failed_sign_in (its address failed to sign in too often; every request from"
            " it is refused, valid tokens' too).",
            ["limiter"],
            registry=r,
        )
        for limiter in limits.LIMITERS:  # both series from the start, zeros included
            self._limited.labels(limiter=limiter)
        self._requests = Counter(
            "fedctl_api_requests",
            "API requests answered, by method (WATCH for a watch), route (the path pattern,"
            " as `/apis/{group}/{version}/namespaces/{namespace}/{plural}`) and HTTP code;"
            " 499 when the client left first. Counted when the answer is complete, as"
            " kube-apiserver's apiserver_request_total is.",
            ["method", "route", "code"],
            registry=r,
        )
        self._latency = Histogram(
            "fedctl_api_request_duration_seconds",
            "Time from a request's arrival to its answer, by method and route; watches are"
            " left out (they last as long as their client stays).",
            ["method", "route"],
            buckets=WRITE_BUCKETS,
            registry=r,
        )
        self._etcd = Counter(
            "fedctl_etcd_requests",
            "Calls this process made to etcd, by operation (Range, Put, Txn, LeaseGrant,"
            " LeaseRevoke, Compaction) and gRPC code (OK, UNAVAILABLE, DEADLINE_EXCEEDED,"
            " ...); each attempt of a retried call counts. Watches and lease keepalives"
            " are streams and are not counted.",
            ["operation", "code"],
            registry=r,
        )
        self._etcd_latency = Histogram(
            "fedctl_etcd_request_duration_seconds",
            "Time etcd took to answer one call (or to fail it), by operation, as"
            " kube-apiserver's etcd_request_duration_seconds.",
            ["operation"],
            buckets=ETCD_BUCKETS,
            registry=r,
        )
        self._loop_lag = Histogram(
            "fedctl_event_loop_lag_seconds",
            "How late a task sleeping a fixed interval woke up: the time something held the"
            " event loop without yielding (the API, watches and the leader lease's keepalive"
            " waited as long).",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self._cycles = Histogram(
            "fedctl_scheduler_cycle_seconds",
            "Time one scheduling cycle took, from its snapshot to its Bindings written"
            " (decisions and writes together), one observation per cycle of the leader.",
            buckets=WRITE_BUCKETS,
            registry=r,
        )
        self._pending = Gauge(
            "fedctl_scheduler_pending_workloads",
            "Workloads the leading scheduler's latest cycle left waiting, every queue"
            " together; 0 on a replica that does not lead.",
            registry=r,
        )
        r.register(_Derived(self))

    def observe_decision(self, seconds: float) -> None:
        self._decisions.observe(seconds)

    def observe_write(self, seconds: float) -> None:
        self._writes.observe(seconds)

    def observe_cycle(self, seconds: float, *, pending: int) -> None:
        """The scheduling loop's: one cycle's duration and what it left waiting."""
        self._cycles.observe(seconds)
        self._pending.set(pending)

    def observe_loop_lag(self, seconds: float) -> None:
        self._loop_lag.observe(seconds)

    async def follow_loop_lag(self) -> None:
        """Measure the event loop's lag until cancelled (a supervisor component)."""
        await loop_lag.follow(observe=self.observe_loop_lag, clock=self._clock)

    def propagation_error(self, cluster: str, operation: str, reason: str) -> None:
        self._propagation_errors.labels(cluster=cluster, operation=operation, reason=reason).inc()

    def gc_deleted(self, cluster: str, kind: str) -> None:
        """Garbage collection deleted one copy of `kind` from `cluster` (`gc.collect`)."""
        self._gc_deleted.labels(cluster=cluster, kind=kind).inc()

    def eviction(self, cluster: str, reason: str, *, replicas: int = 1) -> None:
        self._evictions.labels(cluster=cluster, reason=reason).inc(replicas)

    def set_leader(self, leading: bool) -> None:
        """The election's `observe`: this replica starts (True) or stops leading."""
        if leading != self._leading:
            self._transitions.labels(to="leader" if leading else "follower").inc()
        self._leading = leading
        self._leader.set(1 if leading else 0)
        if not leading:  # the count of a term that ended is no one's
            self._pending.set(0)

    def queue_counts(self) -> tuple[Collection[str], Mapping[str, int], Mapping[str, int]]:
        """The defined queues, and per queue how many workloads wait and are admitted.

        The leading scheduler's tally when this process leads: it counts the workloads
        that have no Binding yet too, and is what `fedctl get queues` shows. Otherwise
        the Bindings: Pending ones wait, Scheduled ones are admitted, finished ones and
        those of objects without pods are neither (as the tally counts them)."""
        latest = self.queue_view.latest() if self.queue_view is not None else None
        if latest is not None:
            tally = latest[0].tally
            return tally.queues.keys(), tally.pending, tally.admitted
        cache = self.cache
        pending: dict[str, int] = defaultdict(int)
        admitted: dict[str, int] = defaultdict(int)
        for ref, (queue, phase, _, pods) in cache.bindings.items():
            if pods and not cache.finished.get(ref):
                (admitted if phase == "Scheduled" else pending)[queue] += 1
        return cache.queues.keys(), pending, admitted

    def etcd_request(self, operation: str, code: str, seconds: float) -> None:
        """The registry's `RequestObserver` (`EtcdStore.observe`)."""
        self._etcd.labels(operation=operation, code=code).inc()
        self._etcd_latency.labels(operation=operation).observe(seconds)

    def rate_limited(self, limiter: str) -> None:
        self._limited.labels(limiter=limiter).inc()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Counts every answer, refusals of the sign-in and rate limiters included: it is
        the outermost middleware, so a 401 or 429 an SRE alerts on is seen here."""
        started = self._clock.monotonic()
        watching = _watching(request)
        method = "WATCH" if watching else request.method
        code = 500
        try:
            resp = await handler(request)
            code = resp.status
            return resp
        except web.HTTPException as exc:
            code = exc.status
            raise
        except asyncio.CancelledError:
            code = 499  # the client went away first
            raise
        finally:
            route = _route(request)
            self._requests.labels(method=method, route=route, code=str(code)).inc()
            if not watching:
                self._latency.labels(method=method, route=route).observe(
                    self._clock.monotonic() - started
                )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    async def handler(self, _: web.Request) -> web.Response:
        return web.Response(body=self.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})
