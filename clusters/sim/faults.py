"""Runtime faults of one simulated cluster, driven only through its `/_sim` admin routes.

Drills and integration tests need members that die, hang, slow down, throttle, lose
watches or nodes, and come back with their state and resourceVersions intact. A
`FaultManager` holds the active faults of one cluster: the aiohttp middleware applies
`slow` and `errors` to every API request; `down`, `blackhole` and `flapping` act on the
listener through the `Listener` protocol that `cluster.py` implements (closed port =
connection refused; accepted-but-silent socket = client timeout); `watch-drop` and
`compact` act on the store's watches; `node-notready` goes through the controllers so the
usual taints and evictions follow. `admin_routes` exposes state, fault and heal as JSON;
they are served on the cluster's API port (working under every fault except down,
blackhole and flapping) and on a separate admin port that always answers.

Fault timings (`for`, latency, flapping period) are wall-clock seconds, because what they
exercise is the client's timeouts, which run on real time; the consequences inside the
cluster (the 300 s toleration before eviction) run on the cluster's simulated clock.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

from clusters.sim.api_errors import status_body
from clusters.sim.clock import Clock, SimClock, parse_duration

__all__ = ["MODES", "Fault", "FaultError", "FaultManager", "Listener", "admin_routes"]

MODES = (
    "down",
    "blackhole",
    "slow",
    "flapping",
    "errors",
    "watch-drop",
    "compact",
    "node-notready",
)
_LISTENER_MODES = frozenset({"down", "blackhole", "flapping"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class FaultError(ValueError):
    """A fault request that makes no sense (unknown mode, bad parameter)."""


class Listener(Protocol):
    """What the fault layer needs from the cluster: control over its API listener."""

    async def go_down(self) -> None: ...
    async def go_blackhole(self) -> None: ...
    async def go_up(self) -> None: ...
    def drop_watches(self) -> None: ...
    def compact(self) -> None: ...
    def set_nodes_ready(self, count: int, *, ready: bool, pool: str | None) -> list[str]: ...
    def state(self) -> dict[str, Any]: ...


@dataclass
class Fault:
    mode: str
    params: dict[str, Any]
    since: float
    until: float | None
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    affected: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "params": self.params, "since": self.since}
        if self.until is not None:
            out["until"] = self.until
        if self.affected:
            out["affected"] = self.affected
        return out


def _number(params: Mapping[str, Any], key: str, default: float) -> float:
    value = params.get(key, default)
    try:
        return parse_duration(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError) as exc:
        raise FaultError(f"{key} must be a number or duration, got {value!r}") from exc


class FaultManager:
    """The active faults of one cluster and the middleware that applies them."""

    def __init__(self, listener: Listener, *, clock: Clock | None = None, seed: int = 0) -> None:
        self._listener = listener
        self._clock = clock or SimClock(speed=1.0)  # wall time, see module docstring
        self._rng = random.Random(seed)
        self.active: dict[str, Fault] = {}

    # -- control --------------------------------------------------------------------------

    async def inject(self, mode: str, params: Mapping[str, Any] | None = None) -> Fault:
        """Start a fault (replacing one of the same mode); `for` heals it after that long."""
        if mode not in MODES:
            raise FaultError(f"unknown fault mode {mode!r}; one of: {', '.join(MODES)}")
        params = dict(params or {})
        duration = params.pop("for", None)
        until = None
        now = self._clock.monotonic()
        if duration is not None:
            until = now + _number({"for": duration}, "for", 0)
        if mode in self.active:
            await self.heal(mode)
        if mode in _LISTENER_MODES:
            for other in _LISTENER_MODES & set(self.active):
                await self.heal(other)
        fault = Fault(mode, params, since=now, until=until)
        self._validate(fault)
        self.active[mode] = fault
        await self._apply(fault)
        if until is not None or mode in ("flapping", "watch-drop"):
            fault.task = asyncio.create_task(self._run(fault), name=f"sim-fault-{mode}")
        if mode == "compact" and until is None:
            self.active.pop(mode, None)  # instantaneous
        return fault

    def _validate(self, fault: Fault) -> None:
        p = fault.params
        if fault.mode == "errors":
            rate = _number(p, "rate", 0.5)
            if not 0 <= rate <= 1:
                raise FaultError("errors: rate must be between 0 and 1")
            codes = p.get("codes", [500, 503, 429])
            if not codes or any(int(c) not in (429, 500, 502, 503, 504) for c in codes):
                raise FaultError("errors: codes must be among 429, 500, 502, 503, 504")
        for key in ("latency", "jitter", "period", "interval", "retryAfter", "count"):
            if key in p and _number(p, key, 0) < 0:
                raise FaultError(f"{fault.mode}: {key} must not be negative")

    async def _apply(self, fault: Fault) -> None:
        mode, p = fault.mode, fault.params
        if mode in ("down", "flapping"):  # flapping starts with a down phase
            await self._listener.go_down()
        elif mode == "blackhole":
            await self._listener.go_blackhole()
        elif mode == "watch-drop":
            self._listener.drop_watches()
        elif mode == "compact":
            self._listener.compact()
        elif mode == "node-notready":
            count = int(_number(p, "count", 1))
            fault.affected = self._listener.set_nodes_ready(count, ready=False, pool=p.get("pool"))

    async def heal(self, mode: str | None = None) -> list[str]:
        """End one fault, or all of them; returns the modes healed."""
        modes = [mode] if mode else list(self.active)
        healed = []
        for m in modes:
            fault = self.active.pop(m, None)
            if fault is None:
                continue
            if fault.task is not None and fault.task is not asyncio.current_task():
                fault.task.cancel()
            if m in _LISTENER_MODES:
                await self._listener.go_up()
            elif m == "node-notready" and fault.affected:
                self._listener.set_nodes_ready(0, ready=True, pool=None)
            healed.append(m)
        return healed

    async def _run(self, fault: Fault) -> None:
        """Background life of a fault: flapping and repeated watch drops, then expiry."""
        if fault.mode == "flapping":
            period = _number(fault.params, "period", 1.0)
            down = True
            while await self._tick(fault, period):
                down = not down
                await (self._listener.go_down() if down else self._listener.go_up())
        elif fault.mode == "watch-drop":
            interval = _number(fault.params, "interval", 5.0)
            while await self._tick(fault, interval):
                self._listener.drop_watches()
        elif fault.until is not None:
            await self._clock.sleep(fault.until - self._clock.monotonic())
        if self.active.get(fault.mode) is fault:
            await self.heal(fault.mode)

    async def _tick(self, fault: Fault, period: float) -> bool:
        """Sleep one period, or less if `for` runs out first; True if the period completed.

        Sleeping a whole period before looking at `until` healed a `--for 130s` flapping
        fault with a 20 s period at 140 s: an outage the caller never asked for.
        """
        if fault.until is None:
            await self._clock.sleep(period)
            return True
        left = fault.until - self._clock.monotonic()
        await self._clock.sleep(min(period, left))
        return period < left

    async def close(self) -> None:
        for fault in list(self.active.values()):
            if fault.task is not None:
                fault.task.cancel()
        self.active.clear()

    def state(self) -> dict[str, Any]:
        return {
            **self._listener.state(),
            "faults": [f.describe() for f in self.active.values()],
        }

    # -- request path ---------------------------------------------------------------------

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/_sim"):
            return await handler(request)
        slow = self.active.get("slow")
        if slow is not None:
            latency = _number(slow.params, "latency", 1.0)
            jitter = _number(slow.params, "jitter", latency / 2)
            await self._clock.sleep(latency + self._rng.uniform(0, jitter))
        errors = self.active.get("errors")
        if errors is not None and self._rng.random() < _number(errors.params, "rate", 0.5):
            codes = [int(c) for c in errors.params.get("codes", [500, 503, 429])]
            return _error_response(
                self._rng.choice(codes), int(_number(errors.params, "retryAfter", 1))
            )
        return await handler(request)


_ERRORS = {
    429: (
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
    ),
    500: (
        "InternalError",
        'an error on the server ("injected fault") has prevented the request from succeeding',
    ),
    502: ("InternalError", "the server could not reach its backend (injected fault)"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted"),
}


def _error_response(code: int, retry_after: int) -> web.Response:
    reason, message = _ERRORS[code]
    details = {"retryAfterSeconds": retry_after} if code in (429, 503) else None
    headers = {"Retry-After": str(retry_after)} if code in (429, 503) else {}
    return web.json_response(
        status_body(code, reason, message, details=details), status=code, headers=headers
    )


def admin_routes(manager: FaultManager, prefix: str = "/_sim") -> list[web.RouteDef]:
    """`GET state`, `POST fault` ({"mode", "for", ...params}) and `POST heal` ({"mode"?})."""

    async def state(_request: web.Request) -> web.Response:
        return web.json_response(manager.state())

    async def fault(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            if not isinstance(body, dict) or "mode" not in body:
                raise FaultError('body must be a JSON object with "mode"')
            params = {k: v for k, v in body.items() if k != "mode"}
            await manager.inject(str(body["mode"]), params)
        except (FaultError, json.JSONDecodeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(manager.state())

    async def heal(request: web.Request) -> web.Response:
        body: Any = {}
        if request.can_read_body:
            try:
                body = await request.json()
            except json.JSONDecodeError:
                return web.json_response({"error": "body must be JSON"}, status=400)
        mode = body.get("mode") if isinstance(body, dict) else None
        healed = await manager.heal(mode)
        return web.json_response({**manager.state(), "healed": healed})

    return [
        web.get(f"{prefix}/state", state),
        web.post(f"{prefix}/fault", fault),
        web.post(f"{prefix}/heal", heal),
    ]
