"""An override rule that builds on an earlier one is judged after it, as it renders.

Karmada's layering: a cluster-wide base (a ClusterOverridePolicy adds an `env`), then a
per-cluster tweak (an OverridePolicy replaces `env/0/value`), or two rules of one policy
doing the same. Each rule was tried on the bare template, so the tweak's path did not
exist there, and `validate` and `apply` warned "its copies will not be rendered" of a
policy whose copies rendered and ran. A rule whose path exists nowhere is still said.
"""

from __future__ import annotations

from typing import Any

from federation.propagation import overrides
from policies import loading
from policies.models.override import ClusterOverridePolicy, OverridePolicy

ENV = "/spec/template/spec/containers/0/env"


def chain() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "chain", "namespace": "kt10"},
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}},
        },
    }


def add_env(**target: Any) -> dict[str, Any]:
    edit = {"operator": "add", "path": ENV, "value": [{"name": "LOG_LEVEL", "value": "info"}]}
    return {**target, "overriders": {"plaintext": [edit]}}


def set_value(path: str = f"{ENV}/0/value", **target: Any) -> dict[str, Any]:
    edit = {"operator": "replace", "path": path, "value": "debug"}
    return {**target, "overriders": {"plaintext": [edit]}}


BASE = ClusterOverridePolicy.model_validate(
    {
        "metadata": {"name": "chain-base-env"},
        "spec": {
            "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "kt10"}
            ],
            "overrideRules": [add_env()],
        },
    }
)


def tweak(*rules: dict[str, Any]) -> OverridePolicy:
    return OverridePolicy.model_validate(
        {
            "metadata": {"name": "chain-us", "namespace": "kt10"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "overrideRules": list(rules),
            },
        }
    )


US = {"targetCluster": {"clusterNames": ["us-east-cpu"]}}


def test_a_tweak_of_what_an_earlier_policy_added_is_not_said_to_fail() -> None:
    us = tweak(set_value(**US))
    assert overrides.failing_rules(us, [chain()], among=[BASE, us]) == []
    assert overrides.unselected([us], [chain()], among=[BASE, us]) == []


def test_a_rule_building_on_an_earlier_rule_of_its_policy_is_not_said_to_fail() -> None:
    both = tweak(add_env(), set_value(**US))
    assert overrides.failing_rules(both, [chain()]) == []


def test_a_policy_applied_after_the_tweak_is_no_help_to_it() -> None:
    """Only what renders before a rule counts: a ClusterOverridePolicy applies before
    every OverridePolicy, so an OverridePolicy's `env` is not there for it."""
    base = ClusterOverridePolicy.model_validate(
        {
            "metadata": {"name": "late"},
            "spec": {"overrideRules": [set_value()]},
        }
    )
    adds = tweak(add_env())
    (found,) = overrides.failing_rules(base, [chain()], among=[base, adds])
    assert "does not exist in the manifest on Deployment kt10/chain" in found[1]


def test_a_path_no_earlier_rule_makes_is_still_said() -> None:
    typo = tweak(set_value(f"{ENV}/0/valeu", **US))
    (found,) = overrides.failing_rules(typo, [chain()], among=[BASE, typo])
    assert found[0] == ("spec", "overrideRules", 0, "overriders", "plaintext", 0)
    assert found[1] == (
        f"plaintext[0]: path '{ENV}/0/valeu' does not exist in the manifest on Deployment"
        " kt10/chain: its copies on us-east-cpu will not be rendered"
    )


CHAIN_FILE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: chain, namespace: kt10}
spec:
  replicas: 1
  selector: {matchLabels: {app: chain}}
  template:
    metadata: {labels: {app: chain}}
    spec:
      containers: [{name: web, image: nginx}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: chain-base-env}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: kt10}]
  overrideRules:
  - overriders:
      plaintext:
      - {operator: add, path: /spec/template/spec/containers/0/env, value: [{name: L, value: info}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: chain-us, namespace: kt10}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: chain}]
  overrideRules:
  - targetCluster: {clusterNames: [us-east-cpu]}
    overriders:
      plaintext:
      - {operator: replace, path: /spec/template/spec/containers/0/env/0/value, value: debug}
      - {operator: replace, path: /spec/template/spec/containers/0/env/0/valeu, value: debug}
"""


def test_validate_judges_a_file_s_rules_in_rendering_order() -> None:
    """`fedctl validate` of a base policy and its per-cluster tweak in one file: only the
    misspelt path is said, at its line."""
    result = loading.load_text(CHAIN_FILE, filename="t27.yaml")
    assert result.ok, result.errors
    found = overrides.container_findings(result)
    assert [(f.line, f.path) for f in found] == [
        (32, "spec.overrideRules[0].overriders.plaintext[1]")
    ], found
