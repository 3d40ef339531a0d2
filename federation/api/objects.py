"""REST handlers for user objects: list, get, create, update, delete, watch and apply.

Role: the only writer of user-owned keys (clusters, policies, queues, workloads). Bodies
are JSON or YAML; YAML goes through the policy loader so a 400 carries the same
`FILE:LINE:COL: path: message` findings as `fedctl validate`. Updates (PUT, and `apply` of
a document that carries one) are compare-and-swap on `metadata.resourceVersion` (the etcd
mod revision): a stale one gets 409, never a silent overwrite. Without one, the last writer
wins: a write that loses a race reads again and is decided again, and never answers 409.
Fed by the CLI and the dashboard; feeds the registry, which the controllers watch.

Why `apply` is one request for many documents: every document is validated, and its size
judged against what etcd takes in one request, before any is stored, so a directory with
one broken or oversized file changes nothing.

Why queues are checked against the stored set: a file holds only part of the queue tree,
so `fedctl validate` can only warn about a parent it does not see. Here the whole tree is
known, and a write that would leave a queue under a parent nobody defined, in a loop, capped
above its parent, or with children guaranteed more than the parent holds is refused with
the queue and field named; so is deleting a queue that still has children. Only problems
in the queues written, or new elsewhere, are refused, so a flaw stored before does not
block an unrelated edit (nor the scheduler: the tree ends a broken chain there).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from operator import itemgetter
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from federation import clock as clock_mod
from federation import errors, secrets
from federation.api import (
    audit,
    auth,
    bodies,
    cluster_prices,
    delete_options,
    immutable,
    members,
    params,
    plan_routes,
    queue_status,
    resume,
    selectors,
    shown,
    status,
    streams,
    visible,
    write_order,
)
from federation.cache.currency import Currency
from federation.cache.snapshot import device_defaults
from federation.propagation.overrides import AnyOverride
from federation.registry import arrival, codec, keys, objects
from federation.registry import events as event_log
from federation.registry import store as st
from federation.scheduler import claims
from federation.scheduler import plan as planning
from federation.settings import ApiSettings
from policies import loading
from policies.loading.documents import namespace_problem, queue_children, reserved_namespace
from policies.models import kinds, secret_data
from policies.models.base import KubeObject
from policies.models.binding import CLAIMED_BY, Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.frq import FederatedResourceQuota
from policies.models.queue import Queue, hierarchy_problems
from policies.models.work import QuotaStatus
from policies.models.workload import Workload

__all__ = ["ObjectsApi"]

_log = logging.getLogger(__name__)

API_PREFIX = "/apis/fedctl.io/v1alpha1"
_SERVER_FIELDS = ("resource_version", "uid", "generation", "creation_timestamp")
REDACTED = secrets.REDACTED


_READS = 64
"""Registry reads an apply has in flight at once."""
_WRITES = 100
"""Objects per transaction of an apply: under etcd's default `--max-txn-ops` (128)."""
_RACES = 20
"""Times a write without a resourceVersion is decided again after losing a race."""


def _strip(obj: KubeObject) -> dict[str, Any]:
    """The user-controlled content of an object, for 'unchanged' comparisons."""
    wire = obj.to_wire()
    meta = dict(wire.get("metadata", {}))
    for name in ("resourceVersion", "uid", "generation", "creationTimestamp"):
        meta.pop(name, None)
    wire["metadata"] = meta
    wire.pop("status", None)
    return wire


class ObjectsApi:
    """Handlers bound to one Store; `routes()` gives the aiohttp route table."""

    def __init__(
        self,
        store: st.Store,
        *,
        clock: clock_mod.Clock = clock_mod.real,
        cipher: secrets.Cipher | None = None,
        admit: bodies.Admit | None = None,
        currency: Currency | None = None,
        queues: queue_status.QueueStatusApi | None = None,
        max_object_bytes: int = ApiSettings().max_object_bytes,
        watch_timing: streams.Timing | None = None,
    ) -> None:
        self.raw = store
        self.max_object_bytes = max_object_bytes
        """Largest write of one object etcd takes (`ApiSettings.max_object_bytes`)."""
        self.watch_timing = watch_timing or streams.Timing.of(ApiSettings())
        """How long a watch's client may take nothing before it is dropped, how often a
        watch that asked for bookmarks gets one, and how long a watch lasts (`streams`)."""
        self.queues = queues or queue_status.QueueStatusApi(store)
        """What `get queues` shows, which a queue's deletion warns by (`_queue_in_use`)."""
        self.objects = codec.TypedStore(store, objects.ObjectCodec(cipher=cipher))
        self.statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
        self.quota_statuses = codec.TypedStore(store, codec.Codec(QuotaStatus))
        self.clock = clock
        self.admit = admit
        self.currency = currency or Currency()

    def routes(self) -> list[web.RouteDef]:
        p, ns = API_PREFIX, API_PREFIX + "/namespaces/{ns}"
        return [
            web.post(p + "/apply", self.apply),
            web.post(p + "/validate", self.validate),
            web.get(p + "/{plural}", self.list_objects),
            web.post(p + "/{plural}", self.create),
            web.get(ns + "/{plural}", self.list_objects),
            web.post(ns + "/{plural}", self.create),
            web.get(p + "/{plural}/{name}", self.get),
            web.put(p + "/{plural}/{name}", self.update),
            web.delete(p + "/{plural}/{name}", self.delete),
            web.get(ns + "/{plural}/{name}", self.get),
            web.put(ns + "/{plural}/{name}", self.update),
            web.delete(ns + "/{plural}/{name}", self.delete),
            web.get(ns + "/{plural}/{kind}/{name}", self.get),
            web.put(ns + "/{plural}/{kind}/{name}", self.update),
            web.delete(ns + "/{plural}/{kind}/{name}", self.delete),
        ]

    # addressing

    @staticmethod
    def _resource(request: web.Request) -> objects.Resource:
        return objects.resource_named(request.match_info["plural"])

    def _key(self, request: web.Request, res: objects.Resource) -> str:
        info = request.match_info
        ns, name, kind = info.get("ns"), info["name"], info.get("kind")
        if res.namespaced != bool(ns):
            scope = "namespaced" if res.namespaced else "cluster-scoped"
            raise errors.Invalid(f"{res.plural} are {scope}")
        if res.plural in ("workloads", "bindings"):
            if not kind or not ns:
                raise errors.Invalid(
                    f"address {res.plural} as namespaces/NS/{res.plural}/KIND/NAME"
                )
            ref = keys.WorkloadRef(ns, kind, name)
            return keys.workload_key(ref) if res.plural == "workloads" else keys.binding_key(ref)
        if kind:
            raise web.HTTPNotFound(text=f"no route {request.path}")
        if res.plural == "clusters":
            return keys.cluster_key(name)
        if res.plural == "works":
            raise errors.Invalid("list works with ?cluster=NAME; they have no single-name address")
        if res.plural == "events":
            raise errors.Invalid("list events (of a namespace); they have no single-name address")
        return keys.policy_key(res.kind, ns, name)

    # reads

    async def _present(
        self,
        item: codec.Stored[KubeObject],
        *,
        chip_prices: dict[str, Decimal] | None = None,
        statuses: Mapping[str, codec.Stored[ClusterStatus]] | None = None,
    ) -> dict[str, Any]:
        """The object as the API shows it. `chip_prices`: the profiles' default chip prices
        (`snapshot.device_defaults`), read once for a list of Clusters; `statuses`: every
        ClusterStatus by key, likewise (one read per Cluster made a list of 144 members
        take over 30 s while their monitors were writing)."""
        wire = objects.with_revision(item.obj, item.revision).to_wire()
        if isinstance(item.obj, Workload):  # one stored before writes folded it
            wire = secret_data.fold(wire)
        if item.obj.kind == "Cluster":
            conn = wire.get("spec", {}).get("connection", {})
            if conn.get("kubeconfig"):
                conn["kubeconfig"] = REDACTED
            key = keys.cluster_status_key(item.obj.metadata.name)
            status = statuses.get(key) if statuses is not None else await self.statuses.get(key)
            if status is not None:
                wire["status"] = status.obj.model_dump(
                    mode="json", by_alias=True, exclude_none=True
                )
            if chip_prices is None:
                chip_prices = await self._chip_prices()
            assert isinstance(item.obj, Cluster)
            cluster_prices.fill(wire, item.obj, chip_prices, currency=self.currency)
        elif isinstance(item.obj, FederatedResourceQuota):
            # What the member ResourceQuotas report (Karmada's FRQ status): `describe` and
            # `get -o yaml` show it, as `kubectl` does for Karmada.
            meta = item.obj.metadata
            key = keys.policy_status_key(item.obj.kind, meta.namespace, meta.name)
            quota = await self.quota_statuses.get(key)
            if quota is not None:
                wire["status"] = quota.obj.model_dump(mode="json", by_alias=True, exclude_none=True)
        return wire

    async def _chip_prices(self) -> dict[str, Decimal]:
        """The AcceleratorProfiles' default chip prices, as the scheduler charges them."""
        listed = await self.objects.list(objects.list_prefix(_PROFILES, None))
        return device_defaults(i.obj for i in listed.items)

    async def list_objects(self, request: web.Request) -> web.StreamResponse:
        res = self._resource(request)
        ns = _namespace_in_path(request, res)
        prefix = objects.list_prefix(res, ns)
        if res.plural == "works" and request.query.get("cluster"):
            prefix = keys.work_prefix(request.query["cluster"])
        every = (res.namespaced and not ns) or res.plural == "works"
        owned = auth.readable(request.get(auth.PRINCIPAL)) if every else None
        chosen = selectors.from_query(request.query, kind=res.plural)
        if params.flag(request.query.get("watch")):
            keep = visible.readable_key(res, owned)
            return await self._watch(request, res, prefix, keep, chosen)
        since = params.listed_since(request.query)
        if since is not None and since > (current := await self.raw.current_revision()):
            body = resume.too_large(since, current)
            return web.json_response(body, status=body["code"])
        tell = _teller(request, res)
        items: list[dict[str, Any]] = []
        revision = 0
        unreadable: list[str] = []
        for part, keep in visible.parts(res, prefix, owned):
            if res.readonly:
                raw = await self.raw.list(part)
                items += [tell(shown.raw_wire(kv)) for kv in raw.items if keep(kv.key)]
                revision = max(revision, raw.revision)
                continue
            listed = await self.objects.list(part)
            chips = statuses = None
            if res.plural == "clusters":
                chips = await self._chip_prices()
                known = await self.statuses.list(keys.prefix("clusterstatus"))
                statuses = {i.key: i for i in known.items}
            items += [
                await self._present(i, chip_prices=chips, statuses=statuses)
                for i in listed.items
                if keep(i.key)
            ]
            revision = max(revision, listed.revision)
            unreadable += [_unreadable(skipped) for skipped in listed.skipped]
        items = [item for item in items if chosen.matches(item)]
        if res.plural == "events":
            items.sort(key=event_log.last_seen)  # oldest first, as the docs promise
        return web.json_response(
            {
                "apiVersion": "fedctl.io/v1alpha1",
                "kind": f"{res.kind}List",
                "metadata": {"resourceVersion": str(revision)},
                "items": items,
            },
            headers=_warnings(unreadable),
        )

    async def get(self, request: web.Request) -> web.Response:
        res = self._resource(request)
        key = self._key(request, res)
        if res.readonly:
            kv = await self.raw.get(key)
            if kv is None:
                raise errors.NotFound(objects.called(res, key))
            return web.json_response(_teller(request, res)(shown.raw_wire(kv)))
        item = await self.objects.get(key)
        if item is None:
            raise errors.NotFound(objects.called(res, key))
        return web.json_response(await self._present(item))

    async def _watch(
        self,
        request: web.Request,
        res: objects.Resource,
        prefix: str,
        keep: Callable[[str], bool],
        chosen: selectors.Filter,
    ) -> web.StreamResponse:
        """Changes under `prefix` to objects the caller may read (`keep`), as JSON lines:
        from `resourceVersion` when given (`watched_since`: not "0"), else every object as
        ADDED first (none with `sendInitialEvents=false`), then a BOOKMARK at the revision
        the changes follow, and one every `watch_bookmark_interval` seconds if asked for
        (`allowWatchBookmarks`). A revision the registry cannot serve ends the
        stream with one ERROR event (`resume`), checked before it begins. It ends at its
        `timeoutSeconds`, or after a random lifetime without (`streams.Timing.deadline`)."""
        # Read before the stream is prepared: once it is, a refusal can only end it.
        since = params.watched_since(request.query)
        initial = params.flag(request.query.get("sendInitialEvents"), default=True)
        timing = self.watch_timing
        deadline, every = timing.deadline(request.query), timing.bookmarks(request.query)
        refused = None if since is None else await resume.refusal(self.raw, since)
        resp = web.StreamResponse(headers=timing.headers(request.query))
        await resp.prepare(request)
        status.streaming(request, resp)
        if refused is not None:
            await resp.write(status.error_event(refused))
            return resp
        send = streams.Writer(request, resp, timeout=timing.write_timeout).write
        # The client's timeoutSeconds is the end; so is the client gone, or dropped.
        with contextlib.suppress(TimeoutError, streams.ClientGone):
            async with asyncio.timeout(deadline):
                await self._stream(
                    send,
                    res,
                    prefix,
                    keep,
                    chosen,
                    since=since,
                    initial=initial,
                    tell=_teller(request, res),
                    every=every,
                )
        return resp

    async def _stream(
        self,
        send: streams.Send,
        res: objects.Resource,
        prefix: str,
        keep: Callable[[str], bool],
        chosen: selectors.Filter,
        *,
        since: int | None,
        initial: bool,
        tell: Callable[[Any], Any],
        every: float | None,
    ) -> None:
        """`_watch`'s events, once the stream has begun; a bookmark every `every` seconds
        (`streams.ticking`) at the revision the changes have been judged up to."""
        view = shown.Statused(self.raw, res, prefix)
        if since is not None:
            start = since + 1
        elif not initial:
            start = await self.raw.current_revision() + 1
        else:
            listed = await self.raw.list(prefix)
            for kv in listed.items:
                if keep(kv.key) and chosen.matches(obj := await view.shown(kv)):
                    await send(_line("ADDED", tell(obj)))
            start = listed.revision + 1
        sent = start - 1
        await send(_line("BOOKMARK", streams.bookmark(sent, res.kind)))
        watched = self.raw.watch(view.watched, start_revision=start)
        try:
            async with contextlib.aclosing(streams.ticking(watched, every=every)) as events:
                async for event in events:
                    if event is None:
                        await send(_line("BOOKMARK", streams.bookmark(sent, res.kind)))
                        continue
                    sent = event.mod_revision
                    if not keep(view.spec_key(event.key)):
                        continue
                    for kind, obj in await view.events(event, chosen):
                        await send(_line(kind, tell(obj)))
        except errors.Compacted as exc:  # compacted since it was checked
            await send(status.error_event(resume.expired(exc)))

    # writes

    async def _body(self, request: web.Request) -> list[KubeObject]:
        """Documents in the body, validated; any error becomes one 400 with every finding.
        The audit trail records what they are, whether the write is then refused or not.

        Parsed in a worker thread (as `validate` and `/plan` parse theirs): one body of a
        few MiB (38,000 small documents, under the body limit) took 14 s to parse on the
        event loop, and every other request, every watch and the leader lease's renewal
        waited behind it (/healthz answered in 11 s; two such requests outlast a 15 s
        lease). In a thread the loop runs between the parser's slices of the GIL, as it
        does beside the scheduler's cycle in its own thread."""
        text = (await request.read()).decode("utf-8", errors="replace")
        models = await asyncio.to_thread(bodies.documents, text, content_type=request.content_type)
        audit.attempted(request, models)
        return models

    def _placed(self, request: web.Request, obj: KubeObject) -> KubeObject:
        """Fill or check the namespace from the URL; refuse one members refuse
        (`namespace_problem`) or Kubernetes keeps for itself (`reserved_namespace`), which
        a body without a namespace reaches only here."""
        ns = request.match_info.get("ns")
        res = objects.resource_for_kind(obj)
        if res.namespaced and kinds.is_namespaced(obj.kind):
            body_ns = obj.metadata.namespace
            if ns and body_ns and body_ns != ns:
                raise errors.Invalid(f"metadata.namespace {body_ns!r} does not match URL {ns!r}")
            meta = obj.metadata.model_copy(update={"namespace": body_ns or ns or "default"})
            obj = obj.model_copy(update={"metadata": meta})
            problem = namespace_problem(obj.metadata.namespace or "")
            if problem is not None:
                raise _refused(obj, ("metadata", "namespace"), problem)
        reserved = reserved_namespace(obj)
        if reserved is not None:
            raise _refused(obj, *reserved)
        return _folded(obj)

    def _fresh(self, obj: KubeObject) -> KubeObject:
        obj = _specified(obj)
        now = self.clock.now()
        meta = obj.metadata.model_copy(
            update={
                "uid": arrival.new_uid(now),  # ordered: FIFO among one apply's objects
                "generation": 1,
                "creation_timestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "resource_version": None,
            }
        )
        return obj.model_copy(update={"metadata": meta})

    @staticmethod
    def _successor(old: KubeObject, new: KubeObject) -> KubeObject:
        """`new` carrying `old`'s server metadata; generation moves when the spec changes.
        Refused where it changes what cannot change (`immutable.check`)."""
        immutable.check(old, new)
        same_spec = _strip(old).get("spec") == _strip(new).get("spec")
        kept = {name: getattr(old.metadata, name) for name in _SERVER_FIELDS}
        kept["generation"] = (old.metadata.generation or 1) + (0 if same_spec else 1)
        kept["resource_version"] = None
        if old.kind == "Cluster":
            new = _keep_secret(old, new)
        new = _specified(new)
        return new.model_copy(update={"metadata": new.metadata.model_copy(update=kept)})

    async def create(self, request: web.Request) -> web.Response:
        res = self._resource(request)
        if res.readonly:
            raise web.HTTPMethodNotAllowed(
                request.method, ["GET"], text=f"{res.plural} are read-only"
            )
        _namespace_in_path(request, res)
        models = await self._body(request)
        if len(models) != 1:
            raise errors.Invalid(f"POST takes exactly one object, got {len(models)}")
        obj = self._placed(request, models[0])
        if objects.resource_for_kind(obj) != res:
            raise errors.Invalid(f"a {obj.kind} cannot be created as {res.plural}")
        # By the object's own scope, as /apply judges it: the URL's namespace says nothing
        # of a ClusterRoleBinding posted under it. Before the dry run's existence check,
        # so a refusal never says whether the object is there.
        bodies.admit_each(self.admit, request, [obj])
        await self._check_stored([obj])
        obj = self._fresh(_stamp_taints(None, obj, now=self.clock.now()))
        key = objects.key_for(obj)
        self._fits(obj, self.objects.create_op(key, obj))
        if request.query.get("dryRun") == "All":  # checked as a create is; nothing stored
            if await self.objects.get(key) is not None:
                raise errors.AlreadyExists(objects.called(res, key))
            notes = await self._write_notes([obj], changed=[obj], dry=True)
            return web.json_response(obj.to_wire(), status=201, headers=_warnings(notes))
        with _naming(obj), _addressed(objects.called(res, key)):
            stored = await self.objects.create(key, obj)
        notes = await self._write_notes([obj], changed=[obj], dry=False)
        return web.json_response(await self._present(stored), status=201, headers=_warnings(notes))

    async def update(self, request: web.Request) -> web.Response:
        res = self._resource(request)
        if res.readonly:
            raise web.HTTPMethodNotAllowed(
                request.method, ["GET"], text=f"{res.plural} are read-only"
            )
        models = await self._body(request)
        if len(models) != 1:
            raise errors.Invalid(f"PUT takes exactly one object, got {len(models)}")
        obj = self._placed(request, models[0])
        key = self._key(request, res)
        if objects.key_for(obj) != key:
            raise errors.Invalid("the object in the body is not the one named in the URL")
        bodies.admit_each(self.admit, request, [obj])
        if self.admit is not None and res.plural in _TENANT_POLICIES:
            self._admit_stored(request, [await self.objects.get(key)])
        expected = params.revision(obj.metadata.resource_version, field="metadata.resourceVersion")
        await self._check_stored([obj])
        if request.query.get("dryRun") == "All":  # checked as an update is; nothing stored
            current = _as_given(objects.called(res, key), await self.objects.get(key), expected)
            _same_group(current.obj, obj)
            new = self._successor(current.obj, obj)
            self._fits(obj, self.objects.update_op(key, new, revision=current.revision))
            changed = [] if _unchanged(current.obj, obj) else [obj]
            notes = await self._write_notes([obj], changed=changed, dry=True)
            return web.json_response(new.to_wire(), headers=_warnings(notes))
        stored, wrote = await self._write(key, obj, expected=expected)
        notes = await self._write_notes([obj], changed=[obj] if wrote else [], dry=False)
        return web.json_response(await self._present(stored), headers=_warnings(notes))

    async def _write(
        self, key: str, obj: KubeObject, *, expected: int | None
    ) -> tuple[codec.Stored[KubeObject], bool]:
        """PUT's write of `obj` over what is at `key`, and whether it changed anything: a
        compare-and-swap on `expected` when given (stale: 409); without it
        last-writer-wins, decided again on what the winner of a lost race left, as
        `_write_one` does. An update that changes nothing is not written, so its
        resourceVersion stays and no watch sees a MODIFIED, as in Kubernetes."""
        name = objects.called(objects.resource_for_kind(obj), key)
        for _ in range(_RACES):
            current = _as_given(name, await self.objects.get(key), expected)
            _same_group(current.obj, obj)
            if _unchanged(current.obj, obj):
                return current, False
            new = self._successor(
                current.obj, _stamp_taints(current.obj, obj, now=self.clock.now())
            )
            self._fits(obj, self.objects.update_op(key, new, revision=current.revision))
            try:
                with _naming(obj), _addressed(name):
                    return await self.objects.update(key, new, revision=current.revision), True
            except errors.Conflict:
                if expected is not None:
                    raise
        raise _raced(name)

    async def delete(self, request: web.Request) -> web.Response:
        res = self._resource(request)
        if res.readonly:
            raise web.HTTPMethodNotAllowed(
                request.method, ["GET"], text=f"{res.plural} are read-only"
            )
        key = self._key(request, res)
        options = delete_options.read(await request.read())
        since = params.precondition(request.query, options)
        # Say what deleting would do; keep it.
        dry = request.query.get("dryRun") == "All" or options.dry
        if res.plural == "workloads":
            namespace = objects.namespace_of(keys.parse_workload_key(key))
            if namespace is not None:
                return await self._delete_namespace(
                    request, key, namespace, since=since, uid=options.uid, dry=dry
                )
        warnings: list[str] = []
        if res.plural == "queues":
            await self._check_queue_tree([], removed=request.match_info["name"])
            in_use = await self._queue_in_use(request.match_info["name"])
            warnings += [in_use] if in_use else []
        if res.plural == "clusters":
            left = await members.removal_note(self.raw, request.match_info["name"], dry=dry)
            warnings += [left] if left else []
        current = await self.objects.get(key)  # its uid is the Success's, as Kubernetes'
        self._admit_stored(request, [current])
        name = objects.called(res, key)
        if dry or options.uid is not None:
            # Deleted at the revision whose uid was checked: one replaced since is a 409.
            since = _as_given(name, current, since, uid=options.uid).revision
        if not dry:
            with _addressed(name):  # a stale `since` is the store's Conflict
                if not await self.objects.delete(key, revision=since):
                    raise errors.NotFound(name)
        if current is not None and isinstance(current.obj, planning.AnyPolicy):
            warnings.extend(await self._claim_notes([], deleted=current.obj))
        details: dict[str, str] = status.addressed(request)
        if current is not None and current.obj.metadata.uid:
            details["uid"] = current.obj.metadata.uid
        return web.json_response(
            {"apiVersion": "v1", "kind": "Status", "status": "Success", "details": details},
            headers=_warnings(warnings),
        )

    async def _delete_namespace(
        self,
        request: web.Request,
        key: str,
        namespace: str,
        *,
        since: int | None,
        uid: str | None,
        dry: bool,
    ) -> web.Response:
        """Delete the Namespace template at `key` and what the federation holds in that
        namespace: its workload templates and namespaced policies (`_held`), as the
        Kubernetes namespace controller does in Karmada's control plane. The copies then
        leave the members as any deleted workload's do, each by its own Work.

        Deleting the template alone deleted the namespace in every member, and with it
        every copy there, while their templates stayed: the propagator applied them all
        again and each Job ran from the start.

        Why the Namespace goes last, after what it holds, in transactions of at most
        `_WRITES` deletions: a namespace holds more than one transaction takes, and a
        cascade cut off midway (the registry lost, the request timed out) must leave the
        Namespace in place, so the members keep it and the copies of what is left keep
        running untouched, and deleting it again finishes the job. Workloads go before
        the policies, so no OverridePolicy removed first re-renders and restarts a copy
        about to be deleted, and no quota removed first admits work about to go.

        The caller must be allowed to write each kind of object the namespace holds
        (`admit`): a tenant deletes its own namespace, but not one holding its
        FederatedResourceQuota, which it may not remove. Refused whole, before anything
        is deleted. A dry run checks the same and says what would go with it."""
        if namespace in _IMMORTAL:
            raise web.HTTPForbidden(
                text=f"namespace {namespace} may not be deleted: Kubernetes keeps it in every"
                " cluster, and deleting it here would delete every workload and policy in it"
            )
        found = _as_given(f'namespaces "{namespace}"', await self.objects.get(key), since, uid=uid)
        if uid is not None:  # deleted at the revision whose uid was checked
            since = found.revision
        held = await self._held(namespace)
        if self.admit is not None:
            for res, kind in dict.fromkeys((h.resource, h.kind) for h in held):
                try:
                    self.admit(request, res, namespace, kind=kind)
                except web.HTTPForbidden as exc:
                    mine = [h for h in held if h.resource == res and h.kind == kind]
                    raise web.HTTPForbidden(
                        text=f"{exc.text}: namespace {namespace} holds {_listed(mine)}, which"
                        " deleting it would delete; nothing was deleted"
                    ) from exc
        if not dry:
            ops: list[st.Op] = [st.Delete(h.key) for h in held]
            ops.append(st.Delete(key, revision=since))
            done = 0
            for batch in st.batches(ops, lambda op: op, most=_WRITES):
                try:
                    await self.raw.commit(batch)
                except errors.Unavailable as exc:
                    raise errors.Unavailable(
                        f"namespace {namespace}: {done} of the {len(held)} objects it holds"
                        f" deleted when the registry failed ({exc}); the namespace stays"
                        " until they are all gone: delete it again to finish"
                    ) from exc
                done += len(batch)
        headers = CIMultiDict[str]()
        if held:
            verb = "would be deleted" if dry else "deleted"
            headers.add("Warning", _warning(f"{verb} with namespace {namespace}: {_listed(held)}"))
        return web.json_response(
            {
                "apiVersion": "v1",
                "kind": "Status",
                "status": "Success",
                "details": {"name": namespace, "kind": "namespaces", "held": _counts(held)},
            },
            headers=headers,
        )

    async def _held(self, namespace: str) -> list[_Held]:
        """What the federation holds in `namespace`, in the order deleting it goes
        (`_HELD`), read by key: an object stored that no longer reads goes too."""
        found: list[_Held] = []
        for res in _HELD:
            listed = await self.raw.list(objects.list_prefix(res, namespace))
            for kv in listed.items:
                workload = res.plural == "workloads"
                kind = keys.parse_workload_key(kv.key).kind if workload else res.kind
                found.append(_Held(res, kv.key, kind, kv.key.rpartition("/")[2]))
        return found

    async def _queue_in_use(self, name: str) -> str | None:
        """What deleting queue `name` leaves behind, as a warning (Kubernetes' `Warning`
        header, which the CLI prints): its admitted work keeps running, and what waits in
        it stays pending until the queue is defined again.

        Counted as the queue status view counts (`queue_status.QueueStatusApi.counts`):
        counting Bindings, this said 3 admitted where `get queues` said 1, for it took in
        workloads that hold nothing of the queue (no pods, no requests, finished)."""
        admitted, waiting = await self.queues.counts(name)
        if not admitted and not waiting:
            return None
        return (
            f"queue {name} still has {admitted} admitted and {waiting} pending workload(s):"
            " the admitted keep running, the pending wait until a queue of that name exists"
            " again (or move them with their fedctl.io/queue annotation)"
        )

    async def apply(self, request: web.Request) -> web.Response:
        """Create or update every document; report created / configured / unchanged each.

        The documents are read at once and written in batched transactions (`_write_all`):
        one at a time, read then write, a sweep of 10,000 Jobs ran past the request's 30 s
        with a quarter of them stored, and the client could not tell which."""
        models = [self._placed(request, m) for m in await self._body(request)]
        bodies.admit_each(self.admit, request, models)  # all allowed before any is stored
        await self._check_stored(models)
        given: dict[str, KubeObject] = {}
        for obj in models:  # every clash refused before anything is written
            _same_group(given.setdefault(objects.key_for(obj), obj), obj)
        read = await self._read_all(list(given))
        self._admit_stored(request, read.values())
        for key, current in read.items():
            if current is not None:
                _same_group(current.obj, given[key])
        dry = request.query.get("dryRun") == "All"  # Kubernetes' spelling: check, store nothing
        decided = [self._decide(obj, read[objects.key_for(obj)]) for obj in models]
        for obj, (_, op) in zip(models, decided, strict=True):
            self._fits(obj, op)
        if dry:
            outcomes = [outcome for outcome, _ in decided]
        elif len(given) == len(models):
            outcomes = await self._write_all(models, decided)
        else:  # a key given twice: each write reads what the one before it left
            outcomes = [""] * len(models)
            for index in write_order.order(models):
                outcomes[index] = await self._write_one(models[index])
        results = [_result(obj, outcome) for obj, outcome in zip(models, outcomes, strict=True)]
        changed = [o for o, outcome in zip(models, outcomes, strict=True) if outcome != "unchanged"]
        notes = await self._write_notes(models, changed=changed, dry=dry)
        return web.json_response(
            {"results": results, "warnings": notes, "dryRun": dry},
            headers=_warnings(notes, rest="in the body's `warnings`"),
        )

    async def _write_notes(
        self, models: Sequence[KubeObject], *, changed: Sequence[KubeObject], dry: bool
    ) -> list[str]:
        """The `Warning`s a write of `models` answers with, whichever route wrote them
        (/apply, POST, PUT): claim notes on the policies it `changed` (`_claim_notes`)
        and price notes on its Clusters. POST and PUT of a policy that a claimed workload
        does not follow answered with none, where /apply said why."""
        written = [o for o in changed if isinstance(o, planning.AnyPolicy | AnyOverride)]
        notes = await self._claim_notes(written, overlay=models if dry else ()) if written else []
        return notes + self._price_notes(models)

    def _admit_stored(
        self, request: web.Request, current: Iterable[codec.Stored[KubeObject] | None]
    ) -> None:
        """The stored objects a write replaces or deletes, judged as a write of them
        (`bodies.admit_each`, `stored`): a tenant may not replace or delete the admin's
        policy that places or edits its namespace's quota, which removes the quota from
        the members (or undoes the admin's edit) as writing such a policy would."""
        held = [c.obj for c in current if c is not None]
        bodies.admit_each(self.admit, request, held, stored=True)

    def _price_notes(self, models: Sequence[KubeObject]) -> list[str]:
        """A Cluster priced in a currency the scheduler cannot convert to the federation's
        (`currency.Currency`): written, and placed on as if unpriced, which the writer
        should hear at once rather than find in a plan."""
        return [
            f"Cluster {obj.metadata.name}: {problem}"
            for obj in models
            if isinstance(obj, Cluster) and (problem := self.currency.problem(obj.spec.prices))
        ]

    async def _claim_notes(
        self,
        written: list[planning.AnyPolicy | AnyOverride],
        *,
        deleted: planning.AnyPolicy | None = None,
        overlay: Sequence[KubeObject] = (),
    ) -> list[str]:
        """Notes on the policies just written that claim less than they select
        (`claims.notes`), or on what the policy just deleted claimed (`claims.on_delete`),
        judged on the registry after the write (`overlay`: the objects a dry run did not
        store, taken as stored): listed here, decoded in a worker thread (a registry of
        thousands of workloads takes a second to decode). The write stands whatever
        happens here: a registry that fails the read, or a note that cannot be worked out,
        costs the notes (logged), never the answer to a write already made."""
        try:
            kinds_ = ("policies", "workloads", "bindings")
            raw = [await self.raw.list(keys.prefix(k)) for k in kinds_]
            return await asyncio.to_thread(self._notes_of, written, deleted, overlay, raw)
        except Exception:  # notes are advice; the write succeeded
            _log.warning("could not work out the claim notes of a write", exc_info=True)
            return []

    def _notes_of(
        self,
        written: list[planning.AnyPolicy | AnyOverride],
        deleted: planning.AnyPolicy | None,
        overlay: Sequence[KubeObject],
        raw: list[st.ListResult],
    ) -> list[str]:
        policies, workloads, bindings = raw
        claimed = {
            keys.workload_key(keys.parse_workload_key(b.key)): b.obj.metadata.annotations.get(
                CLAIMED_BY
            )
            for b in codec.TypedStore(self.raw, codec.Codec(Binding)).decoded(bindings).items
        }
        after = {i.key: i.obj for i in self.objects.decoded(workloads).items}
        after.update((i.key, i.obj) for i in self.objects.decoded(policies).items)
        after.update((objects.key_for(o), o) for o in overlay)
        if deleted is not None:  # gone already, or only as a dry run: either way not there
            after.pop(objects.key_for(deleted), None)
        stored = list(after.values())
        placing = [p for p in stored if isinstance(p, planning.AnyPolicy)]

        def recorded(w: Workload) -> str | None:
            return claimed.get(objects.key_for(w))

        found = [w for w in stored if isinstance(w, Workload)]
        if deleted is not None:
            return claims.on_delete(deleted, found, placing, recorded=recorded)
        among = [p for p in stored if isinstance(p, AnyOverride)]
        return plan_routes.policy_notes(written, found, placing, recorded, among=among)

    async def _read_all(self, keys_: list[str]) -> dict[str, codec.Stored[KubeObject] | None]:
        """Every key's stored object (`TypedStore.get_many`: ranges for many of a kind)."""
        return await self.objects.get_many(keys_, concurrency=_READS)

    async def _write_all(
        self, models: list[KubeObject], decided: list[tuple[str, st.Op | None]]
    ) -> list[str]:
        """Each document's outcome, its create or update written with others in
        transactions of at most 100 operations and 1 MiB (`store.batches`): placing
        policies first, templates last (`write_order`), since the scheduler may claim
        between two transactions and must see a template with every policy of the apply.
        A transaction refused (another writer changed one of its objects since it was
        read, or one of them is too large) is written again object by object, so each
        outcome, and each error, is its own object's. An error once some documents are
        stored says which (`errors.PartlyApplied`): a single 409 read as "nothing
        applied"."""
        outcomes = [outcome for outcome, _ in decided]
        writes = [(i, op) for i in write_order.order(models) if (op := decided[i][1]) is not None]
        stored: set[int] = set()
        for batch in st.batches(writes, itemgetter(1), most=_WRITES):
            try:
                await self.objects.store.commit([op for _, op in batch])
            except (errors.Conflict, errors.AlreadyExists, errors.NotFound, errors.TooLarge):
                for index, _ in batch:
                    try:
                        outcomes[index] = await self._write_one(models[index])
                    except errors.FedctlError as exc:
                        raise _partly(exc, models, outcomes, stored, failed=index) from exc
                    stored.add(index)
            except errors.FedctlError as exc:
                raise _partly(exc, models, outcomes, stored, failed=batch[0][0]) from exc
            else:
                stored.update(index for index, _ in batch)
        return outcomes

    async def _write_one(self, given_obj: KubeObject) -> str:
        """One document read and written on its own; its outcome.

        A document without `metadata.resourceVersion` is last-writer-wins: a write that
        loses a race is decided again on what the winner left (Kubernetes'
        GuaranteedUpdate), up to `_RACES` times. One with a resourceVersion is a
        precondition, and losing it is the client's 409 (`_decide`)."""
        key = objects.key_for(given_obj)
        name = objects.called(objects.resource_for_kind(given_obj), key)
        for _ in range(_RACES):
            outcome, op = self._decide(given_obj, await self.objects.get(key))
            if op is None:
                return outcome
            try:
                with _naming(given_obj), _addressed(name):
                    await self.objects.store.commit([op])
                return outcome
            except (errors.Conflict, errors.AlreadyExists, errors.NotFound):
                if given_obj.metadata.resource_version:
                    raise
        raise _raced(name)

    def _fits(self, obj: KubeObject, op: st.Op | None) -> None:
        """Refuse `obj`, before anything of its request is written, when its write (`op`)
        is larger than etcd takes in one request (`max_object_bytes`); in a dry run too.

        Why before: etcd judges each transaction as it comes, so an apply of a Queue then
        a Job of 1.6 MiB stored the Queue, then failed on the Job: the client was told
        nothing was applied, and its dry run (which writes nothing for etcd to judge) said
        both would be created."""
        size = 0 if op is None else len(op.key) + len(getattr(op, "value", b""))
        if size > self.max_object_bytes:
            raise errors.TooLarge(
                f"{_sized(obj, size)}, more than the {self.max_object_bytes / 1024 / 1024:.1f}"
                " MiB the registry (etcd) takes in one request: shrink it or split it;"
                " nothing was stored"
            )

    def _decide(
        self, given_obj: KubeObject, current: codec.Stored[KubeObject] | None
    ) -> tuple[str, st.Op | None]:
        """What applying one document over what is stored does: its outcome and the
        write (None when unchanged).

        A `metadata.resourceVersion` in the document is a precondition, as for `kubectl
        apply` and PUT: stale, it is a 409 naming the object and both revisions, never a
        silent overwrite of the change made since it was read. With nothing stored there
        is nothing to overwrite, and the document is created (a restore of `get -o
        yaml`)."""
        key = objects.key_for(given_obj)
        expected = params.revision(
            given_obj.metadata.resource_version, field="metadata.resourceVersion"
        )
        if current is not None and expected is not None and current.revision != expected:
            name = objects.called(objects.resource_for_kind(given_obj), key)
            raise errors.Conflict(name, expected=expected, current=current.revision)
        obj = _stamp_taints(current.obj if current else None, given_obj, now=self.clock.now())
        if current is None:
            return "created", self.objects.create_op(key, self._fresh(obj))
        if _unchanged(current.obj, obj):
            return "unchanged", None
        new = self._successor(current.obj, obj)
        return "configured", self.objects.update_op(key, new, revision=current.revision)

    async def _check_stored(self, body: list[KubeObject]) -> None:
        """Refuse a write that clashes with what is stored: the queue tree it would break,
        a Cluster connection another Cluster uses (`members.check_connections`)."""
        await self._check_queue_tree(body)
        await members.check_connections(self.objects, objects.list_prefix(_CLUSTERS, None), body)

    async def _check_queue_tree(self, body: list[KubeObject], *, removed: str = "") -> None:
        """Refuse a write that breaks the queue tree (module doc); a no-op without queues."""
        incoming = {m.metadata.name: m for m in body if isinstance(m, Queue)}
        if not incoming and not removed:
            return
        listed = await self.objects.list(keys.policy_prefix("Queue"))
        stored = {i.obj.metadata.name: i.obj for i in listed.items if isinstance(i.obj, Queue)}
        if removed:
            children = sorted(n for n, q in stored.items() if q.spec.parent == removed)
            if children:
                raise errors.Invalid(
                    f"queue {removed} has child queues ({', '.join(children)}): delete them"
                    " or set their spec.parent elsewhere first"
                )
        after = {n: q for n, q in {**stored, **incoming}.items() if n != removed}
        # A flaw at the same queue and field before this write is not the writer's, unless
        # the write touches that queue (its message may differ: it lists the queues).
        before = {(n, notice.path) for n, notice in hierarchy_problems(stored.values())}
        found = [
            f"Queue {name}: {'.'.join(str(p) for p in notice.path)}: {notice.message}"
            for name, notice in hierarchy_problems(after.values())
            if name in incoming or (name, notice.path) not in before
        ]
        if found:
            raise errors.Invalid("; ".join(found), findings=found)

    async def validate(self, request: web.Request) -> web.Response:
        """Findings for a YAML or JSON body without storing anything (the policy editor).

        Chips, members and queues are judged against what this server holds, as `fedctl
        apply` judges them: a chip its AcceleratorProfiles or Clusters define is not
        warned about, a member named that has not joined is, and so is a parent queue
        neither the body nor the server holds."""
        text = (await request.read()).decode("utf-8", errors="replace")
        filename = request.query.get("filename", "<editor>")
        result = await asyncio.to_thread(loading.load_text, text, filename=filename)  # `_body`
        placing = any(isinstance(o.model, planning.AnyPolicy) for o in result.objects)
        fleet: list[KubeObject] = []
        if result.names_undefined_chips or result.names_clusters or placing:
            fleet = [
                item.obj
                for res in (_CLUSTERS, _PROFILES)
                for item in (await self.objects.list(objects.list_prefix(res, None))).items
            ]
        tree, stored = None, None
        if result.needs_queues:
            listed = await self.objects.list(keys.policy_prefix("Queue"))
            stored = [q for q in (i.obj for i in listed.items) if isinstance(q, Queue)]
            tree = queue_children((q.metadata.name, q.spec.parent) for q in stored)
        result = claims.against(result, fleet, queues=tree, currency=self.currency)
        if stored is not None:
            result = result.with_stored_queues(stored)
        return web.json_response(
            {
                "valid": not result.errors,
                "findings": [f.to_dict() for f in result.findings],
                "objects": [
                    {"kind": o.model.kind, "name": o.model.metadata.name, "line": o.line}
                    for o in result.objects
                ],
            }
        )


@dataclass(frozen=True, slots=True)
class _Held:
    """An object a namespace holds: its resource, key, kind (`Kind.group` for a workload,
    as `get workloads` prints it) and name."""

    resource: objects.Resource
    key: str
    kind: str
    name: str


_HELD = (
    objects.resource_named("workloads"),
    *(r for r in objects.RESOURCES if r.namespaced and not r.readonly and r.plural != "workloads"),
)
"""What deleting a Namespace deletes, in order: its workloads, then every user-written
namespaced kind (PropagationPolicy, OverridePolicy, FederatedResourceQuota). Bindings,
statuses and Works are their controllers' to remove; events expire."""

_IMMORTAL = frozenset({"default", "kube-system", "kube-public"})
"""Namespaces the Kubernetes API server refuses to delete: every member keeps them."""

_NAMED = 5
"""Objects named in a note; the rest are counted (as the claim notes do)."""


def _counts(held: Sequence[_Held]) -> dict[str, int]:
    """How many of each kind, in the order deleting them goes."""
    return dict(Counter(h.kind for h in held))


def _listed(held: Sequence[_Held]) -> str:
    """`8 Deployment.apps, 1 PropagationPolicy (Deployment.apps web-0, ... and 4 more)`."""
    counts = ", ".join(f"{n} {kind}" for kind, n in _counts(held).items())
    names = ", ".join(f"{h.kind} {h.name}" for h in held[:_NAMED])
    more = f" and {len(held) - _NAMED} more" if len(held) > _NAMED else ""
    return f"{counts} ({names}{more})"


_CLUSTERS = objects.resource_named("clusters")
_PROFILES = objects.resource_named("acceleratorprofiles")


def _unchanged(current: KubeObject, given: KubeObject) -> bool:
    """Whether writing `given` over `current` would change nothing stored."""
    return _strip(current) == _strip(_keep_secret(current, given))


_TENANT_POLICIES = ("propagationpolicies", "overridepolicies")
"""Policies a tenant may write, whose stored version is judged too (`_admit_stored`)."""


def _teller(request: web.Request, res: objects.Resource) -> Callable[[Any], Any]:
    """How the objects of `res` are shown to this request's caller: a Binding's or an
    Event's text naming no workload of a namespace it may not read (`visible.told`)."""
    return visible.teller(res.plural, auth.readable(request.get(auth.PRINCIPAL)))


WARNING_HEADERS = 40
"""`Warning` headers one answer carries at most; the rest are counted in one more.

Why: one apply of 130 policies that each selected nothing yet answered with 130 headers,
and aiohttp's client (`fedctl`) refuses a response of more than 128: the CLI showed a
traceback after everything was stored. kube-apiserver caps its warnings too (it truncates
them past 4 KiB in all and drops the rest). `/apply` also answers with every note in its
body's `warnings`, which is what `fedctl apply` prints."""


def _warnings(texts: Sequence[str], *, rest: str = "not shown") -> CIMultiDict[str]:
    """`texts` as `Warning` headers: the first `WARNING_HEADERS`, then one that counts
    the others and says where they are (`rest`)."""
    headers = CIMultiDict[str]()
    shown = texts if len(texts) <= WARNING_HEADERS else texts[: WARNING_HEADERS - 1]
    for text in shown:
        headers.add("Warning", _warning(text))
    if len(shown) < len(texts):
        headers.add("Warning", _warning(f"{len(texts) - len(shown)} more warning(s) {rest}"))
    return headers


def _warning(text: str) -> str:
    """`text` as a `Warning` header's value (RFC 7234's 299, as Kubernetes sends them)."""
    return '299 - "' + " ".join(text.replace('"', "'").split()) + '"'


def _unreadable(skipped: codec.Skipped) -> str:
    """A warning for a stored object the list leaves out because it no longer reads (a
    hand edit, or a rule this release added): a list that silently shrank would hide, say,
    the policy whose workloads now stay where they are for want of it."""
    return (
        f"{skipped.key} is stored but cannot be read, so it is left out:"
        f" {skipped.error}; apply a corrected version or delete it"
    )


def _stamp_taints(old: KubeObject | None, new: KubeObject, *, now: dt.datetime) -> KubeObject:
    """A Cluster's NoExecute taints with their `timeAdded`, as the Kubernetes API server
    stamps a Node's: kept from the stored taint (same key, value and effect) when it had
    one, else now; one given explicitly stays as given.

    Why here: a workload tolerating a NoExecute taint for tolerationSeconds is evicted that
    long after the taint's timeAdded. Without one (`fedctl cluster taint`, `unjoin`, an
    applied YAML) failover counted from "now" on every pass, and the toleration never ran
    out. The writer of the user's spec is the one place every such taint passes.
    """
    if not isinstance(new, Cluster) or not new.spec.taints:
        return new
    listed = new.spec.taints
    before = {
        (t.key, t.value, t.effect): t.time_added
        for t in (old.spec.taints if isinstance(old, Cluster) else ())
        if t.time_added is not None
    }
    stamped = [
        t.model_copy(update={"time_added": before.get((t.key, t.value, t.effect), now)})
        if t.effect == "NoExecute" and t.time_added is None
        else t
        for t in listed
    ]
    if stamped == listed:
        return new
    return new.model_copy(update={"spec": new.spec.model_copy(update={"taints": stamped})})


def _folded(obj: KubeObject) -> KubeObject:
    """A Secret as Kubernetes stores it: `stringData` merged into `data`
    (`secret_data.fold`), so no read shows the values as they were typed."""
    if not isinstance(obj, Workload) or "stringData" not in (obj.model_extra or {}):
        return obj
    return Workload.model_validate(secret_data.fold(obj.to_wire()))


def _specified(obj: KubeObject) -> KubeObject:
    """A workload template without the `status` its document carried, as the Kubernetes
    API server drops status from a create or an update of the main resource: status is
    what members report (fedctl keeps it under its own keys), and a template written back
    from `fedctl get -o yaml` carries the fields that command adds there."""
    if isinstance(obj, Workload) and obj.status is not None:
        return obj.model_copy(update={"status": None})
    return obj


def _keep_secret(old: KubeObject, new: KubeObject) -> KubeObject:
    """A Cluster read back shows a redacted kubeconfig; writing it back keeps the real one."""
    new_spec = getattr(new, "spec", None)
    old_spec = getattr(old, "spec", None)
    conn = getattr(new_spec, "connection", None)
    if new_spec is None or conn is None or conn.kubeconfig != REDACTED or old_spec is None:
        return new
    spec = new_spec.model_copy(update={"connection": old_spec.connection})
    return new.model_copy(update={"spec": spec})


def _same_group(existing: KubeObject, obj: KubeObject) -> None:
    """Refuse `obj` where an object of the same kind and name but another API group is.

    Karmada's and fedctl.io's PropagationPolicy (and OverridePolicy, and their cluster
    forms) share a kind name and so a registry key: without this, applying one silently
    replaced the other, and the workloads it claimed moved."""
    have, want = _group(existing.api_version), _group(obj.api_version)
    if have != want:
        where = f"{obj.metadata.namespace}/" if obj.metadata.namespace else ""
        raise errors.Invalid(
            f"{obj.kind} {where}{obj.metadata.name}: a {existing.api_version} {obj.kind} of "
            f"that name exists, and a {obj.api_version} one would replace it (both share "
            "one name per namespace): delete the other first, or choose another name"
        )


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _line(kind: str, obj: dict[str, Any]) -> bytes:
    """One watch event of the per-kind route, as a JSON line."""
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def _as_given(
    name: str,
    current: codec.Stored[KubeObject] | None,
    expected: int | None,
    *,
    uid: str | None = None,
) -> codec.Stored[KubeObject]:
    """`current`, the object a write or delete addressed as `name`, if it is there, at
    the revision the caller expects (None: any) and with the uid it expects (a delete's
    `preconditions.uid`; None: any); else NotFound, or Conflict as Kubernetes answers a
    precondition that no longer holds (a delete of a stale revision said "not found" of
    an object that was there)."""
    if current is None:
        raise errors.NotFound(name)
    if uid is not None and current.obj.metadata.uid != uid:
        raise web.HTTPConflict(
            text=f"Precondition failed: UID in precondition: {uid}, UID in object meta:"
            f" {current.obj.metadata.uid or ''}"
        )
    if expected is not None and current.revision != expected:
        raise errors.Conflict(name, expected=expected, current=current.revision)
    return current


@contextlib.contextmanager
def _addressed(name: str) -> Iterator[None]:
    """What the store raises about one object's key, said of the object as `name`
    (`objects.called`): its key named nothing the user typed."""
    try:
        yield
    except errors.NotFound as exc:
        raise errors.NotFound(name) from exc
    except errors.AlreadyExists as exc:
        raise errors.AlreadyExists(name, revision=exc.revision) from exc
    except errors.Conflict as exc:
        raise errors.Conflict(name, expected=exc.expected, current=exc.current) from exc


def _partly(
    exc: errors.FedctlError,
    models: Sequence[KubeObject],
    outcomes: Sequence[str],
    stored: set[int],
    *,
    failed: int,
) -> errors.FedctlError:
    """`exc`, which stopped an apply at document `failed`, as what it is when earlier
    documents were stored: the outcome of each, stored or not."""
    if not stored:
        return exc
    results = [
        _result(obj, outcomes[i] if i in stored else ("failed" if i == failed else "not applied"))
        for i, obj in enumerate(models)
    ]
    return errors.PartlyApplied(exc, applied=len(stored), total=len(models), results=results)


def _result(obj: KubeObject, outcome: str) -> dict[str, Any]:
    """One document's line of an apply's `results`."""
    return {
        "kind": obj.kind,
        "apiVersion": obj.api_version,
        "namespace": obj.metadata.namespace,
        "name": obj.metadata.name,
        "result": outcome,
    }


def _refused(obj: KubeObject, at: tuple[str | int, ...], why: str) -> errors.Invalid:
    """The 400 refusing `obj` for `why`, at the field `at`, as a finding a client places."""
    where = f"{obj.metadata.namespace}/" if obj.metadata.namespace else ""
    found = f"{obj.kind} {where}{obj.metadata.name}: {'.'.join(map(str, at))}: {why}"
    return errors.Invalid(found, findings=[found])


def _namespace_in_path(request: web.Request, res: objects.Resource) -> str | None:
    """The namespace a list or create path names; a 400 for one under a cluster-scoped
    kind, as its GET answers (a POST there created the cluster-scoped object)."""
    ns = request.match_info.get("ns")
    if ns and not res.namespaced:
        raise errors.Invalid(f"{res.plural} are cluster-scoped: address them without a namespace")
    return ns


def _raced(name: str) -> errors.Unavailable:
    """A write without a resourceVersion that lost every race (`_RACES`) it re-read for."""
    return errors.Unavailable(
        f"{name} changed {_RACES} times while this write re-read it; try again"
    )


@contextlib.contextmanager
def _naming(obj: KubeObject) -> Iterator[None]:
    """Say which object etcd found too large, and how large it is: its own message names
    neither, and an apply of many documents fails on one of them."""
    try:
        yield
    except errors.TooLarge as exc:
        size = len(json.dumps(obj.to_wire()).encode())
        raise errors.TooLarge(f"{_sized(obj, size)}: {exc}") from exc


def _sized(obj: KubeObject, size: int) -> str:
    """`ConfigMap web/big is 1.9 MiB`: what a refusal as too large says first."""
    where = f"{obj.metadata.namespace}/" if obj.metadata.namespace else ""
    return f"{obj.kind} {where}{obj.metadata.name} is {size / 1024 / 1024:.1f} MiB"
