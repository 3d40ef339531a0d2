"""Cluster-scoped workloads (Namespaces) are keyed under `_` and claimed by name label."""

from __future__ import annotations

from federation.registry import keys, objects
from federation.scheduler import plan
from policies.loading import load_text

DOCS = """
apiVersion: v1
kind: Namespace
metadata:
  name: web
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: team-namespaces
spec:
  resourceSelectors:
    - apiVersion: v1
      kind: Namespace
      labelSelector:
        matchExpressions:
          - {key: kubernetes.io/metadata.name, operator: In, values: [web]}
  placement:
    replicaScheduling: {replicaSchedulingType: Duplicated}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: web}
spec:
  template: {spec: {containers: [{name: c, image: x}]}}
"""


def _objects() -> list[object]:
    loaded = load_text(DOCS, filename="t.yaml")
    assert not loaded.errors, loaded.errors
    return [o.model for o in loaded.objects]


def test_a_namespace_is_keyed_cluster_scoped_and_a_deployment_by_its_namespace() -> None:
    namespace, _, deployment = _objects()
    assert objects.workload_ref(namespace) == keys.WorkloadRef("_", "Namespace", "web")  # type: ignore[arg-type]
    assert objects.key_for(namespace) == "/fedctl/workloads/_/Namespace/web"  # type: ignore[arg-type]
    assert objects.workload_ref(deployment).namespace == "web"  # type: ignore[arg-type]


def test_a_namespace_is_claimed_through_its_implicit_name_label() -> None:
    namespace, policy, _ = _objects()
    claimed = plan.claim(namespace, [policy])  # type: ignore[arg-type, list-item]
    assert claimed is policy
