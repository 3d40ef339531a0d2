"""Cluster affinity filter: names, label selectors, provider/region/zone fields, exclude.

Fed by the policy's `clusterAffinity`, or the current group of its ordered
`clusterAffinities` (the cycle tries the groups in order and keeps the first that can
place the workload); feeds the runner. Matching follows Karmada's `ClusterAffinity`:
every part that is set must match, and `exclude` always wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from policies.models.common import ClusterAffinity, LabelSelector

__all__ = ["Affinity", "Located", "matches", "selector_matches"]


class Located(Protocol):
    """What cluster affinity matches on: a snapshot's cluster, or one the fingerprint read
    back from its `placeable` entry."""

    @property
    def name(self) -> str: ...
    @property
    def region(self) -> str: ...
    @property
    def zone(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Kubernetes label selector semantics (matchLabels and matchExpressions)."""
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions:
        present = req.key in labels
        if req.operator == "In" and (not present or labels[req.key] not in req.values):
            return False
        if req.operator == "NotIn" and present and labels[req.key] in req.values:
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
    return True


def matches(affinity: ClusterAffinity, cluster: Located) -> str | None:
    """None when `cluster` matches; otherwise the part of the affinity it fails."""
    if cluster.name in affinity.exclude:
        return "excluded by name"
    if affinity.cluster_names and cluster.name not in affinity.cluster_names:
        return "not in clusterNames"
    if affinity.label_selector is not None and not selector_matches(
        affinity.label_selector, cluster.labels
    ):
        return "labels do not match labelSelector"
    if affinity.field_selector is not None:
        fields = {"region": cluster.region, "zone": cluster.zone, "provider": cluster.provider}
        for req in affinity.field_selector.match_expressions:
            value = fields[req.key]
            inside = value in req.values
            if (req.operator == "In") != inside:
                return (
                    f"{req.key} {value or '(none)'} fails fieldSelector {req.operator} {req.values}"
                )
    return None


class Affinity:
    name = "affinity"
    static = True

    def __init__(self, settings: object = None) -> None:
        del settings

    def filter(
        self, job: fw.JobRequest, cluster: snap.ClusterInfo, state: fw.CycleState
    ) -> fw.Verdict:
        problem = matches(job.affinity, cluster)
        if problem is None:
            return fw.Verdict.success()
        term = job.affinity
        group = getattr(term, "affinity_name", None)
        where = f" (affinity group {group})" if group else ""
        return fw.Verdict.unschedulable(problem + where)

    def mask(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> snap.BoolArray:
        term = job.affinity
        if not (term.cluster_names or term.exclude or term.label_selector or term.field_selector):
            return np.ones(len(rows), dtype=bool)
        clusters = state.snapshot.clusters
        return np.array([matches(term, clusters[r]) is None for r in rows.tolist()], dtype=bool)
