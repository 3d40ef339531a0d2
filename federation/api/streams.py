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

Errors (only this one leaves `Writer.write`):

    ClientGone   the client left (its connection reset or closed mid-write), or was
                 dropped for not reading: the stream ends there, quietly. Caught by the
                 route; never a 500 or a traceback, since nothing went wrong here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

__all__ = ["ClientGone", "Send", "Writer"]

Send = Callable[[bytes], Awaitable[None]]
"""`Writer.write`: what a watch route's readers hand each line to."""

log = logging.getLogger(__name__)


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
