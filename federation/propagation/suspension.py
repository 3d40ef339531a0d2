"""Suspended dispatching (Karmada's `spec.suspension`): which clusters, and what it changes.

Fed by the workload pass (`converge.WorkloadSync.sync`) with the claiming policy's spec
and the Works it is about to write; feeds it back the clusters to apply nothing to, the
Works kept on clusters the placement left, and the events that say when a member's copy
stopped, or started again, following its template. Pure: no registry, no member.

Why the pass still writes a suspended cluster's Work: Karmada keeps rendering the Work and
only its execution stops, so `fedctl describe` shows what the member will get once the
suspension is lifted, and lifting it is an ordinary pass that finds the Work out of date.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from federation.propagation import works as works_mod
from policies.models.work import Work, WorkStatus

__all__ = ["changes", "clusters", "frozen"]


def clusters(spec: Any, names: Iterable[str]) -> frozenset[str]:
    """Those of `names` to which the claiming policy's `spec.suspension` suspends
    dispatching: all of them (`dispatching: true`) or the ones it names."""
    suspension = getattr(spec, "suspension", None)
    if suspension is None:
        return frozenset()
    if suspension.dispatching:
        return frozenset(names)
    on = suspension.dispatching_on_clusters
    return frozenset(names) & frozenset(on.cluster_names if on is not None else ())


def frozen(work: Work, status: WorkStatus) -> Work:
    """The Work of a copy on a cluster the placement left while dispatching there is
    suspended: kept, as the copy is, marked suspended, with its status as now read."""
    spec = work.spec.model_copy(update={"suspend_dispatching": True})
    return work.model_copy(update={"spec": spec, "status": status})


def changes(
    writes: Iterable[works_mod.Write], *, needers: Collection[Any] = ()
) -> Iterator[tuple[str, str, str]]:
    """(cluster, reason, message) for each Work whose dispatching `writes` suspend or
    resume: why a member's copy stopped following its template, and from when. `needers`:
    the workloads a dependency is sent for, whose suspension may be what holds it."""
    by = "its policy"
    if needers:
        by = f"its policy or that of {', '.join(sorted(map(str, needers)))}"
    for name, old, work in writes:
        was = old is not None and old.obj.spec.suspend_dispatching
        if work.spec.suspend_dispatching and not was:
            why = f"dispatching to {name} suspended by {by}: its copy is left as it is"
            yield name, "DispatchingSuspended", why
        elif was and not work.spec.suspend_dispatching:
            yield name, "DispatchingResumed", f"dispatching to {name} resumed"
