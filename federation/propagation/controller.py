"""The propagator: Bindings become objects in members, quota follows, status comes back.

Fed by the registry (watches on workloads, Bindings, policies, Clusters and their
statuses, mirrored in memory) and by member watches of what it applied; feeds the members
(through the applier) and the registry keys it alone writes: Works, workload status and
FederatedResourceQuota status. Run under the controller's supervisor as `propagator`;
under HA every one of those registry writes carries the leader's fence (`guards`), so a
deposed leader's late write fails with `errors.Fenced` and the propagator stops until
this replica leads again.

    registry watches ─┐                         ┌─ WorkloadSync.sync(ref)  → Works, members
    member watches  ──┼─► WorkQueue (de-dup) ──►┤
    retries (backoff)─┘                         └─ QuotaSync.sync(ns, name) → ResourceQuotas

Start-up order matters: mirrors are loaded and the Works this controller wrote are read
before garbage collection judges member objects, and GC finishes before any worker
applies, so a fresh apply is never mistaken for an orphan.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from federation import clock as clock_mod
from federation import errors
from federation.propagation import applier as applier_mod
from federation.propagation import (
    converge,
    gc,
    informer,
    interpreter,
    quota,
    quota_sync,
    render,
)
from federation.propagation import deps as deps_mod
from federation.propagation import status as status_mod
from federation.propagation import works as works_mod
from federation.propagation.applier import Applier
from federation.propagation.members import Connect, Members, kube_connect
from federation.registry import codec, events, keys, objects
from federation.registry import store as st
from federation.settings import MemberSettings, PropagationSettings
from federation.workqueue import WorkQueue
from policies.models.base import KubeObject
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.frq import FederatedResourceQuota
from policies.models.work import QuotaStatus, Work, WorkloadStatus

__all__ = ["Propagator"]

log = logging.getLogger(__name__)

_BACKOFF_MAX = 30.0
_UNEXPECTED = 5.0
"""Seconds before the first retry of an item whose pass raised what nothing expected."""


class Propagator:
    """Build with the store and settings; `run()` until cancelled."""

    def __init__(
        self,
        store: st.Store,
        *,
        settings: PropagationSettings | None = None,
        member_settings: MemberSettings | None = None,
        clock: clock_mod.Clock = clock_mod.real,
        connect: Connect | None = None,
        claim: converge.Claim | None = None,
        workers: int | None = None,
        guards: works_mod.Guards | None = None,
        failed: applier_mod.Failed | None = None,
        collected: Callable[[str, str], None] | None = None,
    ) -> None:
        """`failed`: told of every apply or delete a member refused or did not answer
        (`Metrics.propagation_error`); `collected(cluster, kind)`: of every copy garbage
        collection deleted (`Metrics.gc_deleted`)."""
        self.collected = collected
        self.settings = settings or PropagationSettings()
        self.store = store
        self.guards = guards or works_mod.unfenced
        self.clock = clock
        self.workers = workers or self.settings.workers
        self.queue = WorkQueue(clock)
        self.members = Members(
            connect or kube_connect(member_settings or MemberSettings(), clock),
            concurrency=self.settings.concurrency_per_member,
        )
        self.applier = Applier(self.members, failed=failed)
        obj_codec = objects.ObjectCodec()
        self.deps = deps_mod.Index()
        self.workloads = informer.Informer[KubeObject](
            codec.TypedStore(store, obj_codec), keys.prefix("workloads"), on_change=self._template
        )
        self.bindings = informer.Informer[Binding](
            codec.TypedStore(store, codec.Codec(Binding)),
            keys.prefix("bindings"),
            on_change=self._keyed,
        )
        self.policies = informer.Informer[KubeObject](
            codec.TypedStore(store, obj_codec), keys.prefix("policies"), on_change=self._policy
        )
        self.clusters = informer.Informer[Cluster](
            codec.TypedStore(store, codec.Codec(Cluster)),
            keys.prefix("clusters"),
            on_change=self._cluster,
        )
        self.cluster_statuses = informer.Informer[ClusterStatus](
            codec.TypedStore(store, codec.Codec(ClusterStatus)),
            keys.prefix("clusterstatus"),
            on_change=self._readiness,
        )
        self._group: asyncio.TaskGroup | None = None
        self.watches = status_mod.StatusWatches(
            self.members,
            cluster=lambda name: self.clusters.get(keys.cluster_key(name)),
            notify=self._status_changed,
            spawn=self._spawn,
            clock=clock,
        )
        self.sync = converge.WorkloadSync(
            workloads=self.workloads,
            bindings=self.bindings,
            policies=self.policies,
            clusters=self.clusters,
            works=codec.TypedStore(store, codec.Codec(Work)),
            statuses=codec.TypedStore(store, codec.Codec(WorkloadStatus)),
            applier=self.applier,
            watches=self.watches,
            claim=claim,
            now=clock.now,
            recorder=events.Recorder(store, clock=clock),
            guards=self.guards,
            cluster_statuses=self.cluster_statuses,
            deps=self.deps,
        )
        self.quotas = quota_sync.QuotaSync(
            policies=self.policies,
            clusters=self.clusters,
            store=codec.TypedStore(store, codec.Codec(QuotaStatus)),
            applier=self.applier,
            watches=self.watches,
            guards=self.guards,
            untouchable=self.sync.untouchable,
        )
        self._failures: dict[str, int] = {}
        self.ready = asyncio.Event()
        """Set once start-up (mirrors, GC) is done and workers run."""

    # -- feeding the queue -------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        if self._group is None:
            coro.close()
            return
        self._group.create_task(coro, name=name)

    def _status_changed(self, item: str) -> None:
        if self.settings.status_coalesce > 0:
            self.queue.add_after(item, self.settings.status_coalesce)
        else:
            self.queue.add(item)

    def _keyed(self, key: str, old: object, new: object) -> None:
        """A Binding changed: its workload, and the dependencies that follow it."""
        ref = keys.parse_workload_key(key)
        self.queue.add(status_mod.workload_item(ref))
        self._dependencies(ref)

    def _template(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        """A template changed: it, and what it references now or did before; created or
        deleted, the workloads referencing it too (their status says whether it exists)."""
        ref = keys.parse_workload_key(key)
        self.queue.add(status_mod.workload_item(ref))
        others = self.deps.update(ref, new)
        if old is None or new is None:
            others |= self.deps.needing(ref)
        if new is None:
            self.sync.template_gone(ref)
        for other in others:
            self.queue.add(status_mod.workload_item(other))

    def _dependencies(self, ref: keys.WorkloadRef) -> None:
        for dep in self.deps.held(ref):
            self.queue.add(status_mod.workload_item(dep))

    def _all_workloads(self) -> None:
        refs = {keys.parse_workload_key(k) for k in self.bindings.items}
        refs |= {keys.parse_workload_key(k) for k in self.workloads.items}
        refs |= {keys.parse_workload_key(f"{keys.ROOT}/workloads/{r}") for r in self.sync.works}
        for ref in sorted(refs, key=str):
            self.queue.add(status_mod.workload_item(ref))

    def _all_quotas(self) -> None:
        for obj in [i.obj for i in self.policies.items.values()]:
            if isinstance(obj, FederatedResourceQuota):
                ns = obj.metadata.namespace or "default"
                self.queue.add(status_mod.quota_item(ns, obj.metadata.name))
        for key in self.quotas.written:
            _, _, ns, name = keys.split(key)
            self.queue.add(status_mod.quota_item(ns, name))

    def _policy(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        obj = new or old
        if new is None:
            self.sync.policy_gone(key)
        if isinstance(obj, FederatedResourceQuota):
            ns = obj.metadata.namespace or "default"
            self.queue.add(status_mod.quota_item(ns, obj.metadata.name))
        elif obj is not None and obj.kind != "Queue":
            self.sync.epoch += 1
            self._all_workloads()

    def _cluster(self, key: str, old: Cluster | None, new: Cluster | None) -> None:
        if new is None and old is not None:
            # The member left: close its connector so its status watches end.
            self._spawn(self.members.forget(old.metadata.name), f"forget-{old.metadata.name}")
        self._all_workloads()
        self._all_quotas()

    def _readiness(self, key: str, old: ClusterStatus | None, new: ClusterStatus | None) -> None:
        """A member turned Ready or stopped being so: every workload with a copy there is
        aggregated again. Its copies' last reports count again, or stop counting, although
        no watch event says anything changed (a dead member sends none, and a member back
        with the same pods relists what was already seen)."""
        if status_mod.not_ready(old) == status_mod.not_ready(new):
            return
        name = keys.split(key)[-1]
        for ref_text, per_cluster in list(self.sync.works.items()):
            if name in per_cluster:
                self.queue.add(f"w|{ref_text}")

    # -- running -----------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                await self._start()
                for mirror in self._mirrors():
                    group.create_task(mirror.run(), name=f"propagator-watch-{mirror.prefix}")
                self._all_workloads()
                self._all_quotas()
                for i in range(self.workers):
                    group.create_task(self._worker(), name=f"propagator-worker-{i}")
                if self.settings.gc_interval > 0:
                    group.create_task(self._collect_again(), name="propagator-gc")
                self.ready.set()
        finally:
            self._group = None
            self.queue.close()
            await self.members.close()

    def _mirrors(self) -> tuple[informer.Informer[Any], ...]:
        return (
            self.clusters,
            self.cluster_statuses,
            self.policies,
            self.workloads,
            self.bindings,
        )

    async def _start(self) -> None:
        for mirror in self._mirrors():
            await mirror.load()
        for key, template in self.workloads.items.items():
            self.deps.update(keys.parse_workload_key(key), template.obj)
        works = await self.sync.works_store.list(keys.prefix("works"))
        for item in works.items:
            ref = keys.parse_workload_key(item.key)
            self.sync.works.setdefault(str(ref), {})[item.obj.spec.cluster] = item
        for ref_text in self.sync.works:
            ref = keys.parse_workload_key(f"{keys.ROOT}/workloads/{ref_text}")
            self.deps.update_copies(ref, self.sync.copy_references(ref))
        statuses = await self.sync.status_store.list(keys.prefix("workloadstatus"))
        for status in statuses.items:
            self.sync.written[str(keys.parse_workload_key(status.key))] = status
        quota_statuses = await self.quotas.store.list(f"{keys.ROOT}/policystatus/{quota_sync.FRQ}/")
        self.quotas.written = {item.key: item for item in quota_statuses.items}
        await self._forget_left_statuses()
        await self._collect_garbage()

    async def _forget_left_statuses(self) -> None:
        """Delete each ClusterStatus whose Cluster is gone.

        The monitor removes a member's status when it sees its Cluster deleted, but a
        Cluster deleted while no controller ran (by hand in etcd, or a restore) was never
        seen going, and its status stayed for good. Each delete holds only while the
        Cluster is still absent and the status unchanged: one joined again meanwhile keeps
        the status its monitor writes."""
        for key, stored in list(self.cluster_statuses.items.items()):
            name = keys.split(key)[-1]
            if self.clusters.get(keys.cluster_key(name)) is not None:
                continue
            ops: list[st.Op] = [
                st.Delete(key, revision=stored.revision),
                st.Check(keys.cluster_key(name), 0),
            ]
            try:
                await self.store.commit(ops, guards=self.guards())
            except errors.Conflict:
                continue  # joined again, or its status written, since the listing
            except errors.NotFound:
                continue
            log.warning("cluster %s: removed the status left after its Cluster was deleted", name)

    async def _collect_again(self) -> None:
        """Collect garbage every `gc_interval` while running, over the kinds in use that
        no status watch follows in that member.

        Why again: member calls are not fenced. A deposed leader's apply still in flight
        when this replica took over can land after the start-up pass, and a copy nothing
        here describes would run for good (a batch Job twice). Where a watch follows the
        kind, its event brings the copy to a worker, which removes it at once
        (`WorkloadSync._remove_stray`); this pass lists only the rest, so a fleet's
        members are not listed whole every minute.
        """
        while True:
            await self.clock.sleep(self.settings.gc_interval)
            await self._collect_garbage(everything=False)

    async def _collect_garbage(self, *, everything: bool = True) -> None:
        kinds = {("v1", "ResourceQuota")}
        if everything:
            kinds |= set(interpreter.known_kinds())
        for item in self.workloads.items.values():
            kinds.add((item.obj.api_version, item.obj.kind))
        for per_cluster in self.sync.works.values():
            for work in per_cluster.values():
                kinds.add((work.obj.spec.workload.api_version, work.obj.spec.workload.kind))

        budget = self.settings.request_timeout * 3

        async def one(cluster: Cluster) -> None:
            if self.sync.untouchable(cluster.name) is not None:
                return  # another name's copies run there: none of them is an orphan
            try:
                async with asyncio.timeout(budget):
                    conn = await self.members.get(cluster)
                    removed = await gc.collect(
                        cluster.name,
                        conn,
                        kinds=kinds,
                        wanted=self._wanted,
                        skip=None if everything else self._followed(cluster.name),
                        failed=self.applier.failed,
                        deleted=self.collected,
                    )
                    for namespace in await gc.collect_namespaces(
                        cluster.name,
                        conn,
                        kept=lambda ns: self._namespace_kept(cluster.name, ns),
                        failed=self.applier.failed,
                    ):
                        self.applier.forget_namespace(cluster.name, namespace)
                if removed:
                    log.warning(
                        "gc: deleted %d copies from %s that no Work in the registry wants",
                        removed,
                        cluster.name,
                    )
            except (errors.FedctlError, TimeoutError) as exc:
                # At start-up a skipped member keeps what a crash left; later passes come
                # round again within a minute, so a member down for hours says so at info.
                level = logging.WARNING if everything else logging.INFO
                log.log(level, "gc: %s skipped: %s", cluster.name, _reason(exc, budget))

        await asyncio.gather(*(one(item.obj) for item in self.clusters.items.values()))

    def _namespace_kept(self, cluster: str, namespace: str) -> bool:
        """Whether fedctl keeps something in `namespace` on `cluster` (`gc.collect_namespaces`):
        a copy or quota in it, an apply into it under way, a workload of it placed there
        but not yet applied (deleted, the namespace was terminating when its apply came),
        or its Namespace template wanted or with a copy there (it adopts the namespace)."""
        if self.sync.occupied(namespace, cluster) or self.applier.busy(cluster, namespace):
            return True
        own = objects.namespace_workload(namespace)
        if cluster in self.sync.works.get(str(own), {}):
            return True
        inside = f"{keys.prefix('workloads')}{namespace}/"
        refs = [keys.parse_workload_key(k) for k in self.workloads.items if k.startswith(inside)]
        for ref in [own, *refs]:
            _, _, targets, evicting = self.sync.wanted(ref)
            if cluster in targets or cluster in evicting:
                return True
        return False

    def _followed(self, cluster: str) -> Callable[[str, str], bool]:
        """Kinds a later pass need not list in `cluster`: their watch shows every copy
        (quotas are listed still: their strays reach no worker)."""
        return lambda api_version, kind: (
            kind != "ResourceQuota" and self.watches.synced(cluster, api_version, kind)
        )

    def _wanted(self, cluster: str, obj: Any) -> bool:
        meta = obj.get("metadata") or {}
        frq_name = (meta.get("labels") or {}).get(quota.LABEL_FRQ)
        if obj.get("kind") == "ResourceQuota" and frq_name:
            frq = self.quotas.frq(meta.get("namespace", ""), frq_name)
            return frq is not None and any(
                a.cluster_name == cluster for a in frq.spec.static_assignments
            )
        ref_text = (meta.get("annotations") or {}).get(render.REF_ANNOTATION)
        if not ref_text:
            return True  # ours by label but not a workload copy (e.g. a namespace)
        if cluster in self.sync.works.get(ref_text, {}):
            return True
        try:
            ref = keys.parse_workload_key(f"{keys.ROOT}/workloads/{ref_text}")
        except errors.Invalid:
            return False
        _, _, targets, evicting = self.sync.wanted(ref)
        return cluster in targets or cluster in evicting

    async def _worker(self) -> None:
        while True:
            item = await self.queue.get()
            try:
                delay = await self._converge(item)
            except errors.Fenced:
                raise  # deposed: no retry can succeed; the election stops or restarts this run
            except errors.FedctlError as exc:
                log.warning("propagation of %s not converged: %s", item, exc)
                delay = 1.0
            except Exception:
                # A fault in converging one object (a bug, a shape nothing expected) is
                # that object's: logged with it and retried with backoff. Let out, it
                # stopped the TaskGroup, and the supervisor stopped the whole controller,
                # again on every restart while the object was there.
                log.exception("propagation of %s failed unexpectedly; retrying later", item)
                delay = _UNEXPECTED
            finally:
                self.queue.done(item)
            if delay is None:
                self._failures.pop(item, None)
            else:
                count = self._failures.get(item, 0)
                self._failures[item] = count + 1
                self.queue.add_after(item, min(delay * (2**count), _BACKOFF_MAX))

    async def _converge(self, item: str) -> float | None:
        kind, _, rest = item.partition("|")
        if kind == "q":
            ns, _, name = rest.partition("/")
            delay = await self.quotas.sync(ns, name)
            self._holding(ns)
            return delay
        ref = keys.parse_workload_key(f"{keys.ROOT}/workloads/{rest}")
        before = set(self.sync.works.get(rest, ()))
        delay = await self.sync.sync(ref)
        if set(self.sync.works.get(rest, ())) != before:
            # Its dependencies go where its copies are, and leave once they have.
            self._dependencies(ref)
        # And stay while a copy references them: one that stopped doing so (its member
        # copy updated, an override changed) frees them there, one that started needs them.
        for dep in self.deps.update_copies(ref, self.sync.copy_references(ref)):
            self.queue.add(status_mod.workload_item(dep))
        self._holding(ref.namespace)
        return delay

    def _holding(self, namespace: str) -> None:
        """A copy or a quota in `namespace` was worked on: its Namespace, held in a member
        for what is still in it there (`converge`), is looked at again."""
        if namespace in self.sync.holding:
            self.queue.add(status_mod.workload_item(objects.namespace_workload(namespace)))

    def remembered(self) -> dict[str, int]:
        """How many entries each per-workload memory of this term holds
        (`WorkloadSync.remembered`, what the status watches saw, items being retried):
        all come back down as workloads are deleted, however many went through."""
        return {
            **self.sync.remembered(),
            "seen": len(self.watches.seen),
            "retrying": len(self._failures),
        }

    @property
    def pending(self) -> int:
        return self.queue.pending


def _reason(exc: BaseException, budget: float) -> str:
    """Why a member's GC pass was skipped, in words: a timeout's own text is empty."""
    if isinstance(exc, TimeoutError):
        return f"timed out after {budget:g}s"
    return str(exc)
