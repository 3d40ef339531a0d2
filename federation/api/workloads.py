"""Read-only workload views for the CLI: placement and readiness, one workload in full, and
what placed work costs now.

Fed by the registry: templates (API), Bindings (scheduler), Works, workload status and
events (propagator); feeds `fedctl get workloads`, `fedctl describe workload` and
`fedctl cost` (`scheduler.spend`). Served
under its own group, `/apis/status.fedctl.io/v1alpha1`, because these documents join
several keys and are never written through the API; a separate prefix keeps them clear
of the object routes' `{plural}` patterns. A tenant sees only its own namespaces: `auth.py`
refuses a request naming another, and the list here is cut to the caller's namespaces.

    GET /apis/status.fedctl.io/v1alpha1/workloads[?namespace=NS][&binding=false]
    GET /apis/status.fedctl.io/v1alpha1/namespaces/{ns}/workloads/{kind}/{name}
    GET /apis/status.fedctl.io/v1alpha1/costs[?by=GROUPING][&namespace=NS]

GROUPING is queue (the default), namespace, cluster, region, chip or workload.

`binding=false` leaves each item's Binding out (no `binding` field). Why: the dashboard
reads only each workload's status from this view, and lists the Bindings itself; with
them, the view was 3.5 MB at 1,500 workloads and a second of a core to build, asked for
every few seconds by every open tab. The CLI's tables read the Binding, and get it by
default.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any, cast

from aiohttp import web

from federation import errors
from federation.api import auth, selectors, visible
from federation.cache.currency import Currency
from federation.propagation.interpreter.base import timestamp
from federation.registry import codec, keys, objects
from federation.registry import events as event_log
from federation.registry import store as st
from federation.scheduler import plan, spend
from policies.models import propagation
from policies.models.binding import Binding
from policies.models.cluster import Cluster
from policies.models.work import FINISHED_PHASES, Event, Work, WorkloadStatus
from policies.models.workload import Workload

__all__ = ["COST_BY", "PREFIX", "WorkloadsApi"]

PREFIX = "/apis/status.fedctl.io/v1alpha1"
_RECENT_EVENTS = 20
COST_BY = (*spend.BY, "provider")
"""What the cost view groups by: `spend.BY`, and each cluster's provider (`-` for one
with none), which a multi-cloud team asks first and spread constraints already use."""
_WORKLOADS = objects.resource_named("workloads")
_POLICY_TYPES = (
    propagation.PropagationPolicy,
    propagation.ClusterPropagationPolicy,
    propagation.FedctlPropagationPolicy,
    propagation.FedctlClusterPropagationPolicy,
)


def _placing(items: list[codec.Stored[Any]]) -> list[plan.AnyPolicy]:
    return [i.obj for i in items if isinstance(i.obj, _POLICY_TYPES)]


_BINDINGS, _STATUSES = codec.Codec(Binding), codec.Codec(WorkloadStatus)


def _line(line: spend.Line) -> dict[str, Any]:
    return {
        "name": line.name,
        "workloads": len(line.workloads),
        "replicas": line.replicas,
        "hourlyCost": str(line.hourly),
        "unpricedReplicas": line.unpriced,
    }


def _job_shape(workload: Workload) -> dict[str, Any]:
    """What the job list needs of the template beside the status: a batch/v1 Job's
    `completions` and `parallelism` (kubectl's COMPLETIONS is succeeded of them), and
    whether a job is suspended (kubectl's STATUS Suspended; its copies report nothing)."""
    shape: dict[str, Any] = {}
    if workload.type_key == ("batch/v1", "Job"):
        shape["completions"] = workload.spec.get("completions")
        shape["parallelism"] = workload.spec.get("parallelism", 1)
    if workload.is_suspended:
        shape["suspended"] = True
    return shape


def _with_binding(query: Any) -> bool:
    """Whether each item of the workload view carries its Binding (`binding`, true by
    default); a value that is neither is a 400 naming the parameter, never ignored."""
    value = query.get("binding", "true")
    if value.lower() not in ("true", "false", "1", "0"):
        raise errors.Invalid(
            f"binding: Invalid value: {json.dumps(value)}: true (each item with its Binding,"
            " the default) or false (without it)"
        )
    return value.lower() in ("true", "1")


def _wire(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


class WorkloadsApi:
    def __init__(self, store: st.Store, *, currency: Currency | None = None) -> None:
        self.raw = store
        self.currency = currency or Currency()
        self._costs_read: dict[str, tuple[int, Any]] = {}
        self.objects = codec.TypedStore(store, objects.ObjectCodec())
        self.bindings = codec.TypedStore(store, codec.Codec(Binding))
        self.statuses = codec.TypedStore(store, codec.Codec(WorkloadStatus))
        self.works = codec.TypedStore(store, codec.Codec(Work))
        self.events = codec.TypedStore(store, codec.Codec(Event))

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(PREFIX + "/workloads", self.list_workloads),
            web.get(PREFIX + "/namespaces/{ns}/workloads/{kind}/{name}", self.describe),
            web.get(PREFIX + "/costs", self.costs),
        ]

    @staticmethod
    def _tails(request: web.Request) -> list[str]:
        """The namespace key segments a list covers: the one asked for, or all the caller
        may see."""
        ns = request.query.get("namespace")
        who = request.get(auth.PRINCIPAL)
        if ns:
            return [f"{keys.namespace_segment(ns)}/"]
        if who is not None and not who.is_admin:
            return [f"{name}/" for name in sorted(who.namespaces)]
        return [""]

    async def list_workloads(self, request: web.Request) -> web.Response:
        selectors.not_taken(request.query, view="the workload view")
        with_binding = _with_binding(request.query)
        items = []
        for tail in self._tails(request):
            items += await self._list(tail, with_binding=with_binding)
        owned = auth.readable(request.get(auth.PRINCIPAL))
        if owned is not None and not request.query.get("namespace"):
            # Its Namespace templates too: cluster-scoped (`_`), but each its tenant's
            # (`objects.namespace_of`); `fedctl get namespaces` found none of them.
            for ns in sorted(owned):
                ref = objects.namespace_workload(ns)
                tail = f"{ref.namespace}/{ref.kind}/{ref.name}"
                listed = await self._list(tail, with_binding=with_binding)
                items += [i for i in listed if i["name"] == ns]
        if owned is not None and with_binding:  # what they say of others' workloads
            items = [{**i, "binding": visible.told(i["binding"], owned)} for i in items]
        return web.json_response({"items": items})

    async def costs(self, request: web.Request) -> web.Response:
        """What the placed workloads cost an hour, grouped `by` one of `COST_BY`."""
        selectors.not_taken(request.query, view="the cost view")
        by = request.query.get("by", "queue")
        if by not in COST_BY:
            raise errors.Invalid(f"by must be one of {', '.join(COST_BY)}, got {by!r}")
        raw = [
            [await self.raw.list(keys.prefix(kind) + tail) for tail in self._tails(request)]
            for kind in ("workloads", "bindings", "workloadstatus")
        ]
        clusters = await codec.TypedStore(self.raw, codec.Codec(Cluster)).list(
            keys.prefix("clusters")
        )
        if by == "provider":  # grouped as by region, through each cluster's provider
            places = {c.obj.name: c.obj.spec.provider or "-" for c in clusters.items}
        else:
            places = {c.obj.name: c.obj.spec.region for c in clusters.items}
        grouped = cast(spend.By, "region" if by == "provider" else by)
        doc = await asyncio.to_thread(self._costs, raw, grouped, places)
        doc["by"] = by
        owned = auth.readable(request.get(auth.PRINCIPAL))
        if owned is not None and not request.query.get("namespace"):
            # Cut to the caller's namespaces: said, so a view that shows the figures beside
            # counts of the whole queue (`fedctl describe queue`) can say what each covers.
            doc["namespaces"] = sorted(owned)
        return web.json_response(doc)

    def _costs(
        self, raw: list[list[st.ListResult]], by: spend.By, regions: dict[str, str]
    ) -> dict[str, Any]:
        present = {str(keys.parse_workload_key(kv.key)) for r in raw[0] for kv in r.items}
        read = self._read(raw[1] + raw[2])
        finished = {
            str(keys.parse_workload_key(kv.key))
            for r in raw[2]
            for kv in r.items
            if read.get(kv.key) is True
        }
        found: list[spend.Charge] = []
        waiting = done = 0
        for r in raw[1]:
            for kv in r.items:
                ref = str(keys.parse_workload_key(kv.key))
                placed = read.get(kv.key)
                if ref not in present or not isinstance(placed, tuple):
                    continue  # deleted (its Binding goes with its copies), or unreadable
                if ref in finished:
                    done += 1
                    continue
                waiting += not placed[0]
                found += placed[1]
        lines, total = spend.tally(found, by, regions=regions)
        return {
            "currency": self.currency.code,
            "by": by,
            "items": [_line(line) for line in lines],
            "total": _line(total),
            "waiting": waiting,
            "finished": done,
        }

    def _read(self, listed: list[st.ListResult]) -> dict[str, Any]:
        """What the costs need of each Binding (whether it places anything, and its
        charges) and each workload status (whether finished), by key: decoded only when
        the key's revision moved since the last read. The dashboard asks for the costs
        with every queue refresh, up to once a second during a sweep, and decoding 10,000
        Bindings each time took about half a second of a core."""
        known, fresh = self._costs_read, {}
        for kv in (kv for r in listed for kv in r.items):
            hit = known.get(kv.key)
            if hit is not None and hit[0] == kv.mod_revision:
                fresh[kv.key] = hit
                continue
            value: Any = None
            try:
                if kv.key.startswith(keys.prefix("bindings")):
                    b = _BINDINGS.decode(kv.key, kv.value)
                    ref = str(keys.parse_workload_key(kv.key))
                    value = (bool(b.spec.clusters), spend.charges(ref, b))
                else:
                    value = _STATUSES.decode(kv.key, kv.value).phase in FINISHED_PHASES
            except errors.Invalid:
                value = None  # left out, as the lists leave an unreadable object out
            fresh[kv.key] = (kv.mod_revision, value)
        self._costs_read = fresh
        return {key: hit[1] for key, hit in fresh.items()}

    async def _list(self, tail: str, *, with_binding: bool) -> list[dict[str, Any]]:
        """Every workload under one namespace prefix (`""` for all) with its placement
        (its Binding only `with_binding`: without, no Binding is decoded):
        listed on the event loop, decoded and joined in a worker thread (a second at
        10,000 workloads, which `fedctl get -w` asks for again and again, while the loop
        serves the API and the leader lease)."""
        raw = [
            await self.raw.list(keys.prefix(kind) + tail)
            for kind in ("workloads", "bindings", "workloadstatus")
        ]
        listed = await self.raw.list(keys.prefix("policies"))
        return await asyncio.to_thread(self._joined, raw, listed, with_binding)

    def _joined(
        self, raw: list[st.ListResult], listed: st.ListResult, with_binding: bool
    ) -> list[dict[str, Any]]:
        templates = self.objects.decoded(raw[0])
        statuses = self.statuses.decoded(raw[2])
        placed: dict[str, Binding | None] = (
            {
                str(keys.parse_workload_key(b.key)): b.obj
                for b in self.bindings.decoded(raw[1]).items
            }
            if with_binding
            else dict.fromkeys(str(keys.parse_workload_key(kv.key)) for kv in raw[1].items)
        )
        ready = {str(keys.parse_workload_key(s.key)): s.obj for s in statuses.items}
        policies: list[plan.AnyPolicy] | None = None
        items = []
        for item in templates.items:
            ref = keys.parse_workload_key(item.key)
            binding, status = placed.get(str(ref)), ready.get(str(ref))
            entry: dict[str, Any] = {
                "namespace": ref.namespace,
                "kind": ref.kind,
                "name": ref.name,
                "created": item.obj.metadata.creation_timestamp,
                # Its place in its queue's FIFO (`registry.arrival`), which `describe
                # queue` lists waiting work by: creation times tie within a second.
                "createRevision": item.create_revision,
                "status": _wire(status) if status else None,
                # What the Binding's costs are in: every view of them names it.
                "currency": self.currency.code,
            }
            if with_binding:
                entry["binding"] = _wire(binding) if binding else None
            if isinstance(item.obj, Workload):
                entry.update(_job_shape(item.obj))
            bound = str(ref) in placed
            if not bound and isinstance(item.obj, Workload) and item.obj.is_opaque:
                if policies is None:
                    policies = _placing(self.objects.decoded(listed).items)
                entry["federationOnly"] = plan.claim(item.obj, policies) is None
            items.append(entry)
        return items

    async def _policies(self) -> list[plan.AnyPolicy]:
        return _placing((await self.objects.list(keys.prefix("policies"))).items)

    async def describe(self, request: web.Request) -> web.Response:
        selectors.not_taken(request.query, view="the workload view")
        info = request.match_info
        ref = keys.WorkloadRef(info["ns"], info["kind"], info["name"])
        template = await self.objects.get(keys.workload_key(ref))
        binding = await self.bindings.get(keys.binding_key(ref))
        if template is None and binding is None:
            raise errors.NotFound(objects.called(_WORKLOADS, keys.workload_key(ref)))
        status = await self.statuses.get(keys.workload_status_key(ref))
        federation_only = (
            binding is None
            and template is not None
            and isinstance(template.obj, Workload)
            and template.obj.is_opaque
            and plan.claim(template.obj, await self._policies()) is None
        )
        works = []
        clusters = await self.raw.list(keys.prefix("clusters"))
        for kv in clusters.items:
            work = await self.works.get(keys.work_key(keys.split(kv.key)[-1], ref))
            if work is not None:
                works.append(_wire(work.obj))
        listed = (await self.events.list(event_log.event_prefix(ref))).items
        born = _created(template.obj) if template is not None else None
        events = sorted(
            (e for e in listed if born is None or e.obj.last_seen() >= born),
            key=lambda e: e.obj.last_seen(),
        )[-_RECENT_EVENTS:]
        owned = auth.readable(request.get(auth.PRINCIPAL))
        return web.json_response(
            {
                "workload": template.obj.to_wire() if template else None,
                "binding": visible.told(_wire(binding.obj), owned) if binding else None,
                "bindingRevision": binding.revision if binding else None,
                "federationOnly": federation_only,
                "suspended": template is not None
                and isinstance(template.obj, Workload)
                and template.obj.is_suspended,
                "status": _wire(status.obj) if status else None,
                "works": works,
                "events": [visible.told(_wire(e.obj), owned) for e in events],
                "currency": self.currency.code,
            }
        )


def _created(obj: Any) -> dt.datetime | None:
    """When the object described was created (to the second), so that describe shows its
    own events and not those of an object deleted before it under its name: events are
    keyed by name, and `kubectl describe` shows an object's own (by uid)."""
    return timestamp(getattr(getattr(obj, "metadata", None), "creation_timestamp", None))
