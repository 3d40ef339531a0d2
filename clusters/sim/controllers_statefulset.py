"""StatefulSet controller of a simulated cluster: ordinal pods, created and replaced in order.

Called by the worker in `controllers.py` when a StatefulSet or one of its pods changes.
Pods are named `<set>-<ordinal>`; with OrderedReady (the default) pod N is created only
once pods 0..N-1 are Running and Ready, scale-down removes the highest ordinal first, and a
template change replaces pods from the highest ordinal down, one at a time, so a rollout
looks to clients the way it does on a real cluster (`controller-revision-hash` labels,
`currentRevision`/`updateRevision`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from clusters.sim.api_errors import ApiError
from clusters.sim.controllers_base import (
    POD,
    STATEFULSET,
    Context,
    back_off,
    create_pod,
    creation_paused,
    pod_active,
    pod_ready,
    short_hash,
    write_status,
)

__all__ = ["reconcile_statefulset"]

Obj = Mapping[str, Any]

_COMPONENT = "statefulset-controller"


def reconcile_statefulset(ctx: Context, ns: str, name: str) -> None:
    sts = ctx.peek(STATEFULSET, ns, name)
    if sts is None or sts["metadata"].get("deletionTimestamp"):
        return
    spec = sts.get("spec") or {}
    desired = int(spec.get("replicas", 1))
    revision = f"{name}-{short_hash(json.dumps(spec.get('template') or {}, sort_keys=True))}"
    ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    pods = {p["metadata"]["name"]: p for p in ctx.owned_pods(sts) if pod_active(p)}
    failure = _converge(ctx, sts, pods, desired=desired, revision=revision, ordered=ordered)
    live = [
        p
        for p in ctx.owned_pods(sts)
        if pod_active(p) and _ordinal(name, p["metadata"]["name"]) is not None
    ]
    ready = sum(1 for p in live if pod_ready(p))
    updated = sum(1 for p in live if _rev(p) == revision)
    old = sts.get("status") or {}
    done = updated == len(live) == desired
    current_rev = revision if done else old.get("currentRevision", revision)
    status: dict[str, Any] = {
        "observedGeneration": sts["metadata"].get("generation", 1),
        "replicas": len(live),
        "readyReplicas": ready,
        "currentReplicas": sum(1 for p in live if _rev(p) == current_rev),
        "updatedReplicas": updated,
        "availableReplicas": ready,
        "currentRevision": current_rev,
        "updateRevision": revision,
        "collisionCount": 0,
    }
    if failure is not None:
        status["conditions"] = [
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedCreate",
                "message": failure.message,
                "lastTransitionTime": ctx.now(),
            }
        ]
    write_status(ctx, STATEFULSET, ctx.fetch(STATEFULSET, ns, name), status)


def _ordinal(set_name: str, pod_name: str) -> int | None:
    prefix, _, tail = pod_name.rpartition("-")
    return int(tail) if prefix == set_name and tail.isdigit() else None


def _rev(pod: Obj) -> str:
    return str((pod["metadata"].get("labels") or {}).get("controller-revision-hash", ""))


def _create(ctx: Context, sts: Obj, index: int, revision: str) -> ApiError | None:
    name, ns = sts["metadata"]["name"], sts["metadata"]["namespace"]
    pod_name = f"{name}-{index}"
    labels = {
        "controller-revision-hash": revision,
        "statefulset.kubernetes.io/pod-name": pod_name,
        "apps.kubernetes.io/pod-index": str(index),
    }
    template = (sts.get("spec") or {}).get("template") or {}
    try:
        create_pod(ctx, sts, template, name=pod_name, labels=labels)
    except ApiError as exc:
        ctx.recorder.event(
            sts,
            reason="FailedCreate",
            etype="Warning",
            message=f"create Pod {pod_name} in StatefulSet {name} failed error: {exc.message}",
            component=_COMPONENT,
        )
        back_off(ctx, sts, ("sts", ns, name))
        return exc
    ctx.recorder.event(
        sts,
        reason="SuccessfulCreate",
        message=f"create Pod {pod_name} in StatefulSet {name} successful",
        component=_COMPONENT,
    )
    return None


def _converge(
    ctx: Context, sts: Obj, pods: dict[str, Obj], *, desired: int, revision: str, ordered: bool
) -> ApiError | None:
    name, ns = sts["metadata"]["name"], sts["metadata"]["namespace"]
    for i in range(desired):
        pod = pods.get(f"{name}-{i}")
        if pod is None:
            if creation_paused(ctx, sts, ("sts", ns, name)):
                return None
            failure = _create(ctx, sts, i, revision)
            if failure is not None or ordered:
                return failure
        elif ordered and not pod_ready(pod):
            return None
    extra = sorted((o, n) for n in pods if (o := _ordinal(name, n)) is not None and o >= desired)
    for _, pod_name in reversed(extra):
        ctx.store.delete(POD, ns, pod_name)
        if ordered:
            return None
    # Rolling update: replace the highest ordinal still on an old revision, once all are ready.
    stale = sorted(
        (o, n)
        for n, p in pods.items()
        if (o := _ordinal(name, n)) is not None and o < desired and _rev(p) != revision
    )
    if stale and all(pod_ready(p) for p in pods.values()):
        ctx.store.delete(POD, ns, stale[-1][1])
    return None
