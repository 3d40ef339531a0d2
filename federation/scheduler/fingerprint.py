"""What a workload's placement depends on, as one digest: the fingerprint.

Fed by the scheduling loop's pending entries (`plan.job_for`) and the Ready members of the
snapshot (`placeable`); feeds `reconcile`, which compares it with the one a Scheduled
Binding was admitted under (`recorded.admitted_as`), and the loop, which stamps it on each
Binding it writes (annotation `fedctl.io/fingerprint`).

Why a digest rather than comparing objects: the one it is compared with must survive a
restart or a change of leader, so it travels on the Binding; and a workload's metadata
(resource version, managed fields) changes on writes that do not move it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob
from policies.models.cluster import HEALTH_TAINTS

__all__ = ["fingerprint", "placeable"]


def placeable(clusters: Iterable[snap.ClusterInfo]) -> list[str]:
    """The Ready clusters as a service's placement depends on them (`fingerprint`): each
    name with the taints that keep work off it.

    Why the taints: a member that came back Ready is tainted until its stale copies are
    purged; a Duplicated service placed in that window skipped it, and with the Ready set
    unchanged when the taint went, it never got its copy there (Karmada schedules a
    Duplicated binding again on every cluster change). A member that joins is Ready a
    moment before failover lifts its `not-ready` taint; a divided service placed then
    missed its share there the same way.
    """
    out = []
    for c in clusters:
        if not c.ready:
            continue
        marks = sorted(
            f"{t.key}={t.value or ''}:{t.effect}"
            for t in c.taints
            if t.effect != "PreferNoSchedule"
        )
        out.append(f"{c.name}|{','.join(marks)}" if marks else c.name)
    return out


def fingerprint(job: PendingJob, *, ready: Iterable[str] = ()) -> str:
    """What a placement depends on from the workload and its policy (not its metadata).

    A service (not a batch gang) also depends on which clusters are Ready, as in Karmada:
    a member joining or recovering gets its share, a lost one's share moves. One that goes
    to every cluster (Duplicated, or scaled to zero) depends on their taints too
    (`placeable`): a member losing its taint gets its copy. A divided service depends only
    on failover's health taints (`HEALTH_TAINTS`): a Ready member carrying one is not back
    yet, and it gets its share when the taint goes. A user's cordon or taint leaves divided
    work alone: Steady division would place it as it is.
    """
    w = job.workload
    fleet = ""
    if job.placement is not None and not w.is_batch:
        everywhere = job.placement.scheduling.replica_scheduling_type == "Duplicated"
        fleet = _fleet(ready, everywhere=everywhere or (bool(w.pod_sets) and w.replicas == 0))
    parts = [
        w.model_dump_json(exclude={"metadata", "status"}),
        repr(sorted(w.metadata.labels.items())),
        repr(sorted(w.metadata.annotations.items())),
        job.placement.model_dump_json() if job.placement is not None else "",
        getattr(job.fedctl, "model_dump_json", lambda: "")(),
        job.queue,
        str(job.priority),
        fleet,
    ]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


_last_fleet: tuple[object, str, str] = ((), "", "")
"""The last `ready` given to `fingerprint`, joined with its taints, and the names of its
members without a health taint: a pass gives every workload the same list, and joining it
per workload cost as much as the rest of the digest at hundreds of clusters. Replaced
whole, so a reader in another thread sees one consistent entry."""


def _fleet(ready: Iterable[str], *, everywhere: bool) -> str:
    global _last_fleet
    last = _last_fleet
    if last[0] is not ready:
        names = sorted(ready)
        entries = (n.partition("|") for n in names)
        healthy = sorted(name for name, _, marks in entries if not _sick(marks))
        last = _last_fleet = (ready, ",".join(names), ",".join(healthy))
    return last[1] if everywhere else last[2]


def _sick(marks: str) -> bool:
    """Whether a `placeable` entry's taints include one of failover's health taints."""
    return bool(marks) and any(m.partition("=")[0] in HEALTH_TAINTS for m in marks.split(","))
