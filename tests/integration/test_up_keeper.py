"""What `fedctl up` does when a process it started dies: etcd is started again with its
data, a lost simulated fleet ends the run with the reason. Real processes throughout."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from federation.cli import up_cmd
from federation.registry import embedded, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from tests.conftest import etcd_settings
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


async def test_a_killed_etcd_is_started_again_with_its_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a killed etcd left every command failing until Ctrl-C."""
    etcd = embedded.EmbeddedEtcd(data_dir=tmp_path / "etcd")
    etcd.start()
    store = EtcdStore(etcd_settings(etcd.url))
    keeper = asyncio.create_task(up_cmd._keep(etcd, None, data=tmp_path))
    try:
        await store.connect()
        await st.put(store, f"{keys.ROOT}/kept", b"yes")
        killed = etcd.pid
        assert killed is not None
        os.kill(killed, signal.SIGKILL)  # from outside, as the OOM killer would
        await wait_for(
            lambda: "fedctl up: etcd is back" in capsys.readouterr().out,
            timeout=30, interval=0.2, message="etcd started again",
        )  # fmt: skip
        assert etcd.pid != killed and etcd.exit_code() is None
        got = await store.get(f"{keys.ROOT}/kept")
        assert got is not None and got.value == b"yes"
        assert not keeper.done()
    finally:
        keeper.cancel()
        await store.close()
        etcd.cleanup()


def _exiting(code: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", f"raise SystemExit({code})"])


async def test_a_lost_fleet_ends_the_run_saying_why(tmp_path: Path) -> None:
    fleet = _exiting(3)
    why = await asyncio.wait_for(up_cmd._keep(None, fleet, data=tmp_path), timeout=30)
    assert why == f"the simulated fleet exited with code 3 (see {tmp_path / 'fleet.log'}); stopping"


def test_a_listen_address_in_use_is_one_line_not_a_traceback(
    etcd_server: embedded.EmbeddedEtcd,
) -> None:
    """A second `fedctl up` (or a controller) on a busy port printed two tracebacks
    ending in aiohttp's bind error."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "federation.cli.main", "--etcd", etcd_server.url,
             "controller", "--listen", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"fedctl: cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr
