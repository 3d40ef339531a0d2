"""A device requested without a limit still runs: the rendered manifest limits it to the
amount requested, which every member's API server insists on for an extended resource.

Checked against the simulated member's own admission rules (the Kubernetes ones), so the
test says "the member accepts it", not only "a field appeared".
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from clusters.sim import api_validation
from clusters.sim import resources as sim_resources
from federation.propagation import render
from federation.registry import keys
from policies.models.accelerator import AcceleratorProfile
from policies.models.binding import TargetCluster
from policies.models.cluster import Cluster
from policies.models.override import OverridePolicy

REF = keys.WorkloadRef("ml", "Deployment.apps", "train")
EAST = Cluster.model_validate({"metadata": {"name": "east"}, "spec": {"region": "us-east"}})
ASCEND = AcceleratorProfile.model_validate(
    {
        "metadata": {"name": "ascend-910b"},
        "spec": {"arch": "arm64", "resourceName": "huawei.com/Ascend910"},
    }
)
A100 = AcceleratorProfile.model_validate(
    {
        "metadata": {"name": "nvidia-a100-80gb"},
        "spec": {"arch": "amd64", "resourceName": "nvidia.com/gpu"},
    }
)
PROFILES = {"ascend-910b": ASCEND, "nvidia-a100-80gb": A100}


def deployment(
    requests: dict[str, Any], limits: dict[str, Any] | None = None, *, init: bool = False
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    main = {"name": "main", "image": "train:1", "resources": resources}
    pod: dict[str, Any] = {"containers": [main]}
    if init:
        plain = {"name": "main", "image": "train:1", "resources": {"requests": {"cpu": "1"}}}
        pod = {"initContainers": [main], "containers": [plain]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"replicas": 2, "template": {"spec": pod}},
    }


def rendered(
    template: dict[str, Any], *, chip: str | None = None, policies: list[Any] | None = None
) -> dict[str, Any]:
    out = render.render(
        template=template,
        ref=REF,
        target=TargetCluster(name="east", replicas=2, chip=chip),
        total=2,
        cluster=EAST,
        policies=policies or [],
        profiles=PROFILES,
    )
    rt = sim_resources.by_kind("apps/v1", "Deployment")
    assert rt is not None
    api_validation.validate_spec(rt, copy.deepcopy(out))  # raises when a member would refuse
    return out


def resources_of(obj: dict[str, Any], group: str = "containers") -> dict[str, Any]:
    got: dict[str, Any] = obj["spec"]["template"]["spec"][group][0]["resources"]
    return got


@pytest.mark.parametrize(
    ("template", "chip", "limits"),
    [
        pytest.param(
            deployment({"cpu": "4", "nvidia.com/gpu": "8"}), None, {"nvidia.com/gpu": "8"},
            id="a GPU request alone is limited to the same 8",
        ),
        pytest.param(
            deployment({"cpu": "4", "nvidia.com/gpu": 2}), "ascend-910b",
            {"huawei.com/Ascend910": 2},
            id="translated to Ascend, the request is limited under its new name",
        ),
        pytest.param(
            deployment({"huawei.com/Ascend910": "1"}, {"cpu": "2"}), None,
            {"cpu": "2", "huawei.com/Ascend910": "1"},
            id="other limits are kept beside the added one",
        ),
        pytest.param(
            deployment({"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "0"}), None, None,
            id="cpu and memory may overcommit: no limit is invented",
        ),
    ],
)  # fmt: skip
def test_a_device_request_without_a_limit_is_limited_to_the_request(
    template: dict[str, Any], chip: str | None, limits: dict[str, Any] | None
) -> None:
    assert resources_of(rendered(template, chip=chip)).get("limits") == limits


def test_an_init_container_requesting_a_device_is_limited_too() -> None:
    out = rendered(deployment({"nvidia.com/gpu": "1"}, init=True))
    assert resources_of(out, "initContainers")["limits"] == {"nvidia.com/gpu": "1"}


def test_a_limit_the_user_gave_is_never_changed() -> None:
    out = render.render(
        template=deployment({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"}),
        ref=REF,
        target=TargetCluster(name="east", replicas=2),
        total=2,
        cluster=EAST,
    )
    assert resources_of(out)["limits"] == {"nvidia.com/gpu": "2"}, "validate's to report"


GPU_PATH = "/spec/template/spec/containers/0/resources/requests/nvidia.com~1gpu"


def test_a_device_request_an_override_adds_is_limited_as_well() -> None:
    policy = OverridePolicy.model_validate(
        {
            "metadata": {"name": "gpu", "namespace": "ml"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "overrideRules": [
                    {
                        "overriders": {
                            "plaintext": [{"path": GPU_PATH, "operator": "add", "value": "4"}]
                        }
                    }
                ],
            },
        }
    )
    out = rendered(deployment({"cpu": "1"}), policies=[policy])
    assert resources_of(out) == {
        "requests": {"cpu": "1", "nvidia.com/gpu": "4"},
        "limits": {"nvidia.com/gpu": "4"},
    }
