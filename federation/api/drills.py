"""`/apis/fedctl.io/v1alpha1/drills`: start a failover drill over HTTP, watch it run, and
read past reports; what the dashboard's Drills view stands on.

Fed by the registry (reports stored at `keys.drill_key`, Cluster objects) and by
`federation.failover` for the drill it runs (`faults` breaks and mends the member exactly as
`fedctl drill run` does, `drills` samples and judges); feeds the dashboard and any client.

    GET  .../drills                    reports, newest first; a running drill comes first;
                                       the defaults of a new one, and this controller's
                                       detection and eviction times (`timing`)
    GET  .../drills/{id}               one report with its timeline (?format=svg|markdown)
    POST .../drills {cluster, fault, duration, settle}     202 with the running drill

Why one drill at a time, in the leading replica: a drill breaks a member on purpose, and two
at once would measure each other; the leader is the one process every operator reaches
through the same election (a follower answers 503). The drill is a task owned by this
object, not a bare one: the app's cleanup cancels it, which heals the member before the
partial report is stored. A running drill lives in memory (its samples so far, judged on
every read); its report reaches the registry when it ends, so a follower or `fedctl drill
list` sees it then. A drill or member that does not exist is a 404 Status naming it as
kubectl would (`drill "ID" not found`) with how to list the real ones, never the registry
key behind it. Authorization (admins only) is in `auth.py`.

Why a stored report that does not read is skipped, not fatal: reports outlive the release
that wrote them (a newer one may add a field this one does not know, a hand edit may break
one), and one such record used to make the whole list a 500, so the dashboard showed no
drill at all. The list leaves it out and names it under `unreadable` with why (and in a
`Warning` header, as object lists do); reading that one drill is a Status saying the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from federation import clock as clock_mod
from federation import errors
from federation.api import objects, status
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


@dataclass
class _Running:
    """The drill in progress: what was asked, what has been seen, the task driving it."""

    report: drills.Report
    injector: faults.Injector
    settle: float
    progress: drills.Progress = field(default_factory=drills.Progress)
    task: asyncio.Task[None] | None = None

    def doc(self, *, full: bool) -> dict[str, Any]:
        partial = self.progress.partial(self.report, final=self.progress.stage == "done")
        out = _doc(partial, phase="Running", full=full)
        out["stage"] = self.progress.stage
        if full:
            out["samples"] = drills.curve(
                self.progress.samples,
                cluster=self.report.cluster,
                fault_at=self.progress.fault_at or 0.0,
            )
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
    """The drill routes bound to one Store, and the one drill this process may be running."""

    def __init__(
        self,
        store: st.Store,
        *,
        kubeconfig: str | None = None,
        leading: Callable[[], bool] | None = None,
        clock: clock_mod.Clock = clock_mod.real,
        poll: float = 0.5,
        timing: Timing | None = None,
    ) -> None:
        self.store = store
        self.timing = timing or Timing.of(MonitorSettings(), FailoverSettings())
        self.kubeconfig = kubeconfig
        self.leading = leading
        self.clock = clock
        self.poll = poll
        self.running: _Running | None = None
        self._starting = asyncio.Lock()

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

    async def list_drills(self, _: web.Request) -> web.Response:
        items = [self.running.doc(full=False)] if self.running else []
        running_id = self.running.report.id if self.running else None
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
        running = self.running if self.running and self.running.report.id == drill_id else None
        if running is not None:
            report, doc = running.progress.partial(running.report), running.doc(full=True)
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

    # running

    async def start(self, request: web.Request) -> web.Response:
        if self.leading is not None and not self.leading():
            raise errors.Fenced("this replica does not lead; start the drill on the leader")
        cluster, fault, duration, settle = _request(await request.json())
        async with self._starting:
            if self.running is not None:
                busy = self.running.report.id
                return status.status_response(
                    409, "Conflict", f"drill {busy} is running; one drill at a time"
                )
            if await self.store.get(keys.cluster_key(cluster)) is None:
                return _not_found(
                    "cluster",
                    cluster,
                    listing=f"GET {_CLUSTERS_PATH} (or fedctl cluster list) lists members",
                )
            injector = faults.injector(
                self.store, cluster=cluster, fault=fault, kubeconfig=self.kubeconfig, hold=duration
            )
            now = self.clock.now()
            report = drills.Report(
                id=await self._fresh_id(drills.new_id(now, cluster)),
                cluster=cluster,
                fault=injector.fault,
                started=now.isoformat(),
                duration=duration,
            )
            running = _Running(report, injector, settle)
            running.task = asyncio.create_task(self._drive(running), name=f"drill-{report.id}")
            self.running = running
        log.info("drill %s: %s on %s for %gs", report.id, injector.fault, cluster, duration)
        doc = running.doc(full=True)
        if injector.fell_back:
            doc["message"] = f"{cluster} is not simulated; using a NoExecute taint"
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

    async def _drive(self, running: _Running) -> None:
        """Run the drill; a drill that fails or is stopped still leaves its report."""
        error = ""
        try:
            running.report = await drills.run(
                self.store,
                report=running.report,
                inject=running.injector.inject,
                heal=running.injector.heal,
                settle=running.settle,
                poll=self.poll,
                clock=self.clock,
                progress=running.progress,
            )
        except asyncio.CancelledError:
            error = "stopped: the controller shut down during the drill"
            raise
        except errors.NotFound:  # its message is a registry key; say what went missing
            error = f'cluster "{running.report.cluster}" not found: removed during the drill'
        except errors.FedctlError as exc:
            error = str(exc)
        except Exception:  # no supervisor owns a drill: say so in its report, and the log
            log.exception("drill %s failed", running.report.id)
            error = "internal error; see the controller log"
        finally:
            if error:
                await self._keep_failed(running, error)
            self.running = None
            log.info("drill %s ended%s", running.report.id, f": {error}" if error else "")

    async def _keep_failed(self, running: _Running, error: str) -> None:
        report = running.progress.partial(running.report, final=True)  # no more samples
        report.error = error
        try:
            await self.store.commit([st.Put(keys.drill_key(report.id), drills.encode(report))])
        except errors.FedctlError as exc:
            log.warning("drill %s: report not stored: %s", report.id, exc)

    async def close(self, _: web.Application | None = None) -> None:
        """Stop a running drill (healing its member first); the app calls this on cleanup."""
        running = self.running
        if running is None or running.task is None:
            return
        running.task.cancel()
        await asyncio.gather(running.task, return_exceptions=True)
