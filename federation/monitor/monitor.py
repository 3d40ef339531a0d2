"""The cluster monitor: follows the registered clusters and keeps each one's status current.

Fed by the registry (Cluster specs under `keys.prefix("clusters")`, listed then watched) and
by each member's probes and watches (`member.Tracked`); feeds the registry's ClusterStatus
keys, which it alone writes, and through them the scheduler and failover.

Structure (STYLE.md §7, §8): the registry watch and every member loop only add a cluster
name to a de-duplicating `WorkQueue`; `workers` converge one name at a time, level-based:
re-read the spec, start, restart (new connection) or stop tracking the member, then write
its status if `status.news` says it changed meaningfully or the heartbeat is due. The
write is a compare-and-swap through `TypedStore.mutate`, keeping the taints failover owns,
and carries the leader's fence (`guards`): a deposed leader's late status write fails.
Everything runs under one `asyncio.TaskGroup` inside `run()`, the coroutine the
controller's supervisor owns; cancelling it stops every loop and closes every connector.

One member's bad input never stops the others: a kubeconfig that cannot be loaded makes
that Cluster Ready=Unknown (`KubeconfigInvalid`, naming the file, line and problem), and
any other failure to connect to or follow a member is logged with its traceback and
reported on that Cluster alone (`MonitorFailed`, Unknown too). Both are this
controller's failures, not evidence that the member is down, so neither is False
(`Tracked.fail` says why; a member already False stays so). Either is tried again after a backoff
that doubles from `probe_period` up to `retry_max`, so a file fixed in place is picked up
without a restart. An exception that escaped a member's loops used to reach the
TaskGroup, which stopped the monitor and with it the whole controller, on every restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from clusters import member as member_mod
from clusters.kube import connector
from federation import clock as clock_mod
from federation import errors
from federation.monitor import status as status_mod
from federation.monitor.member import Tracked
from federation.registry import codec, keys
from federation.registry.store import Guard, Store
from federation.settings import MemberSettings, MonitorSettings
from federation.workqueue import WorkQueue
from policies.models.cluster import Cluster, ClusterStatus

__all__ = ["MONITOR_FAILED", "ClusterMonitor", "Connect"]

MONITOR_FAILED = "MonitorFailed"
"""The Ready reason (Unknown) of a member whose connector or loops failed unexpectedly
(logged with the traceback); it is tried again after a backoff."""

log = logging.getLogger(__name__)

Connect = Callable[[Cluster], Awaitable[member_mod.Member]]
"""Builds the connector for a cluster; raises errors.Invalid for an unusable kubeconfig."""


def kube_connect(settings: MemberSettings, clock: clock_mod.Clock) -> Connect:
    """The default: a `KubeConnector` from the cluster's kubeconfig."""

    async def make(cluster: Cluster) -> member_mod.Member:
        return await connector.connect(
            cluster.name, cluster.spec.connection, settings=settings, clock=clock
        )

    return make


def _seniority(tracked: Tracked) -> tuple[bool, str, str]:
    """Sort key of the members reaching one Kubernetes cluster: the keeper first. One
    whose written status already names this cluster and no other keeper is in use (Ready
    or not: a keeper that goes down stays the keeper)."""
    written = tracked.written
    in_use = (
        written is not None
        and written.cluster_id == tracked.cluster_id
        and written.duplicate_of is None
    )
    return (not in_use, tracked.cluster.metadata.creation_timestamp or "", tracked.name)


class ClusterMonitor:
    """Probes members and writes ClusterStatus; `await run()` until cancelled."""

    def __init__(
        self,
        store: Store,
        *,
        settings: MonitorSettings | None = None,
        member_settings: MemberSettings | None = None,
        clock: clock_mod.Clock = clock_mod.real,
        connect: Connect | None = None,
        guards: Callable[[], Sequence[Guard]] | None = None,
    ) -> None:
        self._settings = settings or MonitorSettings()
        self._guards = guards or (lambda: ())
        self._clock = clock
        self._connect = connect or kube_connect(member_settings or MemberSettings(), clock)
        self._clusters = codec.TypedStore(store, codec.Codec(Cluster))
        self._statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
        self._queue = WorkQueue()
        self._tracked: dict[str, Tracked] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._failures: dict[str, int] = {}
        """Cluster name → consecutive failures to connect or to keep following it."""
        self._group: asyncio.TaskGroup | None = None
        self.writes = 0
        """Status writes made (for benchmarks and logs)."""

    def pending(self) -> int:
        """Clusters with changes not yet converged (tests and benchmarks wait for zero)."""
        return self._queue.pending

    def tracked(self) -> list[str]:
        """Names of the members being watched now."""
        return sorted(self._tracked)

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                listed = await self._clusters.list(keys.prefix("clusters"))
                for item in listed.items:
                    self._queue.add(item.obj.name)
                group.create_task(self._watch(listed.revision + 1), name="monitor-registry")
                for i in range(self._settings.workers):
                    group.create_task(self._worker(), name=f"monitor-worker-{i}")
        finally:
            self._group = None
            self._queue.close()
            for name in list(self._tracked):
                await self._forget(name)

    # -- feeding the queue ------------------------------------------------------------------

    async def _watch(self, start: int) -> None:
        prefix = keys.prefix("clusters")
        async for event in self._clusters.watch(prefix, start_revision=start):
            if isinstance(event, codec.Resync):
                for name in {*self._tracked, *(i.obj.name for i in event.items)}:
                    self._queue.add(name)
                continue
            key = event.item.key if isinstance(event, codec.Put) else event.key
            self._queue.add(keys.split(key)[-1])

    # -- converging -------------------------------------------------------------------------

    async def _worker(self) -> None:
        while True:
            name = await self._queue.get()
            try:
                await self._converge(name)
            except errors.Fenced:
                raise  # no longer leading: the election stops this loop
            except errors.FedctlError as exc:
                # The member's next probe requeues it; a registry outage heals by itself.
                log.warning("cluster %s: status not converged: %s", name, exc)
            finally:
                self._queue.done(name)

    async def _converge(self, name: str) -> None:
        spec = await self._clusters.get(keys.cluster_key(name))
        tracked = self._tracked.get(name)
        if spec is None:
            self._failures.pop(name, None)
            if tracked is not None:
                await self._forget(name)
                self._requeue_kin(name, tracked.cluster_id)
                await self._statuses.mutate(
                    keys.cluster_status_key(name), lambda _cur: None, guards=tuple(self._guards())
                )
                log.info("cluster %s left: monitoring stopped, status removed", name)
            return
        if (
            tracked is None
            or tracked.cluster.spec.connection != spec.obj.spec.connection
            or tracked.conn is None  # its connection failed: try again (`_retry` queued it)
        ):
            if tracked is not None:
                await self._forget(name)
            tracked = await self._track(spec.obj, again=tracked is not None)
        else:
            tracked.cluster = spec.obj
        await self._write_if_news(tracked)

    async def _track(self, cluster: Cluster, *, again: bool = False) -> Tracked:
        """Start monitoring `cluster`: `again` after its connection changed or failed.

        The log says "joined" only for a member with no status yet: every start of the
        monitor (each leader's) tracks every member, and said "joined" of each of them."""
        stored = await self._statuses.get(keys.cluster_status_key(cluster.name))
        problem = None
        conn: member_mod.Member | None = None
        try:
            conn = await self._connect(cluster)
        except errors.Invalid as exc:
            log.warning("cluster %s: %s", cluster.name, exc)
            problem = member_mod.Readiness(False, "KubeconfigInvalid", str(exc))
        except Exception as exc:  # one member's failure must not stop the rest
            log.exception("cluster %s: cannot connect", cluster.name)
            problem = member_mod.Readiness(False, MONITOR_FAILED, f"cannot connect: {exc!r}")
        if problem is None:
            if again:
                log.info("cluster %s: connected again, monitoring", cluster.name)
            elif stored is None:
                log.info("cluster %s joined: monitoring", cluster.name)
            else:
                log.info("cluster %s: monitoring resumed", cluster.name)
        else:
            self._retry(cluster.name)
        tracked = Tracked(
            cluster,
            conn,
            settings=self._settings,
            clock=self._clock,
            notify=self._queue.add,
            stored=stored.obj if stored else None,
            problem=problem,
        )
        self._tracked[cluster.name] = tracked
        if conn is not None and self._group is not None:
            self._tasks[cluster.name] = self._group.create_task(
                self._follow(tracked), name=f"monitor-{cluster.name}"
            )
        return tracked

    async def _follow(self, tracked: Tracked) -> None:
        """Run one member's loops; an exception they raise is that member's problem only:
        it is logged, shown on its Ready condition, and its loops start again after a
        backoff."""
        while True:
            try:
                await tracked.run()
                return
            except Exception as exc:  # one member's failure must not stop the rest
                log.exception("cluster %s: monitoring failed", tracked.name)
                tracked.fail(MONITOR_FAILED, f"monitoring failed: {exc!r}")
                self._queue.add(tracked.name)
                await self._clock.sleep(self._backoff(tracked.name))

    def _backoff(self, name: str) -> float:
        """Seconds before trying `name` again: doubling with each failure in a row."""
        failures = self._failures.get(name, 0)
        self._failures[name] = failures + 1
        return float(
            min(self._settings.probe_period * 2 ** min(failures, 16), self._settings.retry_max)
        )

    def _retry(self, name: str) -> None:
        """Converge `name` again (connect anew) after the backoff."""
        self._queue.add_after(name, self._backoff(name))

    async def _forget(self, name: str) -> None:
        tracked = self._tracked.pop(name, None)
        task = self._tasks.pop(name, None)
        if task is not None:
            task.cancel()
            # `wait`, not `await task` under suppress(CancelledError): that swallowed the
            # cancellation of the worker running this when the monitor itself was being
            # stopped (a change of leader), and the worker, going on, kept the monitor
            # from ever ending, so it never ran again.
            await asyncio.wait({task})
        if tracked is not None:
            await tracked.close()

    def _duplicate_of(self, tracked: Tracked) -> str | None:
        """The member tracked under another name that reaches the same Kubernetes cluster
        and keeps it, or None when `tracked` is the one that does (or no other reaches it).

        Which one keeps it: one already in use (`_seniority`) before one that is not, then
        the Cluster created first, then the name. So a name joined
        later (`--no-verify`, `fedctl apply` of a Cluster) never takes the member from the
        one whose copies run there, and the choice holds across restarts."""
        uid = tracked.cluster_id
        if uid is None:
            return None
        same = [t for t in self._tracked.values() if t.cluster_id == uid]
        keeper = min(same, key=_seniority)
        return None if keeper is tracked else keeper.name

    def _requeue_kin(self, name: str, uid: str | None) -> None:
        """Look again at every other member reaching cluster `uid`, or judged a duplicate
        of `name`: which of them keeps the member may have changed."""
        for other in self._tracked.values():
            written = other.written.duplicate_of if other.written else None
            if other.name != name and (
                (uid is not None and other.cluster_id == uid) or written == name
            ):
                self._queue.add(other.name)

    async def _write_if_news(self, tracked: Tracked) -> None:
        observed = tracked.observed(duplicate_of=self._duplicate_of(tracked))
        if observed.ready():
            self._failures.pop(tracked.name, None)
        if tracked.written is None or tracked.written.cluster_id != observed.cluster_id:
            self._requeue_kin(tracked.name, observed.cluster_id)
        now = self._clock.monotonic()
        why = status_mod.news(
            tracked.written, observed, fraction=self._settings.capacity_change_fraction
        )
        if why is None and not tracked.heartbeat_due(now):
            return
        written = await self._statuses.mutate(
            keys.cluster_status_key(tracked.name),
            lambda current: status_mod.merge_owned(current, observed),
            guards=tuple(self._guards()),
        )
        self.writes += 1
        tracked.wrote(written.obj if written else observed, at=now)
        log.debug("cluster %s: status written (%s)", tracked.name, why or "heartbeat")
