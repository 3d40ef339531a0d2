"""Capacity per node flavor: what counts, what pods hold, and the largest pod that fits."""

from __future__ import annotations

from typing import Any

import pytest

from federation.monitor import capacity
from federation.resources import ResourceList
from policies.models.cluster import FREE_NODE_GROUPS
from tests.unit.monitor.kube_objects import node, pod

GPU8 = {"nvidia.com/gpu": "8"}


def wire(resources: ResourceList) -> dict[str, str]:
    return resources.to_wire()


@pytest.mark.parametrize(
    ("labels", "resource", "model"),
    [
        pytest.param(
            {"fedctl.io/accelerator": "nvidia-a100-80gb", "nvidia.com/gpu.product": "X"},
            "nvidia.com/gpu",
            "nvidia-a100-80gb",
            id="fedctl label wins over the product label",
        ),
        pytest.param(
            {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            "nvidia.com/gpu",
            "nvidia-a100-80gb",
            id="GPU feature discovery product loses its form factor",
        ),
        pytest.param(
            {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"},
            "nvidia.com/gpu",
            "nvidia-v100-16gb",
            id="old Tesla product names get the vendor prefix",
        ),
        pytest.param(
            {"accelerator/huawei-npu": "ascend-910b"},
            "huawei.com/Ascend910",
            "ascend-910b",
            id="Huawei CCE NPU label",
        ),
        pytest.param({}, "huawei.com/Ascend910", "ascend-910", id="Ascend without labels"),
        pytest.param({}, "nvidia.com/gpu", "nvidia-gpu", id="NVIDIA without labels"),
        pytest.param(
            {"fedctl.io/accelerator": "!!", "nvidia.com/gpu.product": "NVIDIA-L4"},
            "nvidia.com/gpu",
            "nvidia-l4",
            id="an unusable label value falls through to the next label",
        ),
    ],
)
def test_accelerator_model(labels: dict[str, str], resource: str, model: str) -> None:
    assert capacity.accelerator_model(labels, resource) == model


@pytest.mark.parametrize(
    ("obj", "counts"),
    [
        pytest.param(node("n"), True, id="ready schedulable node counts"),
        pytest.param(node("n", ready=False), False, id="NotReady node does not count"),
        pytest.param(node("n", unschedulable=True), False, id="cordoned node does not count"),
        pytest.param(node("n", arch="riscv64"), False, id="unknown arch does not count"),
    ],
)
def test_which_nodes_count(obj: dict[str, Any], counts: bool) -> None:
    assert capacity.node_shape(obj).counts is counts


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            pod("p", node_name="n", requests={"cpu": "2", "memory": "1Gi"}),
            {"cpu": "2", "memory": "1Gi", "pods": "1"},
            id="container requests plus one pod slot",
        ),
        pytest.param(
            pod("p", node_name="n", limits={"nvidia.com/gpu": "4"}),
            {"nvidia.com/gpu": "4", "pods": "1"},
            id="a device limit alone is the request",
        ),
        pytest.param(
            pod("p", node_name="n", requests={"cpu": "1"}, init={"cpu": "3"}),
            {"cpu": "3", "pods": "1"},
            id="a larger init container sets the request",
        ),
    ],
)
def test_pod_requests(obj: dict[str, Any], expected: dict[str, str]) -> None:
    assert wire(capacity.pod_requests(obj)) == expected


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(pod("p", node_name="n"), "n", id="running pod holds its node"),
        pytest.param(pod("p", node_name=None, phase="Pending"), None, id="unscheduled pod"),
        pytest.param(pod("p", node_name="n", phase="Succeeded"), None, id="finished pod"),
        pytest.param(pod("p", node_name="n", phase="Failed"), None, id="failed pod"),
    ],
)
def test_pod_node(obj: dict[str, Any], expected: str | None) -> None:
    assert capacity.pod_node(obj) == expected


def test_flavors_group_identical_nodes_and_count_only_ready_ones() -> None:
    nodes = [
        node("cpu-0"),
        node("cpu-1"),
        node("arm-0", arch="arm64", memory="32Gi"),
        node("gpu-0", cpu="96", memory="1152Gi", devices=GPU8),
        node("gpu-1", cpu="96", memory="1152Gi", devices=GPU8),
        node("gpu-2", cpu="96", memory="1152Gi", devices=GPU8, ready=False),
    ]
    cap = capacity.summarize(nodes, [])
    got = [(f.arch, f.accelerator_model, f.node_count) for f in cap.flavors]
    assert got == [("amd64", None, 2), ("amd64", "nvidia-gpu", 2), ("arm64", None, 1)]
    assert cap.nodes == 5
    assert cap.chips() == {"amd64": 2, "nvidia-gpu": 16, "arm64": 1}
    assert cap.totals.allocatable.amount("nvidia.com/gpu") == 16_000
    assert cap.totals.allocatable.amount("cpu") == (16 * 2 + 16 + 96 * 2) * 1000


def test_largest_free_is_the_emptiest_node_not_the_sum() -> None:
    """16 free GPUs spread 4 per node cannot host an 8-GPU pod."""
    nodes = [node(f"g{i}", devices=GPU8) for i in range(4)]
    pods = [pod(f"p{i}", node_name=f"g{i}", requests={"nvidia.com/gpu": "4"}) for i in range(4)]
    (flavor,) = capacity.summarize(nodes, pods).flavors
    assert flavor.free.amount("nvidia.com/gpu") == 16_000
    assert flavor.largest_free.amount("nvidia.com/gpu") == 4_000
    assert not flavor.fits(ResourceList.from_wire({"nvidia.com/gpu": "8"}))
    assert flavor.fits(ResourceList.from_wire({"nvidia.com/gpu": "4"}))


def test_index_follows_events_and_reports_only_real_changes() -> None:
    index = capacity.CapacityIndex()
    index.replace_nodes([node("g0", devices=GPU8)])
    index.replace_pods([])
    running = pod("a", node_name="g0", requests={"nvidia.com/gpu": "2"})
    assert index.pod_event("ADDED", running) is True
    assert index.pod_event("MODIFIED", running) is False  # nothing it holds changed
    assert index.summary().totals.free.amount("nvidia.com/gpu") == 6_000
    done = pod("a", node_name="g0", requests={"nvidia.com/gpu": "2"}, phase="Succeeded")
    assert index.pod_event("MODIFIED", done) is True
    assert index.summary().totals.free.amount("nvidia.com/gpu") == 8_000
    assert index.node_event("MODIFIED", node("g0", devices=GPU8)) is False  # heartbeat
    assert index.node_event("MODIFIED", node("g0", devices=GPU8, ready=False)) is True
    assert index.summary().nodes == 0
    assert index.node_event("DELETED", node("g0")) is True
    assert index.summary().flavors == ()


def test_overcommitted_node_shows_zero_free_not_negative() -> None:
    nodes = [node("n", cpu="4")]
    pods = [pod("big", node_name="n", requests={"cpu": "6"})]
    (flavor,) = capacity.summarize(nodes, pods).flavors
    assert flavor.free.amount("cpu") == 0
    assert flavor.requested.amount("cpu") == 6_000


def _cpu_free(flavor: Any) -> list[tuple[int, int]]:
    return [(g.free.amount("cpu"), g.count) for g in flavor.free_nodes]


def test_free_nodes_show_how_the_free_room_is_split() -> None:
    """Five 8-CPU nodes with 3, 0, 3.6, 6.5 and 3.6 CPU requested: 23.3 CPU free in all,
    which holds five 3-CPU pods node by node (1+2+1+0+1), not seven."""
    used = ["3", "0", "3600m", "6500m", "3600m"]
    nodes = [node(f"n{i}", cpu="8") for i in range(5)]
    pods = [
        pod(f"p{i}", node_name=f"n{i}", requests={"cpu": cpu, "memory": "1Gi"})
        for i, cpu in enumerate(used)
    ]
    (flavor,) = capacity.summarize(nodes, pods).flavors
    assert flavor.free.amount("cpu") == 23_300
    assert _cpu_free(flavor) == [(8000, 1), (5000, 1), (4400, 2), (1500, 1)]
    assert sum(g.count for g in flavor.free_nodes) == flavor.node_count
    assert sum(g.free.amount("cpu") // 3000 * g.count for g in flavor.free_nodes) == 5


def test_free_nodes_stay_few_and_never_show_more_room_than_a_node_has() -> None:
    """Forty nodes each with a different amount used: at most `FREE_NODE_GROUPS` groups,
    each showing the least of its nodes' amounts."""
    nodes = [node(f"n{i}", cpu="40") for i in range(40)]
    pods = [pod(f"p{i}", node_name=f"n{i}", requests={"cpu": str(i)}) for i in range(1, 40)]
    (flavor,) = capacity.summarize(nodes, pods).flavors
    assert len(flavor.free_nodes) == FREE_NODE_GROUPS
    assert sum(g.count for g in flavor.free_nodes) == 40
    frees = sorted((40 - i) * 1000 for i in range(40))[::-1]  # each node's free, emptiest first
    seen = 0
    for group in flavor.free_nodes:
        members = frees[seen : seen + group.count]
        assert group.free.amount("cpu") == min(members)
        seen += group.count
