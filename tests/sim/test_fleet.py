"""A fleet starts from a profile and leaves a kubeconfig and state file that clients can use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config
from pydantic import ValidationError

from clusters.sim import kubeconfig, profile
from clusters.sim.fleet import SimFleet, capacity

PROFILES = Path(__file__).resolve().parents[2] / "clusters" / "sim" / "profiles"

SMALL = {
    "clusters": [
        {
            "name": "east",
            "region": "us-east",
            "zone": "us-east-1a",
            "provider": "aws",
            "nodePools": [{"name": "cpu", "count": 2, "cpu": "4", "memory": "16Gi"}],
            "prices": {"onDemand": {"cpuCoreHour": 0.04, "memoryGiBHour": 0.005}},
        },
        {
            "name": "west-gpu",
            "region": "eu-west",
            "kubernetesVersion": "v1.31.4",
            "nodePools": [
                {
                    "name": "h100",
                    "count": 1,
                    "cpu": "96",
                    "memory": "1Ti",
                    "accelerators": [
                        {
                            "model": "nvidia-h100",
                            "resourceName": "nvidia.com/gpu",
                            "countPerNode": 8,
                        }
                    ],
                }
            ],
        },
    ]
}


async def test_fleet_writes_one_context_per_cluster_that_reaches_that_cluster(
    tmp_path: Path,
) -> None:
    fleet = SimFleet(profile.parse(SMALL), speed=50)
    kc = tmp_path / "fleet.kubeconfig"
    await fleet.start()
    try:
        state_file = fleet.write(kc)
        contexts, current = config.list_kube_config_contexts(config_file=str(kc))
        assert [c["name"] for c in contexts] == ["east", "west-gpu"]
        assert current["name"] == "east"
        seen: dict[str, Any] = {}
        for name in ("east", "west-gpu"):
            api = await config.new_client_from_config(config_file=str(kc), context=name)
            async with api:
                nodes = await client.CoreV1Api(api).list_node()
                version = await client.VersionApi(api).get_code()
            seen[name] = (sorted(n.metadata.name for n in nodes.items), version.minor)
        assert seen == {
            "east": (["east-cpu-0", "east-cpu-1"], "32"),
            "west-gpu": (["west-gpu-h100-0"], "31"),
        }
        state = json.loads(state_file.read_text())
        assert state_file == kubeconfig.state_path(kc)
        east = state["clusters"]["east"]
        assert east["url"] == fleet["east"].url
        assert east["adminUrl"] == fleet["east"].admin_url
        assert (east["region"], east["zone"], east["provider"]) == ("us-east", "us-east-1a", "aws")
        assert east["prices"]["onDemand"] == {
            "cpuCoreHour": 0.04,
            "memoryGiBHour": 0.005,
            "acceleratorHour": {},
        }
        assert state["clusters"]["west-gpu"]["capacity"] == {
            "nodes": 1,
            "cpu": "96",
            "memory": "1Ti",
            "accelerators": {"nvidia-h100": 8},
        }
    finally:
        await fleet.stop()


async def test_nodes_carry_the_labels_and_resources_placement_needs(tmp_path: Path) -> None:
    fleet = SimFleet(profile.parse(SMALL), speed=50)
    await fleet.start()
    try:
        api = client.ApiClient(client.Configuration(host=fleet["west-gpu"].url))
        async with api:
            node = await client.CoreV1Api(api).read_node("west-gpu-h100-0")
        labels = node.metadata.labels
        assert labels["kubernetes.io/arch"] == "amd64"
        assert labels["topology.kubernetes.io/region"] == "eu-west"
        assert labels["fedctl.io/accelerator"] == "nvidia-h100"
        assert labels["nvidia.com/gpu.product"] == "nvidia-h100"
        assert node.status.allocatable["nvidia.com/gpu"] == "8"
        assert node.status.node_info.kubelet_version == "v1.31.4"
        assert next(c for c in node.status.conditions if c.type == "Ready").status == "True"
    finally:
        await fleet.stop()


def test_demo_profile_covers_regions_arches_and_chips() -> None:
    demo = profile.load(PROFILES / "demo.yaml").expanded()
    assert 6 <= len(demo) <= 8
    assert {c.region for c in demo} == {"us-east", "eu-west", "ap-southeast", "cn-north"}
    pools = [p for c in demo for p in c.node_pools]
    assert {p.arch for p in pools} == {"amd64", "arm64"}
    chips = {(a.model, a.resource_name) for p in pools for a in p.accelerators}
    assert {m for m, r in chips if r == "nvidia.com/gpu"} >= {"nvidia-a100-80gb"}
    assert len({m for m, r in chips if r == "nvidia.com/gpu"}) >= 2
    assert ("ascend-910b", "huawei.com/Ascend910") in chips
    a100 = next(c for c in demo if "nvidia-a100-80gb" in capacity(c)["accelerators"])
    assert a100.prices is not None and a100.prices.spot is not None
    assert (
        a100.prices.on_demand.accelerator_hour["nvidia-a100-80gb"]
        > (a100.prices.spot.accelerator_hour["nvidia-a100-80gb"])
    )


def test_bench_profile_expands_to_100_clusters_of_50_nodes() -> None:
    bench = profile.load(PROFILES / "bench-100.yaml").expanded()
    assert len(bench) == 100
    assert {c.node_count for c in bench} == {50}
    assert [c.name for c in bench[:2]] == ["bench-000", "bench-001"]
    assert len({c.region for c in bench}) == 4


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        pytest.param(
            {"clusters": [{"name": "a", "region": "r", "colour": "red"}]},
            "colour",
            id="unknown key is refused",
        ),
        pytest.param(
            {"clusters": [{"name": "a", "region": "r"}, {"name": "a", "region": "r"}]},
            "repeated",
            id="duplicate cluster names",
        ),
        pytest.param(
            {
                "clusters": [
                    {"name": "a", "region": "r", "nodePools": [{"count": 1, "cpu": "lots"}]}
                ]
            },
            "quantities",
            id="cpu that is not a quantity",
        ),
        pytest.param(
            {
                "clusters": [
                    {
                        "name": "a",
                        "region": "r",
                        "nodePools": [
                            {
                                "count": 1,
                                "accelerators": [
                                    {"model": "x", "resourceName": "gpu", "countPerNode": 1}
                                ],
                            }
                        ],
                    }
                ]
            },
            "extended resource",
            id="accelerator that is not an extended resource",
        ),
        pytest.param({"clusters": []}, "at least one cluster", id="empty fleet"),
    ],
)
def test_profile_validation(data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        profile.parse(data)
    assert fragment in str(caught.value)
