"""`/apis/fedctl.io/v1alpha1/drills`: start a failover drill over HTTP, watch it run, and
read past reports; what the dashboard's Drills view stands on.

Fed by the registry (reports stored at `keys.drill_key`, Cluster objects) and by
`federation.failover` for the drill it runs (`faults` breaks and mends the member exactly as
`fedctl drill run` does, `drills` samples and judges); feeds the dashboard and any client.

    GET  .../drills                    reports, newest first; a running drill comes first;
                                       the defaults of a new one, and this controller's
                                       detection and eviction times (`timing`)
    GET  .../drills/{id}               one report with its timeline (?format=svg|markdown)
    POST .../drills {cluster, fault, duration, settle}     202 with the drill, on any replica;
                                                           409 while another is in flight

Why one drill at a time, run by the leading replica but asked of any: a drill breaks a
member on purpose, and two at once would measure each other; the replicas sit behind one
Service, so the one asked is the Service's choice. A POST records the drill in the
registry (`drill_runs` says why a record, not a request forwarded to the leader); the
leader's `lead` loop runs it and publishes its progress there, so every replica shows the
running drill (`stage` `pending` until the leader takes it). The replica running it shows
its own samples, judged on every read; the report reaches the registry when it ends. The
drill is a task owned by the runner, not a bare one: stopping the loop (shutdown, or
leadership lost) cancels it, which heals the member first. A drill or member that does
not exist is a 404 Status naming it as kubectl would (`drill "ID" not found`) with how
to list the real ones, never the registry key behind it. Authorization (admins only) is
in `auth.py`.

Why a stored report that does not read is skipped, not fatal: reports outlive the release
that wrote them (a newer one may add a field this one does not know, a hand edit may break
one), and one such record used to make the whole list a 500, so the dashboard showed no
drill at all. The list leaves it out and names it under `unreadable` with why (and in a
`Warning` header, as object lists do); reading that one drill is a Status saying the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from federation import clock as clock_mod
from federation import errors
from federation.api import drill_runs, objects, status
from federation.failover import drills, faults
from federation.registry import keys
from federation.registry import store as st
from federation.settings import FailoverSettings, MonitorSettings

__all__ = ["DRILLS_PATH", "DrillsApi"]

log = logging.getLogger(__name__)

DRILLS_PATH = "/apis/fedctl.io/v1alpha1/drills"
_FIELDS = ("cluster", "fault", "duration", "settle")
_DEFAULTS = {"fault": "down", "duration": "90s", "settle": "60s"}
"""As `fedctl drill run`'s: a `down` held 90 s outlasts detection plus the eviction grace
under the default settings (about 40 + 30 s), so work moves; 60 s moved nothing."""
_FORMATS = ("json", "svg", "markdown")
_CLUSTERS_PATH = objects.API_PREFIX + "/clusters"


def _not_found(kind: str, name: str, *, listing: str) -> web.Response:
    """A 404 Status naming what is missing and where to find what exists."""
    return status.status_response(
        404,
        "NotFound",
        f'{kind} "{name}" not found; {listing}',
        details={"name": name, "group": "fedctl.io", "kind": f"{kind}s"},
    )


@dataclass(frozen=True, slots=True)
class Timing:
    """How long this controller takes to act on a dead member: what a drill's hold must
    outlast for work to move. `detect`: seconds until the monitor marks it NotReady (the
    failure threshold plus up to one probe period); `grace`: seconds more before its work
    is evicted (the global eviction grace; a Cluster may set its own)."""

    detect: float
    grace: float

    @classmethod
    def of(cls, monitor: MonitorSettings, failover: FailoverSettings) -> Timing:
        return cls(monitor.failure_threshold + monitor.probe_period, failover.eviction_grace)

    def doc(self) -> dict[str, float]:
        return {"detectSeconds": self.detect, "evictionGraceSeconds": self.grace}


def _running_doc(view: drill_runs.View, *, full: bool) -> dict[str, Any]:
    partial, stage, samples = view
    out = _doc(partial, phase="Running", full=full)
    out["stage"] = stage
    if full:
        out["samples"] = samples
    return out


def _doc(report: drills.Report, *, phase: str, full: bool) -> dict[str, Any]:
    out = report.to_json()
    out["phase"] = phase
    if full:
        out["timeline"] = drills.events(report)
    else:
        out.pop("workloads", None)
    return out


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """A stored report that does not decode: which, and why."""

    id: str
    key: str
    error: str

    def doc(self) -> dict[str, str]:
        return {"id": self.id, "key": self.key, "error": self.error}

    def message(self) -> str:
        return (
            f"drill {self.id} is stored but cannot be read ({self.error}); it may have been"
            " written by a newer release"
        )


def _warning(text: str) -> str:
    """`text` as a `Warning` header's value (RFC 7234's 299, as the object lists send)."""
    return '299 - "' + " ".join(text.replace('"', "'").split()) + '"'


def _decoded(kv: st.KeyValue) -> drills.Report | _Unreadable:
    try:
        return drills.decode(kv.value)
    except drills.UNREADABLE as exc:
        return _Unreadable(kv.key.rpartition("/")[2], kv.key, f"{type(exc).__name__}: {exc}")


def _phase(report: drills.Report) -> str:
    return "Failed" if report.error else "Completed"


def _request(body: Any) -> tuple[str, str, float, float]:
    """cluster, fault, duration and settle from a POST body; Invalid naming each bad field."""
    if not isinstance(body, dict):
        raise errors.Invalid("body: expected a JSON object {cluster, fault, duration, settle}")
    findings = [f"{name}: unknown field" for name in sorted(set(body) - set(_FIELDS))]
    values = {**_DEFAULTS, **body}
    cluster = values.get("cluster")
    if not isinstance(cluster, str) or not cluster:
        findings.append("cluster: required, the name of a registered member")
    else:
        try:
            keys.validate_segment(cluster, what="cluster name")
        except errors.Invalid as exc:
            findings.append(f"cluster: {exc}")
    fault = values["fault"]
    if fault not in faults.FAULTS:
        findings.append(f"fault: {fault!r} is not one of {', '.join(faults.FAULTS)}")
    times = {}
    for name, minimum in (("duration", 0.001), ("settle", 0.0)):
        try:
            times[name] = drills.seconds(name, values[name], minimum=minimum)
        except errors.Invalid as exc:
            findings.append(str(exc))
    if findings:
        raise errors.Invalid("; ".join(findings), findings=findings)
    return str(cluster), str(fault), times["duration"], times["settle"]


class DrillsApi:
    """The drill routes bound to one Store; `lead()` runs the drill in flight while this
    replica leads (see `drill_runs` for why drills travel through the registry)."""

    def __init__(
        self,
        store: st.Store,
        *,
        kubeconfig: str | None = None,
        guards: Callable[[], Sequence[st.Guard]] | None = None,
        clock: clock_mod.Clock = clock_mod.real,
        poll: float = 0.5,
        publish: float = 1.0,
        timing: Timing | None = None,
    ) -> None:
        """`guards`: the election's fence for this replica's writes as leader (None: this
        process is the only controller); `publish`: seconds between the running drill's
        progress writes, what other replicas show."""
        self.store = store
        self.timing = timing or Timing.of(MonitorSettings(), FailoverSettings())
        self.clock = clock
        self.runner = drill_runs.Runner(
            store, kubeconfig=kubeconfig, guards=guards, clock=clock, poll=poll, publish=publish
        )
        self.elected = guards is not None
        """Run by an elected leader (any replica may be asked), not by this app itself."""
        self.lead = self.runner.lead
        """Run the drill in flight whenever there is one, while this replica leads."""
        self.close = self.runner.close
        """Stop a running drill (healing its member first); the app's cleanup calls it."""
        self._starting = asyncio.Lock()

    async def alone(self, _: web.Application) -> AsyncIterator[None]:
        """An app's cleanup context when no election runs `lead`: the only controller
        runs the drill loop for as long as its app serves, and stops it (healing) after."""

        async def leading() -> None:
            while True:
                try:
                    await self.lead()
                except errors.RetryableError as exc:  # etcd away: again once it answers
                    log.warning("drills: %s; starting again", exc)
                    await self.clock.sleep(1.0)

        loop = asyncio.create_task(leading(), name="drills")
        yield
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(DRILLS_PATH, self.list_drills),
            web.post(DRILLS_PATH, self.start),
            web.get(DRILLS_PATH + "/{id}", self.get),
        ]

    # reading

    async def _stored(self) -> tuple[list[drills.Report], list[_Unreadable]]:
        """The stored reports, newest first, and those that do not read, in key order."""
        listed = await self.store.list(keys.prefix("drills"))
        decoded = [_decoded(kv) for kv in listed.items]
        reports = [r for r in decoded if isinstance(r, drills.Report)]
        unreadable = [r for r in decoded if isinstance(r, _Unreadable)]
        for bad in unreadable:
            log.warning("%s", bad.message())
        return sorted(reports, key=lambda r: (r.started, r.id), reverse=True), unreadable

    async def _in_flight(
        self,
    ) -> tuple[str, drill_runs.View] | None:
        """The drill asked for or running, wherever it runs: its id and progress (this
        replica's own when it runs it, else what its leader last published)."""
        running = self.runner.running
        if running is not None:
            return running.report.id, running.view()
        read = await drill_runs.read(self.store)
        flight = read[0] if read else None
        return (flight.report.id, flight.progress()) if flight else None

    async def list_drills(self, _: web.Request) -> web.Response:
        flight = await self._in_flight()
        items = [_running_doc(flight[1], full=False)] if flight else []
        running_id = flight[0] if flight else None
        reports, unreadable = await self._stored()
        items += [_doc(r, phase=_phase(r), full=False) for r in reports if r.id != running_id]
        return web.json_response(
            {
                "items": items,
                "unreadable": [u.doc() for u in unreadable],
                # What a new drill starts with, and what its hold must outlast: the
                # dashboard's form shows both.
                "defaults": _DEFAULTS,
                "timing": self.timing.doc(),
            },
            headers=[("Warning", _warning(u.message())) for u in unreadable],
        )

    async def get(self, request: web.Request) -> web.Response:
        drill_id = request.match_info["id"]
        key = keys.drill_key(drill_id)
        fmt = request.query.get("format", "json")
        if fmt not in _FORMATS:
            raise errors.Invalid(f"format: {fmt!r} is not one of {', '.join(_FORMATS)}")
        flight = await self._in_flight()
        if flight is not None and flight[0] == drill_id:
            report, doc = flight[1][0], _running_doc(flight[1], full=True)
        else:
            kv = await self.store.get(key)
            if kv is None:
                return _not_found(
                    "drill",
                    drill_id,
                    listing=f"GET {DRILLS_PATH} (or fedctl drill list) lists drills",
                )
            decoded = _decoded(kv)
            if isinstance(decoded, _Unreadable):
                return status.status_response(
                    500, "InternalError", decoded.message(), details=decoded.doc()
                )
            report = decoded
            doc = _doc(report, phase=_phase(report), full=True)
        if fmt == "svg":
            return web.Response(text=drills.svg(report), content_type="image/svg+xml")
        if fmt == "markdown":
            return web.Response(text=drills.markdown(report), content_type="text/markdown")
        return web.json_response(doc)

    # asking: any replica

    async def start(self, request: web.Request) -> web.Response:
        """Record the drill for the leader to run (202), on whichever replica is asked."""
        cluster, fault, duration, settle = _request(await request.json())
        if await self.store.get(keys.cluster_key(cluster)) is None:
            return _not_found(
                "cluster",
                cluster,
                listing=f"GET {_CLUSTERS_PATH} (or fedctl cluster list) lists members",
            )
        # Here, so a fault this member cannot play is a 400 to the caller, not a report.
        injector = drill_runs.injector(
            self.store,
            kubeconfig=self.runner.kubeconfig,
            cluster=cluster,
            fault=fault,
            duration=duration,
        )
        async with self._starting:
            now = self.clock.now()
            report = drills.Report(
                id=await self._fresh_id(drills.new_id(now, cluster)),
                cluster=cluster,
                fault=injector.fault,
                started=now.isoformat(),
                duration=duration,
            )
            flight = drill_runs.Flight(report, fault, settle)
            try:
                await self.store.commit([st.Create(keys.drill_run_key(), flight.encode())])
            except errors.AlreadyExists:
                busy = await self._in_flight()
                what = f"drill {busy[0]} is" if busy else "another drill is"
                return status.status_response(
                    409, "Conflict", f"{what} running; one drill at a time"
                )
        log.info("drill %s asked: %s on %s for %gs", report.id, fault, cluster, duration)
        doc = _running_doc(flight.progress(), full=True)
        notes = (
            [f"{cluster} is not simulated; using a NoExecute taint"] if injector.fell_back else []
        )
        if self.elected and await self.store.get(keys.leader_key()) is None:
            # As `fedctl drill run` warns: nothing would react, and nothing runs it yet.
            notes.append("no controller leads now; the drill starts when one does")
        if notes:
            doc["message"] = "; ".join(notes)
        resp = web.json_response(doc, status=202)
        resp.headers["Location"] = f"{DRILLS_PATH}/{report.id}"
        return resp

    async def _fresh_id(self, base: str) -> str:
        """`base`, or `base-N` when a drill already took it (two in the same second)."""
        candidate, n = base, 1
        while await self.store.get(keys.drill_key(candidate)) is not None:
            n += 1
            candidate = f"{base}-{n}"
        return candidate
