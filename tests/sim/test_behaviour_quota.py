"""ResourceQuota admission behaves exactly like the Kubernetes quota plugin."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from clusters.sim.api_errors import ApiError
from tests.sim.behaviour_support import (
    DEPLOYMENT,
    POD,
    QUOTA,
    ManualCluster,
    api_client,
    cluster_profile,
    container,
    deployment_body,
    eventually,
    pod_body,
    pool,
    running_cluster,
)

GPUS = cluster_profile("q", pool("gpu", count=2, cpu="64", memory="256Gi", gpus=8))


def quota_body(name: str, hard: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"hard": hard}}


async def test_pod_over_gpu_quota_gets_the_exact_upstream_403() -> None:
    async with running_cluster(GPUS) as member, api_client(member.url) as api:
        core = client.CoreV1Api(api)
        await core.create_namespaced_resource_quota(
            "default", quota_body("team-a", {"requests.nvidia.com/gpu": "8", "pods": "10"})
        )
        for i in range(4):
            await core.create_namespaced_pod(
                "default", pod_body(f"ok-{i}", container(limits={"nvidia.com/gpu": "2"}))
            )
        with pytest.raises(ApiException) as caught:
            await core.create_namespaced_pod(
                "default", pod_body("over", container(limits={"nvidia.com/gpu": "2"}))
            )
        assert caught.value.status == 403
        body = json.loads(caught.value.body)
        assert body["reason"] == "Forbidden"
        assert body["message"] == (
            'pods "over" is forbidden: exceeded quota: team-a, requested: '
            "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=8, "
            "limited: requests.nvidia.com/gpu=8"
        )
        assert body["details"] == {"name": "over", "group": "", "kind": "pods"}

        async def used() -> Any:
            q = await core.read_namespaced_resource_quota("team-a", "default")
            return q.status if q.status and q.status.used else None

        status = await eventually(used)
        assert status.hard == {"requests.nvidia.com/gpu": "8", "pods": "10"}
        assert status.used == {"requests.nvidia.com/gpu": "8", "pods": "4"}


@pytest.mark.parametrize(
    ("hard", "pod", "message"),
    [
        pytest.param(
            {"requests.cpu": "1", "requests.memory": "1Gi"},
            pod_body(
                "p",
                container(requests={"cpu": "800m", "memory": "512Mi"}),
                container("side", requests={"cpu": "300m", "memory": "256Mi"}),
            ),
            'pods "p" is forbidden: exceeded quota: q, requested: requests.cpu=1100m, '
            "used: requests.cpu=0, limited: requests.cpu=1",
            id="only the exceeded resource is listed, in upstream notation",
        ),
        pytest.param(
            {"cpu": "4", "limits.memory": "8Gi"},
            pod_body("p", container("app", requests={"cpu": "1"}), container("log")),
            'pods "p" is forbidden: failed quota: q: must specify cpu for: log; '
            "limits.memory for: app,log",
            id="a constrained compute resource must be stated by every container",
        ),
        pytest.param(
            {"pods": "0"},
            pod_body("p"),
            'pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, '
            "limited: pods=0",
            id="pod count",
        ),
        pytest.param(
            {"nvidia.com/gpu": "1"},
            pod_body("p", container(limits={"nvidia.com/gpu": "4"})),
            None,
            id="extended resources only count under requests., so this quota never applies",
        ),
        pytest.param(
            {"requests.huawei.com/Ascend910": "8", "requests.nvidia.com/gpu": "1"},
            pod_body("p", container(limits={"huawei.com/Ascend910": "16", "nvidia.com/gpu": "2"})),
            'pods "p" is forbidden: exceeded quota: q, requested: '
            "requests.huawei.com/Ascend910=16,requests.nvidia.com/gpu=2, used: "
            "requests.huawei.com/Ascend910=0,requests.nvidia.com/gpu=0, limited: "
            "requests.huawei.com/Ascend910=8,requests.nvidia.com/gpu=1",
            id="several exceeded resources are sorted and comma-joined",
        ),
    ],
)
async def test_quota_admission_rules(
    hard: dict[str, str], pod: dict[str, Any], message: str | None
) -> None:
    async with ManualCluster(GPUS) as sim:
        sim.store.create(QUOTA, quota_body("q", hard))
        if message is None:
            sim.store.create(POD, pod)
            return
        with pytest.raises(ApiError) as caught:
            sim.store.create(POD, pod)
        assert (caught.value.code, caught.value.reason) == (403, "Forbidden")
        assert caught.value.message == message


async def test_deployment_over_quota_is_accepted_and_shows_replica_failure() -> None:
    async with ManualCluster(GPUS) as sim:
        sim.store.create(QUOTA, quota_body("gpu", {"requests.nvidia.com/gpu": "4"}))
        sim.store.create(
            DEPLOYMENT, deployment_body("trainer", 3, container(limits={"nvidia.com/gpu": "2"}))
        )
        await sim.advance(5)
        dep = sim.get(DEPLOYMENT, "trainer")
        conds = {c["type"]: c for c in dep["status"]["conditions"]}
        failure = conds["ReplicaFailure"]
        assert (failure["status"], failure["reason"]) == ("True", "FailedCreate")
        assert (
            "exceeded quota: gpu, requested: requests.nvidia.com/gpu=2, used: "
            "requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4" in failure["message"]
        )
        assert dep["status"]["availableReplicas"] == 2
        assert conds["Available"]["status"] == "False"
        assert sim.events("FailedCreate")
        assert sim.get(QUOTA, "gpu")["status"]["used"] == {"requests.nvidia.com/gpu": "4"}

        # Raising the quota lets the controller's retry finish the rollout.
        quota = sim.get(QUOTA, "gpu")
        quota["spec"]["hard"]["requests.nvidia.com/gpu"] = "6"
        sim.store.update(QUOTA, quota)
        await sim.advance(15)
        dep = sim.get(DEPLOYMENT, "trainer")
        assert dep["status"]["availableReplicas"] == 3
        assert "ReplicaFailure" not in {c["type"] for c in dep["status"]["conditions"]}


async def test_finished_pods_release_quota() -> None:
    async with ManualCluster(GPUS) as sim:
        sim.store.create(QUOTA, quota_body("gpu", {"requests.nvidia.com/gpu": "8"}))
        job_pod = pod_body("batch", container(limits={"nvidia.com/gpu": "8"}))
        job_pod["metadata"]["annotations"] = {"sim.fedctl.io/duration": "20s"}
        sim.store.create(POD, job_pod)
        await sim.advance(2)
        with pytest.raises(ApiError):
            sim.store.create(POD, pod_body("next", container(limits={"nvidia.com/gpu": "8"})))
        await sim.advance(25)
        assert sim.get(POD, "batch")["status"]["phase"] == "Succeeded"
        assert sim.get(QUOTA, "gpu")["status"]["used"] == {"requests.nvidia.com/gpu": "0"}
        sim.store.create(POD, pod_body("next", container(limits={"nvidia.com/gpu": "8"})))


async def test_object_count_quota_blocks_the_deployment_itself() -> None:
    async with ManualCluster(GPUS) as sim:
        sim.store.create(QUOTA, quota_body("count", {"count/deployments.apps": "1"}))
        sim.store.create(DEPLOYMENT, deployment_body("one", 1))
        with pytest.raises(ApiError) as caught:
            sim.store.create(DEPLOYMENT, deployment_body("two", 1))
        assert caught.value.message == (
            'deployments.apps "two" is forbidden: exceeded quota: count, requested: '
            "count/deployments.apps=1, used: count/deployments.apps=1, "
            "limited: count/deployments.apps=1"
        )
