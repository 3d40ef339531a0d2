"""What an orphaned workload keeps of the policy that last claimed it (pure).

Fed by the workload pass (`converge.WorkloadSync`) with the Works of a workload that has a
Binding but that no policy claims any more (its policy deleted, or edited so that it no
longer selects it); feeds it back a stand-in for that policy's spec, read from what the
Works recorded when it was last claimed: propagateDeps, preserveResourcesOnDeletion and
the clusters dispatching was suspended to.

Why: the copies of such a workload stay where they are, as Karmada keeps the
ResourceBinding, and the binding keeps those settings with it. Read live from a policy
that is gone, each was dropped: the dependencies were removed from members whose copies
still need them, a suspension holding back a bad rollout was lifted and the held change
shipped, and a later deletion of the template deleted copies the policy preserved.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from policies.models.propagation import SuspendClusters, Suspension
from policies.models.work import Work

__all__ = ["Recorded", "recorded"]


@dataclass(frozen=True)
class Recorded:
    """The claiming policy's spec fields the propagator reads, as the Works recorded them
    (named as the policy names them, so it stands in wherever that spec is read)."""

    propagate_deps: bool = False
    preserve_resources_on_deletion: bool = False
    suspension: Suspension | None = None
    conflict_resolution: str = "Abort"


def recorded(works: Iterable[Work]) -> Recorded:
    """The settings `works` (one workload's) were last written with. A cluster's
    suspension is its Work's; a copy adopted under Overwrite is ours already, so Abort
    takes it as ours."""
    works = list(works)
    suspended = sorted(w.spec.cluster for w in works if w.spec.suspend_dispatching)
    return Recorded(
        propagate_deps=any(w.spec.propagate_deps for w in works),
        preserve_resources_on_deletion=any(w.spec.preserve_on_deletion for w in works),
        suspension=(
            Suspension(dispatching_on_clusters=SuspendClusters(cluster_names=suspended))
            if suspended
            else None
        ),
    )
