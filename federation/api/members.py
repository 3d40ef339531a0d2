"""What the API checks and says when Clusters are written or deleted.

Fed by `ObjectsApi` with the Clusters a create, update or apply writes; reads the stored
Clusters; feeds refusals (`errors.Invalid` naming the Cluster and `spec.connection`).

Why a connection already used by another Cluster is refused: two names reaching one
Kubernetes cluster each got their share of every workload and applied it under the same
object names, over the other's, and draining one deleted the other's copies (namespaces
and all). `fedctl cluster join` compares cluster ids when it connects first, but
`--no-verify` and `fedctl apply` of a Cluster do not connect; the same kubeconfig file
and context, or the same API server URL, is what can be told without connecting. A
second name that reaches the member another way is kept unusable by the monitor
(`status.duplicateOf`).
"""

from __future__ import annotations

from collections.abc import Sequence

from clusters.kube import kubeconfig
from federation import errors, secrets
from federation.registry import codec
from policies.models.base import KubeObject
from policies.models.cluster import Cluster

__all__ = ["check_connections"]


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
    ends = {name: kubeconfig.endpoint(c.spec.connection) for name, c in fleet.items()}
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
