"""Render: template + Binding share + chip profile + overrides (Karmada's order) → manifest."""

from __future__ import annotations

from typing import Any

import pytest

from federation import errors
from federation.propagation import overrides, render
from federation.registry import keys
from policies.models.accelerator import AcceleratorProfile
from policies.models.binding import TargetCluster
from policies.models.cluster import Cluster
from policies.models.override import ClusterOverridePolicy, OverridePolicy

REF = keys.WorkloadRef("ml", "Deployment.apps", "app")


def cluster(name: str = "east", region: str = "us-east", **labels: str) -> Cluster:
    return Cluster.model_validate(
        {
            "metadata": {"name": name, "labels": labels},
            "spec": {"region": region, "connection": {"context": name}},
        }
    )


def deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "app",
            "namespace": "ml",
            "labels": {"team": "a"},
            "resourceVersion": "42",
            "uid": "u-1",
            "generation": 3,
        },
        "spec": {
            "replicas": 8,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.example.com/ml/train:2.3",
                            "args": ["--x"],
                            "resources": {
                                "requests": {"cpu": "4", "nvidia.com/gpu": "8"},
                                "limits": {"nvidia.com/gpu": "8"},
                            },
                        }
                    ]
                }
            },
            **spec,
        },
        "status": {"readyReplicas": 8},
    }


PROFILES = {
    "ascend-910b": AcceleratorProfile.model_validate(
        {
            "metadata": {"name": "ascend-910b"},
            "spec": {
                "arch": "arm64",
                "resourceName": "huawei.com/Ascend910",
                "nodeSelector": {"fedctl.io/accelerator": "ascend-910b"},
                "image": {
                    "replace": [{"from": "registry.example.com/ml", "to": "swr.example.cn/ml"}],
                    "tagSuffix": "-cann8",
                },
            },
        }
    ),
    "nvidia-a100-80gb": AcceleratorProfile.model_validate(
        {
            "metadata": {"name": "nvidia-a100-80gb"},
            "spec": {"arch": "amd64", "resourceName": "nvidia.com/gpu"},
        }
    ),
    "arm64": AcceleratorProfile.model_validate(
        {"metadata": {"name": "arm64"}, "spec": {"arch": "arm64"}}
    ),
}


def override(kind: str, name: str, rules: list[dict[str, Any]], **spec: Any) -> Any:
    model = OverridePolicy if kind == "OverridePolicy" else ClusterOverridePolicy
    meta: dict[str, Any] = {"name": name}
    if kind == "OverridePolicy":
        meta["namespace"] = spec.pop("namespace", "ml")
    return model.model_validate({"metadata": meta, "spec": {"overrideRules": rules, **spec}})


def tag(value: str, **target: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "overriders": {
            "imageOverrider": [{"component": "Tag", "operator": "replace", "value": value}]
        }
    }
    if target:
        rule["targetCluster"] = target
    return rule


def by_name(name: str = "app") -> list[dict[str, Any]]:
    return [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}]


def by_label() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "labelSelector": {"matchLabels": {"team": "a"}},
        }
    ]


def container(obj: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = obj["spec"]["template"]["spec"]["containers"][0]
    return c


def do(
    *,
    template: dict[str, Any] | None = None,
    replicas: int = 8,
    total: int = 8,
    chip: str | None = None,
    policies: list[Any] | None = None,
    where: Cluster | None = None,
) -> dict[str, Any]:
    return render.render(
        template=template or deployment(),
        ref=REF,
        target=TargetCluster(name=(where or cluster()).metadata.name, replicas=replicas, chip=chip),
        total=total,
        cluster=where or cluster(),
        policies=policies or [],
        profiles=PROFILES,
    )


CASES = [
    pytest.param(
        {"replicas": 4},
        lambda o: o["spec"]["replicas"] == 4,
        id="a 4-of-8 static-weight share rewrites spec.replicas to 4",
    ),
    pytest.param(
        {},
        lambda o: (
            "status" not in o and not {"resourceVersion", "uid", "generation"} & set(o["metadata"])
        ),
        id="status and server-set metadata never reach a member",
    ),
    pytest.param(
        {},
        lambda o: (
            o["metadata"]["labels"]
            == {
                "team": "a",
                "fedctl.io/managed-by": "fedctl",
                "fedctl.io/workload": "app",
            }
            and o["metadata"]["annotations"]["fedctl.io/workload-ref"] == "ml/Deployment.apps/app"
        ),
        id="labelled as ours with its workload, nothing that changes per Binding write",
    ),
    pytest.param(
        {"chip": "ascend-910b"},
        lambda o: (
            container(o)["resources"]
            == {
                "requests": {"cpu": "4", "huawei.com/Ascend910": "8"},
                "limits": {"huawei.com/Ascend910": "8"},
            }
        ),
        id="on Ascend nvidia.com/gpu becomes huawei.com/Ascend910 in requests and limits",
    ),
    pytest.param(
        {"chip": "ascend-910b"},
        lambda o: (
            container(o)["image"] == "swr.example.cn/ml/train:2.3-cann8"
            and o["spec"]["template"]["spec"]["nodeSelector"]
            == {"kubernetes.io/arch": "arm64", "fedctl.io/accelerator": "ascend-910b"}
        ),
        id="on Ascend the image moves to the CANN build and the NPU nodes are selected",
    ),
    pytest.param(
        {"chip": "nvidia-a100-80gb"},
        lambda o: (
            container(o)["resources"]["requests"]["nvidia.com/gpu"] == "8"
            and container(o)["image"] == "registry.example.com/ml/train:2.3"
        ),
        id="on the chip the template was written for nothing is renamed",
    ),
    pytest.param(
        {"chip": "arm64"},
        lambda o: (
            o["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
            and "nvidia.com/gpu" in container(o)["resources"]["requests"]
        ),
        id="a plain-arch chip only adds the arch node selector",
    ),
    pytest.param(
        {
            "chip": "arm64",
            "template": deployment(
                template={
                    "spec": {
                        "nodeSelector": {"kubernetes.io/arch": "amd64", "disk": "ssd"},
                        "containers": [{"name": "main", "image": "registry.example.com/x:1"}],
                    }
                }
            ),
        },
        lambda o: (
            o["spec"]["template"]["spec"]["nodeSelector"]
            == {"kubernetes.io/arch": "amd64", "disk": "ssd"}
        ),
        id="the template's own kubernetes.io/arch is never written over by the profile's",
    ),
    pytest.param(
        {
            "policies": [
                override(
                    "OverridePolicy", "a-named", [tag("by-name")], resourceSelectors=by_name()
                ),
                override(
                    "OverridePolicy", "b-labelled", [tag("by-label")], resourceSelectors=by_label()
                ),
                override("ClusterOverridePolicy", "z-cluster", [tag("cluster-wide")]),
            ]
        },
        lambda o: container(o)["image"].endswith(":by-name"),
        id="cluster-wide first, then broader selectors, so the name selector has the last word",
    ),
    pytest.param(
        {"policies": [override("OverridePolicy", "only-west", [tag("w", clusterNames=["west"])])]},
        lambda o: container(o)["image"].endswith(":2.3"),
        id="a rule for another cluster leaves this one alone",
    ),
    pytest.param(
        {"policies": [override("OverridePolicy", "elsewhere", [tag("x")], namespace="other")]},
        lambda o: container(o)["image"].endswith(":2.3"),
        id="an OverridePolicy in another namespace does not apply",
    ),
    pytest.param(
        {
            "policies": [
                override(
                    "OverridePolicy",
                    "mirror",
                    [
                        {
                            "targetCluster": {
                                "fieldSelector": {
                                    "matchExpressions": [
                                        {"key": "region", "operator": "In", "values": ["us-east"]}
                                    ]
                                }
                            },
                            "overriders": {
                                "imageOverrider": [
                                    {
                                        "component": "Registry",
                                        "operator": "replace",
                                        "value": "m.io",
                                    }
                                ],
                                "argsOverrider": [
                                    {"containerName": "main", "operator": "add", "value": ["--y"]}
                                ],
                                "labelsOverrider": [{"operator": "add", "value": {"m": "1"}}],
                                "plaintext": [
                                    {"path": "/spec/paused", "operator": "add", "value": True}
                                ],
                            },
                        }
                    ],
                )
            ],
            "chip": "ascend-910b",
        },
        lambda o: (
            container(o)["image"] == "m.io/ml/train:2.3-cann8"
            and container(o)["args"] == ["--x", "--y"]
            and o["metadata"]["labels"]["m"] == "1"
            and o["spec"]["paused"] is True
        ),
        id="region overrides apply after the chip profile: the user has the last word",
    ),
]


@pytest.mark.parametrize(("kwargs", "check"), CASES)
def test_render(kwargs: dict[str, Any], check: Any) -> None:
    assert check(do(**kwargs))


def _job_share(*, parallelism: int, completions: int, replicas: int, total: int) -> tuple[int, int]:
    """(parallelism, completions) of a Job's copy placed with `replicas` of `total`."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml"},
        "spec": {
            "parallelism": parallelism,
            "completions": completions,
            "template": {"spec": {"containers": []}},
        },
    }
    out = do(template=job, replicas=replicas, total=total)
    return out["spec"]["parallelism"], out["spec"]["completions"]


def test_a_job_share_splits_parallelism_and_completions() -> None:
    assert _job_share(parallelism=4, completions=8, replicas=3, total=4) == (3, 6)


def test_a_job_placed_whole_runs_at_the_size_its_binding_admitted() -> None:
    """Its parallelism raised past what its queue admits, the Binding keeps the admitted
    2 on one member: the member's copy runs 2 pods, not the template's 5."""
    assert _job_share(parallelism=5, completions=6, replicas=2, total=2) == (2, 6)


def test_a_plaintext_path_that_does_not_exist_is_an_error_naming_it() -> None:
    policy = override(
        "OverridePolicy",
        "bad",
        [
            {
                "overriders": {
                    "plaintext": [{"path": "/spec/nope/x", "operator": "replace", "value": 1}]
                }
            }
        ],
    )
    with pytest.raises(errors.Invalid, match="/spec/nope/x"):
        do(policies=[policy])


def test_the_template_is_never_mutated() -> None:
    template = deployment()
    before = repr(template)
    do(template=template, replicas=2, chip="ascend-910b")
    assert repr(template) == before


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        pytest.param("nginx", ("", "nginx", "", ""), id="bare name"),
        pytest.param("nginx:1.2", ("", "nginx", ":", "1.2"), id="name and tag"),
        pytest.param(
            "library/nginx:1", ("", "library/nginx", ":", "1"), id="path without registry"
        ),
        pytest.param("r.io:5000/a/b:3", ("r.io:5000", "a/b", ":", "3"), id="registry with port"),
        pytest.param("localhost/a", ("localhost", "a", "", ""), id="localhost registry"),
        pytest.param("r.io/a@sha256:ab", ("r.io", "a", "@", "sha256:ab"), id="digest"),
    ],
)
def test_image_references_split_like_karmada(image: str, parts: tuple[str, ...]) -> None:
    assert overrides.split_image(image) == parts


def test_a_secret_s_string_data_is_sent_as_the_data_the_api_server_would_store() -> None:
    """stringData is never read back, so a copy edited in the member could not be compared
    with ours; the member gets the same Secret as data, stringData winning over data."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "web"},
        "type": "Opaque",
        "data": {"kept": "eA==", "token": "b2xk"},
        "stringData": {"token": "new", "password": "pässword"},
    }
    out = do(template=secret, replicas=0, total=0)
    assert "stringData" not in out
    assert out["data"] == {"kept": "eA==", "token": "bmV3", "password": "cMOkc3N3b3Jk"}
    assert secret["stringData"] == {"token": "new", "password": "pässword"}  # not mutated
    # A value the member would refuse is left for it to refuse.
    odd = {**secret, "stringData": {"port": 8080}}
    assert do(template=odd, replicas=0, total=0)["stringData"] == {"port": 8080}


@pytest.mark.parametrize(
    ("completions", "parallelism", "shares"),
    [
        pytest.param(10, 3, [1, 1, 1], id="10 over three members of 1: 3+3+4"),
        pytest.param(3, 2, [1, 1], id="3 over two members of 1: 1+2"),
        pytest.param(4, 3, [1, 1, 1], id="4 over three: 1+1+2"),
        pytest.param(8, 4, [3, 1], id="even: 6+2"),
        pytest.param(7, 7, [2, 5], id="completions equal to parallelism: the shares"),
    ],
)
def test_a_divided_job_s_completions_add_up_to_the_whole(
    completions: int, parallelism: int, shares: list[int]
) -> None:
    """Each member's share was floored on its own: a Job of 10 completions over three
    members ran 3+3+3 and reported Succeeded with one completion never run."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml"},
        "spec": {
            "parallelism": parallelism,
            "completions": completions,
            "template": {"spec": {"containers": []}},
        },
    }
    total, before, got = sum(shares), 0, []
    for replicas in shares:
        out = render.render(
            template=job,
            ref=REF,
            target=TargetCluster(name=cluster().metadata.name, replicas=replicas),
            total=total,
            cluster=cluster(),
            before=before,
        )
        assert out["spec"]["parallelism"] == replicas
        assert out["spec"]["completions"] >= replicas
        got.append(out["spec"]["completions"])
        before += replicas
    assert sum(got) == completions
