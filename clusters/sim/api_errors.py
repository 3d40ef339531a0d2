"""The simulator's one error type and the Kubernetes `Status` bodies it becomes.

Raised anywhere below the HTTP layer (store, admission hooks, patching, validation) and
turned into a `Status` response by the server, so clients see the same codes, reasons and
messages a real apiserver gives (`kubernetes_asyncio` and kubectl read `reason` and
`message` from the body, not the HTTP phrase). The message helpers keep the exact upstream
wording in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clusters.sim.resources import ResourceType

__all__ = [
    "ApiError",
    "already_exists",
    "conflict",
    "invalid",
    "not_found",
    "status_body",
]


class ApiError(Exception):
    """A failed API call: becomes a `Status` body with this code, reason and message."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        return status_body(self.code, self.reason, self.message, details=self.details)


def status_body(
    code: int, reason: str, message: str, *, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    return {"name": name, "group": rt.group, "kind": rt.plural}


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{rt.qualified} "{name}" not found', details=_details(rt, name)
    )


def already_exists(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{rt.qualified} "{name}" already exists',
        details=_details(rt, name),
    )


def conflict(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.qualified} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        details=_details(rt, name),
    )


def invalid(rt: ResourceType, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid; each cause is (field, message-after-the-field)."""
    kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    text = ", ".join(f"{field}: {msg}" for field, msg in causes)
    if len(causes) > 1:
        text = f"[{text}]"
    return ApiError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {text}',
        details={
            "name": name,
            "group": rt.group,
            "kind": rt.kind,
            "causes": [
                {"reason": _cause_reason(msg), "message": msg, "field": field}
                for field, msg in causes
            ],
        },
    )


def _cause_reason(msg: str) -> str:
    for prefix, reason in (
        ("Required value", "FieldValueRequired"),
        ("Invalid value", "FieldValueInvalid"),
        ("Forbidden", "FieldValueForbidden"),
        ("Unsupported value", "FieldValueNotSupported"),
    ):
        if msg.startswith(prefix):
            return reason
    return "FieldValueInvalid"
