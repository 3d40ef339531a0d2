"""Errors as Kubernetes-style `Status` bodies, so kubectl-minded users and scripts get
a code, a reason and a message they recognise.

    errors.Invalid        → 400 Invalid (with the loader's findings in details)
    errors.NotFound       → 404 NotFound
    errors.AlreadyExists  → 409 AlreadyExists
    errors.Conflict       → 409 Conflict (stale resourceVersion)
    errors.PartlyApplied  → its cause's code, with each object's outcome in details.results
    errors.TooLarge       → 413 RequestEntityTooLarge (past etcd's request size limit)
    errors.RegistryFull   → 507 InsufficientStorage (etcd past its storage quota)
    errors.Fenced         → 503 ServiceUnavailable (this replica is not the leader)
    errors.Unavailable    → 503 ServiceUnavailable (etcd unreachable)

Every 503 carries `Retry-After` (`RETRY_AFTER` seconds): an outage is a wait, and a client
told when to come back does not hammer a registry that is restarting.

A streamed answer (a watch) that fails after its 200 has begun cannot become another
response: what would be its Status is sent as the stream's last event, an ERROR (as the
Kubernetes API server ends a watch), and the stream ends cleanly (`streaming`). Writing a
second response inside the open chunked body left clients with a broken stream.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from federation import errors

__all__ = [
    "addressed",
    "error_event",
    "error_middleware",
    "status_body",
    "status_response",
    "streaming",
]

log = logging.getLogger(__name__)

RETRY_AFTER = 5
"""Seconds a 503 tells its client to wait: about an etcd restart or a leader election."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_STREAM: web.RequestKey[web.StreamResponse] = web.RequestKey("fedctl_stream", web.StreamResponse)
"""Request key of a streamed response already begun (`streaming`)."""


def status_body(
    code: int, reason: str, message: str, *, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Kubernetes `Status` object: a response's body, or a watch ERROR event's object."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if details:
        body["details"] = details
    return body


def status_response(
    code: int, reason: str, message: str, *, details: dict[str, Any] | None = None
) -> web.Response:
    return web.json_response(status_body(code, reason, message, details=details), status=code)


def error_event(status: dict[str, Any]) -> bytes:
    """One watch line: an ERROR event carrying `status` (`status_body`)."""
    return json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"


def streaming(request: web.Request, resp: web.StreamResponse) -> None:
    """Mark `resp` as begun: an error from here on ends it with an ERROR event."""
    request[_STREAM] = resp


def _translate(exc: errors.FedctlError) -> web.Response:
    if isinstance(exc, errors.PartlyApplied):  # the cause's answer, saying what was stored
        cause = json.loads(_translate(exc.cause).text or "{}")
        details = {**cause.get("details", {}), "results": exc.results}
        answer = status_response(cause["code"], cause["reason"], str(exc), details=details)
        answer.headers.update(_retry_headers(cause["code"]))
        return answer
    if isinstance(exc, errors.Invalid):
        return status_response(400, "Invalid", str(exc), details={"findings": exc.findings})
    if isinstance(exc, errors.NotFound):
        return status_response(404, "NotFound", str(exc))
    if isinstance(exc, errors.AlreadyExists):
        return status_response(409, "AlreadyExists", str(exc))
    if isinstance(exc, errors.Conflict):
        return status_response(
            409, "Conflict", f"{exc}; re-read the object and apply your change again"
        )
    if isinstance(exc, errors.TooLarge):
        return status_response(413, "RequestEntityTooLarge", str(exc))
    if isinstance(exc, errors.RegistryFull):
        return status_response(507, "InsufficientStorage", str(exc))
    if isinstance(exc, errors.Fenced | errors.Unavailable):
        answer = status_response(503, "ServiceUnavailable", str(exc))
        answer.headers.update(_retry_headers(503))
        return answer
    return status_response(500, "InternalError", str(exc))


def _retry_headers(code: int) -> dict[str, str]:
    """Headers an error answer with `code` carries: `Retry-After` on a 503."""
    return {"Retry-After": str(RETRY_AFTER)} if code == 503 else {}


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Our errors become Status bodies; aiohttp's own HTTP errors keep their codes. Once a
    stream has begun (`streaming`), the Status is its last event instead."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        answer = _refusal(request, exc)
    except Exception as exc:  # every error becomes a Status, never a traceback
        answer = _refusal(request, exc)
    begun: web.StreamResponse | None = request.get(_STREAM)
    if begun is None or not begun.prepared:
        return answer
    with contextlib.suppress(ConnectionError):
        await begun.write(error_event(json.loads(answer.text or "{}")))
    return begun


def _refusal(request: web.Request, exc: Exception) -> web.Response:
    """The Status response an exception from a handler becomes."""
    if isinstance(exc, errors.NotFound) and (details := addressed(request)):
        return status_response(404, "NotFound", str(exc), details=details)
    if isinstance(exc, errors.FedctlError):
        return _translate(exc)
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return status_response(413, "RequestEntityTooLarge", exc.text or "request body too large")
    if isinstance(exc, web.HTTPException):
        return status_response(exc.status, exc.reason.replace(" ", ""), exc.text or exc.reason)
    if isinstance(exc, json.JSONDecodeError):
        return status_response(400, "BadRequest", f"malformed JSON: {exc}")
    log.error("unhandled error on %s %s", request.method, request.path, exc_info=exc)
    return status_response(500, "InternalError", "internal error; see the controller log")


def addressed(request: web.Request) -> dict[str, str]:
    """The object an object route addresses, as the `details` of a NotFound, or of a
    delete's Success, name it in Kubernetes (name, API group, and its resource as
    `kind`); empty for another route. Clients read these rather than parse the message."""
    info = request.match_info
    parts = request.path.split("/")
    if "plural" not in info or "name" not in info or len(parts) < 3 or parts[1] != "apis":
        return {}
    return {"name": info["name"], "group": parts[2], "kind": info["plural"]}
