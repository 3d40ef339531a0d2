"""The control plane of one simulated cluster: store events in, converging handlers out.

`SimCluster` builds one `Controllers` per store. It registers a store listener that keeps
the shared indexes current (scheduler node cache, pods by owner and by node, quota usage)
and only puts keys on the work queue; one worker then runs the handler for each key, one
at a time (STYLE §7: watches feed queues, workers converge). It also registers the quota
admission hooks. Handlers live in `controllers_workloads`, `controllers_statefulset`,
`controllers_jobs`, `kubelet` and `controllers_nodes`; the scheduler's bind step is here
because it is the only handler that needs the unschedulable-pod bookkeeping.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from clusters.sim import controllers_jobs as jobs
from clusters.sim import controllers_nodes as nodes_ctl
from clusters.sim import controllers_statefulset as sts_ctl
from clusters.sim import controllers_workloads as workloads
from clusters.sim import kubelet, pod_deps, scheduler
from clusters.sim.api_errors import ApiError
from clusters.sim.clock import Clock
from clusters.sim.controllers_base import (
    CLAIM,
    CONFIGMAP,
    DEPLOYMENT,
    JOB,
    NODE,
    POD,
    PYTORCHJOB,
    QUOTA,
    REPLICASET,
    SECRET,
    SERVICEACCOUNT,
    STATEFULSET,
    VCJOB,
    Context,
    Recorder,
    Settings,
    WorkQueue,
    controller_of,
    set_condition,
)
from clusters.sim.resources import RESOURCES, ResourceType
from clusters.sim.store import ObjectStore

__all__ = ["Controllers"]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

# ownerReference kind (by apiVersion prefix) -> handler tag
_OWNER_TAGS = {
    ("apps", "ReplicaSet"): "rs",
    ("apps", "StatefulSet"): "sts",
    ("batch", "Job"): "job",
    ("batch.volcano.sh", "Job"): "vcjob",
    ("kubeflow.org", "PyTorchJob"): "ptjob",
}
_KIND_TAGS = {
    DEPLOYMENT: "deploy",
    REPLICASET: "rs",
    STATEFULSET: "sts",
    JOB: "job",
    VCJOB: "vcjob",
    PYTORCHJOB: "ptjob",
}
_SCHED_FIELDS = ("taints", "unschedulable")
_NEEDED = frozenset({CONFIGMAP, SECRET, SERVICEACCOUNT})
"""Kinds a pod may wait for before it starts (`pod_deps`)."""
_TRACKED = frozenset({POD, NODE, QUOTA, CLAIM, *_NEEDED, *_KIND_TAGS})


class Controllers:
    """Scheduler, workload controllers, kubelet and quota for one store."""

    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        *,
        settings: Settings | None = None,
        cluster_name: str = "sim",
    ) -> None:
        queue = WorkQueue(clock)
        self.ctx = Context(
            store=store,
            clock=clock,
            settings=settings or Settings(),
            queue=queue,
            recorder=Recorder(store, clock),
            cluster_name=cluster_name,
        )
        self._handlers: dict[str, Callable[[Context, str, str], None]] = {
            "sched": self._schedule,
            "pod": kubelet.reconcile_pod,
            "node": lambda ctx, _ns, name: nodes_ctl.reconcile_node(ctx, name),
            "rs": workloads.reconcile_replicaset,
            "deploy": workloads.reconcile_deployment,
            "sts": sts_ctl.reconcile_statefulset,
            "job": jobs.reconcile_job,
            "vcjob": jobs.reconcile_vcjob,
            "ptjob": jobs.reconcile_pytorchjob,
            "quota": self._quota_status,
            "heartbeat": self._heartbeat,
            "retry-unschedulable": self._retry_unschedulable,
        }
        store.add_listener(self._on_change)
        store.add_admission(POD, self.ctx.quotas.admit_pod)
        for rt in RESOURCES:
            if rt.namespaced and rt is not POD and rt.kind != "Event":
                store.add_admission(rt, self.ctx.quotas.admit_count(rt))
        self.processed = 0

    # -- lifecycle --------------------------------------------------------------------------

    async def run(self) -> None:
        """Run the worker and the timers until cancelled."""
        settings = self.ctx.settings
        if settings.heartbeat_seconds > 0:
            self.ctx.queue.add_after(("heartbeat", "", ""), settings.heartbeat_seconds)
        self.ctx.queue.add_after(
            ("retry-unschedulable", "", ""), settings.unschedulable_retry_seconds
        )
        async with asyncio.TaskGroup() as group:
            group.create_task(self.ctx.queue.run_timers(), name="sim-timers")
            group.create_task(self._work(), name="sim-worker")

    async def _work(self) -> None:
        while True:
            key = await self.ctx.queue.get()
            handler = self._handlers.get(key[0])
            if handler is None:
                continue
            try:
                handler(self.ctx, key[1], key[2])
            except ApiError as exc:
                # A conflict means someone wrote in between: converge again from fresh state.
                # Anything else will not pass by itself, so it is said where it is seen.
                conflict = exc.reason == "Conflict"
                level = logging.DEBUG if conflict else logging.WARNING
                log.log(level, "handler %s for %s/%s: %s", key[0], key[1], key[2], exc.message)
                self.ctx.queue.add_after(key, 0.5 if conflict else self.ctx.settings.retry_seconds)
            except Exception:
                log.exception("handler %s failed for %s/%s", *key)
                self.ctx.queue.add_after(key, self.ctx.settings.retry_seconds)
            self.processed += 1
            if self.processed % 64 == 0:
                await self.ctx.clock.sleep(0)  # let the HTTP server breathe in a burst

    def idle(self) -> bool:
        """Nothing queued right now (timers may still be pending)."""
        return len(self.ctx.queue) == 0

    # -- seeding and faults ---------------------------------------------------------------

    def seed_nodes(self, nodes: Iterable[dict[str, Any]]) -> None:
        for node in nodes:
            self.ctx.store.create(NODE, node)

    def set_nodes_ready(self, names: Iterable[str], *, ready: bool) -> list[str]:
        changed = nodes_ctl.set_ready(self.ctx, names, ready=ready)
        for name in changed:
            self.ctx.queue.add(("node", "", name))
        return changed

    # -- store listener -------------------------------------------------------------------

    def _on_change(self, etype: str, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        ctx = self.ctx
        if rt in _TRACKED:
            key = (rt, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            if etype == "DELETED":
                ctx.objects.pop(key, None)
            else:
                ctx.objects[key] = obj  # type: ignore[assignment]
        for ns in ctx.quotas.observe(etype, rt, obj, old):
            ctx.queue.add(("quota", ns, ""))
        if rt in _NEEDED and etype != "DELETED":
            ns = obj["metadata"].get("namespace", "")
            for name in sorted(ctx.waiting.get(ns, ())):
                ctx.queue.add(("pod", ns, name))
        elif rt is CLAIM and etype == "ADDED":
            self._requeue_unschedulable()
        if rt is POD:
            self._on_pod(etype, obj, old)
        elif rt is NODE:
            self._on_node(etype, obj, old)
        elif rt in _KIND_TAGS:
            meta = obj["metadata"]
            uid = meta["uid"]
            if etype == "DELETED":
                ctx.pods_by_owner.pop(uid, None)
                ctx.rs_by_owner.pop(uid, None)
            if rt is REPLICASET:
                self._index_replicaset(etype, obj, old)
            if etype != "DELETED":
                ctx.queue.add((_KIND_TAGS[rt], meta.get("namespace", ""), meta["name"]))

    def _index_replicaset(self, etype: str, obj: Obj, old: Obj | None) -> None:
        ctx, meta = self.ctx, obj["metadata"]
        for ref_source in (old, obj):
            ref = controller_of(ref_source) if ref_source else None
            if ref is None:
                continue
            bucket = ctx.rs_by_owner.setdefault(ref["uid"], {})
            bucket.pop(meta["name"], None)
            if ref_source is obj and etype != "DELETED":
                bucket[meta["name"]] = obj
            if ref.get("kind") == "Deployment":
                ctx.queue.add(("deploy", meta["namespace"], ref["name"]))

    def _on_pod(self, etype: str, pod: Obj, old: Obj | None) -> None:
        ctx, meta = self.ctx, pod["metadata"]
        ns, name = meta["namespace"], meta["name"]
        key = f"{ns}/{name}"
        gone = etype == "DELETED"
        was_placed = bool(old and (old.get("spec") or {}).get("nodeName")) and not (
            old and kubelet_terminal(old)
        )
        ctx.nodes.set_pod(key, None if gone else pod)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if old is not None:
            old_node = (old.get("spec") or {}).get("nodeName")
            if old_node and old_node != node_name:
                ctx.pods_by_node.get(old_node, {}).pop(key, None)
        if node_name:
            if gone:
                ctx.pods_by_node.get(node_name, {}).pop(key, None)
            else:
                ctx.pods_by_node.setdefault(node_name, {})[key] = pod
        ref = controller_of(pod)
        if ref is not None:
            if gone:
                owned = ctx.pods_by_owner.get(ref["uid"], {})
                owned.pop(name, None)
                if not owned:
                    ctx.pods_by_owner.pop(ref["uid"], None)
            else:
                ctx.pods_by_owner.setdefault(ref["uid"], {})[name] = pod
            group = str(ref.get("apiVersion", "")).split("/")[0]
            tag = _OWNER_TAGS.get((group, ref.get("kind", "")))
            if tag:
                ctx.queue.add((tag, ns, ref["name"]))
        if gone:
            ctx.unschedulable.discard(("sched", ns, name))
            ctx.waiting.get(ns, set()).discard(name)
            for prefix in ("start", "finish"):
                ctx.deadlines.pop(f"{prefix}/{meta['uid']}", None)
        elif not node_name and not kubelet_terminal(pod):
            ctx.queue.add(("sched", ns, name))
        elif node_name and not kubelet_terminal(pod):
            ctx.queue.add(("pod", ns, name))
        if was_placed and (gone or kubelet_terminal(pod)):
            self._requeue_unschedulable()

    def _on_node(self, etype: str, node: Obj, old: Obj | None) -> None:
        ctx, name = self.ctx, node["metadata"]["name"]
        if etype == "DELETED":
            ctx.nodes.remove_node(name)
            return
        ctx.nodes.set_node(node)
        if old is None or _sched_view(old) != _sched_view(node):
            ctx.queue.add(("node", "", name))
            self._requeue_unschedulable()

    def _requeue_unschedulable(self) -> None:
        for key in sorted(self.ctx.unschedulable):
            self.ctx.queue.add(key)

    def _retry_unschedulable(self, ctx: Context, _ns: str, _name: str) -> None:
        self._requeue_unschedulable()
        ctx.queue.add_after(
            ("retry-unschedulable", "", ""), ctx.settings.unschedulable_retry_seconds
        )

    # -- handlers that need this module's state ---------------------------------------------

    def _schedule(self, ctx: Context, ns: str, name: str) -> None:
        key = ("sched", ns, name)
        pod = ctx.peek(POD, ns, name)
        if pod is None or (pod.get("spec") or {}).get("nodeName") or kubelet_terminal(pod):
            ctx.unschedulable.discard(key)
            return
        claim = pod_deps.missing_claim(ctx, pod)
        decision = scheduler.Decision(None, claim) if claim else ctx.nodes.place(pod)
        now = ctx.now()
        conds = [dict(c) for c in (pod.get("status") or {}).get("conditions") or ()]
        if decision.node is None:
            ctx.unschedulable.add(key)
            new = set_condition(
                conds,
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": decision.message,
                    "lastProbeTime": None,
                },
                now=now,
            )
            if new != conds:
                ctx.store.update(
                    POD,
                    {**pod, "status": {**pod["status"], "conditions": new}},
                    subresource="status",
                )
            ctx.recorder.event(
                pod,
                reason="FailedScheduling",
                message=decision.message,
                etype="Warning",
                component="default-scheduler",
            )
            return
        ctx.unschedulable.discard(key)
        bound = ctx.store.update(POD, {**pod, "spec": {**pod["spec"], "nodeName": decision.node}})
        new = set_condition(
            conds, {"type": "PodScheduled", "status": "True", "lastProbeTime": None}, now=now
        )
        ctx.store.update(
            POD, {**bound, "status": {**bound["status"], "conditions": new}}, subresource="status"
        )
        ctx.recorder.event(
            pod,
            reason="Scheduled",
            component="default-scheduler",
            message=f"Successfully assigned {ns}/{name} to {decision.node}",
        )

    def _quota_status(self, ctx: Context, ns: str, _name: str) -> None:
        for quota in ctx.quotas.quotas(ns):
            status = ctx.quotas.status_for(quota)
            if quota.get("status") != status:
                ctx.store.update(QUOTA, {**quota, "status": status}, subresource="status")

    def _heartbeat(self, ctx: Context, _ns: str, _name: str) -> None:
        nodes_ctl.heartbeat(ctx)
        ctx.queue.add_after(("heartbeat", "", ""), ctx.settings.heartbeat_seconds)


def kubelet_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _sched_view(node: Obj) -> tuple[Any, ...]:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    return (
        *(str(spec.get(f)) for f in _SCHED_FIELDS),
        str(status.get("allocatable")),
        str(node["metadata"].get("labels")),
    )
