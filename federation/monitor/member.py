"""What the monitor observes about one member: probe loop, node and pod watches, the result.

Fed by the member's API through a `clusters.member.Member` (a connector per member); feeds
the monitor's work queue (a key per observed change) and, through `observed()`, the
ClusterStatus its workers write. One `Tracked` per registered cluster; `run()` is its
long-lived coroutine, started and cancelled by the monitor's TaskGroup.

Why probes and watches live here and not in the workers: a blackholed member makes each
probe last `probe_timeout`; running each member's probes in its own loop means a dead
member never delays another's verdict, while workers only do quick registry writes.
Capacity comes from the node and pod watches (list once, then events; a 410 re-lists
inside the connector, any other failure re-lists here after a capped backoff), never from
listing on every probe.

Discovery (Kubernetes version, served APIs, the kube-system uid naming the cluster) is
read again every `discovery_period` while the member answers, and at the next good probe
after any sign that it restarted (a failed probe, a broken or re-listed watch): read only
once, a member upgraded or rebuilt behind the same endpoint kept its old version and
APIs, so work needing a newly installed API stayed Pending, and its old uid, so a second
name for it was not seen as a duplicate. Karmada refreshes both on every status sync.
How discovery last went is the `CompleteAPIEnablements` condition (as Karmada's); a
member that rejects the credentials (401, or 403 on discovery) while answering its
anonymous health endpoints is reported Ready=False with that reason, since nothing can be
applied there.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
from collections.abc import Callable
from dataclasses import replace

from clusters import member as member_mod
from federation import clock as clock_mod
from federation.monitor import capacity, probe
from federation.settings import MonitorSettings
from policies.models.cluster import (
    APIEnablement,
    APIResource,
    Cluster,
    ClusterStatus,
    Condition,
)

__all__ = ["APIS", "DUPLICATE", "Tracked", "cluster_id", "rejected"]

DUPLICATE = "DuplicateCluster"
"""The Ready reason of a member that is a Kubernetes cluster already joined under another
name (`Tracked.observed`)."""

APIS = "CompleteAPIEnablements"
"""The condition saying whether the last discovery of the member's APIs succeeded."""

log = logging.getLogger(__name__)


def rejected(exc: member_mod.MemberError) -> str | None:
    """What a member's refusal of discovery says about the credentials, or None when the
    error is not such a refusal (401, or 403 on `/api`)."""
    if not isinstance(exc, member_mod.MemberRejected) or exc.code not in (401, 403):
        return None
    what = "rejects the credentials" if exc.code == 401 else "refuses discovery to the user"
    return (
        f"{exc.code} {exc.reason or 'Unauthorized'} on /api: the member {what} of this"
        f" Cluster's kubeconfig ({exc.detail})"
    )


def _enablements(groups: list[member_mod.APIGroupResources]) -> list[APIEnablement]:
    return [
        APIEnablement(
            group_version=g.group_version,
            resources=[APIResource(name=r.name, kind=r.kind) for r in g.resources],
        )
        for g in groups
    ]


class Tracked:
    """One member as the monitor sees it; mutated only by its own loops."""

    def __init__(
        self,
        cluster: Cluster,
        conn: member_mod.Member | None,
        *,
        settings: MonitorSettings,
        clock: clock_mod.Clock,
        notify: Callable[[str], None],
        stored: ClusterStatus | None,
        problem: member_mod.Readiness | None = None,
    ) -> None:
        self.cluster = cluster
        self.name = cluster.name
        self.conn = conn
        self._settings = settings
        self._clock = clock
        self._notify = notify
        self.index = capacity.CapacityIndex()
        self.synced: set[str] = set()
        self.version = stored.kubernetes_version if stored else None
        self.cluster_id = stored.cluster_id if stored else None
        self.apis = list(stored.api_enablements) if stored else []
        self._stored = stored
        self._discovered_at: float | None = None
        self._stale = True
        """Discovery is due at the next good probe (never read, or the member may have
        restarted)."""
        self.apis_condition = stored.condition(APIS) if stored else None
        self.health = _resume(stored)
        self.written: ClusterStatus | None = stored
        self.written_at: float | None = clock.monotonic() if stored else None
        self.created = clock.now()
        self._duplicate_since: _dt.datetime | None = None
        if stored is not None and stored.duplicate_of is not None:
            ready = stored.condition("Ready")
            self._duplicate_since = ready.last_transition_time if ready else None
        if problem is not None:
            # Nothing to probe: said at once, and stays until a new try connects.
            self.fail(problem.reason, problem.message)

    def fail(self, reason: str, message: str) -> None:
        """The member cannot be followed for a reason on this controller's side (its
        connection cannot be built, or its loops failed): Ready turns Unknown with that
        reason, not False.

        Such a failure says nothing about the member. Judged False, a replica started
        without the kubeconfig its members' connections name took the lease, marked the
        whole fleet down at once and, once the eviction grace ran out, evicted healthy
        work everywhere. Unknown is what Kubernetes says of a node it has no word from,
        and failover only stops placing work there (NoSchedule), never evicts for it. A
        member already judged down on a probe's evidence stays False, reason and all (its
        taint, and the purge of its stale copies on return, follow from that reason): no
        newer evidence says otherwise. `since` is kept while the status holds, so a retry
        that fails alike is not news."""
        health = self.health
        if health.status == "False":
            self.health = replace(health, last_error=message)
            return
        since = health.since if health.status == "Unknown" else self._clock.now()
        self.health = replace(
            health,
            status="Unknown",
            reason=reason,
            message=message,
            since=since,
            last_error=message,
        )

    # -- the loops --------------------------------------------------------------------------

    async def run(self) -> None:
        """Probe every period and follow nodes and pods until cancelled."""
        if self.conn is None:
            return
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._probe_loop(), name=f"monitor-probe-{self.name}")
            tg.create_task(self._follow("Node"), name=f"monitor-nodes-{self.name}")
            tg.create_task(self._follow("Pod"), name=f"monitor-pods-{self.name}")

    async def _probe_loop(self) -> None:
        assert self.conn is not None
        while True:
            started = self._clock.monotonic()
            result = await self.conn.ready(timeout=self._settings.probe_timeout)
            if not result.ok:
                self._stale = True
            elif self._discovery_due(started):
                # Before Ready turns True, so the status that says Ready has version and APIs.
                await self._discover(started)
            before = self.health.status
            self.health = probe.observe(
                self.health, result, now=started, wall=self._clock.now(), settings=self._settings
            )
            if self.health.status != before:
                log.log(
                    _level(before, self.health.status),
                    "cluster %s Ready=%s: %s",
                    self.name,
                    self.health.status,
                    self.health.message,
                )
            self._notify(self.name)
            # A member not Ready is probed again sooner: until its return is seen nothing
            # acts on it, and a batch job that moved away runs on in its old copy there.
            period = self._settings.probe_period
            if self.health.status != "True":
                period = min(period, self._settings.recovery_probe_period)
            await self._clock.sleep(max(0.0, period - (self._clock.monotonic() - started)))

    def _discovery_due(self, now: float) -> bool:
        at = self._discovered_at
        return self._stale or at is None or now - at >= self._settings.discovery_period

    async def _discover(self, now: float) -> None:
        assert self.conn is not None
        # Each request gets the probe timeout, not the chain of five: a member answering
        # every request within it but slowly (the `slow` fault) is degraded, not stale.
        seconds = self._settings.probe_timeout
        try:
            version = await self.conn.version(timeout=seconds)
            apis = _enablements(await self.conn.discover(timeout=seconds))
            async with asyncio.timeout(seconds):
                uid = await cluster_id(self.conn)
        except TimeoutError:
            self._discovered(None, f"no answer within {seconds:g}s")
            return
        except member_mod.MemberError as exc:
            self._discovered(rejected(exc), str(exc))
            return
        if uid != self.cluster_id and self.cluster_id is not None:
            log.warning(
                "cluster %s: now reaches kube-system uid %s (was %s): the member was rebuilt"
                " or replaced",
                self.name,
                uid,
                self.cluster_id,
            )
        self.version, self.apis, self.cluster_id = version, apis, uid
        self._discovered_at, self._stale = now, False
        self._discovered(None, None)

    def _discovered(self, refused: str | None, failed: str | None) -> None:
        """Record how discovery went as the CompleteAPIEnablements condition."""
        if refused is not None:
            status, reason, message = "False", "Unauthorized", refused
        elif failed is not None:
            status, reason = "False", "DiscoveryFailed"
            message = f"version and APIs not read again, those shown may be stale: {failed}"
        else:
            status, reason = "True", "Complete"
            message = f"{len(self.apis)} group-versions served"
        old = self.apis_condition
        if status == "False" and (old is None or (old.status, old.reason) != (status, reason)):
            log.warning("cluster %s: discovery failed: %s", self.name, message)
        since = old.last_transition_time if old and old.status == status else self._clock.now()
        self.apis_condition = Condition(
            type=APIS, status=status, reason=reason, message=message, last_transition_time=since
        )

    async def _follow(self, kind: str) -> None:
        assert self.conn is not None
        backoff = min(self._settings.probe_period, self._settings.watch_backoff_max)
        while True:
            try:
                async for event in self.conn.follow("v1", kind):
                    if self._apply(kind, event):
                        self._notify(self.name)
                    backoff = min(self._settings.probe_period, self._settings.watch_backoff_max)
            except member_mod.MemberError as exc:
                self._stale = True
                log.debug("cluster %s: %s watch ended: %s", self.name, kind, exc)
            await self._clock.sleep(backoff)
            backoff = min(backoff * 2, self._settings.watch_backoff_max)

    def _apply(self, kind: str, event: member_mod.Relisted | member_mod.Changed) -> bool:
        nodes = kind == "Node"
        if isinstance(event, member_mod.Relisted):
            if kind in self.synced:
                self._stale = True  # listed again: the member may have restarted
            (self.index.replace_nodes if nodes else self.index.replace_pods)(event.items)
            self.synced.add(kind)
            return True
        if nodes:
            return self.index.node_event(event.type, event.object)
        return self.index.pod_event(event.type, event.object)

    # -- the result -------------------------------------------------------------------------

    def observed(self, *, duplicate_of: str | None = None) -> ClusterStatus:
        """The status as observed now (capacity from the stored one until both lists arrived).

        `duplicate_of`: the Cluster joined earlier that reaches the same Kubernetes cluster
        (the monitor compares cluster ids). Such a member is reported not Ready, whatever its
        probes say, so the scheduler places nothing on it and failover's taints keep it
        empty: each copy there is the other name's, and applying or deleting through this
        name would overwrite or delete it."""
        if {"Node", "Pod"} <= self.synced:
            cap = self.index.summary()
            flavors, totals = list(cap.flavors), cap.totals
        elif self._stored is not None:
            flavors, totals = list(self._stored.flavors), self._stored.totals
        else:
            flavors, totals = [], ClusterStatus().totals
        condition = self._refused(self.health.condition(created=self.created))
        if duplicate_of is None:
            self._duplicate_since = None
        else:
            self._duplicate_since = self._duplicate_since or self._clock.now()
            condition = condition.model_copy(
                update={
                    "status": "False",
                    "reason": DUPLICATE,
                    "message": f"the Kubernetes cluster already joined as {duplicate_of}"
                    f" (kube-system uid {self.cluster_id}): nothing is placed, applied or"
                    f" deleted through {self.name}. Use {duplicate_of}, and unjoin {self.name}",
                    "last_transition_time": self._duplicate_since,
                }
            )
        apis = [self.apis_condition] if self.apis_condition is not None else []
        return ClusterStatus(
            conditions=[condition, *apis],
            kubernetes_version=self.version,
            cluster_id=self.cluster_id,
            duplicate_of=duplicate_of,
            api_enablements=self.apis,
            flavors=flavors,
            totals=totals,
            last_heartbeat=self.health.last_success,
            probe_failures=self.health.failing,
        )

    def _refused(self, ready: Condition) -> Condition:
        """Ready as probed, or False when the member answers its health endpoints (open
        to anyone) but rejects these credentials: showing it Ready, with no APIs, id or
        capacity, hid that nothing could be applied there."""
        apis = self.apis_condition
        if ready.status != "True" or apis is None or apis.reason != "Unauthorized":
            return ready
        return ready.model_copy(
            update={
                "status": "False",
                "reason": "Unauthorized",
                "message": f"readyz answers, but {apis.message}",
                "last_transition_time": apis.last_transition_time,
            }
        )

    def wrote(self, status: ClusterStatus, *, at: float) -> None:
        self.written, self.written_at, self._stored = status, at, status

    def heartbeat_due(self, now: float) -> bool:
        return self.written_at is None or now - self.written_at >= self._settings.heartbeat

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()


def _resume(stored: ClusterStatus | None) -> probe.Health:
    """Carry a stored Ready condition over a controller restart instead of going Unknown,
    and the run of failed probes it was in, so the failure threshold is not counted again
    from the start (`probe.observe` judges whether the run is the same)."""
    ready = stored.condition("Ready") if stored else None
    if ready is None:
        return probe.Health()
    when: _dt.datetime = ready.last_transition_time
    return probe.Health(
        status=ready.status,
        reason=ready.reason,
        message=ready.message,
        since=when,
        failing=stored.probe_failures if stored else None,
    )


async def cluster_id(conn: member_mod.Member) -> str | None:
    """The member's kube-system namespace uid: what names the Kubernetes cluster whatever
    kubeconfig or name reaches it. None when it cannot be read (no such namespace, or
    no right to read it)."""
    try:
        found = await conn.get(member_mod.ObjectRef("v1", "Namespace", "kube-system"))
    except member_mod.MemberError:
        return None
    uid = (found.get("metadata") or {}).get("uid")
    return str(uid) if uid else None


def _level(before: probe.Status, after: probe.Status) -> int:
    """How loud a change of a member's Ready condition is logged: its first Ready at INFO,
    any other change at WARNING, the default level, so a member going away and coming
    back is in the log a controller keeps by default (a member lost for a minute, its
    work moved, left not a line there)."""
    return logging.INFO if (before, after) == ("Unknown", "True") else logging.WARNING
