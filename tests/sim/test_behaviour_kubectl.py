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
    REPLICASET,
    STATEFULSET,
    cluster_profile,
    container,
    deployment_body,
    eventually,
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


def _revisions(kubectl: Kubectl) -> dict[str, str]:
    items, _ = kubectl.member.store.list(REPLICASET, "default")
    return {
        r["spec"]["template"]["spec"]["containers"][0]["image"]: r["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"
        ]
        for r in items
    }


async def test_rollout_undo_reuses_the_old_replicaset_and_keeps_annotations(
    kubectl: Kubectl,
) -> None:
    """A plain Deployment's undo failed (no annotations to replace) and an annotated one
    lost its annotations and got a third ReplicaSet."""
    body = deployment_body("web", 2, image="nginx:1.26")
    body["metadata"]["annotations"] = {"team": "storefront"}
    kubectl.member.store.create(DEPLOYMENT, body)
    code, out = await kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert code == 0, out
    code, out = await kubectl("set", "image", "deployment/web", "web=nginx:1.27")
    assert code == 0, out
    code, out = await kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert code == 0, out
    assert _revisions(kubectl) == {"nginx:1.26": "1", "nginx:1.27": "2"}

    code, out = await kubectl("rollout", "undo", "deployment/web")
    assert code == 0, out
    assert "deployment.apps/web rolled back" in out
    await eventually(lambda: _revisions(kubectl) == {"nginx:1.26": "3", "nginx:1.27": "2"})
    dep = kubectl.member.store.get(DEPLOYMENT, "default", "web")
    assert dep["metadata"]["annotations"]["team"] == "storefront"
    await eventually(
        lambda: (
            kubectl.member.store.get(DEPLOYMENT, "default", "web")["metadata"]["annotations"].get(
                "deployment.kubernetes.io/revision"
            )
            == "3"
        )
    )
    code, out = await kubectl("rollout", "history", "deployment/web")
    assert code == 0, out
    assert [line.split()[0] for line in out.strip().splitlines()[2:]] == ["2", "3"]


async def test_rollout_status_of_a_statefulset(kubectl: Kubectl) -> None:
    """It said `rollout status is only available for RollingUpdate strategy type`: the
    strategy was not defaulted."""
    body = deployment_body("db", 2)
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = "db"
    kubectl.member.store.create(STATEFULSET, body)
    code, out = await kubectl("rollout", "status", "statefulset/db", "--timeout=20s")
    assert code == 0, out
    assert "partitioned roll out complete: 2 new pods have been updated..." in out
