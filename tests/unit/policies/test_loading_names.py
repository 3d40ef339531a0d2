"""Names and namespaces every kind must have, and namespaces fedctl never writes to.

A name a member's API server refuses was stored and then refused on every member (a
FederatedResourceQuota named UPPER never became a ResourceQuota anywhere); a template in
a `kube-*` namespace took over the member's own system objects. Both are refused at the
line of the name or namespace, as `fedctl validate` and apply (and the API) read them."""

from __future__ import annotations

import pytest

from policies.loading import load_text

_SUBDOMAIN = "is not a DNS subdomain (lowercase letters, digits, '-' and '.'): members refuse it"


@pytest.mark.parametrize(
    ("api_version", "kind", "namespaced", "spec"),
    [
        pytest.param("policy.karmada.io/v1alpha1", "PropagationPolicy", True,
                     "resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]",
                     id="PropagationPolicy"),
        pytest.param("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy", False,
                     "resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]",
                     id="ClusterPropagationPolicy"),
        pytest.param("policy.karmada.io/v1alpha1", "OverridePolicy", True,
                     "overrideRules: []", id="OverridePolicy"),
        pytest.param("policy.karmada.io/v1alpha1", "ClusterOverridePolicy", False,
                     "overrideRules: []", id="ClusterOverridePolicy"),
        pytest.param("policy.karmada.io/v1alpha1", "FederatedResourceQuota", True,
                     "overall: {cpu: '100'}", id="FederatedResourceQuota"),
        pytest.param("fedctl.io/v1alpha1", "PropagationPolicy", True,
                     "resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]",
                     id="fedctl PropagationPolicy"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("name", ["UPPER", "Bad_PP", "Bad OP/with slash"])
def test_a_policy_named_as_kubernetes_refuses_is_refused_at_its_name(
    api_version: str, kind: str, namespaced: bool, spec: str, name: str
) -> None:
    namespace = "  namespace: web\n" if namespaced else ""
    text = (
        f"apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n{namespace}"
        f"spec: {{{spec}}}\n"
    )

    result = load_text(text, filename="p.yaml")

    assert [str(f) for f in result.findings] == [
        f"p.yaml:4:9: metadata.name: name {name!r} {_SUBDOMAIN}"
    ]
    assert result.objects == []


def test_a_policy_namespace_kubernetes_refuses_is_refused_at_its_namespace() -> None:
    text = """\
apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: team-quota, namespace: Team_A}
spec: {overall: {cpu: "100"}}
"""
    result = load_text(text, filename="q.yaml")

    assert [str(f) for f in result.findings] == [
        "q.yaml:3:41: metadata.namespace: namespace 'Team_A' is not a DNS label (lowercase"
        " letters, digits and '-', at most 63): members refuse it"
    ]


def test_lowercase_dotted_names_stay_valid() -> None:
    text = """\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: web.v2-images, namespace: web}
spec: {overrideRules: []}
"""
    result = load_text(text, filename="o.yaml")

    assert result.findings == [] and len(result.objects) == 1
