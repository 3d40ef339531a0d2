"""Per-client rate limits and per-request deadlines for the REST API.

Role: keeps one noisy client (a runaway script, a dashboard left open in forty tabs) from
starving the rest, and keeps a stuck request from holding a connection forever. Fed by
`ApiSettings.rate_limit` / `rate_burst` / `request_timeout` and by the caller identity the
auth middleware put on the request (the remote address when there is none); feeds the
inner middlewares and handlers. The body limit itself is aiohttp's `client_max_size`.

Why a token bucket per client: it allows short bursts (an `apply` of a directory) at full
speed while holding the long-run rate; a refused request gets 429 with `Retry-After`, the
number of whole seconds until the bucket holds a token again, so well-behaved clients back
off exactly as long as needed. Buckets of idle clients are dropped once the table is full.
Watches are exempt from the deadline: they are meant to stay open.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware

from federation import clock as clock_mod
from federation.api import auth, status, watch

__all__ = ["RateLimiter", "TokenBucket", "dry_run_middleware", "timeout_middleware"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

EXEMPT_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


@dataclass(slots=True)
class TokenBucket:
    """`burst` tokens at most, refilled at `rate` per second; one token per request."""

    rate: float
    burst: float
    tokens: float
    stamp: float

    def take(self, now: float) -> float:
        """0 when a token was taken, else seconds until one will be there."""
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class RateLimiter:
    """Buckets by client key; `middleware` answers 429 when a client's bucket is empty."""

    def __init__(
        self,
        *,
        rate: float,
        burst: int,
        clock: clock_mod.Clock = clock_mod.real,
        max_clients: int = 10_000,
        on_limited: Callable[[str], None] | None = None,
    ) -> None:
        self.rate, self.burst, self.clock = rate, float(burst), clock
        self.max_clients = max_clients
        self.on_limited = on_limited
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def wait_for(self, key: str) -> float:
        """Take a token for `key`: 0 when allowed, else seconds to wait."""
        now = self.clock.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.rate, self.burst, self.burst, now)
            self._buckets[key] = bucket
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)

    @staticmethod
    def client_key(request: web.Request) -> str:
        who = request.get(auth.PRINCIPAL)
        return f"user:{who.user}" if who is not None else f"addr:{request.remote or '-'}"

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in EXEMPT_PATHS:
            return await handler(request)
        key = self.client_key(request)
        wait = self.wait_for(key)
        if wait <= 0:
            return await handler(request)
        if self.on_limited is not None:
            self.on_limited(key)
        resp = status.status_response(
            429, "TooManyRequests", f"rate limit of {self.rate:g}/s exceeded; retry later"
        )
        resp.headers["Retry-After"] = str(max(1, math.ceil(wait)))
        return resp


def timeout_middleware(seconds: float) -> Middleware:
    """A middleware giving each non-watch request `seconds` before it is answered 504."""

    @web.middleware
    async def deadline(request: web.Request, handler: Handler) -> web.StreamResponse:
        if watch.is_watch(request):
            return await handler(request)
        try:
            async with asyncio.timeout(seconds):
                return await handler(request)
        except TimeoutError:
            return status.status_response(
                504, "Timeout", f"the request did not finish within {seconds:g}s"
            )

    return deadline


@web.middleware
async def dry_run_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a `dryRun` other than Kubernetes' one value, `All`, before anything is done.

    Why: `?dryRun=true` (what a user or a script means by it) was not `All`, so the routes
    read it as no dry run and wrote, answering `"dryRun": false` where a dry run was asked
    for. Kubernetes refuses such a value; so does this, with the value it takes."""
    value = request.query.get("dryRun")
    if value is not None and value != "All":
        return status.status_response(
            400,
            "BadRequest",
            f'dryRun: Unsupported value: {value!r}: supported values: "All"; nothing was done',
        )
    return await handler(request)
