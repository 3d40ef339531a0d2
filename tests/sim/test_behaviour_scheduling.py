"""A simulated cluster places pods the way kube-scheduler does, or says why it cannot."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from clusters.sim import scheduler
from tests.sim.behaviour_support import (
    NODE,
    POD,
    ManualCluster,
    api_client,
    cluster_profile,
    container,
    eventually,
    pod_body,
    pool,
    running_cluster,
)

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _arch_affinity(arch: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


MIXED = cluster_profile(
    "mixed",
    pool("x86", count=2, arch="amd64", cpu="4", memory="16Gi"),
    pool("arm", count=1, arch="arm64", cpu="4", memory="16Gi"),
    pool("gpu", count=1, arch="amd64", cpu="16", memory="64Gi", gpus=4, taints=[GPU_TAINT]),
)


@pytest.mark.parametrize(
    ("body", "node_prefix", "message"),
    [
        pytest.param(
            pod_body("arm", container(requests={"cpu": "1"}), affinity=_arch_affinity("arm64")),
            "mixed-arm-",
            None,
            id="required arch affinity arm64 lands on the Arm node",
        ),
        pytest.param(
            pod_body(
                "sel",
                container(requests={"cpu": "1"}),
                nodeSelector={"kubernetes.io/arch": "amd64", "fedctl.io/node-pool": "x86"},
            ),
            "mixed-x86-",
            None,
            id="nodeSelector picks the x86 pool",
        ),
        pytest.param(
            pod_body("gpu", container(limits={"nvidia.com/gpu": "2"}), tolerations=TOLERATE_GPU),
            "mixed-gpu-",
            None,
            id="GPU pod that tolerates the GPU taint goes to the GPU node",
        ),
        pytest.param(
            pod_body("untolerated", container(limits={"nvidia.com/gpu": "2"})),
            None,
            "0/4 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
            "3 Insufficient nvidia.com/gpu.",
            id="GPU pod without the toleration stays Pending and says why per node",
        ),
        pytest.param(
            pod_body("huge", container(requests={"cpu": "12"}), affinity=_arch_affinity("arm64")),
            None,
            "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
            "{nvidia.com/gpu: present}, 2 node(s) didn't match Pod's node affinity/selector.",
            id="arm pod too big for the Arm node",
        ),
        pytest.param(
            pod_body("s390x", affinity=_arch_affinity("s390x")),
            None,
            "0/4 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
            "3 node(s) didn't match Pod's node affinity/selector.",
            id="no node of the requested arch",
        ),
    ],
)
async def test_pods_land_only_on_nodes_with_room_and_the_right_arch(
    body: dict[str, Any], node_prefix: str | None, message: str | None
) -> None:
    async with ManualCluster(MIXED) as sim:
        sim.store.create(POD, body)
        await sim.advance(3)
        pod = sim.get(POD, body["metadata"]["name"])
        if node_prefix is not None:
            assert pod["spec"]["nodeName"].startswith(node_prefix)
            assert pod["status"]["phase"] == "Running"
        else:
            assert "nodeName" not in pod["spec"]
            assert pod["status"]["phase"] == "Pending"
            cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
            assert (cond["status"], cond["reason"], cond["message"]) == (
                "False",
                "Unschedulable",
                message,
            )
            [event] = sim.events("FailedScheduling")
            assert event["message"] == message
            assert event["type"] == "Warning"


async def test_eight_gpu_pod_stays_pending_when_sixteen_are_free_on_four_nodes() -> None:
    """Total free GPUs are not enough: one node must hold the whole pod (HTTP path)."""
    prof = cluster_profile("gpu4", pool("gpu", count=4, cpu="32", memory="128Gi", gpus=4))
    async with running_cluster(prof) as member, api_client(member.url) as api:
        core = client.CoreV1Api(api)
        await core.create_namespaced_pod(
            "default", pod_body("two", container(limits={"nvidia.com/gpu": "2"}))
        )
        await core.create_namespaced_pod(
            "default", pod_body("eight", container(limits={"nvidia.com/gpu": "8"}))
        )

        async def scheduled() -> Any:
            pod = await core.read_namespaced_pod("eight", "default")
            conds = {c.type: c for c in pod.status.conditions or ()}
            return pod if "PodScheduled" in conds else None

        pod = await eventually(scheduled)
        cond = next(c for c in pod.status.conditions if c.type == "PodScheduled")
        assert pod.status.phase == "Pending"
        assert pod.spec.node_name is None
        assert cond.reason == "Unschedulable"
        assert cond.message == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
        events = await core.list_namespaced_event(
            "default", field_selector="involvedObject.name=eight"
        )
        assert [e.reason for e in events.items] == ["FailedScheduling"]
        small = await core.read_namespaced_pod("two", "default")
        assert small.spec.node_name is not None  # 14 GPUs are still free in total


async def test_pending_pod_is_scheduled_once_a_finished_pod_frees_its_node() -> None:
    prof = cluster_profile("one", pool("gpu", count=1, cpu="32", memory="128Gi", gpus=8))
    async with ManualCluster(prof) as sim:
        sim.store.create(
            POD,
            {
                **pod_body("first", container(limits={"nvidia.com/gpu": "8"})),
                "metadata": {
                    "name": "first",
                    "namespace": "default",
                    "annotations": {"sim.fedctl.io/duration": "60s"},
                },
            },
        )
        await sim.advance(1)
        sim.store.create(POD, pod_body("second", container(limits={"nvidia.com/gpu": "4"})))
        await sim.advance(10)
        assert sim.get(POD, "second")["status"]["phase"] == "Pending"
        await sim.advance(60)
        assert sim.get(POD, "first")["status"]["phase"] == "Succeeded"
        assert sim.get(POD, "second")["spec"]["nodeName"] == "one-gpu-0"


async def test_cordoned_node_takes_no_new_pods() -> None:
    prof = cluster_profile("c", pool("cpu", count=2))
    async with ManualCluster(prof) as sim:
        node = sim.store.get(NODE, None, "c-cpu-0")
        node["spec"]["unschedulable"] = True
        sim.store.update(NODE, node)
        for i in range(4):
            sim.store.create(POD, pod_body(f"p{i}"))
        await sim.advance(3)
        placed = {sim.get(POD, f"p{i}")["spec"]["nodeName"] for i in range(4)}
        assert placed == {"c-cpu-1"}


async def test_a_pod_kept_off_accelerators_skips_untainted_l4_nodes_or_waits() -> None:
    """Required node affinity `NotIn` (what fedctl gives a pod that asks for no device)
    passes nodes without the label and refuses the accelerator's, as kube-scheduler does:
    the CPU pods fill the CPU node, then wait rather than take the free L4 nodes."""
    prof = cluster_profile(
        "l4",
        pool("l4", count=2, cpu="48", memory="192Gi", gpus=4, model="nvidia-l4"),
        pool("cpu", count=1, cpu="4", memory="16Gi"),
    )
    away = {"key": "fedctl.io/accelerator", "operator": "NotIn", "values": ["nvidia-l4"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [away]}]
            }
        }
    }
    async with ManualCluster(prof) as sim:
        for i in range(3):
            body = pod_body(f"p{i}", container(requests={"cpu": "2"}), affinity=affinity)
            sim.store.create(POD, body)
        await sim.advance(3)
        pods = [sim.get(POD, f"p{i}") for i in range(3)]
        assert sorted(p["spec"].get("nodeName", "-") for p in pods) == ["-", "l4-cpu-0", "l4-cpu-0"]
        [waiting] = [p for p in pods if "nodeName" not in p["spec"]]
        cond = next(c for c in waiting["status"]["conditions"] if c["type"] == "PodScheduled")
        assert cond["message"] == (
            "0/3 nodes are available: 1 Insufficient cpu,"
            " 2 node(s) didn't match Pod's node affinity/selector."
        )


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            pod_body(
                "p",
                container(requests={"cpu": "500m", "memory": "1Gi"}),
                container("b", requests={"cpu": "0.25"}),
            ),
            {"cpu": 750, "memory": 1024**3 * 1000},
            id="containers add up, in milli-units",
        ),
        pytest.param(
            pod_body("p", container(limits={"nvidia.com/gpu": "2", "cpu": "1"})),
            {"cpu": 1000, "nvidia.com/gpu": 2000},
            id="a limit alone is the request",
        ),
        pytest.param(
            pod_body(
                "p",
                container(requests={"cpu": "1"}),
                initContainers=[container("init", requests={"cpu": "3"})],
            ),
            {"cpu": 3000},
            id="the largest init container wins over the sum",
        ),
    ],
)
def test_pod_requests(pod: dict[str, Any], expected: dict[str, int]) -> None:
    assert scheduler.pod_requests(pod) == expected


@pytest.mark.parametrize(
    ("tolerations", "taint", "tolerated"),
    [
        pytest.param(
            [{"key": "k", "operator": "Equal", "value": "v"}],
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            True,
            id="equal",
        ),
        pytest.param(
            [{"key": "k", "value": "other"}],
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            False,
            id="wrong value",
        ),
        pytest.param(
            [{"operator": "Exists"}],
            {"key": "k", "value": "v", "effect": "NoExecute"},
            True,
            id="empty key with Exists tolerates everything",
        ),
        pytest.param(
            [{"key": "k", "operator": "Exists", "effect": "NoExecute"}],
            {"key": "k", "effect": "NoSchedule"},
            False,
            id="effect must match",
        ),
    ],
)
def test_tolerations(
    tolerations: list[dict[str, Any]], taint: dict[str, Any], tolerated: bool
) -> None:
    assert scheduler.tolerates(tolerations, taint) is tolerated
