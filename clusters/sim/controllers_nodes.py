"""Nodes of a simulated cluster: built from the profile, kept Ready, or failed on purpose.

`build_nodes` turns a profile's node pools into Node objects carrying every label the
federation controller reads to build node flavors (arch, instance type, region and zone,
accelerator model, `nvidia.com/gpu.product`) and the accelerators as extended resources.
The rest stands in for the node lifecycle controller: `controllers.py` calls
`reconcile_node` on node changes and `heartbeat` periodically; the fault layer calls
`set_ready` for `node-notready`. A NotReady node gets the `node.kubernetes.io/not-ready`
taints (NoSchedule keeps new pods off, NoExecute starts the eviction clock) and its pods
are deleted once their toleration runs out: 300 s by default, as the
DefaultTolerationSeconds plugin gives every pod, measured on the simulated clock.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from typing import Any

from clusters.sim import scheduler
from clusters.sim.api_errors import ApiError
from clusters.sim.controllers_base import NODE, POD, Context, pod_ready, short_hash
from clusters.sim.profile import ClusterProfile

__all__ = ["build_nodes", "heartbeat", "node_ready", "reconcile_node", "set_ready"]

Obj = Mapping[str, Any]

_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"


def node_ready(ctx: Context, node_name: str) -> bool:
    """Known to the scheduler and not tainted not-ready."""
    info = ctx.nodes.nodes.get(node_name)
    return info is not None and not any(t.get("key") == _NOT_READY for t in info.taints)


def build_nodes(cluster: ClusterProfile, *, now: str) -> list[dict[str, Any]]:
    """Node objects for every pool of `cluster`, named `<cluster>-<pool>-<i>`."""
    nodes = []
    index = 0
    for pool in cluster.node_pools:
        for i in range(pool.count):
            index += 1
            nodes.append(
                _node(cluster, pool, i, ip=f"10.0.{index // 250}.{index % 250 + 1}", now=now)
            )
    return nodes


def _node(cluster: ClusterProfile, pool: Any, i: int, *, ip: str, now: str) -> dict[str, Any]:
    name = f"{cluster.name}-{pool.name}-{i}"
    labels = {
        "kubernetes.io/arch": pool.arch,
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "beta.kubernetes.io/arch": pool.arch,
        "beta.kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": cluster.region,
        "fedctl.io/node-pool": pool.name,
        "fedctl.io/capacity-type": pool.capacity_type,
    }
    if cluster.zone:
        labels["topology.kubernetes.io/zone"] = cluster.zone
    if pool.instance_type:
        labels["node.kubernetes.io/instance-type"] = pool.instance_type
    capacity = {
        "cpu": pool.cpu,
        "memory": pool.memory,
        "pods": str(pool.pods),
        "ephemeral-storage": "100Gi",
    }
    for acc in pool.accelerators:
        capacity[acc.resource_name] = str(acc.count_per_node)
        labels["fedctl.io/accelerator"] = acc.model
        if acc.resource_name == "nvidia.com/gpu":
            labels["nvidia.com/gpu.product"] = acc.product or acc.model
            labels["nvidia.com/gpu.count"] = str(acc.count_per_node)
    labels.update(pool.labels)
    return {
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {
            "providerID": f"sim://{cluster.provider}/{cluster.name}/{name}",
            "taints": [t.model_dump() for t in (*cluster.taints, *pool.taints)],
        },
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                _cond(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                    now,
                ),
                _cond(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                    now,
                ),
                _cond(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                    now,
                ),
                _cond("Ready", "True", "KubeletReady", "kubelet is posting ready status", now),
            ],
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": short_hash(name, 32),
                "systemUUID": short_hash(f"uuid-{name}", 32),
                "bootID": short_hash(f"boot-{name}", 32),
                "kernelVersion": "6.8.0-sim",
                "osImage": "Ubuntu 24.04 LTS",
                "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": cluster.kubernetes_version,
                "kubeProxyVersion": cluster.kubernetes_version,
                "operatingSystem": "linux",
                "architecture": pool.arch,
            },
        },
    }


def _cond(ctype: str, status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


# -- nodes -------------------------------------------------------------------------------------


def set_ready(ctx: Context, names: Iterable[str], *, ready: bool) -> list[str]:
    """Flip nodes Ready/NotReady with the taints the node lifecycle controller manages."""
    changed = []
    now = ctx.now()
    for name in names:
        node = ctx.peek(NODE, None, name)
        if node is None:
            continue
        taints = [
            t
            for t in (node.get("spec") or {}).get("taints") or ()
            if t.get("key") not in (_NOT_READY, _UNREACHABLE)
        ]
        if not ready:
            taints += [
                {"key": _NOT_READY, "effect": "NoSchedule", "timeAdded": now},
                {"key": _NOT_READY, "effect": "NoExecute", "timeAdded": now},
            ]
        spec = {**node.get("spec", {}), "taints": taints}
        node = ctx.store.update(NODE, {**node, "spec": spec})
        fresh = (
            _cond("Ready", "True", "KubeletReady", "kubelet is posting ready status", now)
            if ready
            else _cond(
                "Ready",
                "False",
                "KubeletNotReady",
                "container runtime network not ready: NetworkReady=false",
                now,
            )
        )
        conds = [
            fresh if c.get("type") == "Ready" else c
            for c in (node.get("status") or {}).get("conditions") or ()
        ]
        ctx.store.update(
            NODE, {**node, "status": {**node["status"], "conditions": conds}}, subresource="status"
        )
        changed.append(name)
    return changed


def _toleration_seconds(pod: Obj, taint: Obj, default: float) -> float | None:
    """Seconds the pod may stay on a node with this NoExecute taint; None: forever."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    matching = [t for t in tolerations if scheduler.tolerates([t], taint)]
    if matching:
        limits = [t.get("tolerationSeconds") for t in matching]
        if any(s is None for s in limits):
            return None
        return float(min(int(s) for s in limits if s is not None))
    if taint.get("key") in (_NOT_READY, _UNREACHABLE):
        return default  # the DefaultTolerationSeconds admission plugin's 300 s
    return 0.0


def reconcile_node(ctx: Context, name: str) -> None:
    """Evict pods whose toleration of a NoExecute taint on this node has run out."""
    info = ctx.nodes.nodes.get(name)
    pods = list(ctx.pods_by_node.get(name, {}).values())
    if info is None:
        return
    ready = node_ready(ctx, name)
    next_check: float | None = None
    for taint in info.taints:
        if taint.get("effect") != "NoExecute":
            continue
        age = _age(ctx, taint.get("timeAdded"))
        for pod in pods:
            if scheduler.is_terminal(pod):
                continue
            limit = _toleration_seconds(pod, taint, ctx.settings.toleration_seconds)
            if limit is None:
                continue
            if age >= limit:
                _evict(ctx, pod, taint)
            else:
                wait = limit - age
                next_check = wait if next_check is None else min(next_check, wait)
    if next_check is not None:
        ctx.queue.add_after(("node", "", name), next_check + 0.001)
    for pod in pods:  # readiness follows the node
        if (pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod) != (ready):
            ctx.queue.add(("pod", pod["metadata"]["namespace"], pod["metadata"]["name"]))


def _age(ctx: Context, stamp: str | None) -> float:
    if not stamp:
        return 0.0
    then = _dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.UTC)
    return max(0.0, (ctx.clock.now() - then).total_seconds())


def _evict(ctx: Context, pod: Obj, taint: Obj) -> None:
    meta = pod["metadata"]
    try:
        ctx.store.delete(POD, meta["namespace"], meta["name"])
    except ApiError:
        return
    ctx.recorder.event(
        pod,
        reason="TaintManagerEviction",
        message=f"Marking for deletion Pod {meta['namespace']}/{meta['name']}",
        component="taint-eviction-controller",
    )


def heartbeat(ctx: Context) -> None:
    """Refresh `lastHeartbeatTime` of every Ready node, as kubelets do."""
    now = ctx.now()
    for name in sorted(ctx.nodes.nodes):
        if not node_ready(ctx, name):
            continue
        node = ctx.peek(NODE, None, name)
        if node is None:
            continue
        conds = [
            {**c, "lastHeartbeatTime": now}
            if c.get("type") in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
            else c
            for c in (node.get("status") or {}).get("conditions") or ()
        ]
        ctx.store.update(
            NODE, {**node, "status": {**node["status"], "conditions": conds}}, subresource="status"
        )
