"""`GET /apis/fedctl.io/v1alpha1/watch?resources=A,B,...`: the watches of several kinds in
one stream, each event tagged with the resource it is about.

Why one stream for many kinds: a browser keeps at most six HTTP/1.1 connections to a host
(Chromium's limit, shared by every tab of a profile), and a watch holds one for as long as
it is open. The dashboard used to open one watch per kind it shows, four per tab: a
second tab's lists, plans and drill starts queued behind the streams, and showed nothing
(or zeros) until a stream closed. With one stream a tab holds one connection. The
per-kind route (`.../{plural}?watch=true`, `objects.ObjectsApi`) stays as it was for the
CLI (`fedctl get -w`) and any other client.

Each line is one JSON event, as the per-kind watch writes them, plus `resource` (the
plural it belongs to):

    {"type": "ADDED|MODIFIED|DELETED|BOOKMARK|ERROR", "resource": "bindings", "object": {...}}

Where each resource starts:

    resourceVersion=N          every resource from revision N+1; no initial events
    resourceVersion=0          as neither, Kubernetes' "any version": the present
    sendInitialEvents=false    every resource from now; no initial events
    (neither)                  each resource's objects as ADDED, then its changes

`timeoutSeconds=N` ends the stream after N seconds, as Kubernetes does; without it the
stream ends after a random lifetime of one to two `ApiSettings.watch_min_lifetime`, as
kube-apiserver ends its watches. `allowWatchBookmarks=true` adds a BOOKMARK per resource
every `ApiSettings.watch_bookmark_interval` seconds, however quiet the stream, at the
revision that resource's changes have been sent up to, so a client can tell a stalled
connection from a quiet one (`streams.ticking`). A client that
takes nothing for `ApiSettings.watch_write_timeout` seconds is dropped, and one that
goes away ends the stream quietly (`streams`).

Each resource then gets one BOOKMARK carrying the revision its changes follow, so a client
knows that resource is followed (the dashboard re-lists it then, which also catches up on
what changed while it was disconnected). Within one resource, events come in revision
order, exactly once, as on its own watch; across resources, in the order they arrive.

A namespaced resource (or Works) a tenant may not read across namespaces (`auth.may_list`)
streams the objects of its own namespaces only (`visible.readable_key`), as a list of
it is cut. Any other resource the caller may not read (a tenant and cluster propagation
policies, say) gets one ERROR event with a 403 Status as its object, and the stream goes
on with the others, so one forbidden kind does not blank a page that can show the rest.
An unknown resource name is a 400 before anything is streamed.

A `resourceVersion` the registry cannot serve (compacted, or ahead of it: `resume`) ends
the stream at once with one ERROR event carrying its Status (410 Expired, or 504), with no
`resource`, for it is true of every resource; no BOOKMARK is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from federation import errors
from federation.api import auth, params, resume, selectors, shown, status, streams, visible
from federation.api import objects as objects_api
from federation.registry import objects as reg_objects
from federation.registry import store as st

__all__ = ["WATCH_PATH", "WatchApi", "is_watch"]

Send = streams.Send

WATCH_PATH = objects_api.API_PREFIX + "/watch"


def is_watch(request: web.Request) -> bool:
    """Whether `request` opens a stream meant to stay open (no request deadline)."""
    if request.path == WATCH_PATH:
        return True
    return request.query.get("watch", "").lower() in ("1", "true", "yes")


def _resources(request: web.Request) -> list[reg_objects.Resource]:
    names = [n.strip() for n in request.query.get("resources", "").split(",") if n.strip()]
    if not names:
        raise errors.Invalid(
            "resources: name the kinds to watch, e.g. ?resources=clusters,queues,workloads"
        )
    found: dict[str, reg_objects.Resource] = {}
    for name in names:
        res = reg_objects.resource_named(name)  # Invalid naming the known ones
        found.setdefault(res.plural, res)
    return list(found.values())


def _event(kind: str, resource: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "resource": resource, "object": obj}).encode() + b"\n"


class WatchApi:
    """The multiplexed watch route bound to one Store."""

    def __init__(self, store: st.Store, *, timing: streams.Timing) -> None:
        """`timing`: how long a client may take nothing (`streams.Writer`), how often a
        bookmark is sent and how long a stream lasts."""
        self.store = store
        self.timing = timing

    def routes(self) -> list[web.RouteDef]:
        return [web.get(WATCH_PATH, self.watch)]

    async def watch(self, request: web.Request) -> web.StreamResponse:
        wanted = _resources(request)
        chosen = selectors.from_query(request.query)  # the same for every resource
        since = params.watched_since(request.query)
        initial = params.flag(request.query.get("sendInitialEvents"), default=True)
        deadline = self.timing.deadline(request.query)
        every = self.timing.bookmarks(request.query)
        start = None if since is None else since + 1
        refused = None if since is None else await resume.refusal(self.store, since)
        who = request.get(auth.PRINCIPAL)
        resp = web.StreamResponse(headers=self.timing.headers(request.query))
        await resp.prepare(request)
        status.streaming(request, resp)
        if refused is not None:  # every resource starts there: the stream ends at once
            await resp.write(status.error_event(refused))
            return resp
        send = streams.Writer(request, resp, timeout=self.timing.write_timeout).write
        try:
            await self._stream(
                who=who,
                wanted=wanted,
                start=start,
                initial=initial,
                chosen=chosen,
                deadline=deadline,
                every=every,
                send=send,
            )
        except* streams.ClientGone:
            pass  # the client went away, or was dropped: every resource's watch ends with it
        return resp

    async def _stream(
        self,
        *,
        who: Any,
        wanted: list[reg_objects.Resource],
        start: int | None,
        initial: bool,
        chosen: selectors.Filter,
        deadline: float,
        every: float | None,
        send: Send,
    ) -> None:
        """`watch`'s events, once the stream has begun."""
        if start is None and not initial:
            start = await self.store.current_revision() + 1
        readable = []
        owned = auth.readable(who)
        for res in wanted:
            denied = auth.may_list(who, res.plural) if who is not None else None
            if denied is None:
                readable.append((res, visible.readable_key(res, None)))
                continue
            if owned is not None and (res.namespaced or res.plural == "works"):
                readable.append((res, visible.readable_key(res, owned)))
                continue
            forbidden = {
                "kind": "Status",
                "status": "Failure",
                "code": 403,
                "reason": "Forbidden",
                "message": f"user {who.user!r} {denied}" if who is not None else denied,
            }
            await send(_event("ERROR", res.plural, forbidden))
        try:
            async with asyncio.timeout(deadline), asyncio.TaskGroup() as group:
                for res, keep in readable:
                    tell = visible.teller(res.plural, owned)
                    group.create_task(
                        self._follow(res, start, send, keep, chosen, tell=tell, every=every),
                        name=f"watch-{res.plural}",
                    )
        except* TimeoutError:
            pass  # the client's timeoutSeconds: the stream ends there, as Kubernetes ends it
        except* errors.Compacted as group:  # compacted since it was checked: end, as above
            first = group.exceptions[0]
            if isinstance(first, errors.Compacted):
                await send(status.error_event(resume.expired(first)))

    async def _follow(
        self,
        res: reg_objects.Resource,
        start: int | None,
        send: Send,
        keep: Callable[[str], bool],
        chosen: selectors.Filter,
        *,
        tell: Callable[[Any], Any],
        every: float | None,
    ) -> None:
        """Stream `res` from `start` (listing it first without one): the objects the
        caller may read (`keep`, `visible.readable_key`) that the selectors choose (`chosen`),
        as it may see them (`tell`, `visible.told`), and bookmarks: one when it starts,
        then one every `every` seconds if asked for (`streams.ticking`)."""
        prefix = reg_objects.list_prefix(res, None)
        view = shown.Statused(self.store, res, prefix)
        if start is None:
            listed = await self.store.list(prefix)
            for kv in listed.items:
                if keep(kv.key) and chosen.matches(obj := await view.shown(kv)):
                    await send(_event("ADDED", res.plural, tell(obj)))
            start = listed.revision + 1
        sent = start - 1  # every change of `res` up to this revision has been judged
        await send(_event("BOOKMARK", res.plural, streams.bookmark(sent, res.kind)))
        watched = self.store.watch(view.watched, start_revision=start)
        async with contextlib.aclosing(streams.ticking(watched, every=every)) as events:
            async for event in events:
                if event is None:
                    await send(_event("BOOKMARK", res.plural, streams.bookmark(sent, res.kind)))
                    continue
                sent = event.mod_revision
                if not keep(view.spec_key(event.key)):
                    continue
                for kind, obj in await view.events(event, chosen):
                    await send(_event(kind, res.plural, tell(obj)))
