"""The query parameters (and a DELETE's preconditions) the object routes read, each read
as the Kubernetes API server reads it: a value taken is honoured, and one that cannot be
is a 400 naming the parameter, never ignored. Fed by the object routes (`objects`) and the
multiplexed watch (`watch`) with a request's query; feeds them revisions, flags and
deadlines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from federation import errors
from federation.api import delete_options

__all__ = [
    "flag",
    "listed_since",
    "precondition",
    "revision",
    "timeout_seconds",
    "watched_since",
]


def revision(value: str | None, *, field: str) -> int | None:
    """A `resourceVersion` a client gave (in `field`: a body's field or a query
    parameter) as the etcd revision it names; None when none was given.

    Why refused as a 400 naming `field`, before anything is read, written or streamed: a
    value that is not a revision was a 500 on a write and an empty 200 on a watch, and
    a negative one was taken and echoed back as if it were a point in the history.
    Kubernetes refuses such a value as Invalid, naming the field, too."""
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()):
        raise errors.Invalid(
            f"{field}: Invalid value: {json.dumps(value)}: must be a resource version, a"
            " whole number of 0 or more (as metadata.resourceVersion gives it)"
        )
    return int(value)


def watched_since(query: Mapping[str, str]) -> int | None:
    """The revision a watch follows changes after, from its `resourceVersion`; None to
    start with the objects as they are now (as ADDED, unless `sendInitialEvents=false`).

    "0" is None too, as Kubernetes reads it ("start at any version": the present). Taken
    as revision 0, it replayed every change since the registry began, deleted objects
    included, and once the history was compacted ended every such watch with 410."""
    since = revision(query.get("resourceVersion"), field="resourceVersion")
    return since or None


def timeout_seconds(query: Mapping[str, str]) -> float | None:
    """How long a watch stays open (`timeoutSeconds`); None (0, or none given) for as long
    as the client keeps it. Kubernetes ends the stream then, and clients that ask for it
    (`watch.stream(timeout_seconds=...)`) wait for that end: one ignored hung them."""
    seconds = revision(query.get("timeoutSeconds"), field="timeoutSeconds")
    return float(seconds) if seconds else None


def listed_since(query: Mapping[str, str]) -> int | None:
    """The revision a list must not be older than (`resourceVersion`, "0" and none: any),
    refusing as Kubernetes does what cannot be honoured: `resourceVersionMatch` other than
    NotOlderThan (the registry is listed as it is now, never at a past revision), or
    without a `resourceVersion`. Ignored, `?resourceVersion=abc` returned the current
    list, where a watch of it was refused. Also judges `timeoutSeconds`: a list answers
    well within any."""
    timeout_seconds(query)
    since = revision(query.get("resourceVersion"), field="resourceVersion")
    match = query.get("resourceVersionMatch")
    if match:
        if match not in ("NotOlderThan", "Exact"):
            raise errors.Invalid(
                f"resourceVersionMatch: Unsupported value: {json.dumps(match)}: supported"
                ' values: "Exact", "NotOlderThan"'
            )
        if since is None:
            raise errors.Invalid(
                "resourceVersionMatch: Forbidden: only with a resourceVersion, as Kubernetes"
                " takes it"
            )
        if match == "Exact":
            raise errors.Invalid(
                "resourceVersionMatch: not supported: Exact: a list is read at the registry's"
                " current revision, never a past one; give NotOlderThan, or leave it out"
            )
    return since or None


def flag(value: str | None, *, default: bool = False) -> bool:
    """A yes/no query parameter (`watch`, `sendInitialEvents`); `default` when absent."""
    if not value:
        return default
    return value.lower() in ("1", "true", "yes")


def precondition(query: Mapping[str, str], options: delete_options.DeleteOptions) -> int | None:
    """The revision a delete must find (None: any): the body's
    `preconditions.resourceVersion`, or the `resourceVersion` query parameter; both given,
    they must agree."""
    given = revision(query.get("resourceVersion"), field="resourceVersion")
    body = revision(options.resource_version, field="preconditions.resourceVersion")
    if given is not None and body is not None and given != body:
        raise errors.Invalid(
            f"preconditions.resourceVersion {body} and the resourceVersion parameter {given}"
            " differ: give one"
        )
    return body if body is not None else given
