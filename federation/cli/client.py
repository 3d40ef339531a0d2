"""A small HTTP client for the controller's REST API, used by every online CLI command.

Why not kubernetes_asyncio here: the API is fedctl's own, and a missing controller must
turn into one clear line ("no fedctl controller at http://…: connection refused"), which
is easiest with aiohttp directly. An `https://` server is verified against the system
store, or against the CA file in `FEDCTL_CA_FILE` (a controller's own CA).
"""

from __future__ import annotations

import io
import json
import os
import ssl
import sys
from typing import Any

import aiohttp
import tenacity
import yarl

from federation import errors

__all__ = ["ApiClient", "ApiError", "default_server", "server_url"]

API = "/apis/fedctl.io/v1alpha1"


def default_server() -> str:
    return os.environ.get("FEDCTL_SERVER", "http://127.0.0.1:8080")


def server_url(server: str) -> str:
    """`server` as the base URL of requests: a bare `HOST:PORT`, as `fedctl up --listen`
    takes it, is `http://HOST:PORT`. Anything else aiohttp cannot reach (another scheme,
    no host, a port that is no number) is refused here, in one line naming the flag:
    aiohttp would raise it from inside the request, as a traceback."""
    given = server.strip()
    text = (given if "://" in given else f"http://{given}").rstrip("/")
    wanted = "give http://HOST:PORT or https://HOST:PORT"
    prefix = f"--server / FEDCTL_SERVER {server!r}"
    try:
        url = yarl.URL(text)
        url.port  # noqa: B018 - a port that is no number raises only when read
    except ValueError as exc:
        raise errors.Invalid(f"{prefix}: not a URL ({exc}); {wanted}") from None
    if url.scheme not in ("http", "https"):
        raise errors.Invalid(f"{prefix}: scheme {url.scheme!r} is not http or https; {wanted}")
    if not url.host:
        raise errors.Invalid(f"{prefix}: no host; {wanted}")
    return text


class ApiError(errors.PermanentError):
    """The API answered with a Status failure."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.code, self.reason, self.details = code, reason, details


class ApiClient:
    """`async with ApiClient(server) as api: await api.request("GET", path)`."""

    def __init__(
        self,
        server: str,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        ca_file: str | None = None,
    ) -> None:
        self.server = server_url(server)
        self._token = token if token is not None else os.environ.get("FEDCTL_TOKEN")
        self._ca_file = ca_file or os.environ.get("FEDCTL_CA_FILE") or None
        self._timeout = aiohttp.ClientTimeout(total=timeout, connect=5)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> ApiClient:
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        connector = None
        if self._ca_file:
            ctx = ssl.create_default_context(cafile=self._ca_file)
            connector = aiohttp.TCPConnector(ssl=ctx)
        self._session = aiohttp.ClientSession(
            timeout=self._timeout, headers=headers, connector=connector
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        text: str | None = None,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
        allow_missing: bool = False,
        warnings: bool = True,
    ) -> Any:
        """The JSON answer to `method` `path` (None: 404 with `allow_missing`, or no body).
        Its `Warning` headers are printed, as kubectl prints them, unless `warnings` is
        False: the caller prints them from the body (`/apply` caps its headers and puts
        every note there)."""
        assert self._session is not None, "use ApiClient as an async context manager"
        url = self.server + (path if path.startswith("/") else f"{API}/{path}")
        data = text if text is not None else (json.dumps(body) if body is not None else None)
        # A refusal for the client's rate (429) is waited out as the server says
        # (`Retry-After`): `delete -f` of a sweep sends requests several at a time.
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(_Throttled),
            wait=_retry_after,
            stop=tenacity.stop_after_delay(_THROTTLED_FOR),
            reraise=True,
        )
        answer: Any = None
        async for attempt in retrying:
            with attempt:
                answer = await self._once(
                    method,
                    url,
                    data=data,
                    params=params,
                    content_type=content_type,
                    allow_missing=allow_missing,
                    warnings=warnings,
                )
        return answer

    async def _once(
        self,
        method: str,
        url: str,
        *,
        data: str | None,
        params: dict[str, str] | None,
        content_type: str,
        allow_missing: bool,
        warnings: bool,
    ) -> Any:
        assert self._session is not None
        # As a stream: aiohttp writes a large str or bytes body in one go, blocking the
        # event loop (and warns so) for an apply of a ConfigMap of a megabyte or more.
        stream = io.BytesIO(data.encode()) if data is not None else None
        try:
            async with self._session.request(
                method, url, data=stream, params=params, headers={"Content-Type": content_type}
            ) as resp:
                payload = await resp.text()
                for warning in resp.headers.getall("Warning", []) if warnings else ():
                    print(f"Warning: {_warning_text(warning)}", file=sys.stderr)
                if resp.status == 404 and allow_missing:
                    return None
                if resp.status == 401:
                    error = _api_error(resp.status, payload)
                    hint = (
                        "the token given was refused"
                        if self._token
                        else "no token given: pass --token or set FEDCTL_TOKEN (`fedctl up`"
                        " prints an admin token and writes it to .fedctl/tokens.yaml)"
                    )
                    raise ApiError(401, error.reason, f"{error}; {hint}", error.details)
                if resp.status == 429:
                    error = _api_error(resp.status, payload)
                    wait = resp.headers.get("Retry-After", "")
                    raise _Throttled(
                        error.code,
                        error.reason,
                        str(error),
                        error.details,
                        retry_after=float(wait) if wait.isdigit() else 1.0,
                    )
                if resp.status >= 400:
                    raise _api_error(resp.status, payload)
                try:
                    return json.loads(payload) if payload else None
                except ValueError as exc:
                    raise _unreadable(method, url, f"a body that is not JSON ({exc})") from exc
        except aiohttp.ClientConnectorError as exc:
            raise errors.Unavailable(
                f"no fedctl controller at {self.server}: {exc.os_error.strerror or exc}"
                " (start one with `fedctl controller`, or set --server / FEDCTL_SERVER)",
                endpoint=self.server,
            ) from exc
        except TimeoutError as exc:
            raise errors.Unavailable(
                f"fedctl controller at {self.server} did not answer in time", endpoint=self.server
            ) from exc
        except aiohttp.ClientResponseError as exc:  # the answer's head did not parse
            raise _unreadable(method, url, exc.message or str(exc)) from exc
        except aiohttp.ClientError as exc:  # cut off, or ended mid-body
            raise _unreadable(method, url, str(exc) or type(exc).__name__) from exc


_THROTTLED_FOR = 60.0
"""Seconds a request refused for the client's rate (429) is tried again for."""


class _Throttled(ApiError):
    """429: the server asks the client to slow down for `retry_after` seconds."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any],
        *,
        retry_after: float,
    ) -> None:
        super().__init__(code, reason, message, details)
        self.retry_after = retry_after


def _retry_after(state: tenacity.RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome is not None else None
    return min(exc.retry_after, 10.0) if isinstance(exc, _Throttled) else 1.0


def _warning_text(header: str) -> str:
    """The text of a `Warning: 299 - "text"` header, as kubectl prints it."""
    code, _, rest = header.partition(" ")
    agent, _, text = rest.partition(" ")
    if code.isdigit() and agent and text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    return header


def _unreadable(method: str, url: str, what: str) -> errors.PermanentError:
    """An answer fedctl cannot read, said in one line instead of aiohttp's traceback.
    Not retried, and not read as "nothing done": the server may have carried the request
    out (an apply whose answer broke had stored every object)."""
    path = yarl.URL(url).path
    return errors.PermanentError(
        f"the controller answered {method} {path} with a response fedctl cannot read:"
        f" {what}; the request may have been carried out (check with `fedctl get`)"
    )


def _api_error(code: int, payload: str) -> ApiError:
    try:
        doc = json.loads(payload)
    except ValueError:
        return ApiError(code, "Unknown", payload.strip() or f"HTTP {code}", {})
    if not isinstance(doc, dict):
        return ApiError(code, "Unknown", payload, {})
    return ApiError(
        code, str(doc.get("reason", "")), str(doc.get("message", payload)), doc.get("details") or {}
    )
