"""Namespaces Kubernetes keeps for itself (`kube-*`) are never written to members.

A Namespace template kube-node-lease adopted each member's own namespace, and deleting
the template deleted it there; a workload or quota in kube-system would sit among, or
take over, the member's system objects. Karmada never propagates them (its
`--skipped-propagating-namespaces` defaults to `kube-.*`): fedctl refuses them at the
line that names the namespace."""

from __future__ import annotations

import pytest

from policies.loading import load_text
from policies.loading.documents import reserved_namespace

_WHY = (
    "is one Kubernetes keeps for itself (kube-*): fedctl, as Karmada, propagates nothing"
    " there, since a copy would take over or delete the member's own"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-node-lease}\n",
            f"k.yaml:3:18: metadata.name: namespace 'kube-node-lease' {_WHY}",
            id="a Namespace template named kube-*",
        ),
        pytest.param(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: kube-system\n"
            "data: {a: b}\n",
            f"k.yaml:5:14: metadata.namespace: namespace 'kube-system' {_WHY}",
            id="a workload template in kube-system",
        ),
        pytest.param(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: kube-public}\n"
            "spec:\n  template:\n    spec:\n      containers: [{name: c, image: x}]\n",
            f"k.yaml:3:32: metadata.namespace: namespace 'kube-public' {_WHY}",
            id="a typed workload in kube-public",
        ),
        pytest.param(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: FederatedResourceQuota\n"
            "metadata: {name: q, namespace: kube-system}\nspec: {overall: {cpu: '1'}}\n",
            f"k.yaml:3:32: metadata.namespace: namespace 'kube-system' {_WHY}",
            id="a quota that would write ResourceQuotas into kube-system",
        ),
    ],
)
def test_a_kube_namespace_is_refused_at_the_line_naming_it(text: str, expected: str) -> None:
    result = load_text(text, filename="k.yaml")

    assert [str(f) for f in result.findings] == [expected]
    assert result.objects == []


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n",
                     id="the default namespace"),
        pytest.param("apiVersion: v1\nkind: Namespace\nmetadata: {name: kubeflow}\n",
                     id="a namespace that only starts with kube"),
        pytest.param("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\n",
                     id="a workload in default"),
        pytest.param("apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
                     "metadata: {name: p, namespace: kube-system}\n"
                     "spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]}\n",
                     id="a policy, which writes nothing to members itself"),
    ],
)  # fmt: skip
def test_other_namespaces_stay_valid(text: str) -> None:
    result = load_text(text, filename="k.yaml")

    assert result.findings == [] and len(result.objects) == 1


def test_the_rule_reads_the_namespace_an_object_was_placed_in() -> None:
    """The API places a body without a namespace in its URL's: judged after that too."""
    (loaded,) = load_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n").objects
    meta = loaded.model.metadata.model_copy(update={"namespace": "kube-system"})

    placed = loaded.model.model_copy(update={"metadata": meta})

    assert reserved_namespace(loaded.model) is None
    assert reserved_namespace(placed) == (
        ("metadata", "namespace"),
        f"namespace 'kube-system' {_WHY}",
    )
