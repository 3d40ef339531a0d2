"""The write verbs on resource paths, and the routing of every verb to its handler.

`server.py` resolves a path into a `Target` and calls `handle`, which sends reads to
`api_reads` and does the writes here: create, update (PUT), the four patch types, apply,
delete and deletecollection, on objects and on their `/status` and `/scale`. Every write
becomes one `ObjectStore` call, so HTTP writes meet the same conflict, generation and
admission rules as the in-process controllers'; `/scale` answers with an
`autoscaling/v1` Scale because kubectl's scale client accepts nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from clusters.sim import api_apply, api_fields, api_reads, patch
from clusters.sim.api_errors import ApiError
from clusters.sim.api_reads import CTX, Context, Target, truthy
from clusters.sim.store import ObjectStore

__all__ = ["handle"]


async def _body(request: web.Request) -> Any:
    if "protobuf" in request.content_type:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"application/json, application/yaml (got {request.content_type!r})",
        )
    raw = await request.read()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        pass
    from ruamel.yaml import YAML

    try:
        return YAML(typ="safe", pure=True).load(raw.decode())
    except Exception as err:
        raise ApiError(400, "BadRequest", f"error decoding request body: {err}") from err


def _manager(request: web.Request) -> str:
    manager = request.query.get("fieldManager")
    if manager:
        return manager
    agent = request.headers.get("User-Agent", "unknown")
    return agent.split("/", 1)[0] or "unknown"


def _decoded(
    request: web.Request, t: Target, obj: dict[str, Any], *, wrap: bool
) -> tuple[dict[str, Any], list[str]]:
    """The body as the apiserver decodes it under the request's `fieldValidation`."""
    return api_fields.prune_unknown(
        t.rt, obj, directive=request.query.get("fieldValidation"), wrap=wrap
    )


def _warned(response: web.Response, warnings: list[str]) -> web.Response:
    """One `Warning: 299` header per message, which kubectl prints as `Warning: ...`."""
    for message in warnings:
        response.headers.add("Warning", f"299 - {json.dumps(message)}")
    return response


def _dry(request: web.Request) -> bool:
    return bool(request.query.get("dryRun"))


def _now(store: ObjectStore) -> str:
    return store.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


# -- collection verbs -----------------------------------------------------------------------


async def _create(request: web.Request, ctx: Context, t: Target) -> web.StreamResponse:
    obj = await _body(request)
    if not isinstance(obj, dict):
        raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
    meta = obj.setdefault("metadata", {})
    if t.rt.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and t.namespace and body_ns != t.namespace:
            raise ApiError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on "
                "the request",
            )
        meta["namespace"] = t.namespace or body_ns or "default"
    obj, warnings = _decoded(request, t, obj, wrap=True)
    api_apply.record_update(obj, None, manager=_manager(request), now=_now(ctx.store))
    created = ctx.store.create(t.rt, obj, dry_run=_dry(request))
    return _warned(api_reads.json_response(created, 201), warnings)


async def _delete_collection(request: web.Request, ctx: Context, t: Target) -> web.StreamResponse:
    q = request.query
    items, _ = ctx.store.list(
        t.rt,
        t.namespace,
        label_selector=q.get("labelSelector", ""),
        field_selector=q.get("fieldSelector", ""),
        copy=False,
    )
    deleted = []
    for obj in list(items):
        meta = obj["metadata"]
        if ctx.store.try_get(t.rt, meta.get("namespace"), meta["name"]) is not None:
            deleted.append(ctx.store.delete(t.rt, meta.get("namespace"), meta["name"]))
    body = {
        "kind": f"{t.rt.kind}List",
        "apiVersion": t.rt.api_version,
        "metadata": {"resourceVersion": str(ctx.store.resource_version)},
        "items": deleted,
    }
    return api_reads.json_response(body)


# -- item verbs -----------------------------------------------------------------------------


def _scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    status = obj.get("status") or {}
    labels = (obj.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": obj.get("spec", {}).get("replicas", 0)},
        "status": {
            "replicas": status.get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        },
    }


def _patched(content_type: str, current: dict[str, Any], body: Any) -> dict[str, Any]:
    if content_type == "application/json-patch+json" and isinstance(body, dict):
        # kubernetes_asyncio labels a dict patch on custom objects as JSON patch; the
        # only sensible reading of an object body is a merge patch.
        result = patch.merge_patch(current, body)
    elif content_type == "application/json-patch+json":
        result = patch.json_patch(current, body)
    elif content_type == "application/merge-patch+json":
        result = patch.merge_patch(current, body)
    elif content_type == "application/strategic-merge-patch+json":
        result = patch.strategic_merge_patch(current, body)
    else:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"application/json-patch+json, application/merge-patch+json, "
            f"application/apply-patch+yaml, application/strategic-merge-patch+json "
            f"(got {content_type!r})",
        )
    if not isinstance(result, dict):
        raise ApiError(422, "Invalid", "the patch did not produce an object")
    return result


async def _apply(request: web.Request, ctx: Context, t: Target, body: Any) -> web.StreamResponse:
    if not request.query.get("fieldManager"):
        raise ApiError(400, "BadRequest", "PATCH, fieldManager is required for apply requests")
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "apply patch must be an object")
    store, name = ctx.store, t.name or ""
    body.setdefault("metadata", {})["name"] = name
    if t.rt.namespaced:
        body["metadata"]["namespace"] = t.namespace or "default"
    body, warnings = _decoded(request, t, body, wrap=False)
    current = store.try_get(t.rt, t.namespace, name)
    result = api_apply.apply(
        current,
        body,
        manager=request.query["fieldManager"],
        force=truthy(request.query.get("force")),
        now=_now(store),
    )
    if current is None:
        created = store.create(t.rt, result, dry_run=_dry(request))
        return _warned(api_reads.json_response(created, 201), warnings)
    result["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    updated = store.update(t.rt, result, dry_run=_dry(request))
    return _warned(api_reads.json_response(updated), warnings)


async def _write_item(request: web.Request, ctx: Context, t: Target) -> web.StreamResponse:
    """PUT or PATCH on an object, its /status or its /scale."""
    store, name = ctx.store, t.name or ""
    body = await _body(request)
    content_type = request.content_type
    if request.method == "PATCH" and content_type == "application/apply-patch+yaml":
        if t.sub is not None:
            raise ApiError(415, "UnsupportedMediaType", "apply is not supported on subresources")
        return await _apply(request, ctx, t, body)
    current = store.get(t.rt, t.namespace, name)
    if t.sub == "scale":
        scale = _scale_of(current)
        new_scale = body if request.method == "PUT" else _patched(content_type, scale, body)
        want_rv = (new_scale.get("metadata") or {}).get("resourceVersion")
        replicas = (new_scale.get("spec") or {}).get("replicas", 0)
        scaled = {**current, "spec": {**current["spec"], "replicas": replicas}}
        scaled["metadata"] = dict(current["metadata"])
        if want_rv:
            scaled["metadata"]["resourceVersion"] = want_rv
        api_apply.record_update(scaled, current, manager=_manager(request), now=_now(store))
        updated = store.update(t.rt, scaled, dry_run=_dry(request))
        return api_reads.json_response(_scale_of(updated))
    if request.method == "PUT":
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
        new = body
        meta = new.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise ApiError(
                400,
                "BadRequest",
                "the name of the object does not match the name on the URL",
            )
        meta["name"] = name
    else:
        new = _patched(content_type, current, body)
        new.setdefault("metadata", {})["name"] = name
    if t.rt.namespaced:
        new["metadata"]["namespace"] = current["metadata"]["namespace"]
    new["metadata"].setdefault("managedFields", current["metadata"].get("managedFields"))
    if new["metadata"]["managedFields"] is None:
        new["metadata"].pop("managedFields")
    if t.sub == "status":
        return api_reads.json_response(
            store.update(t.rt, new, subresource="status", dry_run=_dry(request))
        )
    new, warnings = _decoded(request, t, new, wrap=request.method == "PUT")
    api_apply.record_update(new, current, manager=_manager(request), now=_now(store))
    updated = store.update(t.rt, new, dry_run=_dry(request))
    return _warned(api_reads.json_response(updated), warnings)


async def _delete(request: web.Request, ctx: Context, t: Target) -> web.StreamResponse:
    body = await _body(request) or {}
    q = request.query
    policy = q.get("propagationPolicy") or (body.get("propagationPolicy") if body else None)
    if truthy(q.get("orphanDependents")) or body.get("orphanDependents") is True:
        policy = "Orphan"
    obj = ctx.store.delete(
        t.rt,
        t.namespace,
        t.name or "",
        propagation=policy or "Background",
        preconditions=body.get("preconditions"),
        dry_run=_dry(request),
    )
    return api_reads.json_response(obj)


async def handle(request: web.Request, t: Target) -> web.StreamResponse:
    ctx = request.app[CTX]
    method = request.method
    if t.name is None:
        if method == "GET":
            if truthy(request.query.get("watch")):
                return await api_reads.watch(request, ctx, t)
            return await api_reads.list_objects(request, ctx, t)
        if method == "POST":
            return await _create(request, ctx, t)
        if method == "DELETE":
            return await _delete_collection(request, ctx, t)
    elif method == "GET":
        if truthy(request.query.get("watch")):
            return await api_reads.watch(request, ctx, t)
        if t.sub == "scale":
            obj = ctx.store.get(t.rt, t.namespace, t.name)
            return api_reads.json_response(_scale_of(obj))
        return await api_reads.get(request, ctx, t)
    elif method in ("PUT", "PATCH"):
        return await _write_item(request, ctx, t)
    elif method == "DELETE" and t.sub is None:
        return await _delete(request, ctx, t)
    raise ApiError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )
