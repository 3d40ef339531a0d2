"""A cluster-scoped object (a ClusterRole, a Namespace) has no namespace, so no namespaced
PropagationPolicy claims it, as in Karmada: only a ClusterPropagationPolicy can.

Why it mattered: read as living in `default`, a ClusterRole was claimed by any
PropagationPolicy in `default` that selected its kind, and propagated under its rules.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.scheduler import plan
from policies.loading import load_text
from policies.models.workload import Workload

CLUSTER_ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {template: {spec: {containers: [{name: c, image: x}]}}}
"""


def policy(kind: str, *, selector: str = "", namespace: str | None = "default") -> Any:
    meta = f"{{name: p, namespace: {namespace}}}" if namespace else "{name: p}"
    text = (
        f"apiVersion: policy.karmada.io/v1alpha1\nkind: {kind}\nmetadata: {meta}\n"
        f"spec:\n  resourceSelectors:\n    - {{{selector}}}\n"
    )
    return one(text)


def one(text: str) -> Any:
    loaded = load_text(text, filename="t.yaml")
    assert loaded.ok, loaded.errors
    [item] = loaded.objects
    return item.model


ROLE_SELECTOR = "apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole"
DEPLOYMENT_SELECTOR = "apiVersion: apps/v1, kind: Deployment"


@pytest.mark.parametrize(
    ("template", "chooser", "claims"),
    [
        pytest.param(
            CLUSTER_ROLE,
            policy("PropagationPolicy", selector=ROLE_SELECTOR),
            False,
            id="a PropagationPolicy in default never claims a ClusterRole",
        ),
        pytest.param(
            CLUSTER_ROLE,
            policy("ClusterPropagationPolicy", selector=ROLE_SELECTOR, namespace=None),
            True,
            id="a ClusterPropagationPolicy does",
        ),
        pytest.param(
            CLUSTER_ROLE,
            policy(
                "ClusterPropagationPolicy",
                selector=ROLE_SELECTOR + ", namespace: default",
                namespace=None,
            ),
            False,
            id="but not through a selector naming a namespace",
        ),
        pytest.param(
            DEPLOYMENT,
            policy("PropagationPolicy", selector=DEPLOYMENT_SELECTOR),
            True,
            id="a Deployment without a namespace is still in default",
        ),
        pytest.param(
            DEPLOYMENT,
            policy(
                "ClusterPropagationPolicy",
                selector=DEPLOYMENT_SELECTOR + ", namespace: default",
                namespace=None,
            ),
            True,
            id="and a selector naming default still selects it",
        ),
    ],
)
def test_only_a_cluster_wide_policy_claims_a_cluster_scoped_object(
    template: str, chooser: Any, claims: bool
) -> None:
    workload = one(template)
    assert isinstance(workload, Workload)
    assert (plan.claim(workload, [chooser]) is chooser) is claims
    assert (plan.claimant(workload, [chooser], recorded=plan.policy_id(chooser)) is chooser) is (
        claims
    )


def test_a_cluster_scoped_object_has_no_namespace_and_a_namespaced_one_defaults() -> None:
    role, deployment = one(CLUSTER_ROLE), one(DEPLOYMENT)
    assert (role.namespace, deployment.namespace) == ("", "default")
