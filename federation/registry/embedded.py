"""Run a private etcd process on free loopback ports: for tests, the demo and `fedctl up`.

Why a real process and not a fake: the registry's guarantees (compare-and-swap, watch
resume after a restart, lease expiry) are etcd's, and only etcd can show they hold. The
process keeps its data directory across `restart()` so a test can prove a watch survives
an etcd restart with nothing lost.

The process runs in a session of its own (a Ctrl-C meant for `fedctl up` must not reach
it before the controller has stopped), so a parent killed with SIGKILL leaves it running,
holding the data directory: the next start waited 20 s and said only "not ready". Its
pid is kept in `DATA_DIR/etcd.pid`, and a start finds an etcd of the same data directory
left by an earlier run and stops it first, saying so (`stop_leftover`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federation import clock, errors

__all__ = ["EmbeddedEtcd", "etcd_binary", "free_port", "stop_leftover", "write_pid"]

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the kernel picks; there is a small race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def etcd_binary() -> str:
    """Path of the `etcd` executable, or a clear error telling how to get it."""
    path = shutil.which("etcd") or ("/usr/bin/etcd" if Path("/usr/bin/etcd").exists() else None)
    if path is None:
        raise errors.Unavailable(
            "no etcd binary on PATH: install Debian's etcd-server (make deps does it)"
        )
    return path


@dataclass
class EmbeddedEtcd:
    """One etcd member on loopback; `start()` returns once it serves requests."""

    data_dir: Path | None = None
    client_port: int = 0
    peer_port: int = 0
    host: str = "127.0.0.1"
    max_txn_ops: int = 1024
    quota_backend_bytes: int = 0
    """etcd's storage quota; 0 keeps its default (2 GiB)."""
    log_file: Path | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _own_dir: bool = field(default=False, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.client_port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, *, timeout: float = 20.0) -> None:
        """Start etcd (ports and data dir chosen on first start and kept for restarts)."""
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="fedctl-etcd-"))
            self._own_dir = True
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.client_port = self.client_port or free_port(self.host)
        self.peer_port = self.peer_port or free_port(self.host)
        peer = f"http://{self.host}:{self.peer_port}"
        log_path = self.log_file or self.data_dir / "etcd.log"
        args = [
            etcd_binary(),
            "--name", "fedctl",
            "--data-dir", str(self.data_dir / "member-data"),
            "--listen-client-urls", self.url,
            "--advertise-client-urls", self.url,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"fedctl={peer}",
            "--max-txn-ops", str(self.max_txn_ops),
            # History older than an hour is dropped, as in the deploy overlays: a `fedctl
            # up` left running keeps every revision otherwise (about 12 KiB per Job run),
            # and past the quota etcd refuses every write.
            "--auto-compaction-mode", "periodic",
            "--auto-compaction-retention", "1h",
            "--log-level", "warn",
            "--logger", "zap",
        ]  # fmt: skip
        if self.quota_backend_bytes:
            args += ["--quota-backend-bytes", str(self.quota_backend_bytes)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}
        self.stop_leftover()
        with log_path.open("ab") as log:
            self._process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        write_pid(self.data_dir / "etcd.pid", self._process.pid)
        self._wait_ready(timeout)
        self._free_space()

    def stop_leftover(self) -> int | None:
        """Stop an etcd an earlier, killed run left on this data directory (`stop_leftover`);
        its pid, or None when there was none."""
        if self.data_dir is None:
            return None
        return stop_leftover(
            self.data_dir / "etcd.pid", what="etcd", marks=("etcd", f"{self.data_dir}/member-data ")
        )

    def _free_space(self) -> None:
        """Make a data directory an earlier run left past the quota writable again.

        etcd then refuses every write (NOSPACE) until its history is compacted and
        defragmented and the alarm disarmed; `fedctl up` on such a directory came up with
        a registry that took nothing. Only old revisions go: every key keeps its value."""
        alarms = self._gateway("/v3/maintenance/alarm", {"action": "GET"}).get("alarms", [])
        full = [a for a in alarms if a.get("alarm") == "NOSPACE"]
        if not full:
            return
        everything = base64.b64encode(b"\0").decode()
        header = self._gateway("/v3/kv/range", {"key": everything, "count_only": True})["header"]
        with contextlib.suppress(OSError):  # already compacted up to here: nothing to drop
            self._gateway("/v3/kv/compaction", {"revision": header["revision"], "physical": True})
        self._gateway("/v3/maintenance/defragment", {})
        for alarm in full:
            self._gateway(
                "/v3/maintenance/alarm",
                {"action": "DEACTIVATE", "memberID": alarm["memberID"], "alarm": "NOSPACE"},
            )
        log.warning(
            "etcd at %s was past its storage quota (NOSPACE): compacted its history up to"
            " revision %s and defragmented it; every key kept its value",
            self.url,
            header["revision"],
        )

    def _gateway(self, path: str, body: dict[str, object]) -> dict[str, Any]:
        """One call to etcd's JSON gateway (no gRPC client before an event loop runs)."""
        import urllib.request

        request = urllib.request.Request(
            f"{self.url}{path}", data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            answer: dict[str, Any] = json.loads(resp.read())
        return answer

    def _wait_ready(self, timeout: float) -> None:
        deadline = clock.real.monotonic() + timeout
        while clock.real.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise errors.Unavailable(
                    f"etcd exited with code {self._process.returncode}; "
                    f"see {self.data_dir}/etcd.log",
                    endpoint=self.url,
                )
            with (
                contextlib.suppress(OSError),
                socket.create_connection((self.host, self.client_port), timeout=0.2),
            ):
                if self._healthy():
                    return
            _blocking_pause(0.05)
        raise errors.Unavailable(
            f"etcd at {self.url} not ready in {timeout:g}s; see {self.data_dir}/etcd.log",
            endpoint=self.url,
        )

    def _healthy(self) -> bool:
        import urllib.request

        try:
            # A full etcd (NOSPACE) is unhealthy to /health but serves reads, and start()
            # then frees it: ready all the same.
            with urllib.request.urlopen(f"{self.url}/health?exclude=NOSPACE", timeout=1) as resp:
                return b'"health":"true"' in resp.read()
        except OSError:
            return False

    def exit_code(self) -> int | None:
        """The code the process exited with, or None while it runs (or never ran)."""
        return None if self._process is None else self._process.poll()

    def stop(self, *, kill: bool = False) -> None:
        """Stop the process (SIGTERM, or SIGKILL with `kill`); the data directory stays."""
        proc, self._process = self._process, None
        if proc is not None and self.data_dir is not None:
            (self.data_dir / "etcd.pid").unlink(missing_ok=True)
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def restart(self, *, kill: bool = False) -> None:
        """Stop and start again on the same ports with the same data."""
        self.stop(kill=kill)
        self.start()

    def cleanup(self) -> None:
        """Stop and remove the data directory if this object created it."""
        self.stop()
        if self._own_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedEtcd:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def write_pid(path: Path, pid: int) -> None:
    """Record a child's pid and ours (its owner), so the next run finds the child if this
    one is killed, and tells a leftover from a child of a run still going."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{pid} {os.getpid()}\n", encoding="ascii")


def stop_leftover(
    path: Path, *, what: str, marks: tuple[str, ...], timeout: float = 10.0
) -> int | None:
    """Stop the process (`what`, for messages) `path` names, and its process group, if
    it still runs an earlier run's child: its command line holds every one of `marks`
    (the program and this data directory, so a pid reused by another program is left
    alone). Returns its pid, or
    None when there was none. Raises Unavailable naming the pids when the run that started
    it still runs (two `fedctl up` on one data directory: the second must not take the
    first's etcd away), or when it will not stop."""
    try:
        pid, owner = (int(word) for word in path.read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        cmdline = ""  # gone, or no /proc: nothing of ours to stop
    if not cmdline or not all(mark in cmdline for mark in marks):
        path.unlink(missing_ok=True)
        return None
    if owner != os.getpid() and _running(owner):
        raise errors.Unavailable(
            f"{path.parent} is in use: {what} pid {pid}, started by pid {owner} which"
            " still runs (another fedctl up?); stop that one first, or use another"
            " --data-dir"
        )
    log.warning(
        "pid %d (%s) from an earlier run still holds %s: stopping it", pid, what, path.parent
    )
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, timeout)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = clock.real.monotonic() + wait
        while clock.real.monotonic() < deadline:
            if not _running(pid):
                path.unlink(missing_ok=True)
                return pid
            _blocking_pause(0.05)
    raise errors.Unavailable(
        f"pid {pid} ({what}) from an earlier run still holds {path.parent} and did not"
        " stop on SIGKILL; stop it by hand"
    )


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie, exited but not reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _blocking_pause(seconds: float) -> None:
    # Start-up polling happens before any event loop runs; a short blocking pause is right.
    import time as _time

    _time.sleep(seconds)
