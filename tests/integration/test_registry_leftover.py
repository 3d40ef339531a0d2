"""A `fedctl up` killed with SIGKILL leaves its etcd and simulated fleet running (each in
a session of its own); the next start on the same data directory stops them, saying so,
instead of waiting 20 s for an etcd that cannot take the locked data directory and
saying only "not ready". One still owned by a live run is refused, naming both pids."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from federation import errors
from federation.registry import embedded

pytestmark = pytest.mark.integration


@pytest.fixture
def first(tmp_path: Path) -> Iterator[embedded.EmbeddedEtcd]:
    """An etcd on `tmp_path/etcd`, as a run since killed left it."""
    server = embedded.EmbeddedEtcd(data_dir=tmp_path / "etcd")
    server.start()
    yield server
    server.stop(kill=True)


def _gone_owner() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_an_etcd_left_by_a_killed_run_is_stopped_and_the_data_reused(
    first: embedded.EmbeddedEtcd, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert first.pid is not None and first.data_dir is not None
    left = first.pid
    first._gateway("/v3/kv/put", {"key": "a2V5", "value": "dmFsdWU="})  # key=value
    (first.data_dir / "etcd.pid").write_text(f"{left} {_gone_owner()}\n")
    second = embedded.EmbeddedEtcd(data_dir=tmp_path / "etcd")
    caplog.set_level(logging.WARNING, logger="federation.registry.embedded")
    try:
        second.start(timeout=10)
        assert not embedded._running(left)
        kept = second._gateway("/v3/kv/range", {"key": "a2V5"})
        assert kept["kvs"][0]["value"] == "dmFsdWU="
    finally:
        second.stop()
    said = " ".join(r.getMessage() for r in caplog.records)
    assert f"pid {left} (etcd) from an earlier run still holds {tmp_path / 'etcd'}" in said


def test_an_etcd_of_a_run_still_going_is_refused_naming_both_pids(
    first: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    assert first.pid is not None and first.data_dir is not None
    owner = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        (first.data_dir / "etcd.pid").write_text(f"{first.pid} {owner.pid}\n")
        with pytest.raises(errors.Unavailable) as caught:
            embedded.EmbeddedEtcd(data_dir=tmp_path / "etcd").start(timeout=10)
    finally:
        owner.communicate(b"")
    assert f"etcd pid {first.pid}, started by pid {owner.pid} which still runs" in str(caught.value)
    assert embedded._running(first.pid), "the live run's etcd was left alone"


def test_a_leftover_fleet_is_stopped_a_process_that_only_reuses_its_pid_is_not(
    tmp_path: Path,
) -> None:
    kubeconfig = tmp_path / "fleet.kubeconfig"
    marks = (" sim up ", f"{kubeconfig} ")
    fleet = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()", "sim", "up",
         "--kubeconfig", str(kubeconfig)],
        stdin=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    pid_file = tmp_path / "fleet.pid"
    try:
        pid_file.write_text(f"{other.pid} {_gone_owner()}\n")
        assert embedded.stop_leftover(pid_file, what="simulated fleet", marks=marks) is None
        assert other.poll() is None, "a process that is not the fleet was stopped"
        pid_file.write_text(f"{fleet.pid} {_gone_owner()}\n")
        assert embedded.stop_leftover(pid_file, what="simulated fleet", marks=marks) == fleet.pid
        assert fleet.wait(timeout=5) is not None
        assert not pid_file.exists()
    finally:
        for proc in (fleet, other):
            if proc.poll() is None:
                proc.communicate(b"")
            elif proc.stdin is not None:
                proc.stdin.close()


def test_fedctl_up_stops_what_a_killed_run_left_before_fresh_wipes_its_pid_files(
    tmp_path: Path,
) -> None:
    """`--fresh` deleted the data directory, pid files with it, and the old etcd and fleet
    ran on for good beside the new ones."""
    from federation.cli import up_cmd

    left = embedded.EmbeddedEtcd(data_dir=tmp_path / "etcd")
    left.start()
    try:
        assert left.pid is not None
        (tmp_path / "etcd" / "etcd.pid").write_text(f"{left.pid} {_gone_owner()}\n")
        up_cmd._stop_leftovers(tmp_path)
        assert not embedded._running(left.pid)
    finally:
        left.stop(kill=True)
