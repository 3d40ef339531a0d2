"""Writing a watch stream to its client: each line within a deadline, a client gone
told apart from a fault.

Fed by the watch routes (`watch.WatchApi`, the per-kind `?watch=true` of
`objects.ObjectsApi`) with one JSON line at a time; feeds the client's connection.

Why a deadline: a watch follows the registry for as long as its client keeps the
connection open. A client that stops reading (a laptop asleep with the dashboard open, a
stuck script) fills its socket, the write waits, and meanwhile the registry watch behind
it keeps taking events in: tens of MB of the controller's memory per such stream, held
for as long as the connection stays. The Kubernetes API server closes a watcher that
cannot keep up ("forcing watcher close due to unresponsiveness"); its client lists and
watches again from the resourceVersion it had. So here: a line the connection cannot
take within `ApiSettings.watch_write_timeout` closes the stream, and says so at WARNING
naming the client's address.

Why bookmarks on a quiet stream (`ticking`, asked for with `allowWatchBookmarks=true`):
a connection a NAT, load balancer or VPN keeps open but no longer carries looks, to the
client, like a stream with nothing to say, and the dashboard kept saying `live` over
stale data for as long as the socket stayed. A BOOKMARK every
`ApiSettings.watch_bookmark_interval` seconds, however quiet the kind, lets a client
take a longer silence as a dead stream. Kubernetes sends them only to a watch that asks
(`allowWatchBookmarks`), and so does this: a client that did not ask gets none. Every
watch without `timeoutSeconds` ends after a randomised lifetime instead
(`Timing.deadline`, as kube-apiserver's --min-request-timeout), and its client lists and
watches again.

Errors (only this one leaves `Writer.write`):

    ClientGone   the client left (its connection reset or closed mid-write), or was
                 dropped for not reading: the stream ends there, quietly. Caught by the
                 route; never a 500 or a traceback, since nothing went wrong here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from aiohttp import web

from federation import clock
from federation.api import params
from federation.settings import ApiSettings

__all__ = [
    "BOOKMARK_INTERVAL_HEADER",
    "ClientGone",
    "Send",
    "Timing",
    "Writer",
    "bookmark",
    "ticking",
]

T = TypeVar("T")

BOOKMARK_INTERVAL_HEADER = "X-Fedctl-Bookmark-Interval"
"""The response header of a watch that asked for bookmarks: the seconds between them,
by which the dashboard judges how long a silence means a dead stream."""

Send = Callable[[bytes], Awaitable[None]]
"""`Writer.write`: what a watch route's readers hand each line to."""

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Timing:
    """How long a watch's lines may wait, and how long a watch lasts (`ApiSettings`)."""

    write_timeout: float
    """Seconds a client may take nothing before it is dropped (`Writer`)."""
    bookmark_interval: float
    """Seconds between the bookmarks of a watch that asked for them (`ticking`)."""
    min_lifetime: float
    """A watch without `timeoutSeconds` ends between this and twice this (`deadline`)."""

    @classmethod
    def of(cls, settings: ApiSettings) -> Timing:
        return cls(
            write_timeout=settings.watch_write_timeout,
            bookmark_interval=settings.watch_bookmark_interval,
            min_lifetime=settings.watch_min_lifetime,
        )

    def deadline(self, query: Mapping[str, str]) -> float:
        """Seconds the watch asked for by `query` stays open: its `timeoutSeconds`, else a
        random lifetime in [min_lifetime, 2 * min_lifetime), as kube-apiserver picks one
        (so a quiet client on a stalled connection lists again, and many clients do not
        all come back at once)."""
        asked = params.timeout_seconds(query)
        return asked if asked is not None else self.min_lifetime * random.uniform(1, 2)

    def bookmarks(self, query: Mapping[str, str]) -> float | None:
        """Seconds between the bookmarks of the watch asked for by `query`: only with
        `allowWatchBookmarks=true`, as from Kubernetes (a client that did not ask for
        them is not sent any)."""
        wanted = params.flag(query.get("allowWatchBookmarks"))
        return self.bookmark_interval if wanted else None

    def headers(self, query: Mapping[str, str]) -> dict[str, str]:
        """The watch response's headers: its content type, and the bookmark interval when
        it asked for bookmarks (`BOOKMARK_INTERVAL_HEADER`)."""
        out = {"Content-Type": "application/x-ndjson"}
        every = self.bookmarks(query)
        if every is not None:
            out[BOOKMARK_INTERVAL_HEADER] = f"{every:g}"
        return out


def bookmark(revision: int, kind: str) -> dict[str, Any]:
    """A BOOKMARK event's object: the revision a resource's changes have been sent up to.

    Why it names a kind: kube-apiserver's bookmarks do, and clients that decode every
    event's object by its `kind` (the official clients' typed watches) need one."""
    return {
        "kind": kind,
        "apiVersion": "fedctl.io/v1alpha1",
        "metadata": {"resourceVersion": str(revision)},
    }


async def ticking(events: AsyncIterator[T], *, every: float | None) -> AsyncGenerator[T | None]:
    """`events` as they come, with a None (a bookmark is due) each time `every` seconds
    have passed since the last one, however many events came meanwhile; `events` alone
    without `every`. Closes `events` when it ends.

    Why the next event is awaited in a task kept across the ticks: a registry watch is
    an async generator, and cancelling its `__anext__` on a timeout would close it."""
    pending: asyncio.Future[T] | None = None
    try:
        if every is None:
            async for event in events:
                yield event
            return
        due = clock.real.monotonic() + every
        while True:
            if clock.real.monotonic() >= due:
                due = clock.real.monotonic() + every
                yield None
            if pending is None:
                pending = asyncio.ensure_future(anext(events))
            left = max(0.0, due - clock.real.monotonic())
            done, _ = await asyncio.wait({pending}, timeout=left)
            if not done:
                continue
            finished, pending = pending, None
            try:
                event = finished.result()
            except StopAsyncIteration:
                return
            yield event
    finally:
        if pending is not None:
            pending.cancel()
            await asyncio.wait({pending})
            if not pending.cancelled():
                pending.exception()  # taken: it ends with the stream, not as a warning
        closing = getattr(events, "aclose", None)
        if closing is not None:
            await closing()


class ClientGone(Exception):
    """The stream's client went away, or was dropped for not reading."""


class Writer:
    """Lines to one watch stream, each whole (one writer at a time) and within `timeout`."""

    def __init__(self, request: web.Request, resp: web.StreamResponse, *, timeout: float) -> None:
        self.request, self.resp, self.timeout = request, resp, timeout
        self._lock = asyncio.Lock()
        self.dropped = False
        """Closed for not reading: the other resources' lines are not tried, nor logged."""
        self.peer = _peer(request)
        """The client's address and port, as a log line names it (read while the
        connection is open: a lost one no longer knows it)."""

    async def write(self, line: bytes) -> None:
        """Hand `line` to the connection; `ClientGone` when the client left, or took
        nothing for `timeout` seconds (the connection is then dropped, which frees what
        was queued for it)."""
        peer = self.peer
        async with self._lock:  # one event per line, whichever resource writes it
            if self.dropped:
                raise ClientGone(peer)
            try:
                async with asyncio.timeout(self.timeout):
                    await self.resp.write(line)
            except TimeoutError:
                log.warning(
                    "watch %s from %s closed: the client took nothing for %gs"
                    " (a client lists and watches again from its resourceVersion)",
                    self.request.path,
                    peer,
                    self.timeout,
                )
                self.dropped = True
                if self.request.transport is not None:
                    self.request.transport.abort()
                raise ClientGone(peer) from None
            except ConnectionError as exc:
                log.info("watch %s from %s ended: the client went away", self.request.path, peer)
                raise ClientGone(peer) from exc


def _peer(request: web.Request) -> str:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return request.remote or "an unknown client"
