"""Errors as Kubernetes-style `Status` bodies, so kubectl-minded users and scripts get
a code, a reason and a message they recognise.

    errors.Invalid        → 400 Invalid (with the loader's findings in details)
    errors.NotFound       → 404 NotFound
    errors.AlreadyExists  → 409 AlreadyExists
    errors.Conflict       → 409 Conflict (stale resourceVersion)
    errors.TooLarge       → 413 RequestEntityTooLarge (past etcd's request size limit)
    errors.RegistryFull   → 507 InsufficientStorage (etcd past its storage quota)
    errors.Fenced         → 503 ServiceUnavailable (this replica is not the leader)
    errors.Unavailable    → 503 ServiceUnavailable (etcd unreachable)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from federation import errors

__all__ = ["error_middleware", "status_response"]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status_response(
    code: int, reason: str, message: str, *, details: dict[str, Any] | None = None
) -> web.Response:
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
    return web.json_response(body, status=code)


def _translate(exc: errors.FedctlError) -> web.Response:
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
        return status_response(503, "ServiceUnavailable", str(exc))
    return status_response(500, "InternalError", str(exc))


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Our errors become Status bodies; aiohttp's own HTTP errors keep their codes."""
    try:
        return await handler(request)
    except errors.FedctlError as exc:
        return _translate(exc)
    except web.HTTPRequestEntityTooLarge as exc:
        return status_response(413, "RequestEntityTooLarge", exc.text or "request body too large")
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return status_response(exc.status, exc.reason.replace(" ", ""), exc.text or exc.reason)
    except json.JSONDecodeError as exc:
        return status_response(400, "BadRequest", f"malformed JSON: {exc}")
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return status_response(500, "InternalError", "internal error; see the controller log")
