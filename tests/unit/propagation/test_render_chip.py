"""The chip translation reaches only the pods and containers it is meant for.

A copy is translated for the chip its Binding chose there, but not every pod of it uses
that chip: a CPU-only pod must stay off accelerator nodes even where they carry no taint
(L4, Ascend), a Volcano launcher or PyTorchJob master that asks for no device must not be
pinned to the device nodes, and a sidecar must keep its image. Placement is judged with the
simulated member's node matching (Kubernetes' semantics), so a case says "the pod can or
cannot go on this node", not only "a field appeared".
"""

from __future__ import annotations

from typing import Any

import pytest

from clusters.sim import scheduler as sim_scheduler
from federation.propagation import overrides, render
from federation.registry import keys
from policies.models.accelerator import AcceleratorProfile
from policies.models.binding import TargetCluster
from policies.models.cluster import Cluster

REF = keys.WorkloadRef("ml", "Job.batch", "train")
EAST = Cluster.model_validate({"metadata": {"name": "east"}, "spec": {"region": "us-east"}})


def _profile(name: str, spec: dict[str, Any]) -> AcceleratorProfile:
    return AcceleratorProfile.model_validate({"metadata": {"name": name}, "spec": spec})


PROFILES = {
    "ascend-910b": _profile(
        "ascend-910b",
        {
            "arch": "arm64",
            "resourceName": "huawei.com/Ascend910",
            "nodeSelector": {"fedctl.io/accelerator": "ascend-910b"},
            "image": {
                "replace": [{"from": "registry.example.com/ml", "to": "swr.example.cn/ml"}],
                "tagSuffix": "-cann8",
            },
        },
    ),
    "nvidia-l4": _profile(
        "nvidia-l4",
        {
            "arch": "amd64",
            "resourceName": "nvidia.com/gpu",
            "nodeSelector": {"fedctl.io/accelerator": "nvidia-l4"},
        },
    ),
    "nvidia-a100-80gb": _profile(
        "nvidia-a100-80gb",
        {
            "arch": "amd64",
            "resourceName": "nvidia.com/gpu",
            "nodeSelector": {"nvidia.com/gpu.product": "A100-SXM4-80GB"},
        },
    ),
    "amd64": _profile("amd64", {"arch": "amd64"}),
    "arm64": _profile("arm64", {"arch": "arm64"}),
}

NODES = {
    "cpu": {"kubernetes.io/arch": "amd64", "fedctl.io/node-pool": "cpu"},
    "arm": {"kubernetes.io/arch": "arm64", "fedctl.io/node-pool": "arm"},
    "l4": {"kubernetes.io/arch": "amd64", "fedctl.io/accelerator": "nvidia-l4"},
    "a100": {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "A100-SXM4-80GB"},
    "ascend": {"kubernetes.io/arch": "arm64", "fedctl.io/accelerator": "ascend-910b"},
}
"""Node labels as the simulated members (and the GPU/NPU device plugins) set them."""


def container(name: str, image: str, **requests: str) -> dict[str, Any]:
    return {"name": name, "image": image, "resources": {"requests": {"cpu": "1", **requests}}}


def trainer(**requests: str) -> dict[str, Any]:
    return container("trainer", "registry.example.com/ml/train:2.3", **requests)


def job(*containers: dict[str, Any], **pod: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"parallelism": 1, "template": {"spec": {"containers": list(containers), **pod}}},
    }


def volcano_job() -> dict[str, Any]:
    """The MPI shape: a CPU-only launcher and GPU workers, each task its own template."""
    launcher = container("launcher", "docker.io/mpioperator/mpi-launcher:0.5")
    worker = trainer(**{"nvidia.com/gpu": "2"})
    worker_pod = {
        "containers": [worker],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "mpi", "namespace": "ml"},
        "spec": {
            "minAvailable": 3,
            "tasks": [
                {
                    "name": "launcher",
                    "replicas": 1,
                    "template": {"spec": {"containers": [launcher]}},
                },
                {"name": "worker", "replicas": 2, "template": {"spec": worker_pod}},
            ],
        },
    }


def pytorch_job() -> dict[str, Any]:
    """A PyTorchJob whose Master coordinates on CPU and whose Workers hold the devices."""
    master = container("pytorch", "docker.io/library/python:3.12")
    worker = trainer(**{"nvidia.com/gpu": "1"})
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "ddp", "namespace": "ml"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [master]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [worker]}}},
            }
        },
    }


def rendered(template: dict[str, Any], chip: str | None) -> dict[str, Any]:
    return render.render(
        template=template,
        ref=REF,
        target=TargetCluster(name="east", replicas=1, chip=chip),
        total=1,
        cluster=EAST,
        profiles=PROFILES,
    )


def may_run_on(pod_spec: dict[str, Any]) -> set[str]:
    """The NODES a pod with this spec matches, by nodeSelector and required node affinity."""
    pod = {"spec": pod_spec}
    return {
        name
        for name, labels in NODES.items()
        if sim_scheduler.node_matches_affinity(pod, labels, name)
    }


def pods(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return overrides.pod_specs(obj)


@pytest.mark.parametrize(
    ("template", "chip", "nodes"),
    [
        pytest.param(
            job(trainer()), "amd64", {"cpu"}, id="an amd64 pod stays off untainted L4 nodes"
        ),
        pytest.param(job(trainer()), "arm64", {"arm"}, id="an arm64 pod stays off Ascend nodes"),
        pytest.param(
            job(trainer()),
            None,
            {"cpu", "arm"},
            id="a pod whose cluster records no arch still keeps off every accelerator",
        ),
        pytest.param(
            job(trainer(**{"nvidia.com/gpu": "4"})),
            "nvidia-l4",
            {"l4"},
            id="a device pod goes to its chip's nodes only",
        ),
        pytest.param(
            job(trainer(), nodeSelector={"fedctl.io/accelerator": "nvidia-l4"}),
            "amd64",
            {"l4"},
            id="a device-less pod the user pointed at L4 nodes keeps the user's choice",
        ),
    ],
)
def test_a_pod_lands_only_where_its_requests_belong(
    template: dict[str, Any], chip: str | None, nodes: set[str]
) -> None:
    [pod] = pods(rendered(template, chip))
    assert may_run_on(pod) == nodes


def test_the_user_s_node_affinity_is_kept_and_narrowed_in_every_term() -> None:
    """Terms are ORed: the accelerator exclusion must hold in each, or one term lets the
    pod through to an L4 node; the preferred terms are the user's alone."""
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    pool = {"key": "fedctl.io/node-pool", "operator": "In", "values": ["cpu"]}
    preferred = [{"weight": 1, "preference": {"matchExpressions": [zone]}}]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [zone]}, {"matchExpressions": [pool]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        },
        "podAntiAffinity": {"x": 1},
    }
    template = job(trainer(), affinity=affinity)
    [pod] = pods(rendered(template, "amd64"))
    node = pod["affinity"]["nodeAffinity"]
    terms = node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"][0] for t in terms] == [zone, pool]
    assert all(len(t["matchExpressions"]) > 1 for t in terms)
    assert node["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
    assert pod["affinity"]["podAntiAffinity"] == {"x": 1}
    assert may_run_on(pod) == {"cpu"}
    assert template["spec"]["template"]["spec"]["affinity"] == affinity  # not mutated


@pytest.mark.parametrize(
    ("template", "cpu_only", "device"),
    [
        pytest.param(volcano_job(), 0, 1, id="Volcano launcher and workers"),
        pytest.param(pytorch_job(), 0, 1, id="PyTorchJob master and workers"),
    ],
)
def test_only_the_templates_that_request_the_device_are_translated(
    template: dict[str, Any], cpu_only: int, device: int
) -> None:
    out = pods(rendered(template, "ascend-910b"))
    plain, worker = out[cpu_only], out[device]
    assert may_run_on(worker) == {"ascend"}
    assert set(worker["containers"][0]["resources"]["requests"]) == {"cpu", "huawei.com/Ascend910"}
    assert worker["containers"][0]["image"] == "swr.example.cn/ml/train:2.3-cann8"
    original = pods(template)[cpu_only]
    assert plain["containers"] == original["containers"]
    assert "nodeSelector" not in plain
    assert may_run_on(plain) == {"cpu", "arm"}


def test_a_sidecar_keeps_its_image_and_the_trainer_gets_the_chip_s() -> None:
    sidecar = container("sidecar", "docker.io/library/busybox:1.36")
    init = container("fetch", "registry.example.com/ml/fetch:1")
    template = job(trainer(**{"nvidia.com/gpu": "2"}), sidecar, initContainers=[init])
    [pod] = pods(rendered(template, "ascend-910b"))
    images = [c["image"] for c in (*pod["initContainers"], *pod["containers"])]
    assert images == [
        "registry.example.com/ml/fetch:1",
        "swr.example.cn/ml/train:2.3-cann8",
        "docker.io/library/busybox:1.36",
    ]


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
NPU_TAINT = {"key": "huawei.com/Ascend910", "value": "present", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("chip", "taint"), [("nvidia-a100-80gb", GPU_TAINT), ("ascend-910b", NPU_TAINT)]
)
def test_a_device_pod_tolerates_its_device_s_taint(chip: str, taint: dict[str, str]) -> None:
    """GPU pools are tainted with their device resource (`nvidia.com/gpu=present`), and
    clusters that do so give device pods the toleration (ExtendedResourceToleration). A
    member without that plugin left GPU jobs Pending on the nodes they were placed for;
    the CPU pods of the same job stay off them."""
    out = pods(rendered(volcano_job() | {"spec": _no_tolerations(volcano_job())}, chip))
    launcher, worker = out
    assert sim_scheduler.tolerates(worker.get("tolerations") or [], taint)
    assert not sim_scheduler.tolerates(launcher.get("tolerations") or [], taint)


def test_a_toleration_the_pod_has_is_not_repeated() -> None:
    """A guard for the toleration added above (it passed before it was added)."""
    [_, worker] = pods(rendered(volcano_job(), "nvidia-l4"))
    assert worker["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]


def _no_tolerations(template: dict[str, Any]) -> dict[str, Any]:
    spec = template["spec"]
    for task in spec["tasks"]:
        task["template"]["spec"].pop("tolerations", None)
    return spec
