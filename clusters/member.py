"""What fedctl needs from a member cluster, and the errors a member call can end in.

Role: the cluster monitor, the propagator and failover talk to members only through the
`Member` protocol, so the same controller code drives a real cluster and a simulated one
(`clusters.kube.connector.KubeConnector` implements it over a kubeconfig). Objects travel
as plain JSON dicts, exactly as the member's API returns them: the monitor reads a few
fields of thousands of nodes and pods, and typed client models would cost more than the
whole summary.

The connector translates every library error into this tree (`raise ... from`), so
controllers catch only ours (STYLE.md §9):

    errors.FedctlError
    └── MemberError                     carries the cluster name
        ├── MemberUnavailable           (also errors.Unavailable, retryable) connection
        │                                refused or lost, timeout, 429, 5xx; `reason` is
        │                                ConnectionRefused, Timeout, ConnectionLost,
        │                                TooManyRequests or ServerError
        └── MemberRejected              (also errors.PermanentError) the member answered
            │                            with a Status: `code`, `reason`, its message
            ├── MemberNotFound          404
            ├── MemberConflict          409 (AlreadyExists, Conflict, apply conflicts)
            └── WatchExpired            410: the resourceVersion is too old; re-list
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from federation import errors

__all__ = [
    "APIGroupResources",
    "Changed",
    "Member",
    "MemberConflict",
    "MemberError",
    "MemberNotFound",
    "MemberRejected",
    "MemberUnavailable",
    "ObjectList",
    "ObjectRef",
    "Readiness",
    "Relisted",
    "ResourceInfo",
    "WatchEvent",
    "WatchExpired",
]

Obj = dict[str, Any]


class MemberError(errors.FedctlError):
    """A call to a member cluster failed; `cluster` names the member."""

    def __init__(self, message: str, *, cluster: str = "") -> None:
        super().__init__(f"{cluster}: {message}" if cluster else message)
        self.cluster = cluster
        self.detail = message


class MemberUnavailable(MemberError, errors.Unavailable):
    """The member did not answer usefully (retryable): see `reason`, and `code` for HTTP."""

    def __init__(
        self,
        message: str,
        *,
        cluster: str = "",
        reason: str = "Unavailable",
        endpoint: str = "",
        code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        MemberError.__init__(self, message, cluster=cluster)
        self.endpoint = endpoint
        self.reason = reason
        self.code = code
        self.retry_after = retry_after


class MemberRejected(MemberError, errors.PermanentError):
    """The member refused the request with a Kubernetes Status (permanent)."""

    def __init__(
        self,
        message: str,
        *,
        cluster: str = "",
        code: int = 0,
        reason: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> None:
        MemberError.__init__(self, message, cluster=cluster)
        self.code = code
        self.reason = reason
        self.details = dict(details or {})


class MemberNotFound(MemberRejected):
    """404: the object (or its namespace, or its kind) does not exist in the member."""


class MemberConflict(MemberRejected):
    """409: already exists, stale resourceVersion, or a server-side apply field conflict."""


class WatchExpired(MemberRejected):
    """410: the watch asked for history the member no longer keeps; list again."""


@dataclass(frozen=True, slots=True)
class Readiness:
    """One readiness probe: ok, or why not (`reason` CamelCase, `message` for people)."""

    ok: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Names one object in a member: apiVersion, kind, namespace (None: cluster-scoped)."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}.{self.api_version} {where}{self.name}"


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One resource a group-version serves: plural name, kind, scope, verbs."""

    name: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class APIGroupResources:
    """The top-level resources one group-version serves (subresources left out)."""

    group_version: str
    resources: tuple[ResourceInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class ObjectList:
    """A list read at one resourceVersion: watch from it to follow the changes."""

    items: list[Obj]
    resource_version: str


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: ADDED, MODIFIED, DELETED or BOOKMARK, with the object."""

    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    object: Obj


@dataclass(frozen=True, slots=True)
class Relisted:
    """`follow` listed again (first, or after a 410): this is the whole current state."""

    items: list[Obj] = field(default_factory=list)
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class Changed:
    """`follow` saw one object change."""

    type: Literal["ADDED", "MODIFIED", "DELETED"]
    object: Obj


class Member(Protocol):
    """One member cluster's API, as fedctl uses it. Every call is bounded by a timeout."""

    name: str

    async def ready(self, *, timeout: float | None = None) -> Readiness:
        """`/readyz` (or `/healthz` where that is missing) within `timeout` seconds (default:
        the request timeout); never raises for a sick member, the result says why."""
        ...

    async def version(self, *, timeout: float | None = None) -> str:
        """The member's Kubernetes gitVersion, e.g. v1.32.0, within `timeout` seconds
        (retries included; default: the request timeout per try)."""
        ...

    async def discover(self, *, timeout: float | None = None) -> list[APIGroupResources]:
        """Every served group-version and its resources (kinds), core first. Each round
        trip (`/api`, `/apis`, then the group versions together) within `timeout` seconds:
        a bound on the whole chain failed a member that answered every request in time
        but slowly."""
        ...

    async def list(
        self, api_version: str, kind: str, *, namespace: str | None = None
    ) -> ObjectList:
        """Every object of a kind (in one namespace, or all)."""
        ...

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        resource_version: str,
        namespace: str | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Changes after `resource_version` until the stream ends; 410 raises WatchExpired."""
        ...

    def follow(
        self, api_version: str, kind: str, *, namespace: str | None = None
    ) -> AsyncIterator[Relisted | Changed]:
        """List, then watch forever; re-lists (yielding Relisted) whenever a watch gets 410."""
        ...

    async def get(self, ref: ObjectRef) -> Obj:
        """One object; MemberNotFound when absent."""
        ...

    async def apply(self, obj: Mapping[str, Any], *, force: bool = False) -> Obj:
        """Server-side apply with field manager `fedctl`; creates when missing."""
        ...

    async def replace(self, obj: Mapping[str, Any]) -> Obj:
        """Write the whole object (an update, `PUT`) at `metadata.resourceVersion`: fields
        it leaves out go, whoever set them. MemberConflict when the object moved on."""
        ...

    async def delete(self, ref: ObjectRef) -> bool:
        """Delete one object; False when it was already gone."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
