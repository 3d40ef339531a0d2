"""An override that cannot apply fails the one manifest it renders, naming itself.

Karmada fails the Work of the one binding whose override does not apply; no override,
however wrong, may raise anything but `errors.Invalid` out of render, and that error
names the policy, the rule and the path so a user can find what to fix.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation import errors
from federation.propagation import overrides, render
from federation.registry import keys
from policies.models.binding import TargetCluster
from policies.models.cluster import Cluster
from policies.models.override import (
    ClusterOverridePolicy,
    OverridePolicy,
    Overriders,
    PlaintextOverrider,
)

IMAGE = "/spec/template/spec/containers/0/image"


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "caf", "namespace": "hunt", "labels": {"app": "caf"}},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"labels": {"app": "caf"}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "args": ["--a"]}]},
            },
        },
    }


def cronjob() -> dict[str, Any]:
    pod = {
        "containers": [
            {"name": "report", "image": "docker.io/library/busybox:1.36", "args": ["--daily"]}
        ]
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "hunt"},
        "spec": {"schedule": "0 1 * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}},
    }


CLUSTER = Cluster.model_validate(
    {"metadata": {"name": "east"}, "spec": {"region": "us-east", "connection": {"context": "e"}}}
)


def policy(*overriders: dict[str, Any]) -> OverridePolicy:
    return OverridePolicy.model_validate(
        {
            "metadata": {"name": "pred", "namespace": "hunt"},
            "spec": {"overrideRules": [{"overriders": o} for o in overriders]},
        }
    )


def do(pol: OverridePolicy, template: dict[str, Any] | None = None) -> dict[str, Any]:
    template = template or deployment()
    return render.render(
        template=template,
        ref=keys.WorkloadRef("hunt", f"{template['kind']}.batch", template["metadata"]["name"]),
        target=TargetCluster(name="east", replicas=2),
        total=2,
        cluster=CLUSTER,
        policies=[pol],
    )


def image_at(path: str) -> dict[str, Any]:
    return {
        "imageOverrider": [
            {"component": "Tag", "operator": "replace", "value": "2", "predicate": {"path": path}}
        ]
    }


@pytest.mark.parametrize(
    ("overriders", "where", "path"),
    [
        pytest.param(
            image_at("/spec/template/spec/containers/0/imag"),
            "overrideRules[0].imageOverrider[0]",
            "/spec/template/spec/containers/0/imag",
            id="a predicate naming a field the container lacks",
        ),
        pytest.param(
            image_at("/spec/template/spec/containers/x/image"),
            "overrideRules[0].imageOverrider[0]",
            "/spec/template/spec/containers/x/image",
            id="a predicate with a list index that is not a number",
        ),
        pytest.param(
            image_at("/spec/template/spec/containers/0"),
            "overrideRules[0].imageOverrider[0]",
            "/spec/template/spec/containers/0",
            id="a predicate naming a whole container, not its image",
        ),
        pytest.param(
            {"plaintext": [{"path": "/spec/template/spec/containers/0/args/5", "operator": "add",
                            "value": "--z"}]},
            "overrideRules[1].plaintext[0]",
            "/spec/template/spec/containers/0/args/5",
            id="a plaintext add past the end of a list",
        ),
        pytest.param(
            {"plaintext": [{"path": "/spec/template/spec/containers/1/args/0",
                            "operator": "replace", "value": "x"}]},
            "overrideRules[1].plaintext[0]",
            "/spec/template/spec/containers/1/args/0",
            id="a plaintext replace of a container the template lacks",
        ),
    ],
)  # fmt: skip
def test_a_bad_override_is_an_error_naming_policy_rule_and_path(
    overriders: dict[str, Any], where: str, path: str
) -> None:
    rules = [overriders] if where.startswith("overrideRules[0]") else [{}, overriders]
    rules = [r or {"labelsOverrider": [{"operator": "add", "value": {"a": "b"}}]} for r in rules]
    with pytest.raises(errors.Invalid) as caught:
        do(policy(*rules))
    message = str(caught.value)
    assert "OverridePolicy hunt/pred" in message
    assert where in message
    assert path in message


def test_a_predicate_on_a_whole_container_leaves_the_container_alone() -> None:
    obj = deployment()
    rule = Overriders.model_validate(image_at("/spec/template/spec/containers/0"))
    with pytest.raises(errors.Invalid):
        overrides.apply_overriders(obj, rule)
    assert (
        obj["spec"]["template"]["spec"]["containers"][0]
        == deployment()["spec"]["template"]["spec"]["containers"][0]
    )


def unchecked(path: str, value: Any) -> OverridePolicy:
    """A policy with a plaintext edit its model now refuses, as one stored before the
    check: render must still fail it, not crash on it."""
    plain = PlaintextOverrider.model_construct(path=path, operator="replace", value=value)
    base = policy({"plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 1}]})
    rule = base.spec.override_rules[0]
    rule = rule.model_copy(
        update={"overriders": rule.overriders.model_copy(update={"plaintext": [plain]})}
    )
    return base.model_copy(update={"spec": base.spec.model_copy(update={"override_rules": [rule]})})


@pytest.mark.parametrize(
    ("path", "value"),
    [
        pytest.param("/metadata", "x", id="metadata made a string"),
        pytest.param("/metadata/labels", "team=ml", id="labels made a string"),
        pytest.param("/metadata/name", "caf-renamed", id="a rename"),
    ],
)
def test_an_override_leaving_a_manifest_no_member_takes_is_an_error_not_a_crash(
    path: str, value: Any
) -> None:
    with pytest.raises(
        errors.Invalid, match=rf"OverridePolicy hunt/pred overrideRules\[0\].*{path}"
    ):
        do(unchecked(path, value))


def test_a_plaintext_add_at_the_end_of_a_list_still_appends() -> None:
    ok = policy(
        {"plaintext": [{"path": "/spec/template/spec/containers/0/args/1", "operator": "add",
                        "value": "--z"}]}
    )  # fmt: skip
    out = do(ok)
    assert out["spec"]["template"]["spec"]["containers"][0]["args"] == ["--a", "--z"]


def test_image_command_and_args_edits_reach_a_cronjob_s_containers() -> None:
    edits = policy(
        {
            "imageOverrider": [{"component": "Registry", "operator": "replace", "value": "r.cn"}],
            "argsOverrider": [{"containerName": "report", "operator": "add",
                               "value": ["--region=cn"]}],
        }
    )  # fmt: skip
    out = do(edits, cronjob())
    pod = out["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "r.cn/library/busybox:1.36"
    assert pod["containers"][0]["args"] == ["--daily", "--region=cn"]
    assert overrides.unselected([edits], [cronjob()]) == []


def test_a_rule_that_cannot_apply_to_a_selected_workload_is_noted_before_it_renders() -> None:
    typo = policy({}, image_at("/spec/template/spec/containers/0/imag"))
    assert overrides.failing_rules(typo, [deployment()]) == [
        (
            ("spec", "overrideRules", 1, "overriders", "imageOverrider", 0),
            "imageOverrider[0]: path '/spec/template/spec/containers/0/imag' does not exist"
            " in the manifest on Deployment hunt/caf: its copies will not be rendered",
        )
    ]
    assert overrides.unselected([typo], [deployment()]) == [
        "OverridePolicy hunt/pred overrideRules[1].imageOverrider[0]: path"
        " '/spec/template/spec/containers/0/imag' does not exist in the manifest on"
        " Deployment hunt/caf: its copies will not be rendered"
    ]
    assert overrides.failing_rules(policy(image_at(IMAGE)), [deployment()]) == []


@pytest.mark.parametrize(
    ("target", "copies"),
    [
        pytest.param(None, "its copies", id="every cluster"),
        pytest.param(
            {"clusterNames": ["cn-north-cpu", "eu-west-arm"]},
            "its copies on cn-north-cpu, eu-west-arm",
            id="clusters by name",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"tier": "edge"}}},
            "its copies on the clusters its targetCluster selects",
            id="clusters by label",
        ),
    ],
)
def test_a_note_at_apply_names_the_rule_and_the_copies_it_fails(
    target: dict[str, Any] | None, copies: str
) -> None:
    """Three rules, each with a `plaintext[0]`; the second one's path does not exist. The
    note at apply said `plaintext[0]`, which of the three it did not say, and that the
    copies would not be rendered where only those of the clusters it targets are not."""
    good = {"plaintext": [{"path": IMAGE, "operator": "replace", "value": "nginx:2"}]}
    bad = {"plaintext": [{"path": "/spec/template/spec/containers/3/image",
                          "operator": "replace", "value": "x"}]}  # fmt: skip
    rules: list[dict[str, Any]] = [
        {"overriders": good},
        {"overriders": bad, **({"targetCluster": target} if target else {})},
        {"overriders": good},
    ]
    multi = OverridePolicy.model_validate(
        {"metadata": {"name": "multi", "namespace": "hunt"}, "spec": {"overrideRules": rules}}
    )
    assert overrides.unselected([multi], [deployment()]) == [
        "OverridePolicy hunt/multi overrideRules[1].plaintext[0]: path"
        " '/spec/template/spec/containers/3/image' does not exist in the manifest on"
        f" Deployment hunt/caf: {copies} will not be rendered"
    ]


def test_a_rule_failing_on_many_workloads_is_one_note_naming_a_few() -> None:
    everything = ClusterOverridePolicy.model_validate(
        {
            "metadata": {"name": "team"},
            "spec": {"overrideRules": [{"overriders": {"plaintext": [
                {"path": "/spec/template/metadata/labels/team", "operator": "add",
                 "value": "ml"}]}}]},
        }
    )  # fmt: skip
    configs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "a"}}
        for i in range(5)
    ]
    assert overrides.failing_rules(everything, [deployment(), *configs]) == [
        (
            ("spec", "overrideRules", 0, "overriders", "plaintext", 0),
            "plaintext[0]: path '/spec/template/metadata/labels/team' does not exist in the"
            " manifest on 5 workloads (ConfigMap a/c0, ConfigMap a/c1, ConfigMap a/c2, and 2"
            " more): their copies will not be rendered",
        )
    ]
