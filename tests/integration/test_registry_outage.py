"""The registry while etcd is hung or gone: how long a call waits, what it says, and
how a controller starting meanwhile waits instead of exiting.

A hung etcd is a real one stopped with SIGSTOP: its port still takes connections, as
after a long GC pause or swap storm, which is what tells "hung" from "wrong address"."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterator

import pytest

from federation import errors
from federation.api import status
from federation.cli import main
from federation.registry import embedded
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from tests.conftest import etcd_settings
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def hung(server: embedded.EmbeddedEtcd) -> Iterator[None]:
    """etcd stopped (SIGSTOP) for the block, continued after it whatever happens."""
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)
    try:
        # The signal is delivered asynchronously: a quick read could still be answered.
        deadline = time.monotonic() + 5
        while _state(server.pid) != "T":
            assert time.monotonic() < deadline, "etcd did not stop"
            time.sleep(0.01)
        yield
    finally:
        os.kill(server.pid, signal.SIGCONT)


def _state(pid: int) -> str:
    """The process state letter of /proc/PID/stat (T: stopped)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize(
    ("write", "said"),
    [
        pytest.param(False, "did not answer within 2s", id="a read"),
        pytest.param(True, "did not answer within 2s; it may have been stored", id="a write"),
    ],
)
async def test_retry_deadline_bounds_the_whole_call_and_says_so_plainly(
    own_etcd: embedded.EmbeddedEtcd, write: bool, said: str
) -> None:
    """`retry_deadline` 8 s gave 15 s: the first try ran outside the retry loop and the
    deadline was checked only after each full request timeout. The answer was gRPC's
    "deadline_exceeded: Deadline Exceeded"."""
    store = EtcdStore(etcd_settings(own_etcd.url, request_timeout=1.5, retry_deadline=2))
    await store.connect()
    try:
        await st.put(store, "/o/k", b"v")
        with hung(own_etcd):
            began = time.monotonic()
            with pytest.raises(errors.Unavailable) as caught:
                if write:
                    await store.commit([st.Put("/o/a", b"1"), st.Put("/o/b", b"2")])
                else:
                    await store.get("/o/k")
            took = time.monotonic() - began
    finally:
        await store.close()
    assert took < 2.6, f"gave up after {took:.1f}s, past its 2s deadline"
    assert str(caught.value).startswith(f"the registry (etcd at {own_etcd.url}) {said}")
    assert "Deadline Exceeded" not in str(caught.value)


async def test_a_write_no_try_of_which_reached_etcd_says_nothing_was_stored(
    own_etcd: embedded.EmbeddedEtcd,
) -> None:
    """etcd gone (connection refused): no try reached it, so nothing can have landed."""
    store = EtcdStore(etcd_settings(own_etcd.url, retry_deadline=1))
    await store.connect()
    try:
        own_etcd.stop(kill=True)
        with pytest.raises(errors.Unavailable) as caught:
            await store.commit([st.Put("/o/a", b"1"), st.Put("/o/b", b"2")])
    finally:
        await store.close()
    assert str(caught.value).endswith("did not answer within 1s; nothing was stored")


def test_a_registry_outage_answers_503_with_retry_after() -> None:
    answer = status._refusal(None, errors.Unavailable("the registry did not answer"))  # type: ignore[arg-type]
    assert answer.status == 503
    assert answer.headers["Retry-After"] == str(status.RETRY_AFTER)


async def test_dump_against_a_hung_etcd_says_hung_not_point_elsewhere(
    own_etcd: embedded.EmbeddedEtcd,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The URL was right; telling its user to point --etcd at it sent them looking."""
    monkeypatch.setenv("FEDCTL_ETCD__CONNECT_TIMEOUT", "0.5")
    with hung(own_etcd):
        code = await asyncio.to_thread(
            main.main, ["--etcd", own_etcd.url, "registry", "dump", "/fedctl/leader"]
        )
    err = capsys.readouterr().err
    assert code == 1
    assert "did not answer within 0.5s (it may be hung or overloaded)" in err, err
    assert "point --etcd" not in err, err


async def test_a_patient_connect_waits_out_a_hung_etcd_saying_so(
    own_etcd: embedded.EmbeddedEtcd, caplog: pytest.LogCaptureFixture
) -> None:
    """`fedctl controller` exited after 5 s when etcd did not answer at start, though a
    running one rides out the same outage."""
    store = EtcdStore(etcd_settings(own_etcd.url, connect_timeout=0.3, retry_max=0.2))
    caplog.set_level(logging.WARNING, logger="federation.registry.etcd")

    def waits() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.name == "federation.registry.etcd" and r.levelno == logging.WARNING
        ]

    try:
        with hung(own_etcd):
            connecting = asyncio.create_task(store.connect(patience=None))
            await wait_for(lambda: len(waits()) >= 2, message="two waits logged at WARNING")
            assert not connecting.done()
        await asyncio.wait_for(connecting, timeout=10)
        await st.put(store, "/o/after", b"v")
    finally:
        await store.close()
    assert "(it may be hung or overloaded); trying again in" in waits()[0]


async def test_a_port_that_takes_the_connection_but_is_not_etcd_is_not_called_hung() -> None:
    """A port that takes a TCP connection and refuses gRPC (an HTTP/1 server here, as a
    wrong port or a TLS mismatch would) is no hung etcd, and the message says what to
    check."""

    async def refuse(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    store = EtcdStore(etcd_settings(f"http://127.0.0.1:{port}", connect_timeout=2))
    try:
        with pytest.raises(errors.Unavailable) as caught:
            await store.connect()
    finally:
        await store.close()
        server.close()
        await server.wait_closed()
    assert "took the connection but no gRPC session could be set up" in str(caught.value)
    assert "hung" not in str(caught.value)
