"""Override rules render what Karmada renders: the same policy gives the same manifest.

The image cases are Karmada's own (`pkg/util/overridemanager/imageoverride_test.go`), plus
the ones an audit found fedctl getting wrong: appending to a tag, writing a digest, init
containers, and namespaced OverridePolicies reaching cluster-scoped objects.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.propagation import overrides
from policies.models.override import ClusterOverridePolicy, OverridePolicy, Overriders

KARMADA_IMAGE = "fictional.registry.example/imagename:v1.0.0"
DIGEST = "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"


def deployment(image: str, *, init_image: str = "busybox:1.36") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "initContainers": [{"name": "init", "image": init_image}],
                    "containers": [{"name": "web", "image": image}],
                }
            }
        },
    }


def edit(image: str, component: str, operator: str, value: str = "") -> str:
    obj = deployment(image)
    rule = {"component": component, "operator": operator, "value": value}
    overrides.apply_overriders(obj, Overriders.model_validate({"imageOverrider": [rule]}))
    container: dict[str, Any] = obj["spec"]["template"]["spec"]["containers"][0]
    return str(container["image"])


@pytest.mark.parametrize(
    ("image", "component", "operator", "value", "expected"),
    [
        pytest.param(
            KARMADA_IMAGE,
            "Registry",
            "add",
            ".test",
            "fictional.registry.example.test/imagename:v1.0.0",
            id="registry add appends to the host name",
        ),
        pytest.param(
            KARMADA_IMAGE,
            "Registry",
            "replace",
            "fictional.registry.us",
            "fictional.registry.us/imagename:v1.0.0",
            id="registry replace",
        ),
        pytest.param(
            KARMADA_IMAGE,
            "Registry",
            "remove",
            "",
            "imagename:v1.0.0",
            id="registry remove",
        ),
        pytest.param(
            KARMADA_IMAGE,
            "Repository",
            "add",
            "/nginx",
            "fictional.registry.example/imagename/nginx:v1.0.0",
            id="repository add appends to the repository",
        ),
        pytest.param(
            KARMADA_IMAGE,
            "Repository",
            "replace",
            "nginx",
            "fictional.registry.example/nginx:v1.0.0",
            id="repository replace",
        ),
        pytest.param(
            KARMADA_IMAGE,
            "Repository",
            "remove",
            "",
            "fictional.registry.example/:v1.0.0",
            id="repository remove leaves what Karmada leaves",
        ),
        pytest.param(
            "nginx:1.25",
            "Tag",
            "add",
            "-debug",
            "nginx:1.25-debug",
            id="tag add appends to the current tag",
        ),
        pytest.param(
            "nginx",
            "Tag",
            "add",
            "v2",
            "nginx:v2",
            id="tag add to an image without a tag sets it",
        ),
        pytest.param(
            "nginx",
            "Tag",
            "add",
            "-debug",
            "nginx",
            id="tag add giving no valid tag leaves the image unchanged",
        ),
        pytest.param(
            KARMADA_IMAGE,
            "Tag",
            "add",
            DIGEST,
            KARMADA_IMAGE,
            id="a digest appended to a tag is neither: the image is unchanged",
        ),
        pytest.param(
            KARMADA_IMAGE,
            "Tag",
            "replace",
            DIGEST,
            f"fictional.registry.example/imagename@{DIGEST}",
            id="tag replace by a digest writes @digest",
        ),
        pytest.param(
            f"nginx@{DIGEST}",
            "Tag",
            "replace",
            "1.25",
            "nginx:1.25",
            id="tag replace on a digest image writes :tag",
        ),
        pytest.param(
            "nginx:1.25",
            "Tag",
            "replace",
            "not a tag",
            "nginx:1.25",
            id="tag replace by neither tag nor digest leaves the image unchanged",
        ),
        pytest.param(
            KARMADA_IMAGE,
            "Tag",
            "remove",
            "",
            "fictional.registry.example/imagename",
            id="tag remove",
        ),
        pytest.param(
            f"r.io/nginx@{DIGEST}",
            "Tag",
            "remove",
            "",
            "r.io/nginx",
            id="tag remove on a digest image removes the digest",
        ),
        pytest.param(
            f"nginx:1.25@{DIGEST}",
            "Registry",
            "replace",
            "m.io",
            f"m.io/nginx:1.25@{DIGEST}",
            id="an image pinned by tag and digest keeps its digest",
        ),
    ],
)
def test_image_edits_match_karmada(
    image: str, component: str, operator: str, value: str, expected: str
) -> None:
    assert edit(image, component, operator, value) == expected


def test_an_image_edit_without_predicate_leaves_init_containers_alone() -> None:
    obj = deployment("nginx:1.25")
    rule = {"component": "Registry", "operator": "replace", "value": "m.io"}

    overrides.apply_overriders(obj, Overriders.model_validate({"imageOverrider": [rule]}))

    pod = obj["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "m.io/nginx:1.25"
    assert pod["initContainers"][0]["image"] == "busybox:1.36"


def test_a_predicate_can_still_point_at_an_init_container() -> None:
    obj = deployment("nginx:1.25")
    rule = {
        "predicate": {"path": "/spec/template/spec/initContainers/0/image"},
        "component": "Registry",
        "operator": "replace",
        "value": "m.io",
    }

    overrides.apply_overriders(obj, Overriders.model_validate({"imageOverrider": [rule]}))

    pod = obj["spec"]["template"]["spec"]
    assert pod["initContainers"][0]["image"] == "m.io/busybox:1.36"
    assert pod["containers"][0]["image"] == "nginx:1.25"


CLUSTER_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "viewer"},
}
ROLE_SELECTOR = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}
RULES = [{"overriders": {"labelsOverrider": [{"operator": "add", "value": {"a": "b"}}]}}]


def namespaced(namespace: str = "default", **selector: Any) -> OverridePolicy:
    return OverridePolicy.model_validate(
        {
            "metadata": {"name": "op", "namespace": namespace},
            "spec": {"resourceSelectors": [selector], "overrideRules": RULES},
        }
    )


def cluster_wide(**selector: Any) -> ClusterOverridePolicy:
    return ClusterOverridePolicy.model_validate(
        {
            "metadata": {"name": "cop"},
            "spec": {"resourceSelectors": [selector], "overrideRules": RULES},
        }
    )


@pytest.mark.parametrize(
    ("policy", "template", "applies"),
    [
        pytest.param(
            namespaced(**ROLE_SELECTOR),
            CLUSTER_ROLE,
            False,
            id="a namespaced policy in default never edits a cluster-scoped object",
        ),
        pytest.param(
            cluster_wide(**ROLE_SELECTOR, namespace="default"),
            CLUSTER_ROLE,
            False,
            id="a selector naming namespace default does not match a cluster-scoped object",
        ),
        pytest.param(
            cluster_wide(**ROLE_SELECTOR),
            CLUSTER_ROLE,
            True,
            id="a cluster-wide policy edits a cluster-scoped object",
        ),
        pytest.param(
            namespaced(apiVersion="apps/v1", kind="Deployment"),
            {**deployment("nginx"), "metadata": {"name": "web"}},
            True,
            id="a namespaced kind without a namespace is in default",
        ),
        pytest.param(
            namespaced("ml", apiVersion="apps/v1", kind="Deployment"),
            deployment("nginx"),
            False,
            id="a namespaced policy edits only its own namespace",
        ),
    ],
)
def test_which_policies_reach_an_object(policy: Any, template: Any, applies: bool) -> None:
    before = copy.deepcopy(template)

    assert bool(overrides.ordered([policy], template)) is applies
    assert template == before
