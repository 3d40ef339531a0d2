"""The HTTP face of one simulated cluster: an aiohttp app speaking the Kubernetes API.

`build_app` wires an `ObjectStore` to the routes real clients use: `/version`, discovery,
`/openapi/v3`, health probes, and the resource paths under `/api` and `/apis`, whose verbs
live in `api_handlers.py`. The fleet (cluster.py) serves one app per cluster on its own
loopback port and passes in the fault middleware and `/_sim` admin routes; nothing here
knows about faults. Errors anywhere below become `Status` bodies in one middleware, so
every failure a client sees has the upstream code, reason and message.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from clusters.sim import api_discovery, api_handlers, openapi
from clusters.sim.api_errors import ApiError, status_body
from clusters.sim.api_reads import CTX, Context, Target
from clusters.sim.resources import RESOURCES, by_plural
from clusters.sim.store import ObjectStore

__all__ = ["ClusterInfo", "build_app", "ensure_system_namespaces"]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_NAMESPACES = next(rt for rt in RESOURCES if rt.kind == "Namespace")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass(frozen=True)
class ClusterInfo:
    """What `/version` reports; `minor` picks the kubectl the dispatcher runs."""

    name: str
    git_version: str = "v1.32.0"
    major: str = "1"
    minor: str = "32"
    platform: str = "linux/amd64"

    def version(self) -> dict[str, str]:
        return {
            "major": self.major,
            "minor": self.minor,
            "gitVersion": self.git_version,
            "gitCommit": "0" * 40,
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.23.4",
            "compiler": "gc",
            "platform": self.platform,
        }


def ensure_system_namespaces(store: ObjectStore) -> None:
    """Create the namespaces every cluster starts with (idempotent)."""
    for name in SYSTEM_NAMESPACES:
        if store.try_get(_NAMESPACES, None, name) is None:
            store.create(_NAMESPACES, {"metadata": {"name": name}})


def _json(body: Any, status: int = 200) -> web.Response:
    return web.json_response(body, status=status)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as err:
        resp = _json(err.status(), err.code)
        if err.retry_after is not None:
            resp.headers["Retry-After"] = str(err.retry_after)
        return resp
    except web.HTTPException:
        raise
    except ConnectionError:
        # The client went away mid-answer. Raised on, aiohttp would log it as a handler
        # error; an answer it cannot send ends the connection quietly instead.
        return web.Response(status=499)
    except Exception as err:
        log.exception("unhandled error serving %s %s", request.method, request.path)
        return _json(status_body(500, "InternalError", f"Internal error occurred: {err}"), 500)


def _not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def _target(group: str, version: str, rest: list[str]) -> Target:
    """Resolve `[namespaces/NS/]PLURAL[/NAME[/SUB]]` against the registry."""
    namespace = None
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and (rt := by_plural(group, version, rest[2])) is not None
        and rt.namespaced
    ):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise _not_found()
    rt = by_plural(group, version, rest[0])
    if rt is None:
        raise _not_found()
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in rt.subresources:
        raise _not_found()
    return Target(rt=rt, namespace=namespace, name=name, sub=sub)


async def _dispatch(request: web.Request, group: str, version: str, rest: list[str]) -> Any:
    if not rest:
        doc = api_discovery.api_resource_list(group, version)
        if doc is None or request.method != "GET":
            raise _not_found()
        return _json(doc)
    target = _target(group, version, rest)
    return await api_handlers.handle(request, target)


async def _core(request: web.Request) -> web.StreamResponse:
    tail = [p for p in request.match_info["tail"].split("/") if p]
    if not tail:
        if request.method != "GET":
            raise _not_found()
        host = request.host or "127.0.0.1"
        return _json(api_discovery.api_versions(host))
    if tail[0] != "v1":
        raise _not_found()
    resp: web.StreamResponse = await _dispatch(request, "", "v1", tail[1:])
    return resp


async def _grouped(request: web.Request) -> web.StreamResponse:
    tail = [p for p in request.match_info["tail"].split("/") if p]
    if not tail:
        if request.method != "GET":
            raise _not_found()
        return _json(api_discovery.api_group_list())
    if len(tail) == 1:
        doc = api_discovery.api_group_list()
        group = next((g for g in doc["groups"] if g["name"] == tail[0]), None)
        if group is None:
            raise _not_found()
        return _json({"kind": "APIGroup", "apiVersion": "v1", **group})
    resp: web.StreamResponse = await _dispatch(request, tail[0], tail[1], tail[2:])
    return resp


async def _version(request: web.Request) -> web.Response:
    return _json(request.app[CTX].info.version())


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok", content_type="text/plain")


async def _openapi_v3(request: web.Request) -> web.Response:
    tail = [p for p in request.match_info["tail"].split("/") if p]
    if not tail:
        return _json(openapi.openapi_index())
    version = request.app[CTX].info.git_version
    if tail[0] == "api" and len(tail) == 2:
        doc = openapi.openapi_document("", tail[1], server_version=version)
    elif tail[0] == "apis" and len(tail) == 3:
        doc = openapi.openapi_document(tail[1], tail[2], server_version=version)
    else:
        doc = None
    if doc is None:
        raise _not_found()
    return _json(doc)


def build_app(
    store: ObjectStore,
    *,
    info: ClusterInfo,
    middlewares: Sequence[Any] = (),
    extra_routes: Sequence[web.RouteDef] = (),
    bookmark_interval: float = 60.0,
) -> web.Application:
    """The app for one cluster; `bookmark_interval` is in simulated seconds."""
    ensure_system_namespaces(store)
    app = web.Application(middlewares=[*middlewares, _errors], client_max_size=64 * 1024**2)
    app[CTX] = Context(store=store, info_name=info.name, info=info, bookmark=bookmark_interval)
    app.add_routes(
        [
            web.get("/version", _version),
            web.get("/version/", _version),
            web.get("/healthz", _ok),
            web.get("/readyz", _ok),
            web.get("/livez", _ok),
            web.get("/openapi/v3{tail:(/.*)?}", _openapi_v3),
            web.route("*", "/api{tail:(/.*)?}", _core),
            web.route("*", "/apis{tail:(/.*)?}", _grouped),
            *extra_routes,
        ]
    )
    return app
