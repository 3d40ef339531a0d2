"""Override rules whose `targetCluster` selects no joined cluster, told at their line.

Fed by `LoadResult.against_fleet` with the loaded documents and the fleet's Clusters (a
server's, or an offline plan's profile); feeds it warnings. The same check the placing
policies get for their affinities (`none of the 8 joined clusters matches this
affinity`): a misspelt region or label in an OverridePolicy's targetCluster makes its
rule edit nothing anywhere, and nothing else says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from policies.loading.documents import Loaded, finding_at
from policies.loading.findings import Finding
from policies.models.cluster import Cluster
from policies.models.common import ClusterAffinity
from policies.models.matching import affinity_matches, cluster_fields
from policies.models.override import ClusterOverridePolicy, OverridePolicy

__all__ = ["selects_clusters", "unmatched_targets"]


def selects_clusters(objects: Iterable[Loaded]) -> bool:
    """Whether an override rule here selects clusters by label or field: what the fleet
    must be read for (`fedctl apply` reads it only when something needs it)."""
    return any(True for _ in _selecting(objects))


def unmatched_targets(objects: Iterable[Loaded], clusters: Sequence[Cluster]) -> list[Finding]:
    """A warning at each override rule's `targetCluster` whose label or field selector
    none of `clusters` matches (names are judged by the unjoined-cluster check)."""
    return [
        finding_at(
            obj,
            at,
            f"none of the {len(clusters)} joined clusters matches this targetCluster"
            f" ({_offered(term, clusters)}): the rule edits nothing until one does",
        )
        for obj, at, term in _selecting(objects if clusters else ())
        if not any(affinity_matches(term, cluster) for cluster in clusters)
    ]


def _selecting(
    objects: Iterable[Loaded],
) -> Iterator[tuple[Loaded, tuple[str | int, ...], ClusterAffinity]]:
    """Each override rule's `targetCluster` that selects by label or field, with its
    document and its path there."""
    for obj in objects:
        model = obj.model
        if not isinstance(model, OverridePolicy | ClusterOverridePolicy):
            continue
        for index, rule in enumerate(model.spec.effective_rules()):
            term = rule.target_cluster
            if term is None or (term.label_selector is None and term.field_selector is None):
                continue
            at: tuple[str | int, ...] = (
                ("spec", "overrideRules", index, "targetCluster")
                if model.spec.override_rules
                else ("spec", "targetCluster")
            )
            yield obj, at, term


def _offered(term: ClusterAffinity, clusters: Sequence[Cluster]) -> str:
    """What the fleet offers for the selectors the term sets, to spot the typo."""
    parts = []
    if term.field_selector is not None:
        for key in sorted({r.key for r in term.field_selector.match_expressions}):
            values = sorted({cluster_fields(c)[key] or "(none)" for c in clusters})
            parts.append(f"{key}s here: {', '.join(values)}")
    if term.label_selector is not None:
        labels = sorted({f"{k}={v}" for c in clusters for k, v in c.metadata.labels.items()})
        shown = ", ".join(labels[:8]) + (", ..." if len(labels) > 8 else "")
        parts.append(f"labels here: {shown or 'none'}")
    return "; ".join(parts)
