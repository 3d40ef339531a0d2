"""`fedctl controller` as a process and the CLI commands that talk to it."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from federation.registry import embedded
from federation.registry.etcd import EtcdStore
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"


def fedctl(*args: str, server: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    if server:
        env["FEDCTL_SERVER"] = server
    return subprocess.run(
        [sys.executable, "-m", "federation.cli.main", *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


@pytest.fixture
def controller(etcd_server: embedded.EmbeddedEtcd) -> Iterator[str]:
    async def clean() -> None:
        store = EtcdStore(etcd_settings(etcd_server.url))
        await store.connect()
        await wipe(store)
        await store.close()

    asyncio.run(clean())
    port = embedded.free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "federation.cli.main", "--etcd", etcd_server.url,
         "controller", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as resp:
                if resp.status == 200:
                    break
        except OSError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                output = proc.stdout.read() if proc.stdout else ""
                raise AssertionError(f"controller did not become ready: {output}") from exc
            time.sleep(0.1)
    yield url
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=15) == 0
    if proc.stdout:
        proc.stdout.close()


def test_apply_examples_twice_second_time_unchanged(controller: str) -> None:
    first = fedctl("apply", "-f", str(EXAMPLES), server=controller)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines and all(line.endswith(" created") for line in lines)
    assert "queue.fedctl.io/ml-research created" in lines
    second = fedctl("apply", "-f", str(EXAMPLES), server=controller)
    assert second.returncode == 0, second.stderr
    assert len(second.stdout.splitlines()) == len(lines)
    assert all(line.endswith(" unchanged") for line in second.stdout.splitlines())


def test_get_diff_and_delete(controller: str, tmp_path: Path) -> None:
    assert fedctl("apply", "-f", str(EXAMPLES / "queues.yaml"), server=controller).returncode == 0
    listed = fedctl("get", "queues", server=controller)
    assert listed.returncode == 0 and "ml-research" in listed.stdout
    table = [line.split() for line in listed.stdout.splitlines()]
    assert table[0] == [
        "NAME", "PARENT", "WEIGHT", "PRIORITY", "ADMITTED", "PENDING", "SHARE", "AGE"
    ]  # fmt: skip
    assert ["ml-research", "ml", "1", "0", "0", "0"] in [row[:6] for row in table]
    unchanged = fedctl("diff", "-f", str(EXAMPLES / "queues.yaml"), server=controller)
    assert unchanged.returncode == 0 and unchanged.stdout == ""
    edited = tmp_path / "queues.yaml"
    shutil.copy(EXAMPLES / "queues.yaml", edited)
    text = edited.read_text()
    edited.write_text(text.replace("weight: 2", "weight: 7", 1))
    assert text != edited.read_text(), "the example should contain 'weight: 2'"
    changed = fedctl("diff", "-f", str(edited), server=controller)
    assert changed.returncode == 1 and "+  weight: 7" in changed.stdout
    as_yaml = fedctl("get", "queue", "ml-research", "-o", "yaml", server=controller)
    assert "kind: Queue" in as_yaml.stdout
    gone = fedctl("delete", "queue", "ml-research", server=controller)
    assert gone.returncode == 0 and "deleted" in gone.stdout
    missing = fedctl("get", "queue", "ml-research", server=controller)
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_invalid_file_applies_nothing_and_names_the_line(controller: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata:\n  name: ok\nspec:\n  weight: 1\n"
        "---\napiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata:\n  name: broken\n"
        "spec:\n  weigth: 1\n"
    )
    result = fedctl("apply", "-f", str(bad), server=controller)
    assert result.returncode == 1
    assert f"{bad}:13:3: spec.weigth" in result.stderr
    assert "nothing was applied" in result.stderr
    assert "ok" not in fedctl("get", "queues", server=controller).stdout


def test_missing_controller_is_one_clear_line() -> None:
    port = embedded.free_port()
    result = fedctl("get", "clusters", server=f"http://127.0.0.1:{port}")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert f"no fedctl controller at http://127.0.0.1:{port}" in result.stderr


def test_apply_counts_the_chips_the_server_defines(controller: str, tmp_path: Path) -> None:
    """A file of workloads alone names the fleet's chips: the server's AcceleratorProfiles
    and clusters define them, so applying it there says nothing of them."""
    job = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: ml
  annotations:
    fedctl.io/chips: {chip}
spec:
  template:
    spec:
      containers: [{{name: a, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
"""
    known, unknown = tmp_path / "known.yaml", tmp_path / "unknown.yaml"
    known.write_text(job.format(name="known", chip="nvidia-l4"))
    unknown.write_text(job.format(name="unknown", chip="nvidia-l40"))
    offline = fedctl("validate", "-f", str(known))
    assert "chip 'nvidia-l4' is not defined" in offline.stdout + offline.stderr

    accelerators = str(EXAMPLES / "accelerators.yaml")
    assert fedctl("apply", "-f", accelerators, server=controller).returncode == 0
    quiet = fedctl("apply", "-f", str(known), server=controller)
    assert quiet.returncode == 0, quiet.stderr
    assert "job.batch/known created" in quiet.stdout
    assert "nvidia-l4" not in quiet.stderr
    loud = fedctl("apply", "-f", str(unknown), server=controller)
    assert loud.returncode == 0, loud.stderr
    assert (
        f"{unknown}:7:22: metadata.annotations[\"fedctl.io/chips\"]: warning: chip 'nvidia-l40'"
        " is not defined by any AcceleratorProfile or Cluster in the loaded documents or on"
        " the server (did you mean 'nvidia-l4'?)"
    ) in loud.stderr


def test_apply_warns_of_a_cluster_the_server_has_not_joined(
    controller: str, tmp_path: Path
) -> None:
    """A policy naming a member by a misspelt name places nothing there and fails nowhere
    else: `apply` says so at the name, against the server's Clusters. With no cluster
    joined yet there is nothing to compare with, and nothing is said."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: cart, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: cart}]
  placement:
    clusterAffinity:
      clusterNames: [us-east-cpuu, eu-west-arm]
"""
    )
    early = fedctl("apply", "-f", str(policy), server=controller)
    assert early.returncode == 0, early.stderr
    assert "not joined" not in early.stderr
    assert fedctl("apply", "-f", str(EXAMPLES / "clusters.yaml"), server=controller).returncode == 0
    late = fedctl("apply", "-f", str(policy), server=controller)
    assert late.returncode == 0, late.stderr
    assert (
        f"{policy}:8:22: spec.placement.clusterAffinity.clusterNames[0]: warning: cluster"
        " 'us-east-cpuu' is not joined (did you mean 'us-east-cpu'?): nothing is placed there,"
        " or taken from there, until a cluster of that name joins"
    ) in late.stderr
    assert "eu-west-arm" not in late.stderr
