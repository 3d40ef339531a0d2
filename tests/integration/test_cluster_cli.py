"""`fedctl cluster ...` end to end: a simulated fleet and a controller, as processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from federation.registry import embedded
from tests.integration.test_cli_api import fedctl

pytestmark = pytest.mark.integration

PROFILE = """
clusters:
  - name: x86
    region: us-east
    nodePools: [{name: cpu, count: 3, cpu: "16", memory: 64Gi}]
  - name: arm
    region: eu-west
    nodePools: [{name: c7g, count: 2, arch: arm64, cpu: "16", memory: 32Gi}]
  - name: gpu
    region: us-west
    nodePools:
      - {name: system, count: 1, cpu: "8", memory: 32Gi}
      - name: a100
        count: 2
        cpu: "96"
        memory: 1152Gi
        accelerators:
          - {model: nvidia-a100-80gb, resourceName: nvidia.com/gpu, countPerNode: 8}
"""


def _wait_http(url: str, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{url} never answered")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def stack(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    profile = tmp_path / "fleet.yaml"
    profile.write_text(PROFILE)
    kubeconfig = tmp_path / "fleet.kubeconfig"
    log = (tmp_path / "procs.log").open("w")
    fleet = subprocess.Popen(
        [sys.executable, "-m", "federation.cli.main", "sim", "up", "--profile", str(profile),
         "--kubeconfig", str(kubeconfig)],
        stdout=log, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    state = kubeconfig.with_name(kubeconfig.name + ".fleet.json")
    deadline = time.monotonic() + 30
    while not state.exists():
        assert fleet.poll() is None and time.monotonic() < deadline, "fleet did not start"
        time.sleep(0.1)
    port = embedded.free_port()
    env = {**os.environ, "FEDCTL_MONITOR__PROBE_PERIOD": "0.3",
           "FEDCTL_MONITOR__FAILURE_THRESHOLD": "1"}  # fmt: skip
    controller = subprocess.Popen(
        [sys.executable, "-m", "federation.cli.main", "--etcd", own_etcd.url, "controller",
         "--listen", f"127.0.0.1:{port}", "--kubeconfig", str(kubeconfig)],
        stdout=log, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    server = f"http://127.0.0.1:{port}"
    try:
        _wait_http(server + "/readyz", controller)
        yield server, kubeconfig
    finally:
        _stop(controller)
        _stop(fleet)
        log.close()


def _join(server: str, kubeconfig: Path, name: str, region: str, *extra: str) -> str:
    result = fedctl("cluster", "join", name, "--kubeconfig", str(kubeconfig), "--context", name,
                    "--region", region, *extra, server=server)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_join_three_members_and_list_capacity_by_chip(stack: tuple[str, Path]) -> None:
    server, kubeconfig = stack
    assert "reachable, Kubernetes v1.32" in _join(server, kubeconfig, "x86", "us-east")
    _join(server, kubeconfig, "arm", "eu-west")
    out = _join(server, kubeconfig, "gpu", "us-west", "--price", "nvidia-a100-80gb=3.1",
                "--price", "cpu=0.04")  # fmt: skip
    assert "cluster gpu joined" in out
    deadline = time.monotonic() + 30
    while True:
        listing = fedctl("cluster", "list", server=server)
        assert listing.returncode == 0, listing.stderr
        rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:]}
        if len(rows) == 3 and all(" True " in f" {r} " for r in rows.values()):
            break
        assert time.monotonic() < deadline, listing.stdout
        time.sleep(0.3)
    header = listing.stdout.splitlines()[0]
    assert header.split()[:2] == ["NAME", "REGION"]
    assert "nvidia-a100-80gb" in rows["gpu"] and "16/16" in rows["gpu"]
    assert "arm64" in rows["arm"] and "32/32" in rows["arm"]
    assert "amd64" in rows["x86"] and "48/48" in rows["x86"]
    described = fedctl("cluster", "describe", "gpu", server=server)
    assert described.returncode == 0 and "nvidia-a100-80gb" in described.stdout


def test_join_refuses_an_unreachable_member_with_the_reason(
    stack: tuple[str, Path], tmp_path: Path
) -> None:
    server, kubeconfig = stack
    doc = json.loads(json.dumps(_yaml(kubeconfig)))
    port = embedded.free_port()
    for entry in doc["clusters"]:
        entry["cluster"]["server"] = f"http://127.0.0.1:{port}"
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text(json.dumps(doc))
    result = fedctl("cluster", "join", "x86", "--kubeconfig", str(broken), "--context", "x86",
                    "--region", "us-east", server=server)  # fmt: skip
    assert result.returncode == 1
    assert "not reachable" in result.stderr and f"127.0.0.1:{port}" in result.stderr
    assert "x86" not in fedctl("cluster", "list", server=server).stdout


def test_taint_cordon_uncordon_and_unjoin(stack: tuple[str, Path]) -> None:
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east", "--no-verify")
    assert fedctl("cluster", "taint", "x86", "gpu=none:NoSchedule", server=server).returncode == 0
    assert fedctl("cluster", "cordon", "x86", server=server).returncode == 0
    got = json.loads(fedctl("get", "cluster", "x86", "-o", "json", server=server).stdout)
    keys = {(t["key"], t["effect"]) for t in got["spec"]["taints"]}
    assert keys == {("gpu", "NoSchedule"), ("cluster.fedctl.io/cordoned", "NoSchedule")}
    assert fedctl("cluster", "uncordon", "x86", server=server).returncode == 0
    assert fedctl("cluster", "taint", "x86", "gpu-", server=server).returncode == 0
    got = json.loads(fedctl("get", "cluster", "x86", "-o", "json", server=server).stdout)
    assert got["spec"].get("taints", []) == []
    bad = fedctl("cluster", "taint", "x86", "oops:Sometimes", server=server)
    assert bad.returncode == 1 and "EFFECT one of" in bad.stderr
    assert fedctl("cluster", "unjoin", "x86", server=server).returncode == 0
    assert fedctl("get", "cluster", "x86", server=server).returncode == 1


def _yaml(path: Path) -> dict[str, object]:
    from ruamel.yaml import YAML

    loaded: dict[str, object] = YAML(typ="safe").load(path.read_text())
    return loaded
