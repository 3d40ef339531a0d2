"""fedctl's own exception tree; adapters translate library errors into it with `raise ... from`.

    FedctlError
    ├── RetryableError          the same call may succeed later (timeouts, unavailable, 429/5xx)
    │   └── Unavailable         a service (etcd, a member) could not be reached in time
    └── PermanentError          retrying the same call cannot help
        ├── NotFound
        ├── AlreadyExists
        ├── Conflict            a compare-and-swap lost: carries the current revision
        ├── PartlyApplied       a write of many objects stopped at one after others were stored
        ├── Invalid             input failed validation: carries findings
        ├── TooLarge            etcd refused a write past its request size limit
        ├── Compacted           a watch asked for history etcd no longer keeps
        └── Fenced              a write was refused because this process is no longer leader

Controllers catch only these; anything else is a bug and reaches the supervisor.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlreadyExists",
    "Compacted",
    "Conflict",
    "FedctlError",
    "Fenced",
    "Invalid",
    "NotFound",
    "PartlyApplied",
    "PermanentError",
    "RetryableError",
    "TooLarge",
    "Unavailable",
]


class FedctlError(Exception):
    """Root of every error fedctl raises on purpose."""


class RetryableError(FedctlError):
    """The operation may succeed if tried again later."""


class Unavailable(RetryableError):
    """A dependency could not be reached or did not answer in time."""

    def __init__(self, message: str, *, endpoint: str = "") -> None:
        super().__init__(message)
        self.endpoint = endpoint


class PermanentError(FedctlError):
    """Retrying the same operation cannot succeed."""


class NotFound(PermanentError):
    """The key or object does not exist."""

    def __init__(self, key: str) -> None:
        super().__init__(f"not found: {key}")
        self.key = key


class AlreadyExists(PermanentError):
    """A create found the key already present."""

    def __init__(self, key: str, *, revision: int = 0) -> None:
        super().__init__(f"already exists: {key}")
        self.key = key
        self.revision = revision


class Conflict(PermanentError):
    """A compare-and-swap lost against a newer write; re-read and try again."""

    def __init__(self, key: str, *, expected: int, current: int) -> None:
        super().__init__(
            f"conflict on {key}: expected revision {expected}, current revision is {current}"
        )
        self.key = key
        self.expected = expected
        self.current = current


class PartlyApplied(PermanentError):
    """A write of many objects stopped at one (`cause`) after others were stored:
    `results` says, per object, what happened to it."""

    def __init__(
        self, cause: FedctlError, *, applied: int, total: int, results: list[dict[str, Any]]
    ) -> None:
        super().__init__(
            f"{cause}; {applied} of the {total} documents were applied before it and the"
            " rest were not (details.results): apply them again once it is resolved"
        )
        self.cause = cause
        self.results = results


class Invalid(PermanentError):
    """Input failed validation; `findings` are human-readable, one per problem."""

    def __init__(self, message: str, *, findings: list[str] | None = None) -> None:
        super().__init__(message)
        self.findings = findings or [message]


class TooLarge(PermanentError):
    """etcd refused a write larger than it takes in one request (`--max-request-bytes`,
    1.5 MiB by default): the object, or the transaction carrying it, must shrink."""


class RegistryFull(PermanentError):
    """etcd is past its storage quota (`--quota-backend-bytes`) and refuses every write
    until its history is compacted and defragmented and its NOSPACE alarm disarmed. Not
    `TooLarge`, though etcd answers both with RESOURCE_EXHAUSTED: no object is too big,
    and shrinking one would not help."""

    MARK = "is out of space"
    """In every message, after the endpoint: what the log filter folds repeats by."""


class Compacted(PermanentError):
    """A watch asked to start before the oldest revision etcd still keeps."""

    def __init__(self, *, requested: int, compact_revision: int | None) -> None:
        kept = "" if compact_revision is None else f" (oldest kept: {compact_revision})"
        super().__init__(f"revision {requested} has been compacted{kept}; re-list")
        self.requested = requested
        self.compact_revision = compact_revision


class Fenced(PermanentError):
    """A leader-only write was refused because the writer no longer holds the leader lease."""
