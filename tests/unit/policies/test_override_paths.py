"""Override paths refused or warned about when the file is read, at the line they are on.

What can be known without the workloads: a path whose value must have a shape (metadata,
its labels, a label's value), a rename, which Karmada's overrides do not support and
which left a second copy running in the member, and a predicate that names no image.
"""

from __future__ import annotations

import pytest

from policies.loading import load_text
from policies.models.cluster import Cluster

CRON = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: hunt}
spec:
  schedule: "0 1 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: report, image: busybox}]
"""


def policy(plaintext: str) -> str:
    return f"""\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {{name: op, namespace: hunt}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: caf}}]
  overrideRules:
    - overriders:
        plaintext:
          - {plaintext}
"""


def test_a_cronjob_is_a_kind_fedctl_knows() -> None:
    result = load_text(CRON, filename="cron.yaml")
    assert result.ok
    assert [str(f) for f in result.findings] == []


@pytest.mark.parametrize(
    ("plaintext", "expected"),
    [
        pytest.param(
            '{path: /metadata/labels, operator: replace, value: "team=ml"}',
            "op.yaml:9:13: spec.overrideRules[0].overriders.plaintext[0]: path /metadata/labels"
            " holds a mapping of names to strings, not a string",
            id="a string replacing the labels",
        ),
        pytest.param(
            "{path: /metadata/labels/team, operator: add, value: 3}",
            "op.yaml:9:13: spec.overrideRules[0].overriders.plaintext[0]: path"
            " /metadata/labels/team holds a string, not a number",
            id="a number as a label value",
        ),
        pytest.param(
            "{path: /metadata, operator: replace, value: x}",
            "op.yaml:9:13: spec.overrideRules[0].overriders.plaintext[0]: path /metadata"
            " holds a mapping, not a string",
            id="a string replacing the metadata",
        ),
        pytest.param(
            "{path: /metadata/name, operator: replace, value: caf-renamed}",
            "op.yaml:9:13: spec.overrideRules[0].overriders.plaintext[0]: path /metadata/name"
            " cannot be overridden: a copy under another name is not the workload's (Karmada"
            " does not support renaming either)",
            id="a rename",
        ),
        pytest.param(
            "{path: /metadata/namespace, operator: replace, value: other}",
            "op.yaml:9:13: spec.overrideRules[0].overriders.plaintext[0]: path"
            " /metadata/namespace cannot be overridden: a copy under another name is not the"
            " workload's (Karmada does not support renaming either)",
            id="a move to another namespace",
        ),
    ],
)
def test_an_override_no_manifest_can_take_is_refused_at_its_line(
    plaintext: str, expected: str
) -> None:
    result = load_text(policy(plaintext), filename="op.yaml")
    assert not result.ok
    assert [str(f) for f in result.findings] == [expected]


def test_a_predicate_that_names_no_image_is_warned_about() -> None:
    text = policy("{path: /spec/x, operator: remove}").replace(
        "        plaintext:\n          - {path: /spec/x, operator: remove}\n",
        "        imageOverrider:\n          - {component: Tag, operator: replace, value: '2',"
        " predicate: {path: /spec/template/spec/containers/0/imag}}\n",
    )
    result = load_text(text, filename="op.yaml")
    assert result.ok
    assert [str(f) for f in result.findings] == [
        "op.yaml:9:79: spec.overrideRules[0].overriders.imageOverrider[0].predicate.path:"
        " warning: '/spec/template/spec/containers/0/imag' names no image: a predicate"
        " points at a container's image (…/containers/N/image); elsewhere the override"
        " fails on every copy it renders"
    ]


def fleet() -> list[Cluster]:
    return [
        Cluster.model_validate(
            {
                "metadata": {"name": name, "labels": {"env": env}},
                "spec": {"region": region, "connection": {"context": name}},
            }
        )
        for name, region, env in (
            ("eu-west-arm", "eu-west", "prod"),
            ("us-east-cpu", "us-east", "prod"),
        )
    ]


def targeted(target: str) -> str:
    return policy("{path: /spec/replicas, operator: replace, value: 1}").replace(
        "    - overriders:\n", f"    - targetCluster: {target}\n      overriders:\n"
    )


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(
            "{fieldSelector: {matchExpressions: [{key: region, operator: In, values: [eu-wset]}]}}",
            "op.yaml:7:7: spec.overrideRules[0].targetCluster: warning: none of the 2 joined"
            " clusters matches this targetCluster (regions here: eu-west, us-east): the rule"
            " edits nothing until one does",
            id="a misspelt region",
        ),
        pytest.param(
            "{labelSelector: {matchLabels: {env: canary}}}",
            "op.yaml:7:7: spec.overrideRules[0].targetCluster: warning: none of the 2 joined"
            " clusters matches this targetCluster (labels here: env=prod): the rule edits"
            " nothing until one does",
            id="a label no cluster has",
        ),
    ],
)
def test_a_target_no_joined_cluster_matches_is_warned_about(target: str, expected: str) -> None:
    result = load_text(targeted(target), filename="op.yaml").against_fleet(fleet())
    assert [str(f) for f in result.findings] == [expected]


def test_a_target_a_joined_cluster_matches_is_not_warned_about() -> None:
    text = targeted("{labelSelector: {matchLabels: {env: prod}}}")
    assert load_text(text, filename="op.yaml").against_fleet(fleet()).findings == []
