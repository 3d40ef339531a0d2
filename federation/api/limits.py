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

Why failed sign-ins have a bucket of their own, per client address, in front of
authentication (`FailedAuthLimiter`): the per-client bucket is keyed by the caller the
auth middleware found, so a request it refused (401) never reached it, and a client
could try thousands of tokens a second unthrottled. Each 401 takes a token from its
address's bucket; while that bucket is empty the address is answered 429 before any
credential is looked at, a right one too, or guessing would go on at the same speed
with the answers merely reworded: were a valid token answered 200 while the address is
refused, a guesser would learn which guess is right from the status alone. So a valid
client behind the same address (a NAT, an ingress, Prometheus beside a broken script) is
refused too, and its 429 says so and for how long (`Retry-After`). A failure is logged at
WARNING by the authenticator (a short digest of the token, never the token), and the
first refusal of an address once more here.

Every 429 of either limiter is reported through `on_limited` with the limiter's `name`
(`rate`, `failed_sign_in`), which `/metrics` counts by that label.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware

from federation import clock as clock_mod
from federation.api import auth, status, watch

__all__ = [
    "FAILED_SIGN_IN",
    "LIMITERS",
    "RATE",
    "FailedAuthLimiter",
    "RateLimiter",
    "TokenBucket",
    "dry_run_middleware",
    "timeout_middleware",
]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

EXEMPT_PATHS = frozenset({"/healthz", "/livez", "/readyz"})

RATE, FAILED_SIGN_IN = "rate", "failed_sign_in"
LIMITERS = (RATE, FAILED_SIGN_IN)
"""The limiters' names, as `on_limited` reports them and `/metrics` labels its 429s."""


@dataclass(slots=True)
class TokenBucket:
    """`burst` tokens at most, refilled at `rate` per second; one token per request."""

    rate: float
    burst: float
    tokens: float
    stamp: float

    def take(self, now: float) -> float:
        """0 when a token was taken, else seconds until one will be there."""
        wait = self.peek(now)
        if wait <= 0:
            self.tokens -= 1.0
        return wait

    def peek(self, now: float) -> float:
        """0 when a token is there (left there), else seconds until one will be."""
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate


class RateLimiter:
    """Buckets by client key; `middleware` answers 429 when a client's bucket is empty."""

    def __init__(
        self,
        *,
        rate: float,
        burst: int,
        clock: clock_mod.Clock = clock_mod.real,
        max_clients: int = 10_000,
        name: str = RATE,
        on_limited: Callable[[str], None] | None = None,
    ) -> None:
        """`on_limited` is called with `name` for every request refused 429 (metrics)."""
        self.rate, self.burst, self.clock = rate, float(burst), clock
        self.max_clients = max_clients
        self.name = name
        self.on_limited = on_limited
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def wait_for(self, key: str) -> float:
        """Take a token for `key`: 0 when allowed, else seconds to wait."""
        return self._bucket(key).take(self.clock.monotonic())

    def waiting(self, key: str) -> float:
        """0 when `key` has a token left (none taken), else seconds until it will."""
        return self._bucket(key).peek(self.clock.monotonic())

    def _bucket(self, key: str) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.rate, self.burst, self.burst, self.clock.monotonic())
            self._buckets[key] = bucket
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket

    def refused(self) -> None:
        """Report one request answered 429 by this limiter."""
        if self.on_limited is not None:
            self.on_limited(self.name)

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
        self.refused()
        return _too_many(f"rate limit of {self.rate:g}/s exceeded; retry later", wait)


class FailedAuthLimiter:
    """Failed sign-ins (401) limited per client address (module doc); its `middleware`
    goes right outside the authenticator's."""

    def __init__(self, buckets: RateLimiter) -> None:
        self.buckets = buckets
        self._refused: set[str] = set()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in EXEMPT_PATHS:
            return await handler(request)
        address = request.remote or "-"
        wait = self.buckets.waiting(address)
        if wait > 0:
            if address not in self._refused:  # once per spell, not once per request
                if len(self._refused) >= self.buckets.max_clients:
                    self._refused.clear()  # at worst an address is logged again
                self._refused.add(address)
                log.warning(
                    "too many failed sign-ins from %s: refusing its requests for %.0fs",
                    address,
                    wait,
                )
            self.buckets.refused()
            b = self.buckets
            return _too_many(
                f"too many failed sign-ins from this address (more than {b.burst:g}, then"
                f" {b.rate:g}/s): every request from it is refused for {_seconds(wait)}s"
                " (Retry-After), one with a valid token too, as answering a right token"
                " while refusing wrong ones would tell a guesser which guess is right",
                wait,
            )
        self._refused.discard(address)
        resp = await handler(request)
        if resp.status == 401:
            self.buckets.wait_for(address)
        return resp


def _too_many(message: str, wait: float) -> web.Response:
    """429 with `Retry-After`, the whole seconds until a token is there again."""
    resp = status.status_response(429, "TooManyRequests", message)
    resp.headers["Retry-After"] = str(_seconds(wait))
    return resp


def _seconds(wait: float) -> int:
    """`wait` as `Retry-After` gives it: whole seconds, at least one."""
    return max(1, math.ceil(wait))


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
