"""Deployment and ReplicaSet controllers of a simulated cluster.

Called by the worker in `controllers.py` with a key whenever the object, one of its
ReplicaSets or one of its pods changes. Each handler re-reads the object and converges:
Deployments own ReplicaSets named `<deploy>-<pod-template-hash>` and roll between them
within maxSurge/maxUnavailable; ReplicaSets create pods through admission, so a quota
refusal surfaces as `ReplicaFailure`/`FailedCreate` on the ReplicaSet and its Deployment,
exactly what `kubectl rollout status` and the federation controller's status collector
read.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping
from typing import Any

from clusters.sim import controllers_rollout as rollout
from clusters.sim import selectors
from clusters.sim.api_errors import ApiError
from clusters.sim.controllers_base import (
    DEPLOYMENT,
    POD,
    REPLICASET,
    Context,
    back_off,
    condition,
    controller_of,
    create_pod,
    creation_paused,
    pod_active,
    pod_ready,
    set_condition,
    write_status,
)

__all__ = ["reconcile_deployment", "reconcile_replicaset"]

Obj = Mapping[str, Any]

_HASH = "pod-template-hash"


# -- ReplicaSet ---------------------------------------------------------------------------------


def _deletion_rank(pod: Obj) -> tuple[int, int, str]:
    """Upstream order for scale-down: unassigned, pending, not ready, then newest first."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    assigned = 1 if spec.get("nodeName") else 0
    running = 1 if status.get("phase") == "Running" else 0
    ready = 1 if pod_ready(pod) else 0
    return (assigned, running + ready, "~" + pod["metadata"].get("creationTimestamp", ""))


def reconcile_replicaset(ctx: Context, ns: str, name: str) -> None:
    rs = ctx.peek(REPLICASET, ns, name)
    if rs is None or rs["metadata"].get("deletionTimestamp"):
        return
    spec = rs.get("spec") or {}
    desired = int(spec.get("replicas", 1))
    active = [p for p in ctx.owned_pods(rs) if pod_active(p)]
    failure: ApiError | None = None
    if len(active) < desired and not creation_paused(ctx, rs, ("rs", ns, name)):
        for _ in range(desired - len(active)):
            try:
                pod = create_pod(ctx, rs, spec.get("template") or {})
            except ApiError as exc:
                failure = exc
                ctx.recorder.event(
                    rs,
                    reason="FailedCreate",
                    message=f"Error creating: {exc.message}",
                    etype="Warning",
                    component="replicaset-controller",
                )
                back_off(ctx, rs, ("rs", ns, name))
                break
            ctx.recorder.event(
                rs,
                reason="SuccessfulCreate",
                message=f"Created pod: {pod['metadata']['name']}",
                component="replicaset-controller",
            )
    elif len(active) > desired:
        for victim in sorted(active, key=_deletion_rank)[: len(active) - desired]:
            try:
                ctx.store.delete(POD, ns, victim["metadata"]["name"])
            except ApiError:
                continue
            ctx.recorder.event(
                rs,
                reason="SuccessfulDelete",
                message=f"Deleted pod: {victim['metadata']['name']}",
                component="replicaset-controller",
            )
    _replicaset_status(ctx, rs, failure)


def _replicaset_status(ctx: Context, rs: dict[str, Any], failure: ApiError | None) -> None:
    rs = ctx.fetch(REPLICASET, rs["metadata"]["namespace"], rs["metadata"]["name"])
    active = [p for p in ctx.owned_pods(rs) if pod_active(p)]
    ready = sum(1 for p in active if pod_ready(p))
    old = rs.get("status") or {}
    conds = [dict(c) for c in old.get("conditions") or ()]
    now = ctx.now()
    if failure is not None:
        conds = set_condition(
            conds,
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedCreate",
                "message": failure.message,
            },
            now=now,
        )
    elif len(active) >= int((rs.get("spec") or {}).get("replicas", 1)):
        conds = [c for c in conds if c.get("type") != "ReplicaFailure"]
    status: dict[str, Any] = {
        "replicas": len(active),
        "fullyLabeledReplicas": len(active),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": rs["metadata"].get("generation", 1),
    }
    if conds:
        status["conditions"] = conds
    write_status(ctx, REPLICASET, rs, status)


# -- Deployment ---------------------------------------------------------------------------------


def _resolve(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        exact = total * int(value[:-1]) / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


def _fenceposts(dep: Obj, desired: int) -> tuple[int, int]:
    rolling = ((dep.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    surge = _resolve(rolling.get("maxSurge", "25%"), desired, round_up=True)
    unavailable = _resolve(rolling.get("maxUnavailable", "25%"), desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _replicas(rs: Obj) -> int:
    return int((rs.get("spec") or {}).get("replicas", 0))


def _available(rs: Obj) -> int:
    return int((rs.get("status") or {}).get("availableReplicas", 0))


def _scale(ctx: Context, rs: Obj, replicas: int) -> None:
    if _replicas(rs) != replicas:
        body = json.loads(json.dumps(rs))
        body["spec"]["replicas"] = replicas
        body["metadata"].pop("resourceVersion", None)
        ctx.store.update(REPLICASET, body)


def _new_replicaset(ctx: Context, dep: Obj, thash: str, replicas: int, revision: int) -> Obj:
    meta, spec = dep["metadata"], dep["spec"]
    desired = int(spec.get("replicas", 1))
    template = json.loads(json.dumps(spec.get("template") or {}))
    template.setdefault("metadata", {}).setdefault("labels", {})[_HASH] = thash
    selector = json.loads(json.dumps(spec.get("selector") or {}))
    selector.setdefault("matchLabels", {})[_HASH] = thash
    body = {
        "metadata": {
            "name": f"{meta['name']}-{thash}",
            "namespace": meta["namespace"],
            "labels": dict(template["metadata"]["labels"]),
            "annotations": rollout.rs_annotations(
                dep, revision, desired=desired, surge=_fenceposts(dep, desired)[0]
            ),
            "ownerReferences": [_controller_ref(dep)],
        },
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": template,
            "minReadySeconds": spec.get("minReadySeconds", 0),
        },
    }
    created = ctx.store.create(REPLICASET, body)
    ctx.recorder.event(
        dep,
        reason="ScalingReplicaSet",
        message=f"Scaled up replica set {created['metadata']['name']} to {replicas}",
        component="deployment-controller",
    )
    return created


def _controller_ref(dep: Obj) -> dict[str, Any]:
    meta = dep["metadata"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _adopt_orphans(ctx: Context, dep: Obj) -> None:
    """Upstream `ClaimReplicaSets`: a ReplicaSet no controller owns whose labels the
    Deployment selects becomes the Deployment's. A Deployment deleted with
    `--cascade=orphan` and created again thus takes its ReplicaSets back (the one with the
    same template is its new ReplicaSet again) instead of colliding with it by name."""
    selector = (dep.get("spec") or {}).get("selector") or {}
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return
    items, _ = ctx.store.list(REPLICASET, dep["metadata"]["namespace"], copy=False)
    for rs in items:
        labels = rs["metadata"].get("labels") or {}
        if controller_of(rs) is not None or rs["metadata"].get("deletionTimestamp"):
            continue
        if not selectors.selects(selector, labels):
            continue
        body = json.loads(json.dumps(rs))
        refs = body["metadata"].get("ownerReferences") or []
        body["metadata"]["ownerReferences"] = [*refs, _controller_ref(dep)]
        ctx.store.update(REPLICASET, body)


def reconcile_deployment(ctx: Context, ns: str, name: str) -> None:
    dep = ctx.peek(DEPLOYMENT, ns, name)
    if dep is None or dep["metadata"].get("deletionTimestamp"):
        return
    _adopt_orphans(ctx, dep)
    spec = dep.get("spec") or {}
    desired = int(spec.get("replicas", 1))
    thash = rollout.template_hash(spec.get("template") or {})
    new, old = _split(ctx, dep, thash)
    revision = rollout.next_revision(old)
    old_active = [r for r in old if _replicas(r) > 0]
    if spec.get("paused"):
        pass
    elif ((spec.get("strategy") or {}).get("type")) == "Recreate":
        for r in old_active:
            _scale(ctx, r, 0)
        still = any(ctx.owned_pods(r) for r in old)
        if new is None:
            new = _new_replicaset(ctx, dep, thash, 0 if still else desired, revision)
        elif not still:
            _scale(ctx, new, desired)
    else:
        _rolling(ctx, dep, new, old_active, thash=thash, desired=desired, revision=revision)
    new, old = _split(ctx, dep, thash)
    if new is not None:
        fresh = ctx.fetch(DEPLOYMENT, ns, name)
        rollout.sync(ctx, fresh, new, old, desired=desired, surge=_fenceposts(fresh, desired)[0])
    _deployment_status(ctx, ns, name, thash=thash, desired=desired)


def _split(ctx: Context, dep: Obj, thash: str) -> tuple[Obj | None, list[Obj]]:
    """The Deployment's ReplicaSet for template hash `thash` (None yet) and the others,
    oldest first."""
    owned = sorted(
        ctx.rs_by_owner.get(dep["metadata"]["uid"], {}).values(),
        key=lambda r: (r["metadata"].get("creationTimestamp", ""), r["metadata"]["name"]),
    )
    new = next((r for r in owned if (r["metadata"].get("labels") or {}).get(_HASH) == thash), None)
    return new, [r for r in owned if r is not new]


def _rolling(
    ctx: Context,
    dep: Obj,
    new: Obj | None,
    old: list[Obj],
    *,
    thash: str,
    desired: int,
    revision: int,
) -> None:
    surge, unavailable = _fenceposts(dep, desired)
    if not old:
        if new is None:
            _new_replicaset(ctx, dep, thash, desired, revision)
        else:
            _scale(ctx, new, desired)
        return
    total = sum(_replicas(r) for r in old) + (_replicas(new) if new else 0)
    room = max(0, desired + surge - total)
    if new is None:
        new = _new_replicaset(ctx, dep, thash, min(desired, room), revision)
    elif room and _replicas(new) < desired:
        _scale(ctx, new, min(desired, _replicas(new) + room))
        new = ctx.fetch(REPLICASET, new["metadata"]["namespace"], new["metadata"]["name"])
    all_pods = sum(_replicas(r) for r in old) + _replicas(new)
    min_available = desired - unavailable
    new_unavailable = _replicas(new) - _available(new)
    budget = all_pods - min_available - new_unavailable
    if budget <= 0:
        return
    # First drop old replicas that are not available anyway, then available ones.
    plans = {r["metadata"]["name"]: _replicas(r) for r in old}
    for r in old:
        cut = min(max(0, _replicas(r) - _available(r)), budget)
        plans[r["metadata"]["name"]] -= cut
        budget -= cut
    available = sum(_available(r) for r in old) + _available(new)
    remaining = max(0, available - min_available)
    for r in old:
        cut = min(plans[r["metadata"]["name"]], remaining)
        plans[r["metadata"]["name"]] -= cut
        remaining -= cut
    for r in old:
        _scale(ctx, r, plans[r["metadata"]["name"]])


def _deployment_status(ctx: Context, ns: str, name: str, *, thash: str, desired: int) -> None:
    dep = ctx.fetch(DEPLOYMENT, ns, name)
    new, others = _split(ctx, dep, thash)
    owned = [*others, new] if new is not None else others
    rs_status = [r.get("status") or {} for r in owned]
    replicas = sum(int(s.get("replicas", 0)) for s in rs_status)
    ready = sum(int(s.get("readyReplicas", 0)) for s in rs_status)
    available = sum(int(s.get("availableReplicas", 0)) for s in rs_status)
    updated = int(((new or {}).get("status") or {}).get("replicas", 0))
    old = dep.get("status") or {}
    _, unavailable = _fenceposts(dep, desired)
    now = ctx.now()
    conds = [dict(c) for c in old.get("conditions") or ()]
    ok = available >= desired - unavailable
    conds = set_condition(
        conds,
        {
            "type": "Available",
            "status": "True" if ok else "False",
            "reason": "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
            "message": "Deployment has minimum availability."
            if ok
            else "Deployment does not have minimum availability.",
            "lastUpdateTime": now,
        },
        now=now,
        progress=False,
    )
    conds = _progressing(
        ctx, dep, conds, new, now=now, counts=(replicas, updated, ready, available), desired=desired
    )
    failure = next(
        (condition(r, "ReplicaFailure") for r in owned if condition(r, "ReplicaFailure")), None
    )
    if failure is not None:
        conds = set_condition(conds, {**failure, "lastUpdateTime": now}, now=now, progress=False)
    else:
        conds = [c for c in conds if c.get("type") != "ReplicaFailure"]
    status: dict[str, Any] = {
        "observedGeneration": dep["metadata"].get("generation", 1),
        "replicas": replicas,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
        "unavailableReplicas": max(0, replicas - available),
        "conditions": conds,
    }
    write_status(ctx, DEPLOYMENT, dep, status)


def _progressing(
    ctx: Context,
    dep: Obj,
    conds: list[dict[str, Any]],
    new: Obj | None,
    *,
    now: str,
    counts: tuple[int, int, int, int],
    desired: int,
) -> list[dict[str, Any]]:
    replicas, updated, _ready, available = counts
    rs_name = new["metadata"]["name"] if new else ""
    old = dep.get("status") or {}
    before = (
        old.get("replicas"),
        old.get("updatedReplicas"),
        old.get("readyReplicas"),
        old.get("availableReplicas"),
    )
    complete = updated == desired and replicas == desired and available == desired
    if complete:
        new_cond = {
            "type": "Progressing",
            "status": "True",
            "reason": "NewReplicaSetAvailable",
            "message": f'ReplicaSet "{rs_name}" has successfully progressed.',
        }
        return set_condition(
            conds, {**new_cond, "lastUpdateTime": now}, now=now, progress=before != counts
        )
    current = next((c for c in conds if c.get("type") == "Progressing"), None)
    deadline = float((dep.get("spec") or {}).get("progressDeadlineSeconds", 600))
    if before != counts or current is None or current.get("reason") == "NewReplicaSetAvailable":
        ctx.queue.add_after(
            ("deploy", dep["metadata"]["namespace"], dep["metadata"]["name"]), deadline + 1
        )
        new_cond = {
            "type": "Progressing",
            "status": "True",
            "reason": "ReplicaSetUpdated",
            "message": f'ReplicaSet "{rs_name}" is progressing.',
            "lastUpdateTime": now,
        }
        return set_condition(conds, new_cond, now=now, progress=True)
    if current.get("status") == "True" and _age(ctx, current.get("lastUpdateTime")) > deadline:
        new_cond = {
            "type": "Progressing",
            "status": "False",
            "reason": "ProgressDeadlineExceeded",
            "message": f'ReplicaSet "{rs_name}" has timed out progressing.',
            "lastUpdateTime": now,
        }
        return set_condition(conds, new_cond, now=now, progress=True)
    return conds


def _age(ctx: Context, stamp: str | None) -> float:
    if not stamp:
        return 0.0
    then = _dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.UTC)
    return (ctx.clock.now() - then).total_seconds()
