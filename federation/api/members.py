"""What the API checks and says when Clusters are written or deleted.

Fed by `ObjectsApi` with the Clusters a create, update or apply writes, or the name of
one being deleted; reads the stored Clusters, and the Bindings and Works placed on a
member; feeds refusals (`errors.Invalid` naming the Cluster and `spec.connection`) and
`Warning` texts.

Why a connection already used by another Cluster is refused: two names reaching one
Kubernetes cluster each got their share of every workload and applied it under the same
object names, over the other's, and draining one deleted the other's copies (namespaces
and all). `fedctl cluster join` compares cluster ids when it connects first, but
`--no-verify` and `fedctl apply` of a Cluster do not connect; the same kubeconfig file
and context, or the same API server URL, is what can be told without connecting. A
second name that reaches the member another way is kept unusable by the monitor
(`status.duplicateOf`).

Why deleting a Cluster warns: like `fedctl cluster unjoin --now`, it removes the member at
once with its credentials, so nothing takes fedctl's copies off it afterwards. Karmada's
Cluster deletion removes the member's Works, and with them its copies, from a member it
can still reach, without waiting for them to run elsewhere; fedctl's drain, which moves
them away first, is `fedctl cluster unjoin`. The warning names what keeps running there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from clusters.kube import kubeconfig
from federation import errors, secrets
from federation.registry import codec, keys
from federation.registry import store as st
from policies.models.base import KubeObject
from policies.models.binding import Binding
from policies.models.cluster import Cluster
from policies.models.work import FINISHED_PHASES, WorkloadStatus

__all__ = ["check_connections", "removal_note"]

_NAMED = 5
"""Workloads named in a note; the rest are counted."""


def _unchanged(old: Cluster, new: Cluster) -> bool:
    """Whether `new` keeps `old`'s connection (a redacted inline kubeconfig keeps it)."""
    given, stored = new.spec.connection, old.spec.connection
    if given.kubeconfig == secrets.REDACTED:
        given = given.model_copy(update={"kubeconfig": stored.kubeconfig})
    return given == stored


async def check_connections(
    objects: codec.TypedStore[KubeObject], stored_prefix: str, body: Sequence[KubeObject]
) -> None:
    """Refuse a Cluster of `body` whose connection leads where another Cluster's does
    (module doc). One whose connection is unchanged is let through, so a pair stored
    before this check can still be edited or unjoined."""
    incoming = [m for m in body if isinstance(m, Cluster)]
    if not incoming:
        return
    listed = await objects.list(stored_prefix)
    stored = {i.obj.metadata.name: i.obj for i in listed.items if isinstance(i.obj, Cluster)}
    changed = [
        c
        for c in incoming
        if c.metadata.name not in stored or not _unchanged(stored[c.metadata.name], c)
    ]
    if not changed:
        return
    fleet = {**stored, **{c.metadata.name: c for c in incoming}}
    # In a thread: each kubeconfig is read, and a new one parsed, off the event loop.
    ends = await asyncio.to_thread(
        lambda: {name: kubeconfig.endpoint(c.spec.connection) for name, c in fleet.items()}
    )
    found: list[str] = []
    for cluster in changed:
        name = cluster.metadata.name
        for other in sorted(n for n in fleet if n != name):
            how = ends[name].same_as(ends[other])
            if how is not None:
                found.append(
                    f"Cluster {name}: spec.connection: reaches the same Kubernetes API as"
                    f" cluster {other} ({how}): joined twice, each name would apply its"
                    f" share of every workload over the other's. Use {other}, or unjoin it"
                    " first"
                )
                break
    if found:
        raise errors.Invalid("; ".join(found), findings=found)


async def removal_note(raw: st.Store, name: str, *, dry: bool) -> str | None:
    """What deleting Cluster `name` leaves running on the member, as a warning; None when
    nothing of fedctl's is placed there."""
    bindings = await codec.TypedStore(raw, codec.Codec(Binding)).list(keys.prefix("bindings"))
    results = await codec.TypedStore(raw, codec.Codec(WorkloadStatus)).list(
        keys.prefix("workloadstatus")
    )
    # A finished job's Binding still names where it ran, but nothing of it runs there or
    # is placed again elsewhere: it is not work the deletion leaves behind.
    finished = {
        keys.parse_workload_key(r.key) for r in results.items if r.obj.phase in FINISHED_PHASES
    }
    placed = sorted(
        f"{b.obj.spec.workload.namespace}/{b.obj.spec.workload.name}"
        for b in bindings.items
        if any(t.name == name for t in b.obj.spec.clusters)
        and keys.parse_workload_key(b.key) not in finished
    )
    works = len((await raw.list(keys.work_prefix(name))).items)
    if not placed and not works:
        return None
    shown = ", ".join(placed[:_NAMED]) + (
        f" and {len(placed) - _NAMED} more" if len(placed) > _NAMED else ""
    )
    parts = [f"{len(placed)} workload(s) placed there ({shown})"] if placed else []
    parts += [f"{works} {'copy' if works == 1 else 'copies'} applied there"] if works else []
    verb = "would be removed" if dry else "removed"
    return (
        f"cluster {name} {verb} without a drain: what fedctl runs there keeps running on it,"
        f" no longer managed ({'; '.join(parts)}), while the scheduler places the workloads"
        f" elsewhere. `fedctl cluster unjoin {name}` moves them away and takes the copies"
        " off first"
    )
