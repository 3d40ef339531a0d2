"""The read verbs on resource paths: get, list (chunked, selectors, Tables) and watch.

`api_handlers.handle` routes GETs here. Lists are assembled from the store's cached JSON
so listing 10,000 pods does not copy them; Tables are rendered when kubectl's Accept asks
for them; watches stream one JSON event per line, with bookmarks, `timeoutSeconds`, and a
410 ERROR event when the requested resourceVersion is older than the kept history. Query
booleans are parsed case-insensitively because the Python client sends `watch=True`.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from clusters.sim import api_watch, tables
from clusters.sim.api_errors import ApiError
from clusters.sim.resources import ResourceType
from clusters.sim.store import ObjectStore

if TYPE_CHECKING:
    from clusters.sim.server import ClusterInfo

__all__ = [
    "CTX",
    "Context",
    "Target",
    "get",
    "json_response",
    "list_objects",
    "truthy",
    "watch",
]


@dataclass
class Context:
    store: ObjectStore
    info_name: str
    info: ClusterInfo
    bookmark: float


CTX = web.AppKey("sim_context", Context)


@dataclass(frozen=True)
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    sub: str | None


def truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "yes")


def wants_table(request: web.Request) -> bool:
    for media in request.headers.get("Accept", "").split(","):
        params = {p.strip() for p in media.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return True
        if media.split(";")[0].strip() in ("application/json", "*/*", "application/*"):
            return False
    return False


def _bytes_response(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, content_type="application/json")


def json_response(body: Any, status: int = 200) -> web.Response:
    return _bytes_response(json.dumps(body, separators=(",", ":")).encode(), status)


def _continue_token(rv: int, key: tuple[str, str]) -> str:
    raw = json.dumps({"rv": rv, "after": list(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(store: ObjectStore, token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        rv, after = int(data["rv"]), (str(data["after"][0]), str(data["after"][1]))
    except (ValueError, KeyError, IndexError, TypeError) as err:
        raise ApiError(400, "BadRequest", "continue key is not valid") from err
    if rv < store.oldest_resource_version:
        raise ApiError(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter.",
        )
    return after


async def list_objects(request: web.Request, ctx: Context, t: Target) -> web.StreamResponse:
    q = request.query
    store = ctx.store
    limit = int(q.get("limit") or 0)
    after = _decode_continue(store, q["continue"]) if q.get("continue") else None
    found = store.entries(
        t.rt,
        t.namespace,
        label_selector=q.get("labelSelector", ""),
        field_selector=q.get("fieldSelector", ""),
        after=after,
    )
    picked: list[api_watch.Entry] = []
    meta: dict[str, Any] = {"resourceVersion": str(store.resource_version)}
    last: tuple[str, str] | None = None
    for key, entry in found:
        if limit and len(picked) >= limit:
            remaining = 1 + sum(1 for _ in found)
            assert last is not None
            meta["continue"] = _continue_token(store.resource_version, last)
            meta["remainingItemCount"] = remaining
            break
        picked.append(entry)
        last = key
    if wants_table(request):
        body = tables.table(
            t.rt,
            [e.obj for e in picked],
            now=store.clock.now(),
            include=q.get("includeObject", "Metadata"),
            metadata=meta,
        )
        return json_response(body)
    head = json.dumps(
        {"kind": f"{t.rt.kind}List", "apiVersion": t.rt.api_version, "metadata": meta},
        separators=(",", ":"),
    ).encode()
    return _bytes_response(head[:-1] + b',"items":[' + b",".join(e.raw() for e in picked) + b"]}")


async def watch(request: web.Request, ctx: Context, t: Target) -> web.StreamResponse:
    q = request.query
    store = ctx.store
    bookmarks = truthy(q.get("allowWatchBookmarks"))
    field_sel = q.get("fieldSelector", "")
    if t.name:
        field_sel = ",".join(s for s in (field_sel, f"metadata.name={t.name}") if s)
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    try:
        watch = store.watch(
            t.rt,
            t.namespace,
            resource_version=q.get("resourceVersion") or None,
            label_selector=q.get("labelSelector", ""),
            field_selector=field_sel,
            initial_events_end=bookmarks and truthy(q.get("sendInitialEvents")),
        )
    except ApiError as err:
        if err.code != 410:
            raise
        await resp.prepare(request)
        await resp.write(api_watch.WatchEvent("ERROR", err.status()).line())
        await resp.write_eof()
        return resp
    await resp.prepare(request)
    timeout = float(q.get("timeoutSeconds") or 0)
    every = ctx.bookmark if ctx.bookmark > 0 else 60.0

    async def expire() -> None:
        await store.clock.sleep(timeout)
        watch.close()

    async def keepalive() -> None:
        # Bookmarks when asked for; and a client that went away stops holding a watcher.
        while not watch.closed:
            await store.clock.sleep(every)
            transport = request.transport
            if transport is None or transport.is_closing():
                watch.close()
            elif bookmarks:
                watch.bookmark()

    timers = [asyncio.create_task(keepalive())]
    if timeout:
        timers.append(asyncio.create_task(expire()))
    as_table = wants_table(request)
    include = q.get("includeObject", "Metadata")
    try:
        while (event := await watch.next_event()) is not None:
            if as_table and event.type in ("ADDED", "MODIFIED", "DELETED"):
                obj = tables.table(t.rt, [event.obj], now=store.clock.now(), include=include)
                line = json.dumps({"type": event.type, "object": obj}).encode() + b"\n"
            else:
                line = event.line()
            await resp.write(line)
        await resp.write_eof()
    except ConnectionResetError:
        pass
    finally:
        watch.close()
        for timer in timers:
            timer.cancel()
    return resp


async def get(request: web.Request, ctx: Context, t: Target) -> web.StreamResponse:
    obj = ctx.store.get(t.rt, t.namespace, t.name or "")
    if wants_table(request):
        include = request.query.get("includeObject", "Metadata")
        return json_response(tables.table(t.rt, [obj], now=ctx.store.clock.now(), include=include))
    return json_response(obj)
