"""Which clusters a ClusterAffinity selects, and which labels a LabelSelector matches.

Role: the one reading of Karmada's selectors over the policy models, for the propagator
(which override rules reach a member, `federation.propagation.overrides`) and for the
loader's checks against a fleet (a `targetCluster` no joined cluster matches). Fed with
models only; pure.

Why here: the loader may not import the controller, and the two must agree, or a rule
the propagator applies would be warned about as matching nothing, or the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping

from policies.models.cluster import Cluster
from policies.models.common import ClusterAffinity, LabelSelector

__all__ = ["affinity_matches", "cluster_fields", "selector_matches"]


def cluster_fields(cluster: Cluster) -> dict[str, str | None]:
    """The fields a `fieldSelector` reads of a cluster, as Karmada names them."""
    spec = cluster.spec
    return {"region": spec.region, "zone": spec.zone, "provider": spec.provider}


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Kubernetes label selector semantics (matchLabels and matchExpressions)."""
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for req in selector.match_expressions:
        present = req.key in labels
        value = labels.get(req.key)
        ok = {
            "In": present and value in req.values,
            "NotIn": not (present and value in req.values),
            "Exists": present,
            "DoesNotExist": not present,
        }[req.operator]
        if not ok:
            return False
    return True


def affinity_matches(affinity: ClusterAffinity | None, cluster: Cluster) -> bool:
    """Karmada's ClusterAffinity: every part that is set must match; exclude always wins."""
    if affinity is None:
        return True
    name = cluster.metadata.name
    if name in affinity.exclude:
        return False
    if affinity.cluster_names and name not in affinity.cluster_names:
        return False
    if affinity.label_selector is not None and not selector_matches(
        affinity.label_selector, cluster.metadata.labels
    ):
        return False
    if affinity.field_selector is not None:
        fields = cluster_fields(cluster)
        for req in affinity.field_selector.match_expressions:
            if (req.operator == "In") != (fields[req.key] in req.values):
                return False
    return True
