"""A DELETE's body: Kubernetes' `DeleteOptions`, read as the Kubernetes API server reads
it. Fed by the object routes' delete (`api.objects`); feeds it the preconditions and the
dry run the body asks for, or a 400 naming what it cannot take.

Why read at all: client libraries put a delete's preconditions in this body (the Python
client sends one with every delete), and a body ignored turned a guarded delete into an
unguarded one: an object another writer had replaced was deleted anyway. So what is taken
is honoured, and what is not is refused, never ignored:

    preconditions.uid               409 Conflict unless the object has that uid
    preconditions.resourceVersion   409 Conflict unless it is at that revision
    dryRun: [All]                   say what deleting would do; keep it (as ?dryRun=All)
    propagationPolicy               Background or Foreground: its copies leave the members
                                    with it; Orphan (and orphanDependents) is refused, for
                                    fedctl never leaves copies it no longer manages
    gracePeriodSeconds              taken: nothing the federation stores has a grace period

An empty body is no options. A body that is not a JSON object, or names another kind or an
unknown field, is a 400.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

__all__ = ["DeleteOptions", "read"]

_FIELDS = frozenset(
    {
        *("kind", "apiVersion", "preconditions", "propagationPolicy", "gracePeriodSeconds"),
        *("orphanDependents", "dryRun", "ignoreStoreReadErrorWithClusterBreakingPotential"),
    }
)
_PRECONDITIONS = frozenset({"uid", "resourceVersion"})
_POLICIES = ("Background", "Foreground")


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    """What a DELETE's body asks: preconditions (None: none given) and a dry run."""

    uid: str | None = None
    resource_version: str | None = None
    dry: bool = False


def read(body: bytes) -> DeleteOptions:
    """The options of a DELETE's `body`; an HTTP 400 naming what it cannot take."""
    if not body.strip():
        return DeleteOptions()
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _bad(f"DeleteOptions: malformed JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise _bad("DeleteOptions: must be an object (kind: DeleteOptions)")
    for name in doc:
        if name not in _FIELDS:
            raise _bad(f'{name}: unknown field "{name}" of DeleteOptions')
    if doc.get("kind") not in (None, "DeleteOptions"):
        raise _unsupported("kind", doc["kind"], ["DeleteOptions"])
    policy = doc.get("propagationPolicy")
    if policy is not None and policy not in _POLICIES:
        raise _unsupported("propagationPolicy", policy, _POLICIES, _KEPT)
    if doc.get("orphanDependents"):
        raise _unsupported("orphanDependents", True, [False], _KEPT)
    dry = doc.get("dryRun") or []
    if not isinstance(dry, list) or any(mode != "All" for mode in dry):
        given = next((m for m in dry if m != "All"), dry) if isinstance(dry, list) else dry
        raise _unsupported("dryRun", given, ["All"])
    pre = doc.get("preconditions") or {}
    if not isinstance(pre, dict) or not set(pre) <= _PRECONDITIONS:
        raise _bad("preconditions: must be an object of uid and resourceVersion")
    uid, version = pre.get("uid"), pre.get("resourceVersion")
    if not isinstance(uid, str | None) or not isinstance(version, str | None):
        raise _bad("preconditions: uid and resourceVersion are strings")
    return DeleteOptions(uid=uid, resource_version=version, dry=bool(dry))


_KEPT = (
    "fedctl deletes a workload's copies from its members with it, and never leaves copies"
    " it no longer manages"
)


def _unsupported(
    name: str, value: Any, supported: Any, why: str | None = None
) -> web.HTTPBadRequest:
    """A 400 for `value` of `name`, in Kubernetes' words (`Unsupported value`)."""
    listed = ", ".join(json.dumps(s) for s in supported)
    tail = f": {why}" if why else ""
    return _bad(f"{name}: Unsupported value: {json.dumps(value)}: supported values: {listed}{tail}")


def _bad(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=message)
