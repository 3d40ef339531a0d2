"""Watch clients that stop reading or go away mid-write: real sockets, the real API app.

A client that stops reading (a laptop asleep with the dashboard open) held tens of MB of
the controller's memory for as long as its connection stayed open, and one that went
away while the server waited to write to it was logged as an unhandled error with a
traceback. Now a stream whose client takes nothing for `watch_write_timeout` is closed,
with a warning naming the client, as the Kubernetes API server closes a watcher that
cannot keep up; and a client gone ends its stream quietly. Both watch routes, the
multiplexed one and the per-kind `?watch=true`, behave alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import struct
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from federation.api import app as api_app
from federation.api import auth
from federation.registry import codec, objects
from federation.registry.memory import MemoryStore
from federation.settings import ApiSettings
from policies.models.workload import Workload
from tests.integration.test_api_security import ADMIN, TOKENS
from tests.serving import serving
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
ROUTES = [
    pytest.param(f"{API}/watch?resources=workloads,bindings", id="the multiplexed watch"),
    pytest.param(f"{API}/workloads?watch=true", id="the per-kind watch"),
]
PADDING = "x" * 32 * 1024
"""Each change's event carries this much: a few hundred fill any socket buffer."""


@contextlib.asynccontextmanager
async def api(write_timeout: float) -> AsyncIterator[tuple[str, MemoryStore]]:
    store = MemoryStore()
    settings = ApiSettings(watch_write_timeout=write_timeout)
    app = api_app.build_app(
        store, settings=settings, auth=auth.Authenticator(auth.TokenTable.from_yaml(TOKENS))
    )
    async with serving(app) as url:
        yield url, store
    await store.close()


@contextlib.asynccontextmanager
async def silent_client(url: str, path: str) -> AsyncIterator[socket.socket]:
    """A watch opened over a socket (its receive buffer tiny) that reads until the stream
    has begun (its first BOOKMARK), then nothing more."""
    where = urlsplit(url)
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    try:
        await loop.sock_connect(sock, (where.hostname, where.port))
        request = f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ADMIN}\r\n\r\n"
        await loop.sock_sendall(sock, request.encode())
        got = b""
        async with asyncio.timeout(5):
            while b"BOOKMARK" not in got:
                got += await loop.sock_recv(sock, 4096)
        assert got.startswith(b"HTTP/1.1 200"), got[:200]
        yield sock
    finally:
        sock.close()


async def flood(store: MemoryStore, count: int, *, start: int = 0) -> None:
    """`count` changes the watch has to send, each a large event."""
    typed = codec.TypedStore(store, objects.ObjectCodec())
    for i in range(start, start + count):
        workload = Workload.model_validate(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i}", "namespace": "web"},
                "data": {"padding": PADDING},
            }
        )
        await typed.put(objects.key_for(workload), workload)


async def closed_by_server(sock: socket.socket) -> bool:
    """Read what is left on the socket: True once the server has closed it (EOF or reset)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(0.2):
            while True:
                chunk = await loop.sock_recv(sock, 1 << 16)
                if not chunk:
                    return True
    except ConnectionError:
        return True
    except TimeoutError:
        return False


def address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"{host}:{port}"


def finished(caplog: pytest.LogCaptureFixture, path: str) -> list[int]:
    """The status of each request for `path` that has finished (aiohttp's access log)."""
    return [
        int(re.search(r'HTTP/1.1" (\d{3}) ', r.getMessage()).group(1))  # type: ignore[union-attr]
        for r in caplog.records
        if r.name == "aiohttp.access" and path in r.getMessage()
    ]


def blocked_writing() -> bool:
    """Whether a task is waiting for a connection to take what it wrote (aiohttp's drain)."""
    for task in asyncio.all_tasks():
        awaited: Any = task.get_coro()
        while awaited is not None:
            code = getattr(awaited, "cr_code", None)
            if code is not None and code.co_name == "_drain_helper":
                return True
            awaited = getattr(awaited, "cr_await", None)
    return False


def errors_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("path", ROUTES)
async def test_a_client_that_stops_reading_is_dropped_with_a_warning_naming_it(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with api(write_timeout=0.5) as (url, store), silent_client(url, path) as sock:
        who = address(sock)

        def warnings() -> list[str]:
            return [
                r.getMessage()
                for r in caplog.records
                if r.levelno == logging.WARNING and who in r.getMessage()
            ]

        # Far more than the client's and the server's socket buffers hold.
        await flood(store, 400)
        await wait_for(warnings, timeout=5, message=f"a warning naming {who}")

        async def closed() -> bool:
            return await closed_by_server(sock)

        await wait_for(closed, timeout=5, message="the connection closed by the server")
        await flood(store, 5, start=400)  # more to send: the stream is over all the same
    assert len(warnings()) == 1, warnings()
    assert not errors_logged(caplog)


_STREAM_TASKS = ("RequestHandler.", "WatchApi.", "ObjectsApi.")


def streaming() -> list[asyncio.Task[object]]:
    """The tasks serving a connection or following a watch (the app's own, its drill
    runner's, come and go and are not the stream's)."""
    return [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "__qualname__", "").startswith(_STREAM_TASKS)
    ]


@pytest.mark.parametrize("path", ROUTES)
async def test_a_client_gone_while_the_server_waits_to_write_ends_its_stream_quietly(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with api(write_timeout=60) as (url, store):
        async with silent_client(url, path) as sock:
            # Far more than the client's and the server's socket buffers hold.
            await flood(store, 400)
            await wait_for(blocked_writing, timeout=5, message="the server waiting to write")
            # Reset, not closed politely: as a tab closed on a slow link goes away.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await flood(store, 5, start=400)
        # Its handler ends (cancelled with the connection, or ending on the failed write).
        await wait_for(
            lambda: not streaming(),
            timeout=5,
            message="the stream's handler ended",
        )
    assert 500 not in finished(caplog, path)
    assert not errors_logged(caplog)
