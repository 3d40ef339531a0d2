"""The shipped examples are a realistic fleet, and every one of them loads without a finding."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from federation.resources import ResourceList
from policies.loading import LoadResult, load_paths
from policies.models.accelerator import AcceleratorProfile
from policies.models.cluster import Cluster
from policies.models.frq import FederatedResourceQuota
from policies.models.override import OverridePolicy
from policies.models.propagation import FedctlPropagationPolicy, PropagationPolicy
from policies.models.queue import Queue
from policies.models.workload import Workload

EXAMPLES = Path(__file__).resolve().parents[3] / "policies" / "examples"


@pytest.fixture(scope="module")
def fleet() -> LoadResult:
    return load_paths([EXAMPLES])


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_each_example_file_loads_on_its_own_without_errors(path: Path) -> None:
    result = load_paths([path])

    assert result.errors == []
    assert result.objects


def test_the_whole_directory_has_no_findings_at_all(fleet: LoadResult) -> None:
    assert [str(f) for f in fleet.findings] == []


def test_the_fleet_spans_four_regions_and_five_chip_models(fleet: LoadResult) -> None:
    clusters = [o.model for o in fleet.objects if isinstance(o.model, Cluster)]

    assert len({c.spec.region for c in clusters}) >= 4
    chips = {chip.model for c in clusters for chip in c.spec.chips}
    assert {"amd64", "arm64", "nvidia-a100-80gb", "nvidia-h100-80gb", "ascend-910b"} <= chips
    assert all(c.spec.prices is not None for c in clusters)
    assert all(c.spec.connection.context == c.metadata.name for c in clusters)


def test_every_chip_has_a_profile(fleet: LoadResult) -> None:
    clusters = [o.model for o in fleet.objects if isinstance(o.model, Cluster)]
    profiles = {
        o.model.metadata.name for o in fleet.objects if isinstance(o.model, AcceleratorProfile)
    }

    assert {chip.model for c in clusters for chip in c.spec.chips} == profiles


def test_department_queues_have_capabilities_and_guarantees(fleet: LoadResult) -> None:
    queues = {o.model.metadata.name: o.model for o in fleet.objects if isinstance(o.model, Queue)}

    assert {"ml-research", "ml-prod", "web"} <= set(queues)
    for name in ("ml-research", "ml-prod", "web"):
        assert queues[name].spec.capability is not None
        assert not queues[name].spec.guarantee.is_zero()


def test_the_quota_splits_accelerators_statically(fleet: LoadResult) -> None:
    (quota,) = [o.model for o in fleet.objects if isinstance(o.model, FederatedResourceQuota)]

    assignments = {a.cluster_name: a.hard for a in quota.spec.static_assignments}
    assert assignments["us-east-a100"].amount("nvidia.com/gpu") == 16_000
    assert assignments["cn-north-ascend"].amount("huawei.com/Ascend910") == 16_000
    assert quota.spec.overall.amount("huawei.com/Ascend910") == 16_000


def test_the_web_service_is_weighted_2_1_1_across_regions_with_mirrors(
    fleet: LoadResult,
) -> None:
    (policy,) = [o.model for o in fleet.objects if isinstance(o.model, PropagationPolicy)]
    scheduling = policy.spec.placement.replica_scheduling
    assert scheduling is not None and scheduling.weight_preference is not None

    weights = {
        tuple(w.target_cluster.cluster_names): w.weight
        for w in scheduling.weight_preference.static_weight_list
    }
    assert weights == {("us-east-cpu",): 2, ("eu-west-arm",): 1, ("ap-southeast-cpu",): 1}
    mirrors = [
        o.model
        for o in fleet.objects
        if isinstance(o.model, OverridePolicy) and o.model.metadata.name.endswith("mirrors")
    ]
    values = [
        i.value for r in mirrors[0].spec.effective_rules() for i in r.overriders.image_overrider
    ]
    assert values == ["eu.mirror.example.com", "ap.mirror.example.com"]


def test_the_training_job_accepts_a100_or_ascend_with_the_right_translation(
    fleet: LoadResult,
) -> None:
    (policy,) = [
        o.model
        for o in fleet.objects
        if isinstance(o.model, FedctlPropagationPolicy) and o.model.metadata.name == "llm-finetune"
    ]
    profiles = {
        o.model.metadata.name: o.model
        for o in fleet.objects
        if isinstance(o.model, AcceleratorProfile)
    }
    (job,) = [
        o.model
        for o in fleet.objects
        if isinstance(o.model, Workload) and o.model.type_key == ("batch/v1", "Job")
    ]

    assert policy.spec.fedctl is not None
    assert policy.spec.fedctl.chips == ["nvidia-a100-80gb", "ascend-910b"]
    assert profiles["nvidia-a100-80gb"].spec.resource_name == "nvidia.com/gpu"
    assert profiles["ascend-910b"].spec.resource_name == "huawei.com/Ascend910"
    image = job.spec["template"]["spec"]["containers"][0]["image"]
    rewrite = profiles["ascend-910b"].spec.image
    assert rewrite is not None
    assert rewrite.apply(image) == "swr.cn-north-4.myhuaweicloud.com/ml/llm-train:2.3-cann8"
    assert job.queue == "ml-research"
    assert job.pod_requests() == ResourceList.from_wire(
        {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "8"}
    )


def test_the_batch_formats_carry_their_queue_and_gang(fleet: LoadResult) -> None:
    workloads = {o.model.type_key: o.model for o in fleet.objects if isinstance(o.model, Workload)}

    pytorch = workloads[("kubeflow.org/v1", "PyTorchJob")]
    volcano = workloads[("batch.volcano.sh/v1alpha1", "Job")]
    assert (pytorch.queue, pytorch.replicas, pytorch.is_batch) == ("ml-research", 2, True)
    assert (volcano.queue, volcano.replicas, volcano.min_available) == ("ml-prod", 3, 3)
    assert volcano.pod_requests().amount("nvidia.com/gpu") == 2000


def test_the_examples_cover_every_policy_kind(fleet: LoadResult) -> None:
    kinds = Counter(o.model.kind for o in fleet.objects)

    for kind in (
        "Cluster",
        "AcceleratorProfile",
        "Queue",
        "FederatedResourceQuota",
        "PropagationPolicy",
        "ClusterPropagationPolicy",
        "OverridePolicy",
        "Deployment",
        "Job",
    ):
        assert kinds[kind] >= 1, kind


SIM_PROFILE = EXAMPLES.parents[1] / "clusters" / "sim" / "profiles" / "demo.yaml"


@pytest.mark.skipif(not SIM_PROFILE.exists(), reason="no simulator demo profile")
def test_the_clusters_match_the_simulator_demo_profile(fleet: LoadResult) -> None:
    profile = YAML(typ="safe", pure=True).load(SIM_PROFILE.read_text())
    clusters = {
        o.model.metadata.name: o.model for o in fleet.objects if isinstance(o.model, Cluster)
    }

    assert set(clusters) == {c["name"] for c in profile["clusters"]}
    for sim in profile["clusters"]:
        cluster = clusters[sim["name"]]
        assert (cluster.spec.region, cluster.spec.zone, cluster.spec.provider) == (
            sim["region"],
            sim.get("zone"),
            sim.get("provider"),
        ), sim["name"]
        assert cluster.metadata.labels == sim.get("labels", {})
        chips: Counter[str] = Counter()
        for pool in sim["nodePools"]:
            chips[pool["arch"]] += pool["count"]
            for acc in pool.get("accelerators", []):
                chips[acc["model"]] += acc["countPerNode"] * pool["count"]
        assert {c.model: c.count for c in cluster.spec.chips} == dict(chips), sim["name"]
        prices = cluster.spec.prices
        assert prices is not None
        on_demand = sim["prices"]["onDemand"]
        assert prices.on_demand.cpu == Decimal(str(on_demand["cpuCoreHour"]))
        assert prices.on_demand.memory == Decimal(str(on_demand["memoryGiBHour"]))
        assert prices.on_demand.accelerators == {
            k: Decimal(str(v)) for k, v in on_demand.get("acceleratorHour", {}).items()
        }
        assert (prices.spot is None) == ("spot" not in sim["prices"])


def test_every_example_survives_a_round_trip_through_its_wire_form(fleet: LoadResult) -> None:
    for obj in fleet.objects:
        wire = obj.model.to_wire()

        again = type(obj.model).model_validate(wire)

        assert again == obj.model, f"{obj.file}:{obj.line}"
        assert again.to_wire() == wire
