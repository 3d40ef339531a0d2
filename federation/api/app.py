"""The controller's aiohttp application: object routes, health, readiness, OpenAPI, metrics,
drills.

Why readiness checks etcd and liveness does not: a controller that cannot reach etcd must
be taken out of a load balancer, but restarting it would not bring etcd back. Readiness
makes one read, never retried, with `ApiSettings.readiness_timeout` (1 s): a probe gives up
after a few seconds, and it must see the 503 and its reason, not a timeout of its own.

Middlewares, outermost first: audit (so refused mutations are recorded too), auth, the
per-client rate limit, a `dryRun` other than `All` refused, the request deadline, then
errors → Status bodies. `/healthz`,
`/livez` and `/readyz` need no credentials; `/metrics` needs a token of group `admin` or
`metrics` (it shows every namespace's cost: `auth.py`). Without an `Authenticator` every
caller is trusted, which is what a loopback-only development controller wants.

Drills need two things only the controller process knows: the members' kubeconfig (its
fleet state file names a simulated member's fault API) and the election's fence. With the
fence, the controller runs the drill loop (`DrillsApi.lead`) only while its replica leads;
without one, this app is the only controller and runs that loop for as long as it serves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from federation import clock as clock_mod
from federation import errors, secrets
from federation.api import audit as audit_mod
from federation.api import auth as auth_mod
from federation.api import dashboard, limits, objects, plan_routes, queue_status, status, streams
from federation.api import drills as drills_api
from federation.api import metrics as metrics_mod
from federation.api import watch as watch_api
from federation.api import workloads as workloads_api
from federation.cache.currency import Currency
from federation.registry import store as st
from federation.scheduler import queue_view as qv
from federation.settings import ApiSettings, FailoverSettings, MonitorSettings, SchedulerSettings

__all__ = ["DRILLS", "METRICS", "OBJECTS_API", "build_app", "openapi_document"]


OBJECTS_API: web.AppKey[objects.ObjectsApi] = web.AppKey("objects_api", objects.ObjectsApi)
METRICS: web.AppKey[metrics_mod.Metrics] = web.AppKey("metrics", metrics_mod.Metrics)
DRILLS: web.AppKey[drills_api.DrillsApi] = web.AppKey("drills_api", drills_api.DrillsApi)


def build_app(
    store: st.Store,
    *,
    settings: ApiSettings | None = None,
    clock: clock_mod.Clock = clock_mod.real,
    extra_routes: list[web.RouteDef] | None = None,
    auth: auth_mod.Authenticator | None = None,
    audit: audit_mod.AuditLog | None = None,
    metrics: metrics_mod.Metrics | None = None,
    cipher: secrets.Cipher | None = None,
    kubeconfig: str | None = None,
    guards: Callable[[], Sequence[st.Guard]] | None = None,
    queue_view: qv.Published | None = None,
    scheduler: SchedulerSettings | None = None,
    monitor: MonitorSettings | None = None,
    failover: FailoverSettings | None = None,
) -> web.Application:
    """The API app; `kubeconfig` and `guards` (the election's fence; None: no election, so
    the app runs drills itself) are for drills, and
    `monitor` and `failover` the settings this controller detects and evicts with, which
    drills are told to outlast;
    `queue_view` is where this process's scheduling loop publishes while it leads;
    `scheduler` is the settings its scheduling loop runs with, which plans, queue views and
    price checks must share (score weights, the default queue, the currency)."""
    settings = settings or ApiSettings()
    scheduler = scheduler or SchedulerSettings()
    currency = Currency.of(scheduler)
    metrics = metrics or metrics_mod.Metrics(clock=clock)
    limiter = limits.RateLimiter(
        rate=settings.rate_limit,
        burst=settings.rate_burst,
        clock=clock,
        on_limited=metrics.rate_limited,
    )
    failures = limits.FailedAuthLimiter(
        limits.RateLimiter(
            rate=settings.auth_failure_rate,
            burst=settings.auth_failure_burst,
            clock=clock,
            name=limits.FAILED_SIGN_IN,
            on_limited=metrics.rate_limited,
        )
    )
    middlewares: list[Middleware] = [
        metrics.middleware,
        *([audit.middleware] if audit else []),
        *([failures.middleware, auth.middleware] if auth else []),
        limiter.middleware,
        limits.dry_run_middleware,
        limits.timeout_middleware(settings.request_timeout),
        status.error_middleware,
    ]
    app = web.Application(client_max_size=settings.max_body_bytes, middlewares=middlewares)
    queues = queue_status.QueueStatusApi(store, source=queue_view, settings=scheduler)
    api = objects.ObjectsApi(
        store,
        clock=clock,
        cipher=cipher,
        admit=auth.admit if auth else None,
        currency=currency,
        queues=queues,
        max_object_bytes=settings.max_object_bytes,
        watch_timing=streams.Timing.of(settings),
    )
    drills = drills_api.DrillsApi(
        store,
        kubeconfig=kubeconfig,
        guards=guards,
        clock=clock,
        timing=drills_api.Timing.of(monitor or MonitorSettings(), failover or FailoverSettings()),
    )

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        try:
            await store.ping(timeout=settings.readiness_timeout)
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
            web.get("/metrics", metrics.handler),
            *plan_routes.PlanApi(
                store, settings=scheduler, admit=auth.admit if auth else None
            ).routes(),
            *queues.routes(),
            *workloads_api.WorkloadsApi(store, currency=currency).routes(),
            *drills.routes(),  # before the object routes, whose `{plural}` would match
            *watch_api.WatchApi(
                store, timing=streams.Timing.of(settings)
            ).routes(),  # so would it match /watch
            *api.routes(),
            *dashboard.routes(),
            *(extra_routes or []),
        ]
    )
    app[OBJECTS_API] = api
    app[METRICS] = metrics
    app[DRILLS] = drills
    if guards is None:
        app.cleanup_ctx.append(drills.alone)
    else:
        app.on_cleanup.append(drills.close)
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
        listing = (
            f"list {res.plural}; ?watch=true streams JSON lines; ?labelSelector=,"
            " ?fieldSelector=metadata.name|metadata.namespace"
        )
        if res.plural == "works":
            listing += "; ?cluster=NAME: one member's"
        ops: dict[str, Any] = {"get": _op(listing)}
        item_ops: dict[str, Any] = {"get": _op(f"read one {res.kind}")}
        if not res.readonly:
            ops["post"] = _op(f"create a {res.kind}")
            item_ops["put"] = _op(f"replace a {res.kind}; metadata.resourceVersion makes it CAS")
            item_ops["delete"] = _op(
                f"delete a {res.kind}"
                + (
                    "; a v1 Namespace (namespaces/_/workloads/Namespace/NAME) with every"
                    " workload and policy in that namespace (?dryRun=All says which)"
                    if res.plural == "workloads"
                    else ""
                )
            )
        paths[scope] = ops
        if res.plural not in _UNNAMED:
            paths[item] = item_ops
    paths[base + "/apply"] = {
        "post": _op(
            "validate every document, then create or update each (?dryRun=All: store nothing)"
        )
    }
    paths[base + "/validate"] = {"post": _op("findings for a YAML body; stores nothing")}
    paths[base + "/plan"] = {
        "post": _op("what-if placement and diff for a YAML body; stores nothing")
    }
    paths[base + "/drills"] = {
        "get": _op("drill reports, newest first; a running drill first"),
        "post": _op("start a drill: {cluster, fault, duration, settle}; admin only"),
    }
    paths[base + "/drills/{id}"] = {"get": _op("one drill report; ?format=svg|markdown")}
    paths[base + "/watch"] = {
        "get": _op(
            "the watches of several kinds in one stream: ?resources=A,B[&resourceVersion=N]"
            "[&sendInitialEvents=false][&allowWatchBookmarks=true]; each JSON line names"
            " its resource"
        )
    }
    status_base = workloads_api.PREFIX
    paths[status_base + "/workloads"] = {
        "get": _op(
            "each workload's phase, queue, health and placement; ?namespace=NS;"
            " ?binding=false: without each item's Binding"
        )
    }
    paths[status_base + "/namespaces/{ns}/workloads/{kind}/{name}"] = {
        "get": _op("one workload described: its Binding, copies, events and why it waits")
    }
    paths[status_base + "/costs"] = {
        "get": _op("hourly cost of what runs; ?by=GROUPING, ?namespace=NS")
    }
    paths[queue_status.QUEUES_PATH] = {
        "get": _op("each queue's admitted and pending work and usage against its limits")
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "fedctl", "version": "v1alpha1"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


_UNNAMED = ("works", "events")
"""Resources listed only: they have no single-name address (a GET of one is a 400)."""


def _op(summary: str) -> dict[str, Any]:
    return {"summary": summary, "responses": {"200": {"description": "OK"}}}
