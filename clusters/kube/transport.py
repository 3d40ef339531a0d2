"""Every HTTP request to a member: timeout, retry policy and error translation in one place.

Fed by `connector.KubeConnector`, which names paths and bodies; feeds back decoded JSON,
raw bodies or an open watch stream. Requests go through kubernetes_asyncio's `ApiClient`
(`call_api` with `_preload_content=False`), so authentication, TLS and the aiohttp session
are the client's own and closing the ApiClient closes everything.

Why here: the client has no default timeout, so a blackholed member would hang a caller
forever; every call here carries `_request_timeout`. Retries live at this edge
(STYLE.md §10), as one tenacity policy built from `MemberSettings.retry_*`: connection
errors, timeouts, 429 (waiting what Retry-After asks, capped) and 5xx are retried with
jittered exponential backoff; a probe retries only answers (429/5xx), because a refused
connection or a timeout *is* its result. What remains becomes a `clusters.member` error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
import tenacity

from clusters import member
from federation import clock as clock_mod
from federation.settings import MemberSettings

__all__ = ["Response", "Retry", "Transport", "rejection", "retry_wait"]

Retry = Literal["all", "answers", "none"]
"""Which failures a call retries: everything transient, only 429/5xx answers, or nothing."""

_AUTH = ["BearerToken"]


@dataclass(frozen=True, slots=True)
class Response:
    """A member's answer: status, headers that matter, body bytes."""

    status: int
    body: bytes
    retry_after: float | None = None

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def rejection(
    status: int, body: bytes, *, cluster: str, retry_after: float | None = None
) -> member.MemberError:
    """The error for a non-2xx answer, carrying the member's Status message and reason."""
    reason, message = "", ""
    details: dict[str, Any] = {}
    with contextlib.suppress(ValueError, AttributeError):
        doc = json.loads(body)
        reason = str(doc.get("reason") or "")
        message = str(doc.get("message") or "")
        details = doc.get("details") or {}
    if not message:
        message = body[:200].decode(errors="replace").strip() or f"HTTP {status}"
    if status == 429 or status >= 500:
        return member.MemberUnavailable(
            f"{message} (HTTP {status})",
            cluster=cluster,
            reason="TooManyRequests" if status == 429 else "ServerError",
            code=status,
            retry_after=retry_after,
        )
    kind: type[member.MemberRejected] = {
        404: member.MemberNotFound,
        409: member.MemberConflict,
        410: member.WatchExpired,
    }.get(status, member.MemberRejected)
    return kind(message, cluster=cluster, code=status, reason=reason, details=details)


def retry_wait(settings: MemberSettings) -> Any:
    """The tenacity wait: Retry-After when the member asked (capped), else jittered backoff."""

    def backoff(attempt: int) -> float:
        ceiling = min(settings.retry_max, settings.retry_initial * 2 ** max(0, attempt - 1))
        return random.uniform(ceiling / 2, ceiling)

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, member.MemberUnavailable) and exc.retry_after is not None:
            return min(exc.retry_after, settings.retry_max)
        return backoff(state.attempt_number)

    return wait


_CLOSED = "ConnectionClosed"


def _retryable(policy: Retry) -> Any:
    def check(exc: BaseException) -> bool:
        if not isinstance(exc, member.MemberUnavailable) or policy == "none":
            return False
        if exc.reason == _CLOSED:  # for good: no retry brings this client back
            return False
        return policy == "all" or exc.code is not None

    return check


class Transport:
    """Requests to one member through its ApiClient (which this object owns and closes)."""

    def __init__(
        self,
        api: Any,
        *,
        cluster: str,
        settings: MemberSettings,
        clock: clock_mod.Clock = clock_mod.real,
    ) -> None:
        self._api = api
        self.cluster = cluster
        self.settings = settings
        self._clock = clock
        self._closed = False

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    async def close(self) -> None:
        self._closed = True
        await self._api.close()

    def _refuse_if_closed(self) -> None:
        """A call on a closed client would raise aiohttp's bare RuntimeError, which no
        caller expects from a member: say instead that this connection is gone (the member
        was removed, or its connection replaced) and let the caller's retry find the new one.
        """
        if self._closed:
            raise member.MemberUnavailable(
                f"the connection to {self.host} was closed (the member was removed or its"
                " connection changed)",
                cluster=self.cluster,
                reason=_CLOSED,
                endpoint=self.host,
            )

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        retry: Retry = "all",
    ) -> Response:
        """One call with retries; a 2xx Response, else a `clusters.member` error."""
        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.settings.retry_attempts if retry != "none" else 1)
            | tenacity.stop_after_delay(self.settings.retry_deadline),
            wait=retry_wait(self.settings),
            retry=tenacity.retry_if_exception(_retryable(retry)),
            sleep=self._clock.sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._once(
                    method, path, query=query, body=body, content_type=content_type, timeout=timeout
                )
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    async def _once(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        timeout: float | None,
    ) -> Response:
        seconds = timeout or self.settings.request_timeout
        self._refuse_if_closed()
        try:
            resp = await self._call(
                method,
                path,
                query=query,
                body=body,
                content_type=content_type,
                timeout=aiohttp.ClientTimeout(total=seconds),
            )
            try:
                data = await resp.read()
            finally:
                resp.release()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self.unavailable(exc, timeout=seconds) from exc
        answer = Response(resp.status, data, _retry_after(resp.headers))
        if not 200 <= resp.status < 300:
            raise rejection(resp.status, data, cluster=self.cluster, retry_after=answer.retry_after)
        return answer

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        resp: aiohttp.ClientResponse = await self._api.call_api(
            path,
            method,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=_AUTH,
            _preload_content=False,
            _request_timeout=timeout,
        )
        return resp

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, *, query: Mapping[str, str], idle_timeout: float
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """An open streaming GET (a watch): headers within the request timeout, then any
        silence longer than `idle_timeout` counts as a lost connection."""
        self._refuse_if_closed()
        connect = self.settings.request_timeout
        timeout = aiohttp.ClientTimeout(
            connect=connect, sock_connect=connect, sock_read=idle_timeout
        )
        try:
            async with asyncio.timeout(connect):
                resp = await self._call(
                    "GET", path, query=query, body=None, content_type="application/json",
                    timeout=timeout,
                )  # fmt: skip
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self.unavailable(exc, timeout=connect) from exc
        try:
            if resp.status != 200:
                data = await resp.read()
                raise rejection(
                    resp.status, data, cluster=self.cluster, retry_after=_retry_after(resp.headers)
                )
            yield resp
        finally:
            resp.release()

    def unavailable(self, exc: BaseException, *, timeout: float) -> member.MemberUnavailable:
        """Our error for an I/O failure, worded as a person would say it."""
        host = self.host
        if isinstance(exc, TimeoutError):
            reason, text = "Timeout", f"no answer from {host} within {timeout:g}s"
        elif isinstance(exc, aiohttp.ClientConnectorError):
            cause = exc.os_error
            if isinstance(cause, ConnectionRefusedError):
                reason, text = "ConnectionRefused", f"connection refused by {host}"
            else:
                reason, text = "ConnectionFailed", f"cannot connect to {host}: {cause}"
        else:
            reason = "ConnectionLost"
            text = f"connection to {host} lost: {type(exc).__name__}: {exc}".rstrip(": ")
        return member.MemberUnavailable(text, cluster=self.cluster, reason=reason, endpoint=host)
