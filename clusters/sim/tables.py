"""Server-side `Table` rendering, the columns `kubectl get` prints verbatim.

The server answers a `get`/`list`/`watch` whose Accept asks for `as=Table` with these rows
instead of objects. kubectl has no printers of its own for server resources, so without a
Table it would print only NAME and AGE; the column sets and cell formats here follow the
upstream printers (`pkg/printers/internalversion`) for the kinds operators look at.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

from clusters.sim.resources import ResourceType

__all__ = ["human_duration", "table", "table_row"]

Obj = dict[str, Any]
Column = tuple[str, str, int, str]  # name, type, priority, format
Printer = tuple[tuple[Column, ...], Callable[[Obj, _dt.datetime], list[Any]]]


def human_duration(seconds: float) -> str:
    """kubectl's age format: 45s, 5m10s, 3h, 2d."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _parse_time(value: Any) -> _dt.datetime | None:
    if not value:
        return None
    try:
        return _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _age(obj: Obj, now: _dt.datetime) -> str:
    created = _parse_time(obj.get("metadata", {}).get("creationTimestamp"))
    return "<unknown>" if created is None else human_duration((now - created).total_seconds())


def _cond(obj: Obj, kind: str) -> str | None:
    for c in obj.get("status", {}).get("conditions") or ():
        if c.get("type") == kind:
            return str(c.get("status"))
    return None


def _node(obj: Obj, now: _dt.datetime) -> list[Any]:
    ready = _cond(obj, "Ready")
    status = {"True": "Ready", "False": "NotReady"}.get(ready or "", "Unknown")
    if obj.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = set()
    for key, value in (obj["metadata"].get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role":
            roles.add(value)
    info = obj.get("status", {}).get("nodeInfo") or {}
    addresses = obj.get("status", {}).get("addresses") or ()

    def addr(kind: str) -> str:
        return next((a["address"] for a in addresses if a.get("type") == kind), "<none>")

    return [
        obj["metadata"]["name"],
        status,
        ",".join(sorted(r for r in roles if r)) or "<none>",
        _age(obj, now),
        info.get("kubeletVersion", ""),
        addr("InternalIP"),
        addr("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _pod_status(obj: Obj) -> str:
    status = obj.get("status", {})
    reason = status.get("reason") or status.get("phase") or "Pending"
    for cs in status.get("containerStatuses") or ():
        state = cs.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
        elif "terminated" in state:
            code = state["terminated"].get("exitCode", 0)
            reason = f"ExitCode:{code}"
    if obj["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod(obj: Obj, now: _dt.datetime) -> list[Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    statuses = status.get("containerStatuses") or ()
    ready = sum(1 for cs in statuses if cs.get("ready"))
    total = len(spec.get("containers") or ())
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    return [
        obj["metadata"]["name"],
        f"{ready}/{total}",
        _pod_status(obj),
        restarts,
        _age(obj, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


def _containers(obj: Obj) -> tuple[str, str]:
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    containers = spec.get("containers") or ()
    return (
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
    )


def _selector(obj: Obj) -> str:
    sel = obj.get("spec", {}).get("selector") or {}
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    return ",".join(parts) or "<none>"


def _deployment(obj: Obj, now: _dt.datetime) -> list[Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    names, images = _containers(obj)
    return [
        obj["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _age(obj, now),
        names,
        images,
        _selector(obj),
    ]


def _replicaset(obj: Obj, now: _dt.datetime) -> list[Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    names, images = _containers(obj)
    return [
        obj["metadata"]["name"],
        spec.get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(obj, now),
        names,
        images,
        _selector(obj),
    ]


def _statefulset(obj: Obj, now: _dt.datetime) -> list[Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    names, images = _containers(obj)
    ready = f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}"
    return [obj["metadata"]["name"], ready, _age(obj, now), names, images]


def _job(obj: Obj, now: _dt.datetime) -> list[Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    if _cond(obj, "Complete") == "True":
        state = "Complete"
    elif _cond(obj, "Failed") == "True":
        state = "Failed"
    elif spec.get("suspend"):
        state = "Suspended"
    else:
        state = "Running"
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    else:
        completions = f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    start = _parse_time(status.get("startTime"))
    end = _parse_time(status.get("completionTime")) or now
    duration = "" if start is None else human_duration((end - start).total_seconds())
    names, images = _containers(obj)
    return [
        obj["metadata"]["name"],
        state,
        completions,
        duration,
        _age(obj, now),
        names,
        images,
        _selector(obj),
    ]


def _quota(obj: Obj, now: _dt.datetime) -> list[Any]:
    status = obj.get("status", {})
    hard, used = status.get("hard") or {}, status.get("used") or {}
    request: list[str] = []
    limit: list[str] = []
    for res in sorted(hard):
        text = f"{res}: {used.get(res, '0')}/{hard[res]}"
        (limit if res.split(".")[0] == "limits" and "." in res else request).append(text)
    return [obj["metadata"]["name"], _age(obj, now), ", ".join(request), ", ".join(limit)]


def _namespace(obj: Obj, now: _dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], obj.get("status", {}).get("phase", "Active"), _age(obj, now)]


def _since(value: Any, now: _dt.datetime) -> str:
    when = _parse_time(value)
    return "<unknown>" if when is None else human_duration((now - when).total_seconds())


def _event(obj: Obj, now: _dt.datetime) -> list[Any]:
    involved = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    last = (
        obj.get("lastTimestamp") or obj.get("eventTime") or obj["metadata"].get("creationTimestamp")
    )
    return [
        _since(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        ", ".join(v for v in (source.get("component"), source.get("host")) if v),
        obj.get("message", ""),
        _since(obj.get("firstTimestamp") or last, now),
        obj.get("count", 1),
        obj["metadata"]["name"],
    ]


def _configmap(obj: Obj, now: _dt.datetime) -> list[Any]:
    data = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [obj["metadata"]["name"], data, _age(obj, now)]


def _secret(obj: Obj, now: _dt.datetime) -> list[Any]:
    data = len(obj.get("data") or {})
    return [obj["metadata"]["name"], obj.get("type", "Opaque"), data, _age(obj, now)]


def _service(obj: Obj, now: _dt.datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or ()
    external = ",".join(i.get("ip") or i.get("hostname", "") for i in ingress) or (
        "<pending>" if kind == "LoadBalancer" else spec.get("externalName", "<none>")
    )
    ports = ",".join(
        f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/"
        f"{p.get('protocol', 'TCP')}"
        for p in spec.get("ports") or ()
    )
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items()))
    row = [obj["metadata"]["name"], kind, spec.get("clusterIP") or "<none>", external]
    return [*row, ports or "<none>", _age(obj, now), selector or "<none>"]


def _generic(obj: Obj, now: _dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], _age(obj, now)]


_NAME: Column = ("Name", "string", 0, "name")
_AGE: Column = ("Age", "string", 0, "")
_WIDE_TEMPLATE: tuple[Column, ...] = (
    ("Containers", "string", 1, ""),
    ("Images", "string", 1, ""),
    ("Selector", "string", 1, ""),
)
_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "Node"): (
        (
            _NAME,
            ("Status", "string", 0, ""),
            ("Roles", "string", 0, ""),
            _AGE,
            ("Version", "string", 0, ""),
            ("Internal-IP", "string", 1, ""),
            ("External-IP", "string", 1, ""),
            ("OS-Image", "string", 1, ""),
            ("Kernel-Version", "string", 1, ""),
            ("Container-Runtime", "string", 1, ""),
        ),
        _node,
    ),
    ("", "Pod"): (
        (
            _NAME,
            ("Ready", "string", 0, ""),
            ("Status", "string", 0, ""),
            ("Restarts", "string", 0, ""),
            _AGE,
            ("IP", "string", 1, ""),
            ("Node", "string", 1, ""),
            ("Nominated Node", "string", 1, ""),
            ("Readiness Gates", "string", 1, ""),
        ),
        _pod,
    ),
    ("apps", "Deployment"): (
        (
            _NAME,
            ("Ready", "string", 0, ""),
            ("Up-to-date", "integer", 0, ""),
            ("Available", "integer", 0, ""),
            _AGE,
            *_WIDE_TEMPLATE,
        ),
        _deployment,
    ),
    ("apps", "ReplicaSet"): (
        (
            _NAME,
            ("Desired", "integer", 0, ""),
            ("Current", "integer", 0, ""),
            ("Ready", "integer", 0, ""),
            _AGE,
            *_WIDE_TEMPLATE,
        ),
        _replicaset,
    ),
    ("apps", "StatefulSet"): (
        (_NAME, ("Ready", "string", 0, ""), _AGE, *_WIDE_TEMPLATE[:2]),
        _statefulset,
    ),
    ("batch", "Job"): (
        (
            _NAME,
            ("Status", "string", 0, ""),
            ("Completions", "string", 0, ""),
            ("Duration", "string", 0, ""),
            _AGE,
            *_WIDE_TEMPLATE,
        ),
        _job,
    ),
    ("", "ResourceQuota"): (
        (_NAME, _AGE, ("Request", "string", 0, ""), ("Limit", "string", 0, "")),
        _quota,
    ),
    ("", "Namespace"): ((_NAME, ("Status", "string", 0, ""), _AGE), _namespace),
    ("", "Event"): (
        (
            ("Last Seen", "string", 0, ""),
            ("Type", "string", 0, ""),
            ("Reason", "string", 0, ""),
            ("Object", "string", 0, ""),
            ("Subobject", "string", 1, ""),
            ("Source", "string", 1, ""),
            ("Message", "string", 0, ""),
            ("First Seen", "string", 1, ""),
            ("Count", "string", 1, ""),
            ("Name", "string", 1, "name"),
        ),
        _event,
    ),
    ("", "ConfigMap"): ((_NAME, ("Data", "integer", 0, ""), _AGE), _configmap),
    ("", "Service"): (
        (
            _NAME,
            ("Type", "string", 0, ""),
            ("Cluster-IP", "string", 0, ""),
            ("External-IP", "string", 0, ""),
            ("Port(s)", "string", 0, ""),
            _AGE,
            ("Selector", "string", 1, ""),
        ),
        _service,
    ),
    ("", "Secret"): (
        (_NAME, ("Type", "string", 0, ""), ("Data", "integer", 0, ""), _AGE),
        _secret,
    ),
}
_GENERIC: Printer = ((_NAME, _AGE), _generic)


def _printer(rt: ResourceType) -> Printer:
    return _PRINTERS.get((rt.group, rt.kind), _GENERIC)


def table_row(rt: ResourceType, obj: Obj, *, now: _dt.datetime, include: str) -> dict[str, Any]:
    """One row; `include` is the includeObject parameter: None, Metadata or Object."""
    row: dict[str, Any] = {"cells": _printer(rt)[1](obj, now)}
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {}),
        }
    return row


def table(
    rt: ResourceType,
    objs: list[Obj],
    *,
    now: _dt.datetime,
    include: str = "Metadata",
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    columns, _ = _printer(rt)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata or {},
        "columnDefinitions": [
            {"name": n, "type": t, "format": f, "description": n, "priority": p}
            for n, t, p, f in columns
        ],
        "rows": [table_row(rt, o, now=now, include=include) for o in objs],
    }
