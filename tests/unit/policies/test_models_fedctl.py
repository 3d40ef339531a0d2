"""Specification of fedctl's own kinds: Cluster, Queue, AcceleratorProfile, placement, Workload."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from federation.resources import ResourceList
from policies.models.accelerator import AcceleratorProfile, ImageRewrite
from policies.models.cluster import Cluster, ClusterStatus, NodeFlavor
from policies.models.common import RuleError
from policies.models.placement_ext import (
    DurationError,
    FedctlPlacement,
    format_duration,
    parse_duration,
)
from policies.models.queue import Queue, chip_resource, hierarchy_problems
from policies.models.workload import Workload

FEDCTL = "fedctl.io/v1alpha1"
T0 = "2026-12-03T08:00:00Z"


def problems(model: type[BaseModel], data: dict[str, Any]) -> list[tuple[str, str]]:
    """(dotted path, message) per error, the way the loader reports them (without lines)."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        found = []
        for error in exc.errors():
            path = [str(part) for part in error["loc"]]
            cause = (error.get("ctx") or {}).get("error")
            if isinstance(cause, RuleError):
                path += [str(part) for part in cause.at]
                message = str(cause)
            else:
                message = error["msg"]
            found.append((".".join(path), message))
        return found
    return []


def doc(kind: str, spec: dict[str, Any], *, name: str = "x", **top: Any) -> dict[str, Any]:
    return {"apiVersion": FEDCTL, "kind": kind, "metadata": {"name": name}, "spec": spec, **top}


def rl(wire: dict[str, str | int]) -> ResourceList:
    return ResourceList.from_wire(wire)


# --------------------------------------------------------------------------- Cluster

A100_CLUSTER: dict[str, Any] = {
    "region": "us-east",
    "zone": "us-east-1a",
    "provider": "aws",
    "taints": [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}],
    "chips": [
        {"model": "amd64", "count": 12},
        {"model": "nvidia-a100-80gb", "arch": "amd64", "count": 64},
    ],
    "prices": {
        "currency": "USD",
        "onDemand": {"cpu": "0.04", "memory": 0.005, "accelerators": {"nvidia-a100-80gb": 3.1}},
        "spot": {"cpu": "0.012", "accelerators": {"nvidia-a100-80gb": "1.20"}},
    },
    "evictionGraceSeconds": 120,
    "connection": {"kubeconfigPath": "~/.kube/fleet", "context": "us-east-a100"},
}


def a100_cluster(**status: Any) -> Cluster:
    return Cluster.model_validate(doc("Cluster", A100_CLUSTER, name="us-east-a100", **status))


class TestCluster:
    def test_full_example_loads_and_round_trips(self) -> None:
        cluster = a100_cluster()
        assert cluster.name == "us-east-a100"
        assert cluster.chip_models() == ["amd64", "nvidia-a100-80gb"]
        assert cluster.arches() == {"amd64"}
        assert cluster.chip("nvidia-a100-80gb") is not None
        assert cluster.chip("ascend-910b") is None
        assert cluster.spec.prices is not None
        assert cluster.spec.prices.on_demand.accelerators["nvidia-a100-80gb"] == Decimal("3.1")
        assert Cluster.model_validate(cluster.to_wire()) == cluster

    def test_is_frozen(self) -> None:
        with pytest.raises(ValidationError, match="frozen"):
            a100_cluster().spec.region = "eu-west"  # type: ignore[misc]

    def test_hourly_cost_is_exact_decimal(self) -> None:
        prices = a100_cluster().spec.prices
        assert prices is not None
        pod = rl({"cpu": 8, "memory": "64Gi", "nvidia.com/gpu": 2})
        on_demand = prices.table("on-demand")
        assert on_demand is not None
        cost = on_demand.hourly_cost(
            pod, accelerator_resource="nvidia.com/gpu", accelerator_model="nvidia-a100-80gb"
        )
        assert cost == Decimal("6.84")  # 8 x 0.04 + 64 x 0.005 + 2 x 3.1
        spot = prices.table("spot")
        assert spot is not None
        assert (
            spot.hourly_cost(
                pod, accelerator_resource="nvidia.com/gpu", accelerator_model="ascend-910b"
            )
            is None
        ), "no price for the chip and no fallback"
        assert spot.hourly_cost(
            pod,
            accelerator_resource="nvidia.com/gpu",
            accelerator_model="ascend-910b",
            fallback_price=Decimal("2"),
        ) == Decimal("4.416")  # 8 x 0.012 + 64 x 0.005 (spot gives no memory: on demand's) + 2 x 2

    @pytest.mark.parametrize(
        ("change", "expected"),
        [
            pytest.param(
                {"chips": [{"model": "ascend-910b", "count": 8}]},
                [
                    (
                        "spec.chips.0",
                        "accelerator chip 'ascend-910b' needs the arch of its nodes"
                        " (e.g. arch: amd64 or arch: arm64)",
                    )
                ],
                id="accelerator without the arch of its hosts",
            ),
            pytest.param(
                {"chips": [{"model": "arm64", "arch": "amd64", "count": 3}]},
                [
                    (
                        "spec.chips.0.arch",
                        "chip 'arm64' is a CPU architecture; arch must be 'arm64' or left out,"
                        " not 'amd64'",
                    )
                ],
                id="plain arch chip with a different arch",
            ),
            pytest.param(
                {"chips": [{"model": "amd64", "count": 1}, {"model": "amd64", "count": 2}]},
                [
                    (
                        "spec.chips.1.model",
                        "chip 'amd64' is listed twice; give one entry with the total count",
                    )
                ],
                id="chip listed twice",
            ),
            pytest.param(
                {"chips": [{"model": "Nvidia-A100", "arch": "amd64", "count": 1}]},
                [
                    (
                        "spec.chips.0.model",
                        "Value error, invalid chip model 'Nvidia-A100': use lower-case letters,"
                        " digits, '-' and '.', e.g. nvidia-a100-80gb, ascend-910b, arm64",
                    )
                ],
                id="chip model with capitals",
            ),
            pytest.param(
                {"chips": [{"model": "amd64", "count": -1}]},
                [("spec.chips.0.count", "Input should be greater than or equal to 0")],
                id="negative count",
            ),
            pytest.param(
                {"connection": {"kubeconfigPath": "/k", "kubeconfig": "apiVersion: v1"}},
                [
                    (
                        "spec.connection.kubeconfig",
                        "give either kubeconfigPath or an inline kubeconfig, not both",
                    )
                ],
                id="two kubeconfig sources",
            ),
            pytest.param(
                {"prices": {"onDemand": {"accelerators": {"nvidia-h100": "-1"}}}},
                [
                    (
                        "spec.prices.onDemand.accelerators.nvidia-h100",
                        "price must not be negative, got -1",
                    )
                ],
                id="negative accelerator price",
            ),
            pytest.param(
                {"prices": {"currency": "usd", "onDemand": {}}},
                [("spec.prices.currency", "String should match pattern '^[A-Z]{3}$'")],
                id="currency code in lower case",
            ),
            pytest.param(
                {"taints": [{"key": "k", "effect": "NoSchedul"}]},
                [
                    (
                        "spec.taints.0.effect",
                        "Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
                    )
                ],
                id="misspelt taint effect",
            ),
            pytest.param(
                {"taints": [{"key": "gpu type", "value": "a b", "effect": "NoSchedule"}]},
                [
                    (
                        "spec.taints.0",  # the loader places each at its field
                        "Value error, taint key 'gpu type' is not a qualified name: its name part"
                        " must be letters, digits, '-', '_' or '.', beginning and ending with a"
                        " letter or digit; taint value 'a b' of 'gpu type' is not valid: it must"
                        " be empty or letters, digits, '-', '_' or '.', beginning and ending with"
                        " a letter or digit",
                    ),
                ],
                id="taint key and value the API server refuses",
            ),
            pytest.param(
                {"regoin": "x"},
                [("spec.regoin", "Extra inputs are not permitted")],
                id="misspelt field is refused, not dropped",
            ),
        ],
    )
    def test_bad_specs(self, change: dict[str, Any], expected: list[tuple[str, str]]) -> None:
        spec = {"region": "us-east", **change}
        assert problems(Cluster, doc("Cluster", spec)) == expected

    def test_region_is_required(self) -> None:
        assert problems(Cluster, doc("Cluster", {})) == [("spec.region", "Field required")]

    def test_inline_kubeconfig_stays_out_of_repr(self) -> None:
        spec = {"region": "r", "connection": {"kubeconfig": "token: s3cr3t"}}
        cluster = Cluster.model_validate(doc("Cluster", spec))
        assert "s3cr3t" not in repr(cluster)
        assert cluster.to_wire()["spec"]["connection"]["kubeconfig"] == "token: s3cr3t"


def status(**fields: Any) -> ClusterStatus:
    return ClusterStatus.model_validate(fields)


GPU_FLAVOR: dict[str, Any] = {
    "arch": "amd64",
    "acceleratorModel": "nvidia-a100-80gb",
    "acceleratorResource": "nvidia.com/gpu",
    "allocatable": {"cpu": 96, "memory": "1Ti", "nvidia.com/gpu": 8, "pods": 110},
    "nodeCount": 4,
    "free": {"cpu": 200, "nvidia.com/gpu": 16},
    "largestFree": {"cpu": 90, "memory": "900Gi", "nvidia.com/gpu": 4, "pods": 100},
}


class TestClusterStatus:
    def test_ready_follows_the_ready_condition(self) -> None:
        seen = status(
            conditions=[{"type": "Ready", "status": "True", "lastTransitionTime": T0}],
            lastHeartbeat=T0,
        )
        assert seen.ready()
        assert seen.condition("Ready") is not None
        assert seen.condition("Degraded") is None
        assert seen.last_heartbeat == datetime(2026, 12, 3, 8, tzinfo=UTC)
        assert a100_cluster().ready() is False, "no status yet means not ready"
        assert a100_cluster().with_status(seen).ready()
        not_ready = status(
            conditions=[
                {
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "ProbeTimeout",
                    "lastTransitionTime": T0,
                }
            ]
        )
        assert not not_ready.ready()

    def test_effective_taints_join_spec_and_status(self) -> None:
        unreachable = {
            "key": "cluster.fedctl.io/unreachable",
            "effect": "NoExecute",
            "timeAdded": T0,
        }
        cluster = a100_cluster().with_status(status(taints=[unreachable]))
        assert [(t.key, t.effect) for t in cluster.effective_taints()] == [
            ("dedicated", "NoSchedule"),
            ("cluster.fedctl.io/unreachable", "NoExecute"),
        ]
        assert [t.key for t in a100_cluster().effective_taints()] == ["dedicated"]

    def test_times_need_a_zone(self) -> None:
        found = problems(
            ClusterStatus,
            {
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-03T08:00:00"}
                ]
            },
        )
        assert found == [("conditions.0.lastTransitionTime", "Input should have timezone info")]

    def test_api_enablements(self) -> None:
        seen = status(
            apiEnablements=[
                {
                    "groupVersion": "apps/v1",
                    "resources": [{"name": "deployments", "kind": "Deployment"}],
                }
            ]
        )
        assert seen.api_enabled("apps/v1", "Deployment")
        assert not seen.api_enabled("batch.volcano.sh/v1alpha1", "Job")

    @pytest.mark.parametrize(
        ("pod", "fits"),
        [
            pytest.param({"cpu": 8, "nvidia.com/gpu": 4}, True, id="fits the emptiest node"),
            pytest.param(
                {"cpu": 8, "nvidia.com/gpu": 8},
                False,
                id="16 free GPUs in total but only 4 on any one node",
            ),
            pytest.param({"cpu": 1, "huawei.com/Ascend910": 1}, False, id="resource not there"),
        ],
    )
    def test_fit_is_judged_per_node_flavor(self, pod: dict[str, int], fits: bool) -> None:
        flavor = NodeFlavor.model_validate(GPU_FLAVOR)
        assert flavor.fits(rl(pod)) is fits  # type: ignore[arg-type]

    def test_flavors_for_chip(self) -> None:
        cpu_flavor = {"arch": "arm64", "allocatable": {"cpu": 64}, "nodeCount": 2}
        seen = status(flavors=[GPU_FLAVOR, cpu_flavor])
        assert [f.accelerator_model for f in seen.flavors_for("nvidia-a100-80gb")] == [
            "nvidia-a100-80gb"
        ]
        assert [f.arch for f in seen.flavors_for("arm64")] == ["arm64"]
        assert seen.flavors_for("amd64") == [], "GPU nodes are not plain amd64 capacity"

    def test_status_round_trips_through_json(self) -> None:
        seen = status(flavors=[GPU_FLAVOR], totals={"allocatable": {"cpu": 384}})
        assert ClusterStatus.model_validate_json(seen.model_dump_json(by_alias=True)) == seen


# --------------------------------------------------------------------------- Queue


def queue(name: str = "ml-research", **spec: Any) -> Queue:
    return Queue.model_validate(doc("Queue", spec, name=name))


class TestQueue:
    def test_defaults(self) -> None:
        plain = queue()
        assert plain.spec.weight == 1
        assert plain.spec.capability is None
        assert plain.spec.guarantee.is_zero()
        assert plain.spec.reclaimable is True
        assert plain.spec.dequeue_strategy == "BestEffortFIFO"

    def test_full_example(self) -> None:
        full = queue(
            weight=3,
            capability={
                "cpu": 512,
                "memory": "4Ti",
                "requests.nvidia.com/gpu": 32,
                chip_resource("nvidia-h100"): 8,
            },
            guarantee={"nvidia.com/gpu": 8, "huawei.com/Ascend910": 4},
            priority=100,
            reclaimable=False,
            parent="ml",
            dequeueStrategy="StrictFIFO",
            priorityClasses={"high": 1000, "low": 0},
        )
        assert full.spec.capability is not None
        assert full.spec.capability.amount("accelerator/nvidia-h100") == 8000
        assert full.spec.capability.to_wire()["nvidia.com/gpu"] == "32"
        assert full.spec.priority_classes.get("high") == 1000
        assert full.spec.priority_classes.get("urgent") is None
        assert Queue.model_validate(full.to_wire()) == full

    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            pytest.param(
                {"capability": {"nvidia.com/gpu": 8}, "guarantee": {"nvidia.com/gpu": 16}},
                [
                    (
                        "spec.guarantee.nvidia.com/gpu",
                        "guarantee of nvidia.com/gpu (16) exceeds the capability (8); a queue"
                        " cannot be promised more than it may hold",
                    )
                ],
                id="guarantee above capability",
            ),
            pytest.param(
                {"capability": {"memory": "1Gi"}, "guarantee": {"requests.memory": "2Gi"}},
                [
                    (
                        "spec.guarantee.memory",
                        "guarantee of memory (2Gi) exceeds the capability (1Gi); a queue"
                        " cannot be promised more than it may hold",
                    )
                ],
                id="quota spelling is compared with the plain one",
            ),
            pytest.param(
                {"weight": 0},
                [("spec.weight", "Input should be greater than or equal to 1")],
                id="zero weight",
            ),
            pytest.param(
                {"dequeueStrategy": "StrictFifo"},
                [("spec.dequeueStrategy", "Input should be 'BestEffortFIFO' or 'StrictFIFO'")],
                id="misspelt dequeue strategy",
            ),
            pytest.param(
                {"capability": {"accelerator/A100": 1}},
                [
                    (
                        "spec.capability.accelerator/A100",
                        "invalid chip model 'A100': use lower-case letters, digits, '-' and '.',"
                        " e.g. nvidia-a100-80gb, ascend-910b, arm64",
                    )
                ],
                id="per-chip cap with a bad chip name",
            ),
            pytest.param(
                {"capability": {"cpu": "-4"}},
                [("spec.capability.cpu", "invalid quantity '-4': must not be negative")],
                id="negative capability",
            ),
            pytest.param(
                {"parent": "x"},
                [("spec.parent", "queue 'x' cannot be its own parent")],
                id="own parent",
            ),
        ],
    )
    def test_bad_specs(self, spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
        assert problems(Queue, doc("Queue", spec)) == expected

    def test_guarantee_of_an_uncapped_resource_is_fine(self) -> None:
        ok = queue(capability={"cpu": 10}, guarantee={"nvidia.com/gpu": 2})
        assert ok.spec.guarantee.amount("nvidia.com/gpu") == 2000

    def test_sound_hierarchy_has_no_problems(self) -> None:
        tree = [
            queue("ml", capability={"nvidia.com/gpu": 32}, guarantee={"nvidia.com/gpu": 16}),
            queue("research", parent="ml", guarantee={"nvidia.com/gpu": 8}),
            queue("prod", parent="ml", capability={"nvidia.com/gpu": 32}),
        ]
        assert hierarchy_problems(tree) == []

    def test_children_guaranteed_past_the_parents_cap_of_a_resource_it_guarantees_not(
        self,
    ) -> None:
        """A parent guaranteeing cpu only still caps GPUs: children guaranteed 12 GPUs
        under a cap of 8 can never all have them."""
        tree = [
            queue("ml", capability={"nvidia.com/gpu": 8}, guarantee={"cpu": 10}),
            queue("research", parent="ml", guarantee={"nvidia.com/gpu": 6}),
            queue("prod", parent="ml", guarantee={"nvidia.com/gpu": 6, "cpu": 4}),
        ]
        found = [
            (name, ".".join(map(str, n.path)), n.message) for name, n in hierarchy_problems(tree)
        ]
        assert found == [
            (
                "ml",
                "spec.capability.nvidia.com/gpu",
                "children (prod, research) are guaranteed 12 of nvidia.com/gpu in total,"
                " more than the parent's capability 8",
            )
        ]

    def test_hierarchy_problems(self) -> None:
        tree = [
            queue("ml", capability={"nvidia.com/gpu": 32}, guarantee={"nvidia.com/gpu": 8}),
            queue(
                "research",
                parent="ml",
                capability={"nvidia.com/gpu": 64},
                guarantee={"nvidia.com/gpu": 6},
            ),
            queue("prod", parent="ml", guarantee={"nvidia.com/gpu": 6}),
            queue("orphan", parent="nowhere"),
            queue("a", parent="b"),
            queue("b", parent="a"),
        ]
        found = [
            (name, ".".join(map(str, n.path)), n.message) for name, n in hierarchy_problems(tree)
        ]
        assert found == [
            (
                "research",
                "spec.capability.nvidia.com/gpu",
                "capability of nvidia.com/gpu (64) exceeds parent 'ml' (32)",
            ),
            (
                "orphan",
                "spec.parent",
                "parent queue 'nowhere' is not defined (known queues: a, b, ml, orphan, prod,"
                " research)",
            ),
            ("a", "spec.parent", "queue 'a' is its own ancestor (parent chain loops)"),
            ("b", "spec.parent", "queue 'b' is its own ancestor (parent chain loops)"),
            (
                "ml",
                "spec.guarantee.nvidia.com/gpu",
                "children (prod, research) are guaranteed 12 of nvidia.com/gpu in total,"
                " more than the parent's guarantee 8",
            ),
        ]


# --------------------------------------------------------------------------- AcceleratorProfile


def profile(name: str, **spec: Any) -> dict[str, Any]:
    return doc("AcceleratorProfile", spec, name=name)


class TestAcceleratorProfile:
    def test_ascend_profile(self) -> None:
        ascend = AcceleratorProfile.model_validate(
            profile(
                "ascend-910b",
                arch="arm64",
                vendor="huawei",
                resourceName="huawei.com/Ascend910",
                deviceMemory="64Gi",
                nodeSelector={"accelerator": "huawei-Ascend910"},
                image={"replace": [{"from": "docker.io/pytorch", "to": "swr.example.com/ascend"}]},
                defaultPricePerHour="2.10",
            )
        )
        assert ascend.model == "ascend-910b"
        assert ascend.is_accelerator
        assert ascend.spec.device_memory == 64 * 1024**3 * 1000
        assert ascend.to_wire()["spec"]["image"]["replace"] == [
            {"from": "docker.io/pytorch", "to": "swr.example.com/ascend"}
        ]
        assert AcceleratorProfile.model_validate(ascend.to_wire()) == ascend

    @pytest.mark.parametrize(
        ("requests", "expected"),
        [
            pytest.param(
                {"cpu": 16, "nvidia.com/gpu": 8},
                {"cpu": 16, "huawei.com/Ascend910": 8},
                id="NVIDIA template asks for NPUs on an Ascend cluster",
            ),
            pytest.param(
                {"cpu": 16, "requests.nvidia.com/gpu": 2, "amd.com/gpu": 1},
                {"cpu": 16, "huawei.com/Ascend910": 3},
                id="every device resource moves, in any spelling",
            ),
            pytest.param({"cpu": 2}, {"cpu": 2}, id="no devices, nothing to move"),
            pytest.param(
                {"huawei.com/Ascend910": 4}, {"huawei.com/Ascend910": 4}, id="already native"
            ),
        ],
    )
    def test_translate_requests(
        self, requests: dict[str, str | int], expected: dict[str, str | int]
    ) -> None:
        ascend = AcceleratorProfile.model_validate(
            profile("ascend-910b", arch="arm64", resourceName="huawei.com/Ascend910")
        )
        translated = ascend.translate_requests(
            rl(requests), device_resources=["nvidia.com/gpu", "amd.com/gpu", "huawei.com/Ascend910"]
        )
        assert translated == rl(expected)

    def test_plain_arch_profile_translates_nothing(self) -> None:
        arm = AcceleratorProfile.model_validate(profile("arm64", arch="arm64"))
        gpu = rl({"nvidia.com/gpu": 1})
        assert arm.translate_requests(gpu, device_resources=["nvidia.com/gpu"]) == gpu

    def test_plain_arch_profile(self) -> None:
        arm = AcceleratorProfile.model_validate(
            profile("arm64", arch="arm64", image={"tagSuffix": "-arm64"})
        )
        assert not arm.is_accelerator

    @pytest.mark.parametrize(
        ("name", "spec", "expected"),
        [
            pytest.param(
                "nvidia-h100",
                {"arch": "amd64"},
                [
                    (
                        "spec",
                        "accelerator 'nvidia-h100' needs the extended resource a pod requests,"
                        " e.g. resourceName: nvidia.com/gpu",
                    )
                ],
                id="accelerator without resource name",
            ),
            pytest.param(
                "arm64",
                {"arch": "amd64"},
                [
                    (
                        "spec.arch",
                        "profile 'arm64' is a plain architecture; spec.arch must be 'arm64',"
                        " not 'amd64'",
                    )
                ],
                id="arch profile naming another arch",
            ),
            pytest.param(
                "amd64",
                {"arch": "amd64", "resourceName": "nvidia.com/gpu"},
                [
                    (
                        "spec.resourceName",
                        "profile 'amd64' is a plain architecture and has no device resource;"
                        " remove resourceName",
                    )
                ],
                id="arch profile with a device resource",
            ),
            pytest.param(
                "A100",
                {"arch": "amd64", "resourceName": "nvidia.com/gpu"},
                [
                    (
                        "metadata.name",
                        "invalid chip model 'A100': use lower-case letters, digits, '-' and '.',"
                        " e.g. nvidia-a100-80gb, ascend-910b, arm64",
                    )
                ],
                id="profile name is not a chip model",
            ),
            pytest.param(
                "nvidia-h100",
                {"arch": "x86_64", "resourceName": "nvidia.com/gpu"},
                [("spec.arch", "Input should be 'amd64', 'arm64', 'ppc64le' or 's390x'")],
                id="arch spelt the uname way",
            ),
            pytest.param(
                "nvidia-h100",
                {
                    "arch": "amd64",
                    "resourceName": "nvidia.com/gpu",
                    "image": {"image": "a:1", "tagSuffix": "-x"},
                },
                [
                    (
                        "spec.image.image",
                        "image replaces the whole reference; do not combine it with replace or"
                        " tagSuffix",
                    )
                ],
                id="whole image and a tag suffix",
            ),
        ],
    )
    def test_bad_profiles(
        self, name: str, spec: dict[str, Any], expected: list[tuple[str, str]]
    ) -> None:
        assert problems(AcceleratorProfile, profile(name, **spec)) == expected

    @pytest.mark.parametrize(
        ("rewrite", "image", "result"),
        [
            pytest.param(
                {"replace": [{"from": "docker.io/pytorch", "to": "swr.cn/ascend"}]},
                "docker.io/pytorch/pytorch:2.1",
                "swr.cn/ascend/pytorch:2.1",
                id="registry prefix",
            ),
            pytest.param(
                {"replace": [{"from": "docker.io/pytorch", "to": "swr.cn/ascend"}]},
                "docker.io/pytorchx/app:1",
                "docker.io/pytorchx/app:1",
                id="prefix only at a path boundary",
            ),
            pytest.param(
                {"replace": [{"from": "a.io", "to": "b.io"}, {"from": "a.io", "to": "c.io"}]},
                "a.io/x:1",
                "b.io/x:1",
                id="first matching rule wins",
            ),
            pytest.param({"tagSuffix": "-cann8"}, "app:2.1", "app:2.1-cann8", id="tag suffix"),
            pytest.param(
                {"tagSuffix": "-arm64"},
                "registry:5000/app",
                "registry:5000/app:latest-arm64",
                id="untagged image with a registry port",
            ),
            pytest.param(
                {"tagSuffix": "-x"}, "app@sha256:abc", "app@sha256:abc", id="digest untouched"
            ),
            pytest.param({"image": "npu/train:3"}, "gpu/train:3", "npu/train:3", id="whole image"),
        ],
    )
    def test_image_rewrite(self, rewrite: dict[str, Any], image: str, result: str) -> None:
        assert ImageRewrite.model_validate(rewrite).apply(image) == result


# --------------------------------------------------------------------------- FedctlPlacement


@pytest.mark.parametrize(
    ("text", "seconds", "canonical"),
    [
        pytest.param("90s", 90, "1m30s", id="seconds"),
        pytest.param("45m", 2700, "45m", id="minutes"),
        pytest.param("2h30m", 9000, "2h30m", id="hours and minutes"),
        pytest.param("1.5h", 5400, "1h30m", id="fractional hours"),
        pytest.param("3d", 259200, "72h", id="days print as hours"),
        pytest.param("1500ms", 2, "2s", id="milliseconds round up"),
        pytest.param("3600", 3600, "1h", id="digits alone are seconds"),
        pytest.param(7200, 7200, "2h", id="YAML integer seconds"),
    ],
)
def test_durations(text: str | int, seconds: int, canonical: str) -> None:
    assert parse_duration(text) == seconds
    assert format_duration(seconds) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "2 hours",
            "invalid duration '2 hours': expected a duration like 90s, 45m, 2h30m or 1.5h"
            " (units d, h, m, s, ms)",
            id="words",
        ),
        pytest.param("0s", "invalid duration '0s': must be longer than zero", id="zero"),
        pytest.param(-5, "invalid duration -5: must be longer than zero", id="negative"),
        pytest.param(
            "40000d", "invalid duration '40000d': longer than 100 years", id="absurdly long"
        ),
        pytest.param(
            True,
            "invalid duration True: expected a string like 2h30m or whole seconds",
            id="boolean",
        ),
    ],
)
def test_bad_durations(text: Any, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    assert str(caught.value) == message


class TestFedctlPlacement:
    def test_full_example(self) -> None:
        placement = FedctlPlacement.model_validate(
            {
                "chips": ["nvidia-a100-80gb", "ascend-910b"],
                "arches": ["amd64", "arm64"],
                "expectedDuration": "6h",
                "maxHourlyCost": "40.50",
                "capacityType": "any",
            }
        )
        assert placement.expected_duration == 6 * 3600
        assert placement.max_hourly_cost == Decimal("40.50")
        assert placement.preference("ascend-910b") == 1
        assert placement.preference("nvidia-h100") is None
        assert placement.to_wire()["expectedDuration"] == "6h"
        assert FedctlPlacement.model_validate(placement.to_wire()) == placement

    def test_defaults_to_on_demand(self) -> None:
        assert FedctlPlacement().capacity_type == "on-demand"

    @pytest.mark.parametrize(
        ("data", "expected"),
        [
            pytest.param(
                {"chips": ["ascend-910b", "ascend-910b"]},
                [("chips.1", "'ascend-910b' is listed twice")],
                id="chip listed twice",
            ),
            pytest.param(
                {"capacityType": "Spot"},
                [("capacityType", "Input should be 'on-demand', 'spot' or 'any'")],
                id="capacity type in the wrong case",
            ),
            pytest.param(
                {"expectedDuration": "6 h"},
                [
                    (
                        "expectedDuration",
                        "invalid duration '6 h': expected a duration like 90s, 45m, 2h30m or"
                        " 1.5h (units d, h, m, s, ms)",
                    )
                ],
                id="duration with a blank",
            ),
            pytest.param(
                {"maxHourlyCost": -1},
                [("maxHourlyCost", "Input should be greater than or equal to 0")],
                id="negative cost ceiling",
            ),
        ],
    )
    def test_bad_placements(self, data: dict[str, Any], expected: list[tuple[str, str]]) -> None:
        assert problems(FedctlPlacement, data) == expected


@pytest.mark.parametrize(
    "model", [Cluster, ClusterStatus, Queue, AcceleratorProfile, FedctlPlacement, Workload]
)
def test_every_model_has_a_json_schema(model: type[BaseModel]) -> None:
    schema = model.model_json_schema(by_alias=True)
    assert schema["type"] == "object"


# --------------------------------------------------------------------------- Workload


def container(requests: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    resources = {"requests": requests} if requests is not None else {}
    return {"name": "c", "image": "app:1", "resources": resources, **extra}


def pod_template(*containers: dict[str, Any], **pod: Any) -> dict[str, Any]:
    return {"spec": {"containers": list(containers), **pod}}


def workload(
    api_version: str, kind: str, spec: dict[str, Any], **annotations: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", "namespace": "team-a"}
    if annotations:
        meta["annotations"] = {
            f"fedctl.io/{k.replace('_', '-')}": v for k, v in annotations.items()
        }
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


GPU_POD = pod_template(
    container({"cpu": 8}), container(None, resources={"limits": {"nvidia.com/gpu": 8}})
)
DEPLOYMENT = workload("apps/v1", "Deployment", {"replicas": 3, "template": GPU_POD})
VOLCANO = workload(
    "batch.volcano.sh/v1alpha1",
    "Job",
    {
        "queue": "ml-research",
        "minAvailable": 3,
        "tasks": [
            {"name": "ps", "replicas": 1, "template": pod_template(container({"cpu": 2}))},
            {"name": "worker", "replicas": 4, "template": GPU_POD},
        ],
    },
)
PYTORCH = workload(
    "kubeflow.org/v1",
    "PyTorchJob",
    {
        "runPolicy": {"schedulingPolicy": {"minAvailable": 2}},
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": GPU_POD},
            "Worker": {"replicas": 3, "template": GPU_POD},
        },
    },
)
BATCH_JOB = workload(
    "batch/v1", "Job", {"parallelism": 4, "completions": 2, "template": GPU_POD}, queue="ml-prod"
)
POD = workload("v1", "Pod", GPU_POD["spec"])
CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "c"},
    "data": {"k": "v"},
}


class TestWorkloadAccessors:
    @pytest.mark.parametrize(
        ("data", "replicas", "batch", "gang", "queue_name"),
        [
            pytest.param(DEPLOYMENT, 3, False, None, None, id="Deployment replicas"),
            pytest.param(
                workload("apps/v1", "StatefulSet", {"template": GPU_POD}),
                1,
                False,
                None,
                None,
                id="StatefulSet replicas default to one",
            ),
            pytest.param(
                BATCH_JOB, 2, True, None, "ml-prod", id="Job: parallelism capped by completions"
            ),
            pytest.param(VOLCANO, 5, True, 3, "ml-research", id="Volcano Job: tasks add up"),
            pytest.param(PYTORCH, 4, True, 2, None, id="PyTorchJob: replica specs add up"),
            pytest.param(POD, 1, False, None, None, id="bare Pod"),
            pytest.param(CONFIG_MAP, 0, False, None, None, id="opaque object has no pods"),
        ],
    )
    def test_shape(
        self,
        data: dict[str, Any],
        replicas: int,
        batch: bool,
        gang: int | None,
        queue_name: str | None,
    ) -> None:
        loaded = Workload.model_validate(data)
        assert loaded.replicas == replicas
        assert loaded.is_batch is batch
        assert loaded.min_available == gang
        assert loaded.queue == queue_name

    def test_annotations(self) -> None:
        loaded = Workload.model_validate(
            workload(
                "apps/v1",
                "Deployment",
                {"template": GPU_POD},
                queue="web",
                priority="-5",
                chips="nvidia-a100-80gb, ascend-910b",
                expected_duration="2h30m",
                min_available="1",
            )
        )
        assert loaded.queue == "web"
        assert loaded.priority == -5
        assert loaded.chips == ("nvidia-a100-80gb", "ascend-910b")
        assert loaded.expected_duration == 9000
        assert loaded.min_available == 1
        assert loaded.is_batch, "a gang size makes it batch"
        assert loaded.namespace == "team-a"

    def test_annotation_queue_wins_over_volcano_queue(self) -> None:
        data = {**VOLCANO, "metadata": {"name": "v", "annotations": {"fedctl.io/queue": "web"}}}
        assert Workload.model_validate(data).queue == "web"

    def test_no_hints_means_none(self) -> None:
        loaded = Workload.model_validate(workload("v1", "Pod", {}))
        assert (loaded.queue, loaded.priority, loaded.chips, loaded.expected_duration) == (
            None,
            None,
            (),
            None,
        )
        assert loaded.namespace == "team-a"
        assert loaded.pod_requests() == ResourceList()

    def test_requests(self) -> None:
        loaded = Workload.model_validate(VOLCANO)
        assert loaded.pod_requests() == rl({"cpu": 8, "nvidia.com/gpu": 8}), "largest pod shape"
        assert loaded.total_requests() == rl({"cpu": 34, "nvidia.com/gpu": 32})
        assert [(s.name, s.count) for s in loaded.pod_sets] == [("ps", 1), ("worker", 4)]
        assert loaded.pod_sets[1].template_path == ("spec", "tasks", 1, "template", "spec")

    @pytest.mark.parametrize(
        ("pod", "expected"),
        [
            pytest.param(
                pod_template(container({"cpu": "500m", "memory": "1Gi"}), container({"cpu": 1})),
                {"cpu": "1500m", "memory": "1Gi"},
                id="containers add up",
            ),
            pytest.param(
                pod_template(
                    container(
                        None,
                        resources={"limits": {"cpu": 2, "memory": "1Gi"}, "requests": {"cpu": 1}},
                    )
                ),
                {"cpu": 1, "memory": "1Gi"},
                id="a limit stands in for a missing request",
            ),
            pytest.param(
                pod_template(container({"cpu": 1}), initContainers=[container({"cpu": 4})]),
                {"cpu": 4},
                id="a big init container sets the floor",
            ),
            pytest.param(
                pod_template(
                    container({"cpu": 1}),
                    initContainers=[
                        container({"cpu": "500m"}, restartPolicy="Always"),
                        container({"cpu": 2}),
                    ],
                ),
                {"cpu": "2500m"},
                id="a sidecar runs beside later init containers",
            ),
            pytest.param(
                pod_template(
                    container({"cpu": 1}),
                    initContainers=[container({"cpu": "500m"}, restartPolicy="Always")],
                ),
                {"cpu": "1500m"},
                id="a sidecar runs beside the app",
            ),
            pytest.param(
                pod_template(container({"cpu": 1}), overhead={"cpu": "250m", "memory": "120Mi"}),
                {"cpu": "1250m", "memory": "120Mi"},
                id="runtime overhead is added",
            ),
        ],
    )
    def test_effective_pod_requests(self, pod: dict[str, Any], expected: dict[str, Any]) -> None:
        loaded = Workload.model_validate(workload("v1", "Pod", pod["spec"]))
        assert loaded.pod_requests() == rl(expected)

    def test_opaque_objects_keep_their_fields(self) -> None:
        loaded = Workload.model_validate(CONFIG_MAP)
        assert loaded.is_opaque
        assert loaded.to_wire() == {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {}, "annotations": {}},
            "data": {"k": "v"},
        }

    def test_round_trip(self) -> None:
        for data in (DEPLOYMENT, VOLCANO, PYTORCH, BATCH_JOB, POD, CONFIG_MAP):
            loaded = Workload.model_validate(data)
            assert Workload.model_validate(loaded.to_wire()) == loaded


def with_spec(base: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**base, "spec": {**base["spec"], **spec}}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            workload("v1", "Pod", {}, priority="High Priority!"),
            (
                "metadata.annotations.fedctl.io/priority",
                "annotation fedctl.io/priority: expected an integer or the name of one of its"
                " queue's priorityClasses, got 'High Priority!'",
            ),
            id="priority that is neither a number nor a class name",
        ),
        pytest.param(
            workload("v1", "Pod", {}, expected_duration="2 days"),
            (
                "metadata.annotations.fedctl.io/expected-duration",
                "annotation fedctl.io/expected-duration: invalid duration '2 days': expected a"
                " duration like 90s, 45m, 2h30m or 1.5h (units d, h, m, s, ms)",
            ),
            id="duration in words",
        ),
        pytest.param(
            workload("v1", "Pod", {}, chips="A100,ascend-910b"),
            (
                "metadata.annotations.fedctl.io/chips",
                "annotation fedctl.io/chips: invalid chip model 'A100': use lower-case letters,"
                " digits, '-' and '.', e.g. nvidia-a100-80gb, ascend-910b, arm64",
            ),
            id="chip name in capitals",
        ),
        pytest.param(
            workload("v1", "Pod", {}, min_available="zero"),
            (
                "metadata.annotations.fedctl.io/min-available",
                "annotation fedctl.io/min-available: expected a positive integer, got 'zero'",
            ),
            id="gang size that is not a number",
        ),
        pytest.param(
            with_spec(VOLCANO, minAvailable=9),
            (
                "spec.minAvailable",
                "minAvailable (9) exceeds the 5 replicas; the gang could never start",
            ),
            id="gang larger than the job",
        ),
        pytest.param(
            with_spec(DEPLOYMENT, replicas="three"),
            ("spec.replicas", "expected an integer of at least 0, got 'three'"),
            id="replicas as a word",
        ),
        pytest.param(
            with_spec(DEPLOYMENT, replicas=10**23),
            (
                "spec.replicas",
                "expected at most 2147483647 (Kubernetes counts are int32), got"
                " 100000000000000000000000",
            ),
            id="replicas past int32 (the division's float arithmetic ran for ever)",
        ),
        pytest.param(
            with_spec(DEPLOYMENT, template=pod_template(container({"memory": "12GB"}))),
            (
                "spec.template.spec.containers.0.resources.requests.memory",
                "invalid quantity '12GB': unknown suffix 'GB' (did you mean '12G' or '12Gi'?)",
            ),
            id="memory in GB",
        ),
        pytest.param(
            with_spec(DEPLOYMENT, template=pod_template(container({"cpu": "-1"}))),
            (
                "spec.template.spec.containers.0.resources.requests.cpu",
                "invalid quantity '-1': must not be negative",
            ),
            id="negative request",
        ),
        pytest.param(
            with_spec(DEPLOYMENT, template={"spec": {"containers": {"name": "c"}}}),
            ("spec.template.spec.containers", "expected a list, got dict"),
            id="containers as a mapping",
        ),
        pytest.param(
            with_spec(VOLCANO, tasks=[{"replicas": -1}]),
            ("spec.tasks.0.replicas", "expected an integer of at least 0, got -1"),
            id="negative task replicas",
        ),
        pytest.param(
            with_spec(VOLCANO, minAvailable=2, tasks=[{"replicas": 2, "minAvailable": 3}]),
            (
                "spec.tasks.0.minAvailable",
                "minAvailable (3) exceeds the task's 2 replicas; Volcano refuses such a job"
                " (its task's gang could never start)",
            ),
            id="task gang larger than its task (Volcano's webhook refuses it)",
        ),
        pytest.param(
            with_spec(VOLCANO, minAvailable=2, tasks=[{"replicas": 2, "minAvailable": -1}]),
            ("spec.tasks.0.minAvailable", "expected an integer of at least 0, got -1"),
            id="negative task gang size",
        ),
        pytest.param(
            {**DEPLOYMENT, "spce": {}},
            ("spce", "unknown field 'spce' (did you mean 'spec'?)"),
            id="misspelt top-level field of a known kind",
        ),
    ],
)
def test_bad_workloads(data: dict[str, Any], expected: tuple[str, str]) -> None:
    assert problems(Workload, data) == [expected]


@pytest.mark.parametrize(
    ("model", "data", "expected"),
    [
        pytest.param(
            Cluster,
            doc("Cluster", {"region": "r"}, name="US_East"),
            (
                "metadata.name",
                "invalid cluster name 'US_East': use at most 63 lower-case letters, digits and"
                " '-', starting and ending with a letter or digit (e.g. us-east-a100)",
            ),
            id="cluster name is a DNS label (it names a kubeconfig context and a registry key)",
        ),
        pytest.param(
            Cluster,
            doc("Cluster", {"region": "r"}, name="a.b"),
            (
                "metadata.name",
                "invalid cluster name 'a.b': use at most 63 lower-case letters, digits and"
                " '-', starting and ending with a letter or digit (e.g. us-east-a100)",
            ),
            id="no dots in a cluster name",
        ),
        pytest.param(
            Queue,
            doc("Queue", {}, name="ML/Research"),
            (
                "metadata.name",
                "invalid queue name 'ML/Research': use lower-case letters, digits, '-' and '.',"
                " starting and ending with a letter or digit, at most 253 (e.g. ml-research)",
            ),
            id="queue name with a slash",
        ),
    ],
)
def test_names(model: type[BaseModel], data: dict[str, Any], expected: tuple[str, str]) -> None:
    assert problems(model, data) == [expected]


def test_requests_read_once_are_shared_but_a_bad_spelling_of_them_is_still_refused() -> None:
    good = [
        Workload.model_validate(with_spec(DEPLOYMENT, template=pod_template(container({"cpu": 1}))))
        for _ in range(2)
    ]
    first, second = (w.pod_sets[0].requests for w in good)
    assert first is second and first.amount("cpu") == 1000
    # Equal to the good value as Python compares them, but not a valid request.
    assert problems(
        Workload, with_spec(DEPLOYMENT, template=pod_template(container({"cpu": True})))
    )
    assert (
        problems(Workload, with_spec(DEPLOYMENT, template=pod_template(container({"cpu": 1}))))
        == []
    )
