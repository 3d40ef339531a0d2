"""The controller's aiohttp application: object routes, health, readiness, OpenAPI.

Why readiness checks etcd and liveness does not: a controller that cannot reach etcd must
be taken out of a load balancer, but restarting it would not bring etcd back.
"""

from __future__ import annotations

import functools
from typing import Any

from aiohttp import web

from federation import clock as clock_mod
from federation import errors
from federation.api import objects, status
from federation.registry import keys
from federation.registry import store as st
from federation.settings import ApiSettings

__all__ = ["OBJECTS_API", "build_app", "openapi_document"]


OBJECTS_API: web.AppKey[objects.ObjectsApi] = web.AppKey("objects_api", objects.ObjectsApi)


def build_app(
    store: st.Store,
    *,
    settings: ApiSettings | None = None,
    clock: clock_mod.Clock = clock_mod.real,
    extra_routes: list[web.RouteDef] | None = None,
) -> web.Application:
    settings = settings or ApiSettings()
    app = web.Application(
        client_max_size=settings.max_body_bytes, middlewares=[status.error_middleware]
    )
    api = objects.ObjectsApi(store, clock=clock)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        try:
            await store.get(keys.leader_key())
        except errors.FedctlError as exc:
            return web.Response(status=503, text=f"registry unavailable: {exc}")
        return web.Response(text="ok")

    async def openapi(_: web.Request) -> web.Response:
        return web.json_response(openapi_document())

    app.add_routes(
        [
            web.get("/healthz", healthz),
            web.get("/livez", healthz),
            web.get("/readyz", readyz),
            web.get("/openapi.json", openapi),
            *api.routes(),
            *(extra_routes or []),
        ]
    )
    app[OBJECTS_API] = api
    return app


@functools.cache
def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 for the object routes, with every kind's JSON Schema as a component."""
    from federation.registry import objects as reg_objects
    from policies.models import kinds

    schemas: dict[str, Any] = {}
    for api_version, kind in kinds.known_kinds():
        name = f"{api_version.replace('/', '.')}.{kind}"
        schemas[name] = kinds.json_schema(api_version, kind)
    paths: dict[str, Any] = {}
    base = objects.API_PREFIX
    for res in reg_objects.RESOURCES:
        scope = (
            f"{base}/namespaces/{{ns}}/{res.plural}" if res.namespaced else f"{base}/{res.plural}"
        )
        item = scope + ("/{kind}/{name}" if res.plural in ("workloads", "bindings") else "/{name}")
        ops: dict[str, Any] = {"get": _op(f"list {res.plural}; ?watch=true streams JSON lines")}
        item_ops: dict[str, Any] = {"get": _op(f"read one {res.kind}")}
        if not res.readonly:
            ops["post"] = _op(f"create a {res.kind}")
            item_ops["put"] = _op(f"replace a {res.kind}; metadata.resourceVersion makes it CAS")
            item_ops["delete"] = _op(f"delete a {res.kind}")
        paths[scope] = ops
        paths[item] = item_ops
    paths[base + "/apply"] = {"post": _op("validate every document, then create or update each")}
    paths[base + "/validate"] = {"post": _op("findings for a YAML body; stores nothing")}
    return {
        "openapi": "3.1.0",
        "info": {"title": "fedctl", "version": "v1alpha1"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _op(summary: str) -> dict[str, Any]:
    return {"summary": summary, "responses": {"200": {"description": "OK"}}}
