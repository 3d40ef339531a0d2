"""The kubelet stand-in: pod status over simulated time, as kwok's fast pod stages write it.

Fed by `controllers.py`, which calls `reconcile_pod` for every bound pod (and again when
a deadline it set comes due or its node changes readiness). A bound pod becomes Running
and Ready after the start-up delay (`sim.fedctl.io/startup` overrides it); a Job-like pod,
or any pod with `sim.fedctl.io/duration`, terminates after its duration, as Failed when
`sim.fedctl.io/fail: "true"` (a service pod with that annotation crash-loops instead);
pods on a NotReady node turn unready. A pod whose ConfigMap, Secret or ServiceAccount is
missing stays Pending, its containers waiting with the kubelet's reason, until it exists
(`pod_deps`). The statuses carry every field the Python client's
models require (containerStatuses with imageID, podIPs) so clients never choke on them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from clusters.sim import pod_deps, scheduler
from clusters.sim.clock import parse_duration
from clusters.sim.controllers_base import (
    NODE,
    POD,
    Context,
    condition,
    controller_of,
    pod_ready,
    short_hash,
)
from clusters.sim.controllers_nodes import node_ready

__all__ = ["ANNOTATION_DURATION", "ANNOTATION_FAIL", "ANNOTATION_STARTUP", "reconcile_pod"]

Obj = Mapping[str, Any]

ANNOTATION_DURATION = "sim.fedctl.io/duration"
ANNOTATION_FAIL = "sim.fedctl.io/fail"
ANNOTATION_STARTUP = "sim.fedctl.io/startup"
_JOB_KINDS = frozenset({"Job", "PyTorchJob"})
_POD_NET = ipaddress.ip_network("10.128.0.0/9")


# -- pods --------------------------------------------------------------------------------------


def _finite(pod: Obj) -> bool:
    annotations = pod["metadata"].get("annotations") or {}
    owner = controller_of(pod)
    if ANNOTATION_DURATION in annotations:
        return True
    if owner is not None and owner.get("kind") in _JOB_KINDS:
        return True
    return owner is not None and str(owner.get("apiVersion", "")).startswith("batch.volcano.sh")


def _pod_ip(uid: str) -> str:
    offset = int(short_hash(uid, 8), 36) % (_POD_NET.num_addresses - 2) + 1
    return str(_POD_NET.network_address + offset)


def _node_ip(ctx: Context, node_name: str) -> str:
    node = ctx.peek(NODE, None, node_name)
    for addr in ((node or {}).get("status") or {}).get("addresses") or ():
        if addr.get("type") == "InternalIP":
            return str(addr["address"])
    return "10.0.0.1"


def reconcile_pod(ctx: Context, ns: str, name: str) -> None:
    pod = ctx.peek(POD, ns, name)
    if pod is None or scheduler.is_terminal(pod) or pod["metadata"].get("deletionTimestamp"):
        return
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name or node_name not in ctx.nodes.nodes:
        return
    uid = pod["metadata"]["uid"]
    annotations = pod["metadata"].get("annotations") or {}
    now = ctx.clock.monotonic()
    key = ("pod", ns, name)
    phase = (pod.get("status") or {}).get("phase", "Pending")
    if phase == "Pending":
        if not node_ready(ctx, node_name):
            return
        delay = parse_duration(
            annotations.get(ANNOTATION_STARTUP, ctx.settings.pod_startup_seconds)
        )
        start_at = ctx.deadlines.setdefault(f"start/{uid}", now + delay)
        if now < start_at:
            ctx.queue.add_after(key, start_at - now)
            return
        held = pod_deps.missing_config(ctx, pod)
        if held is not None:
            # Kept Pending, its start deadline kept, so it starts as soon as what it
            # waits for appears (`controllers` requeues it then).
            ctx.waiting.setdefault(ns, set()).add(name)
            _hold(ctx, pod, held)
            return
        ctx.waiting.get(ns, set()).discard(name)
        ctx.deadlines.pop(f"start/{uid}", None)
        _start(ctx, pod, node_name)
        if _finite(pod):
            run = parse_duration(annotations.get(ANNOTATION_DURATION, ctx.settings.job_pod_seconds))
            ctx.deadlines[f"finish/{uid}"] = now + run
            ctx.queue.add_after(key, run)
        return
    due: float | None = ctx.deadlines.get(f"finish/{uid}")
    if due is None and _finite(pod):
        run = parse_duration(annotations.get(ANNOTATION_DURATION, ctx.settings.job_pod_seconds))
        due = ctx.deadlines[f"finish/{uid}"] = now + run
    if due is not None and now >= due:
        ctx.deadlines.pop(f"finish/{uid}", None)
        _finish(ctx, pod, failed=annotations.get(ANNOTATION_FAIL, "").lower() == "true")
        return
    if due is not None:
        ctx.queue.add_after(key, due - now)
    _sync_ready(ctx, pod, ready=node_ready(ctx, node_name) and not _crashing(pod))


def _crashing(pod: Obj) -> bool:
    annotations = pod["metadata"].get("annotations") or {}
    return annotations.get(ANNOTATION_FAIL, "").lower() == "true" and not _finite(pod)


def _container_statuses(
    pod: Obj, *, state: dict[str, Any], ready: bool, restarts: int = 0
) -> list[dict[str, Any]]:
    out = []
    for c in (pod.get("spec") or {}).get("containers") or ():
        out.append(
            {
                "name": c.get("name", ""),
                "image": c.get("image", ""),
                "imageID": "",
                "containerID": "containerd://"
                + short_hash(pod["metadata"]["uid"] + c.get("name", ""), 24),
                "ready": ready,
                "started": "running" in state,
                "restartCount": restarts,
                "state": state,
                "lastState": {},
            }
        )
    return out


def _pod_conditions(pod: Obj, *, ready: bool, now: str, reason: str = "") -> list[dict[str, Any]]:
    scheduled = condition(pod, "PodScheduled")
    conds = [
        {
            "type": "PodReadyToStartContainers",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now,
        },
        {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
    ]
    for ctype in ("Ready", "ContainersReady"):
        cond: dict[str, Any] = {
            "type": ctype,
            "status": "True" if ready else "False",
            "lastProbeTime": None,
            "lastTransitionTime": now,
        }
        if reason:
            cond["reason"] = reason
        conds.append(cond)
    conds.append(
        dict(scheduled)
        if scheduled
        else {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now,
        }
    )
    return conds


def _start(ctx: Context, pod: dict[str, Any], node_name: str) -> None:
    now = ctx.now()
    crashing = _crashing(pod)
    state: dict[str, Any] = (
        {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": "back-off 10s restarting failed container",
            }
        }
        if crashing
        else {"running": {"startedAt": now}}
    )
    ready = not crashing and node_ready(ctx, node_name)
    host_ip, pod_ip = _node_ip(ctx, node_name), _pod_ip(pod["metadata"]["uid"])
    status = dict(pod.get("status") or {})
    status.update(
        phase="Running",
        conditions=_pod_conditions(
            pod, ready=ready, now=now, reason="" if ready else "ContainersNotReady"
        ),
        hostIP=host_ip,
        hostIPs=[{"ip": host_ip}],
        podIP=pod_ip,
        podIPs=[{"ip": pod_ip}],
        startTime=now,
        containerStatuses=_container_statuses(
            pod, state=state, ready=ready, restarts=1 if crashing else 0
        ),
    )
    ctx.store.update(POD, {**pod, "status": status}, subresource="status")


def _hold(ctx: Context, pod: dict[str, Any], held: pod_deps.Missing) -> None:
    """Say why the pod has not started, once per reason: Pending, not Ready, each
    container waiting as the kubelet leaves it, and one Warning event."""
    status = dict(pod.get("status") or {})
    state = {"waiting": {"reason": held.reason, "message": held.message}}
    if [c.get("state") for c in status.get("containerStatuses") or ()] == [state] * len(
        (pod.get("spec") or {}).get("containers") or ()
    ):
        return
    now = ctx.now()
    status.update(
        phase="Pending",
        conditions=_pod_conditions(pod, ready=False, now=now, reason="ContainersNotReady"),
        containerStatuses=[
            {**c, "started": False, "containerID": ""}
            for c in _container_statuses(pod, state=state, ready=False)
        ],
    )
    ctx.store.update(POD, {**pod, "status": status}, subresource="status")
    ctx.recorder.event(
        pod, reason=held.event, message=held.event_message, etype="Warning", component="kubelet"
    )


def _finish(ctx: Context, pod: dict[str, Any], *, failed: bool) -> None:
    now = ctx.now()
    started = (pod.get("status") or {}).get("startTime", now)
    term = {
        "terminated": {
            "exitCode": 1 if failed else 0,
            "reason": "Error" if failed else "Completed",
            "startedAt": started,
            "finishedAt": now,
            "containerID": "",
        }
    }
    status = dict(pod.get("status") or {})
    status.update(
        phase="Failed" if failed else "Succeeded",
        conditions=_pod_conditions(pod, ready=False, now=now, reason="PodCompleted"),
        containerStatuses=_container_statuses(pod, state=term, ready=False),
    )
    ctx.store.update(POD, {**pod, "status": status}, subresource="status")


def _sync_ready(ctx: Context, pod: dict[str, Any], *, ready: bool) -> None:
    if pod_ready(pod) == ready:
        return
    now = ctx.now()
    status = dict(pod.get("status") or {})
    conds = []
    for old in status.get("conditions") or ():
        cond = dict(old)
        if cond.get("type") in ("Ready", "ContainersReady"):
            cond.update(status="True" if ready else "False", lastTransitionTime=now)
            if ready:
                cond.pop("reason", None)
            else:
                cond["reason"] = "ContainersNotReady"
        conds.append(cond)
    status["conditions"] = conds
    status["containerStatuses"] = [
        {**c, "ready": ready} for c in status.get("containerStatuses") or ()
    ]
    ctx.store.update(POD, {**pod, "status": status}, subresource="status")
