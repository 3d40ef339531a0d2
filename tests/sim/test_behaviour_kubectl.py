"""kubectl sees workloads progress on a simulated cluster as it would on a real one."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clusters.sim import kubeconfig
from clusters.sim.cluster import SimCluster
from tests.sim.behaviour_support import (
    DEPLOYMENT,
    JOB,
    POD,
    cluster_profile,
    container,
    deployment_body,
    job_body,
    pool,
    running_cluster,
)

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")

PROFILE = cluster_profile(
    "k",
    pool("cpu", count=2, cpu="8", memory="32Gi"),
    pool(
        "npu",
        count=1,
        arch="arm64",
        cpu="192",
        memory="1536Gi",
        gpus=8,
        resource="huawei.com/Ascend910",
        model="ascend-910b",
    ),
)


@dataclass
class Kubectl:
    member: SimCluster
    home: Path
    config: Path

    async def __call__(self, *args: str, timeout: float = 30) -> tuple[int, str]:
        assert KUBECTL is not None
        proc = await asyncio.create_subprocess_exec(
            KUBECTL,
            "--kubeconfig",
            str(self.config),
            "--cache-dir",
            str(self.home / "cache"),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={"HOME": str(self.home), "PATH": "/usr/local/bin:/usr/bin:/bin"},
        )
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        return proc.returncode or 0, out.decode()


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with running_cluster(PROFILE, speed=20) as member:
        config = kubeconfig.write_kubeconfig(tmp_path / "kubeconfig", {"k": member.url})
        (tmp_path / "home").mkdir()
        yield Kubectl(member, tmp_path / "home", config)


async def test_rollout_status_waits_for_the_deployment(kubectl: Kubectl) -> None:
    kubectl.member.store.create(DEPLOYMENT, deployment_body("web", 3))
    code, out = await kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert code == 0, out
    assert 'deployment "web" successfully rolled out' in out
    code, out = await kubectl("get", "deploy", "web", "--no-headers")
    assert out.split()[:4] == ["web", "3/3", "3", "3"], out


async def test_wait_for_job_complete(kubectl: Kubectl) -> None:
    kubectl.member.store.create(JOB, job_body("x", completions=2, parallelism=2, duration="20s"))
    code, out = await kubectl("wait", "--for=condition=Complete", "job/x", "--timeout=20s")
    assert code == 0, out
    assert "job.batch/x condition met" in out
    code, out = await kubectl("get", "job", "x", "--no-headers")
    assert out.split()[1:3] == ["Complete", "2/2"], out


async def test_describe_node_shows_npus_under_capacity(kubectl: Kubectl) -> None:
    kubectl.member.store.create(
        POD,
        {
            "metadata": {"name": "npu", "namespace": "default"},
            "spec": {"containers": [container(limits={"huawei.com/Ascend910": "4"})]},
        },
    )
    code, out = await kubectl("describe", "node", "k-npu-0")
    assert code == 0, out
    capacity = out.split("Capacity:")[1].split("Allocatable:")[0]
    assert "huawei.com/Ascend910:  8" in capacity
    code, out = await kubectl("get", "nodes", "-L", "kubernetes.io/arch", "--no-headers")
    rows = sorted(line.split() for line in out.strip().splitlines())
    assert [(r[0], r[1], r[-1]) for r in rows] == [
        ("k-cpu-0", "Ready", "amd64"),
        ("k-cpu-1", "Ready", "amd64"),
        ("k-npu-0", "Ready", "arm64"),
    ]
