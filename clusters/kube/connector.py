"""`KubeConnector`: one member cluster reached through its kubeconfig (the `Member` protocol).

Fed by a Cluster's name and `spec.connection` (via `connect`), used by the cluster monitor
(readiness, version, discovery, node and pod list+watch) and by propagation (apply, get,
delete, watch of any kind). Nothing here knows whether the member is real or simulated:
both are a Kubernetes API over HTTP(S).

Arbitrary kinds go the dynamic way: discovery maps (apiVersion, kind) to the plural
resource and its scope, cached per group-version and refreshed on a miss, and requests go
through `transport.Transport` (kubernetes_asyncio's ApiClient with a timeout and the retry
policy). Watches carry `timeoutSeconds` so a quiet stream ends and is re-opened from the
last resourceVersion; `follow` lists, watches, and lists again whenever a watch gets 410.

Why `close()` ends the watch streams open on it: closing the client's session does not
wake a read already waiting on a stream, so a watch would go quiet (no event, no error, no
end) until its idle timeout, and whoever reads it would believe it still runs. `close()`
closes each open stream first: `watch` and `follow` then end, as a watch the server ends
does, and one started after `close()` ends at once without a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio import client

from clusters import member
from clusters.kube import discovery, kubeconfig, transport
from federation import clock as clock_mod
from federation import errors
from federation.settings import MemberSettings
from policies.models.cluster import Connection

__all__ = ["KubeConnector", "connect"]

Obj = dict[str, Any]
_APPLY = "application/apply-patch+yaml"
_PAGE = "500"
_EMPTY_WATCHES = 5


async def connect(
    name: str,
    connection: Connection,
    *,
    settings: MemberSettings | None = None,
    clock: clock_mod.Clock = clock_mod.real,
    field_manager: str = "fedctl",
) -> KubeConnector:
    """A connector for a member; raises errors.Invalid when the kubeconfig is unusable.

    No request is sent: whether the member answers is the caller's first `ready()`.
    """
    settings = settings or MemberSettings()
    cfg = await kubeconfig.load(connection, allow_exec=settings.insecure_kubeconfig_exec)
    api = client.ApiClient(configuration=cfg)
    tx = transport.Transport(api, cluster=name, settings=settings, clock=clock)
    return KubeConnector(name, tx, field_manager=field_manager)


class KubeConnector:
    """A member's API; build with `connect(...)`, end with `close()`."""

    def __init__(
        self, name: str, tx: transport.Transport, *, field_manager: str = "fedctl"
    ) -> None:
        self.name = name
        self._tx = tx
        self._field_manager = field_manager
        self._resources: dict[str, dict[str, member.ResourceInfo]] = {}
        self._streams: set[aiohttp.ClientResponse] = set()
        self._closing = asyncio.Event()

    @property
    def url(self) -> str:
        """The member's API URL, as people see it in messages."""
        return self._tx.host

    async def close(self) -> None:
        """End the watch streams open on this connector, then release its connections."""
        self._closing.set()
        for resp in list(self._streams):
            resp.close()  # a read waiting on it raises ClientConnectionError at once
        self._streams.clear()
        await self._tx.close()

    async def __aenter__(self) -> KubeConnector:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- health, version, discovery ---------------------------------------------------------

    async def ready(self, *, timeout: float | None = None) -> member.Readiness:
        """`/readyz`, or `/healthz` when the member has no readyz (404); never raises."""
        seconds = timeout or self._tx.settings.request_timeout
        try:
            async with asyncio.timeout(seconds):
                for path in ("/readyz", "/healthz"):
                    try:
                        await self._tx.request("GET", path, timeout=seconds, retry="answers")
                    except member.MemberNotFound:
                        continue
                    return member.Readiness(True, "ProbeSucceeded", f"{path[1:]} ok")
                return member.Readiness(
                    False, "NoHealthEndpoint", f"{self.url} serves neither /readyz nor /healthz"
                )
        except TimeoutError:
            return member.Readiness(
                False, "Timeout", f"no answer from {self.url} within {seconds:g}s"
            )
        except member.MemberUnavailable as exc:
            if exc.code is not None:
                return member.Readiness(False, "ReadyzFailed", f"readyz returned {exc.code}")
            return member.Readiness(False, exc.reason, exc.detail)
        except member.MemberRejected as exc:
            return member.Readiness(False, "ReadyzFailed", f"readyz returned {exc.code}")

    async def version(self, *, timeout: float | None = None) -> str:
        async with self._within(timeout):
            doc = (await self._tx.request("GET", "/version")).json() or {}
        return str(doc.get("gitVersion") or "")

    async def discover(self, *, timeout: float | None = None) -> list[member.APIGroupResources]:
        async with self._within(timeout):
            core = (await self._tx.request("GET", "/api")).json() or {}
        async with self._within(timeout):
            groups = (await self._tx.request("GET", "/apis")).json() or {}
        versions = discovery.group_versions(core, groups)
        async with self._within(timeout):
            found = await asyncio.gather(*(self._group_version(gv) for gv in versions))
        return [g for g in found if g is not None]

    @contextlib.asynccontextmanager
    async def _within(self, seconds: float | None) -> AsyncIterator[None]:
        """One round trip, its retries included, within `seconds` (None: no bound beyond
        each try's request timeout); running out is the member's Timeout, like any silence.

        The tries keep their own request timeout: given this one too, a try's deadline
        fired with it, aiohttp reported its own timeout and, against a blackholed member,
        the retries ran on to the retry deadline."""
        if seconds is None:
            yield
            return
        try:
            async with asyncio.timeout(seconds):
                yield
        except TimeoutError as exc:
            raise self._tx.unavailable(exc, timeout=seconds) from exc

    async def _group_version(self, gv: str) -> member.APIGroupResources | None:
        try:
            doc = (await self._tx.request("GET", discovery.base(gv))).json() or {}
        except member.MemberNotFound:
            return None
        parsed = discovery.parse_resource_list(gv, doc)
        self._resources[gv] = {r.kind: r for r in parsed.resources}
        return parsed

    async def resource(self, api_version: str, kind: str) -> member.ResourceInfo:
        """The plural resource and scope of a kind; MemberNotFound when the member lacks it."""
        known = self._resources.get(api_version, {}).get(kind)
        if known is None:
            await self._group_version(api_version)
            known = self._resources.get(api_version, {}).get(kind)
        if known is None:
            raise member.MemberNotFound(
                f"the server does not serve {kind} in {api_version}",
                cluster=self.name,
                code=404,
                reason="NotFound",
            )
        return known

    # -- list, watch, follow ----------------------------------------------------------------

    async def list(
        self, api_version: str, kind: str, *, namespace: str | None = None
    ) -> member.ObjectList:
        res = await self.resource(api_version, kind)
        path = discovery.path(api_version, res, namespace=namespace)
        items: list[Obj] = []
        cont = ""
        while True:
            query = {"limit": _PAGE, **({"continue": cont} if cont else {})}
            doc = (await self._tx.request("GET", path, query=query)).json() or {}
            items.extend(doc.get("items") or ())
            meta = doc.get("metadata") or {}
            cont = str(meta.get("continue") or "")
            if not cont:
                return member.ObjectList(items, str(meta.get("resourceVersion") or ""))

    async def watch(
        self,
        api_version: str,
        kind: str,
        *,
        resource_version: str,
        namespace: str | None = None,
    ) -> AsyncIterator[member.WatchEvent]:
        if self._closing.is_set():
            return
        res = await self.resource(api_version, kind)
        path = discovery.path(api_version, res, namespace=namespace)
        window = self._tx.settings.watch_timeout
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(max(1, int(window))),
        }
        if self._closing.is_set():  # closed while the kind was looked up
            return
        try:
            async with self._tx.stream(
                path, query=query, idle_timeout=window + self._tx.settings.request_timeout
            ) as resp:
                self._streams.add(resp)
                try:
                    async for line in resp.content:
                        if self._closing.is_set():
                            return
                        if line.strip():
                            yield self._event(line)
                finally:
                    self._streams.discard(resp)
        except (TimeoutError, OSError, aiohttp.ClientError) as exc:
            if self._closing.is_set():
                return
            raise self._tx.unavailable(exc, timeout=window) from exc
        except member.MemberUnavailable:
            if self._closing.is_set():  # closed while the stream was opening
                return
            raise

    def _event(self, line: bytes) -> member.WatchEvent:
        try:
            doc = json.loads(line)
            kind, obj = str(doc["type"]), doc["object"]
        except (ValueError, KeyError, TypeError) as exc:
            raise member.MemberUnavailable(
                f"malformed watch event from {self.url}: {line[:120]!r}",
                cluster=self.name,
                reason="ConnectionLost",
            ) from exc
        if kind == "ERROR":
            code = int(obj.get("code") or 500)
            raise transport.rejection(code, json.dumps(obj).encode(), cluster=self.name)
        if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
            raise member.MemberUnavailable(
                f"unknown watch event type {kind!r}", cluster=self.name, reason="ConnectionLost"
            )
        return member.WatchEvent(kind, obj)  # type: ignore[arg-type]

    async def follow(
        self, api_version: str, kind: str, *, namespace: str | None = None
    ) -> AsyncIterator[member.Relisted | member.Changed]:
        rv = ""
        idle = 0  # watches in a row that ended without a single event
        while not self._closing.is_set():
            if not rv:
                listed = await self.list(api_version, kind, namespace=namespace)
                rv = listed.resource_version
                yield member.Relisted(listed.items, rv)
            try:
                events = 0
                async for event in self.watch(
                    api_version, kind, resource_version=rv, namespace=namespace
                ):
                    events += 1
                    rv = str((event.object.get("metadata") or {}).get("resourceVersion") or rv)
                    if event.type != "BOOKMARK":
                        yield member.Changed(event.type, event.object)
            except member.WatchExpired:
                rv = ""
                continue
            if self._closing.is_set():
                return
            idle = 0 if events else idle + 1
            if idle >= _EMPTY_WATCHES:
                # A member that closes every watch at once would make this loop spin.
                raise member.MemberUnavailable(
                    f"{self.url} ends every {kind} watch without an event",
                    cluster=self.name,
                    reason="ConnectionLost",
                )

    # -- arbitrary objects ------------------------------------------------------------------

    async def _object_path(self, ref: member.ObjectRef) -> str:
        res = await self.resource(ref.api_version, ref.kind)
        if res.namespaced and not ref.namespace:
            raise errors.Invalid(f"{ref.kind} is namespaced: give a namespace for {ref.name}")
        return discovery.path(ref.api_version, res, namespace=ref.namespace, name=ref.name)

    async def get(self, ref: member.ObjectRef) -> Obj:
        got: Obj = (await self._tx.request("GET", await self._object_path(ref))).json()
        return got

    async def apply(self, obj: Mapping[str, Any], *, force: bool = False) -> Obj:
        ref = _ref_of(obj)
        query = {"fieldManager": self._field_manager, "force": "true" if force else "false"}
        resp = await self._tx.request(
            "PATCH", await self._object_path(ref), query=query, body=dict(obj), content_type=_APPLY
        )
        applied: Obj = resp.json()
        return applied

    async def replace(self, obj: Mapping[str, Any]) -> Obj:
        resp = await self._tx.request(
            "PUT",
            await self._object_path(_ref_of(obj)),
            query={"fieldManager": self._field_manager},
            body=dict(obj),
        )
        replaced: Obj = resp.json()
        return replaced

    async def delete(self, ref: member.ObjectRef) -> bool:
        try:
            await self._tx.request(
                "DELETE",
                await self._object_path(ref),
                body={
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "propagationPolicy": "Background",
                },
            )
        except member.MemberNotFound:
            return False
        return True


def _ref_of(obj: Mapping[str, Any]) -> member.ObjectRef:
    meta = obj.get("metadata") or {}
    ref = member.ObjectRef(
        api_version=str(obj.get("apiVersion") or ""),
        kind=str(obj.get("kind") or ""),
        name=str(meta.get("name") or ""),
        namespace=meta.get("namespace"),
    )
    if not (ref.api_version and ref.kind and ref.name):
        raise errors.Invalid("a written object needs apiVersion, kind and metadata.name")
    return ref
