"""The manifests overrides make are judged as templates are: an unknown field is said.

`fedctl validate` refuses `spec.template.spec.containres` in a template, at its line. The
same misspelling made by an override (`add /spec/template/spec/nodeSelectr`) passed
validate and apply; the member dropped the field or refused the copy, far from the file,
and the node selector asked for was never there. Now the edit that writes an unknown
field is warned about at its own line, naming the field meant.
"""

from __future__ import annotations

from typing import Any

from federation.propagation import overrides
from policies import loading
from policies.models.override import OverridePolicy

NODE_SELECTOR = "/spec/template/spec/nodeSelector"


def w5(**extra: Any) -> dict[str, Any]:
    pod = {"containers": [{"name": "web", "image": "nginx"}], **extra}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "w5", "namespace": "kt12"},
        "spec": {"replicas": 1, "template": {"spec": pod}},
    }


def adding(*edits: tuple[str, Any]) -> OverridePolicy:
    plaintext = [{"operator": "add", "path": path, "value": value} for path, value in edits]
    return OverridePolicy.model_validate(
        {
            "metadata": {"name": "typo", "namespace": "kt12"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "overrideRules": [{"overriders": {"plaintext": plaintext}}],
            },
        }
    )


def test_an_edit_writing_an_unknown_field_is_said_at_that_edit() -> None:
    typo = adding((NODE_SELECTOR, {"disk": "ssd"}), ("/spec/template/spec/nodeSelectr", {}))
    assert overrides.failing_rules(typo, [w5()]) == [
        (
            ("spec", "overrideRules", 0, "overriders", "plaintext", 1),
            "plaintext[1]: spec.template.spec.nodeSelectr: unknown field 'nodeSelectr' (did"
            " you mean 'nodeSelector'?): members refuse it, in the copies of Deployment"
            " kt12/w5",
        )
    ]


def test_an_unknown_field_inside_a_value_an_edit_adds_is_said_at_that_edit() -> None:
    container = {"name": "side", "image": "busybox", "imagePullPolicyy": "Always"}
    typo = adding(("/spec/template/spec/containers/-", container))
    ((at, note),) = overrides.failing_rules(typo, [w5()])
    assert at == ("spec", "overrideRules", 0, "overriders", "plaintext", 0)
    assert note.startswith(
        "plaintext[0]: spec.template.spec.containers[1].imagePullPolicyy: unknown field"
    )


def test_fields_the_kind_has_are_not_said_nor_what_the_template_had() -> None:
    right = adding((NODE_SELECTOR, {"disk": "ssd"}), ("/spec/template/spec/hostNetwork", True))
    assert overrides.failing_rules(right, [w5()]) == []
    untouched = adding((NODE_SELECTOR, {"disk": "ssd"}))
    assert overrides.failing_rules(untouched, [w5(nodeSelectr={})]) == []


def test_validate_says_it_at_the_line_of_the_edit() -> None:
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: w5, namespace: kt12}
spec:
  replicas: 1
  selector: {matchLabels: {app: w5}}
  template:
    metadata: {labels: {app: w5}}
    spec:
      containers: [{name: web, image: nginx}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: typo, namespace: kt12}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: w5}]
  overrideRules:
  - overriders:
      plaintext:
      - {operator: add, path: /spec/template/spec/nodeSelectr, value: {disk: ssd}}
"""
    result = loading.load_text(text, filename="t40.yaml")
    assert result.ok, result.errors
    (found,) = overrides.container_findings(result)
    assert (found.file, found.line, found.path) == (
        "t40.yaml",
        20,
        "spec.overrideRules[0].overriders.plaintext[0]",
    )
    assert "unknown field 'nodeSelectr' (did you mean 'nodeSelector'?)" in found.message
