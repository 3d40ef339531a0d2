"""Purge on return: stale copies are deleted from a member that comes back, before new work.

Fed by the failover controller when a member that was `unreachable` answers again (while
it still carries the `cluster.fedctl.io/recovering` NoSchedule taint, so nothing new is
placed there), with the member's connector and every Binding; feeds the member (deletes)
and the controller's decision to lift the taint.

Why it is needed: an unreachable member could not be told to delete anything while it was
away. Its copies of workloads that moved elsewhere may still be running when it returns,
and a batch job must never run in two clusters at once. The propagator would clean them up
eventually; this makes it happen first, and checks the member itself (objects we labelled
`fedctl.io/managed-by=fedctl`, identified by their workload annotation) rather than only our
registry, so a copy whose Work record was lost is found too.

A copy is kept when its workload's Binding still targets the member, keeps it under a
graceful eviction task (purge mode Gracefully; whether the placement wants it there again
is for the scheduler to say once the member is back, see `graceful.judge`). Everything
else of ours goes: moved away, evicted Directly, or the workload was deleted. Objects
without our workload annotation are never touched (we cannot tell whose they are).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusters import member as member_mod
from federation.registry import keys
from policies.models.binding import Binding

__all__ = [
    "LABEL_MANAGED_BY",
    "MANAGED_BY",
    "REF_ANNOTATION",
    "Report",
    "purge",
    "stale",
    "wanted_here",
]

# The propagator stamps these on everything it applies (federation.propagation.render);
# repeated here because failover must not import the propagator.
LABEL_MANAGED_BY = "fedctl.io/managed-by"
MANAGED_BY = "fedctl"
REF_ANNOTATION = "fedctl.io/workload-ref"

_PARALLEL_DELETES = 16


@dataclass
class Report:
    """What one purge pass found and did."""

    cluster: str
    checked: int = 0
    deleted: list[str] = field(default_factory=list)
    kept: int = 0


def wanted_here(binding: Binding | None, cluster: str) -> bool:
    """Whether `binding` still wants a copy on `cluster`."""
    if binding is None:
        return False
    if any(t.name == cluster for t in binding.spec.clusters):
        return True
    return any(t.cluster == cluster and not t.at_once for t in binding.spec.eviction_tasks)


def _ref_of(obj: Mapping[str, Any]) -> str | None:
    meta = obj.get("metadata") or {}
    if (meta.get("labels") or {}).get(LABEL_MANAGED_BY) != MANAGED_BY:
        return None
    ref = (meta.get("annotations") or {}).get(REF_ANNOTATION)
    return ref if isinstance(ref, str) and ref else None


def stale(
    objects: Iterable[Mapping[str, Any]], *, cluster: str, bindings: Mapping[str, Binding]
) -> list[Mapping[str, Any]]:
    """The objects of ours on `cluster` that no Binding wants there (pure).

    `bindings` is keyed by the workload ref string (`ns/Kind.group/name`).
    """
    out = []
    for obj in objects:
        ref = _ref_of(obj)
        if ref is not None and not wanted_here(bindings.get(ref), cluster):
            out.append(obj)
    return out


def _object_ref(obj: Mapping[str, Any]) -> member_mod.ObjectRef:
    meta = obj.get("metadata") or {}
    return member_mod.ObjectRef(
        api_version=str(obj.get("apiVersion")),
        kind=str(obj.get("kind")),
        name=str(meta.get("name")),
        namespace=meta.get("namespace") or None,
    )


async def purge(
    member: member_mod.Member,
    *,
    cluster: str,
    bindings: Sequence[Binding],
    kinds: Iterable[tuple[str, str]] = (),
) -> Report:
    """Delete stale copies from `member`; raises MemberError when it cannot finish (the
    caller keeps the recovering taint and tries again)."""
    by_ref = {str(_workload_ref(b)): b for b in bindings}
    api_kinds = set(kinds) | {(b.spec.workload.api_version, b.spec.workload.kind) for b in bindings}
    report = Report(cluster)
    for api_version, kind in sorted(api_kinds):
        try:
            listed = await member.list(api_version, kind)
        except member_mod.MemberNotFound:
            continue  # the member does not serve this kind: nothing of it to purge
        ours = [o for o in listed.items if _ref_of(o) is not None]
        report.checked += len(ours)
        doomed = stale(ours, cluster=cluster, bindings=by_ref)
        report.kept += len(ours) - len(doomed)
        refs = [_object_ref(obj) for obj in doomed]
        await _delete_all(member, refs)
        report.deleted += [str(ref) for ref in refs]
    return report


async def _delete_all(member: member_mod.Member, refs: Sequence[member_mod.ObjectRef]) -> None:
    """Deletes in parallel (bounded): until the last stale copy is gone a moved batch job
    runs in two members, so this window is what the returning member costs."""
    gate = asyncio.Semaphore(_PARALLEL_DELETES)

    async def one(ref: member_mod.ObjectRef) -> None:
        async with gate:
            await member.delete(ref)

    try:
        async with asyncio.TaskGroup() as group:
            for ref in refs:
                group.create_task(one(ref))
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None  # the caller retries the whole pass


def _workload_ref(binding: Binding) -> keys.WorkloadRef:
    w = binding.spec.workload
    return keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.name)
