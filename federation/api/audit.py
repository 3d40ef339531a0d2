"""The audit trail: one JSON line per mutation — who, what, when, and how it ended.

Role: the outermost API middleware, so refused mutations (401, 403, 429) are recorded as
well as accepted ones. Fed by each mutating request (POST, PUT, PATCH, DELETE; the
`/validate` endpoint stores nothing and is skipped: that route exactly, not any path
ending so, for `validate` is a valid object name and a PUT or DELETE of one went
unrecorded), the caller identity the auth middleware attached and the objects the
handler read from the body (`attempted`); feeds an append-only file (`fedctl controller
--audit-log FILE`; `fedctl up` writes `DATA_DIR/audit.log`) or the `fedctl.audit`
logger, which a deployment ships wherever its other logs go. That logger records at
INFO whatever `--log-level` says (its own level): at the default, warning, the trail
was dropped whole.

Why the file is looked at before each record: logrotate's default renames it and creates
an empty one in its place, and a handle kept open wrote into the renamed file for good.
So, as Python's `WatchedFileHandler` does, a record goes to whatever file is at the path
now, opened again when that is not the file open (renamed, replaced or deleted).

Why a line per request, written after the response is built: the result code is the fact
an auditor needs, and JSON lines are greppable and load into anything. Tokens never appear:
a token is named by its digest prefix only (`auth.token_id`). For `/apply`, the line lists
every object with its outcome (created / configured / unchanged). Any write whose body
held objects lists them (kind, namespace, name) whatever its outcome: a refused apply, or a
create whose URL names only a namespace, said nothing of what was attempted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

from aiohttp import web

from federation import clock as clock_mod
from federation import errors
from federation.api import auth
from federation.registry import objects as reg_objects
from policies.models.base import KubeObject

__all__ = ["ATTEMPTED", "AuditLog", "attempted"]

log = logging.getLogger("fedctl.audit")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_API = "/apis/fedctl.io/v1alpha1"
_VALIDATE, _APPLY = _API + "/validate", _API + "/apply"

ATTEMPTED: web.RequestKey[list[dict[str, Any]]] = web.RequestKey("fedctl_attempted", list)
"""The objects a write's body held, as `attempted` recorded them."""


def attempted(request: web.Request, models: list[KubeObject]) -> None:
    """Note the objects a write's body holds, for its audit line whatever its outcome."""
    request[ATTEMPTED] = [
        {"kind": m.kind, "namespace": m.metadata.namespace, "name": m.metadata.name} for m in models
    ]


class AuditLog:
    """Writes audit records to `path` (appending) or, without one, to `fedctl.audit`."""

    def __init__(
        self, path: str | Path | None = None, *, clock: clock_mod.Clock = clock_mod.real
    ) -> None:
        self.clock = clock
        self.path = Path(path) if path else None
        self._file: IO[str] | None = None
        self._identity: tuple[int, int] | None = None
        """(device, inode) of the file open: a different one at the path is a rotation."""
        if self.path is None:
            log.setLevel(logging.INFO)  # every mutation, whatever the process's log level

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), sort_keys=True)
        if self.path is None:
            log.info("%s", line)
            return
        self._follow_path(self.path).write(line + "\n")

    def _follow_path(self, path: Path) -> IO[str]:
        """The file at `path` now, opened again when it is not the one open (rotated)."""
        try:
            found = os.stat(path)
            now: tuple[int, int] | None = (found.st_dev, found.st_ino)
        except FileNotFoundError:
            now = None
        if self._file is not None and now == self._identity:
            return self._file
        self.close()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8", buffering=1)
        opened = os.fstat(self._file.fileno())
        self._identity = (opened.st_dev, opened.st_ino)
        return self._file

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._identity = None

    def record_for(self, request: web.Request, code: int) -> dict[str, Any]:
        """What one finished mutation looks like in the trail."""
        who = request.get(auth.PRINCIPAL)
        info = request.match_info
        plural = info.get("plural")
        kind = plural
        if plural:
            with contextlib.suppress(errors.Invalid):
                kind = reg_objects.resource_named(plural).kind
        record: dict[str, Any] = {
            "time": self.clock.now().isoformat(),
            "user": who.user if who else None,
            "groups": sorted(who.groups) if who else [],
            "credential": who.via if who else None,
            "remote": request.remote,
            "method": request.method,
            "path": request.path,
            "kind": kind,
            "namespace": info.get("ns"),
            "name": info.get("name"),
            "code": code,
        }
        if ATTEMPTED in request:
            record["objects"] = request[ATTEMPTED]
            if len(request[ATTEMPTED]) == 1 and plural and not info.get("name"):  # a create
                record["kind"] = request[ATTEMPTED][0]["kind"]
                record["name"] = request[ATTEMPTED][0]["name"]
        return record

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method not in MUTATING or request.path == _VALIDATE:
            return await handler(request)
        try:
            resp = await handler(request)
        except web.HTTPException as exc:
            self.write(self.record_for(request, exc.status))
            raise
        except asyncio.CancelledError:
            self.write(self.record_for(request, 499))  # the client went away first
            raise
        except Exception:
            self.write(self.record_for(request, 500))
            raise
        record = self.record_for(request, resp.status)
        if request.path == _APPLY and isinstance(resp, web.Response) and resp.status == 200:
            record["objects"] = _applied(resp)
        if request.query.get("dryRun") == "All":
            record["dryRun"] = True  # its outcome says what would have been done, not what was
        self.write(record)
        return resp


def _applied(resp: web.Response) -> list[dict[str, Any]]:
    """The per-object outcomes of an apply, read back from its JSON answer."""
    if resp.status != 200 or not isinstance(resp.body, bytes):
        return []
    try:
        results = json.loads(resp.body).get("results", [])
    except (ValueError, AttributeError):
        return []
    keep = ("kind", "namespace", "name", "result")
    return [{k: r.get(k) for k in keep} for r in results if isinstance(r, dict)]
