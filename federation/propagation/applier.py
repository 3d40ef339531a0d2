"""The applier: puts rendered manifests into members and takes them out again.

Fed by the controller's workers with a Work's manifest and the claiming policy's
`conflictResolution`; feeds the member (server-side apply with field manager `fedctl`)
and returns an `Outcome` the worker folds into the Work's status. Calls to one member are
bounded by its semaphore (`PropagationSettings.concurrency_per_member`); retries of
transient failures happen inside the connector (STYLE.md §10), so an error that reaches
here is reported in the Work and the key is requeued with backoff.

Why a read before the first apply: server-side apply would silently take over an object a
team created by hand. `Abort` (Karmada's default) refuses when the member already holds an
object of that name that is not ours, and says so; `Overwrite` adopts it (force apply).
Namespaces are created in the member when missing, once per member and namespace, never
interleaved with a Namespace template's apply (`_ensure_namespace`); garbage collection
removes them once nothing is left in them (`gc.collect_namespaces`).

    errors seen here
    ├── MemberUnavailable (retryable)   member down or slow: requeue, report in status
    └── MemberRejected (permanent)      quota, validation, unserved kind: report, requeue later

Every failed call is also told to `failed` (the `fedctl_propagation_errors` counter) by
operation and kind of failure: the applier is the one place every apply and delete of the
propagator passes, so a member that keeps refusing shows there without reading each Work.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from clusters import member as member_mod
from federation import errors
from federation.propagation import render
from federation.propagation.members import Members
from federation.registry import keys
from policies.models.cluster import Cluster

__all__ = ["Applier", "Failed", "Outcome", "Removal", "failure", "object_ref"]

log = logging.getLogger(__name__)

Failed = Callable[[str, str, str], None]
"""`(cluster, operation, reason)` for one member call that failed: operation `apply`,
`delete` or `release`; reason `Refused` (Abort: the object there is not ours), `Rejected`
(the member refused it) or `Unavailable` (down, slow or unreachable)."""


def failure(exc: BaseException) -> str:
    """The reason `Failed` is given for an error a member call raised."""
    return "Rejected" if isinstance(exc, member_mod.MemberRejected) else "Unavailable"


Removal = Literal["removed", "gone", "foreign"]
"""What taking a copy off a member found: our copy, now removed; nothing of that name
there; or an object of that name that is not ours, left as it is."""


@dataclass(frozen=True)
class Outcome:
    """What one apply did: the member's copy, or why there is none."""

    ok: bool
    obj: dict[str, Any] | None = None
    error: str = ""
    refused: bool = False
    retryable: bool = False


def object_ref(manifest: Mapping[str, Any]) -> member_mod.ObjectRef:
    meta = manifest.get("metadata") or {}
    return member_mod.ObjectRef(
        api_version=str(manifest.get("apiVersion") or ""),
        kind=str(manifest.get("kind") or ""),
        name=str(meta.get("name") or ""),
        namespace=meta.get("namespace"),
    )


def _namespace_gone(exc: member_mod.MemberRejected, ns: str) -> bool:
    """The member refused an object because its namespace is missing (404 naming the
    namespace) or being deleted (403): the apiserver's two answers for that."""
    if exc.code == 404:
        return exc.details.get("kind") == "namespaces" and exc.details.get("name") == ns
    return exc.code == 403 and "being terminated" in exc.detail


class Applier:
    """Server-side apply and delete through the members' connectors."""

    def __init__(self, members: Members, *, failed: Failed | None = None) -> None:
        self.members = members
        self._failed = failed
        self._namespaces: set[tuple[str, str]] = set()
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, list[int]]] = {}
        self._busy: collections.Counter[tuple[str, str]] = collections.Counter()
        """(cluster, namespace) → applies into it under way: the namespace is in use."""
        self.applied = 0

    def failed(self, cluster: str, operation: str, exc: BaseException) -> None:
        """Tell `failed` of a call that raised `exc` (also for callers that reach the
        member without the applier: garbage collection)."""
        if self._failed is not None:
            self._failed(cluster, operation, failure(exc))

    @contextlib.contextmanager
    def _counted(self, cluster: str, operation: str) -> Iterator[None]:
        try:
            yield
        except errors.FedctlError as exc:
            self.failed(cluster, operation, exc)
            raise

    def busy(self, cluster: str, namespace: str) -> bool:
        """Whether an apply into `namespace` on `cluster` is under way (its Work is written
        after it): garbage collection leaves the namespace alone meanwhile."""
        return self._busy[(cluster, namespace)] > 0

    @contextlib.contextmanager
    def _using(self, cluster: str, manifest: Mapping[str, Any]) -> Iterator[None]:
        """The namespace of `manifest` on `cluster` in use while it is applied (`busy`)."""
        slot = (cluster, str((manifest.get("metadata") or {}).get("namespace") or ""))
        self._busy[slot] += 1
        try:
            yield
        finally:
            self._busy[slot] -= 1
            if not self._busy[slot]:
                del self._busy[slot]

    def forget_namespace(self, cluster: str, namespace: str) -> None:
        """`namespace` was deleted from `cluster`: the next apply into it creates it."""
        self._namespaces.discard((cluster, namespace))

    def namespace_locks(self) -> int:
        """How many (member, namespace) locks are held or waited on now."""
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def _creating(self, cluster: str, ns: str) -> AsyncIterator[None]:
        """Held while `ns` is looked for and created in `cluster`, and while a Namespace
        of that name is applied there (`_namespace_lock`). A lock lives only while someone
        holds or waits for it: one kept per namespace ever seen grew for good."""
        slot = (cluster, ns)
        entry = self._locks.get(slot)
        if entry is None:
            entry = self._locks[slot] = (asyncio.Lock(), [0])
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[slot]

    @contextlib.asynccontextmanager
    async def _namespace_lock(
        self, cluster: str, manifest: Mapping[str, Any]
    ) -> AsyncIterator[None]:
        """A Namespace template's apply, kept apart from the bare namespace being created
        under its name (`_ensure_namespace`); any other manifest goes through at once."""
        if (manifest.get("apiVersion"), manifest.get("kind")) != ("v1", "Namespace"):
            yield
            return
        name = str((manifest.get("metadata") or {}).get("name") or "")
        async with self._creating(cluster, name):
            yield

    async def _ensure_namespace(self, cluster: str, conn: member_mod.Member, ns: str) -> None:
        """Create `ns` in `cluster` unless it is there.

        Why under a lock shared with the Namespace template's apply: the read found it
        missing, a Namespace template's apply landed, and then the bare namespace applied
        under the same field manager took the template's labels off again (server-side
        apply drops what a manager no longer sends), pod security among them."""
        if (cluster, ns) in self._namespaces:
            return
        async with self._creating(cluster, ns):
            try:
                await conn.get(member_mod.ObjectRef("v1", "Namespace", ns))
            except member_mod.MemberNotFound:
                await conn.apply(render.namespace_manifest(ns))
                log.info("created namespace %s in %s", ns, cluster)
            self._namespaces.add((cluster, ns))

    async def _refusal(
        self,
        conn: member_mod.Member,
        manifest: Mapping[str, Any],
        ref: keys.WorkloadRef,
        owner: tuple[bool, str | None] | None,
    ) -> str:
        if owner is None:
            try:
                existing = await conn.get(object_ref(manifest))
            except member_mod.MemberNotFound:
                return ""
            if render.is_fedctls(existing, ref):
                return ""
        elif not owner[0] or owner[1] in (str(ref), render.PLACEHOLDER):
            return ""
        return (
            f"{object_ref(manifest)} already exists in {conn.name} and is not managed by fedctl;"
            " conflictResolution Abort refuses to take it over (set Overwrite to adopt it)"
        )

    async def apply(
        self,
        cluster: Cluster,
        manifest: Mapping[str, Any],
        *,
        ref: keys.WorkloadRef | None,
        overwrite: bool,
        known_ours: bool,
        owner: tuple[bool, str | None] | None = None,
        restore: bool = False,
    ) -> Outcome:
        """Apply `manifest` to `cluster`; never raises for member errors (see Outcome).

        `owner` is what the member watch knows of an object of that name: (exists, our
        workload ref or None); None sends a read to the member instead. `restore`: the
        copy's spec was edited in the member; a workload controller's copy is then written
        whole (`_replaced`), not only the fields we apply.
        """
        with self._using(cluster.name, manifest):
            outcome = await self._apply(
                cluster,
                manifest,
                ref=ref,
                overwrite=overwrite,
                known_ours=known_ours,
                owner=owner,
                restore=restore,
            )
        if not outcome.ok and self._failed is not None:
            why = (
                "Refused" if outcome.refused else "Unavailable" if outcome.retryable else "Rejected"
            )
            self._failed(cluster.name, "apply", why)
        return outcome

    async def _apply(
        self,
        cluster: Cluster,
        manifest: Mapping[str, Any],
        *,
        ref: keys.WorkloadRef | None,
        overwrite: bool,
        known_ours: bool,
        owner: tuple[bool, str | None] | None,
        restore: bool = False,
    ) -> Outcome:
        try:
            conn = await self.members.get(cluster)
            async with self.members.limit(cluster.name):
                ns = (manifest.get("metadata") or {}).get("namespace")
                if ns:
                    await self._ensure_namespace(cluster.name, conn, str(ns))
                if ref is not None and not known_ours and not overwrite:
                    refusal = await self._refusal(conn, manifest, ref, owner)
                    if refusal:
                        return Outcome(ok=False, error=refusal, refused=True)
                try:
                    async with self._namespace_lock(cluster.name, manifest):
                        obj = await conn.apply(manifest, force=overwrite or known_ours)
                except member_mod.MemberRejected as exc:
                    if not ns or not _namespace_gone(exc, str(ns)):
                        raise
                    # Deleted in the member since we saw it (`kubectl delete namespace`
                    # there took our copies with it): look again, create it, apply again.
                    self._namespaces.discard((cluster.name, str(ns)))
                    await self._ensure_namespace(cluster.name, conn, str(ns))
                    obj = await conn.apply(manifest, force=overwrite or known_ours)
                if restore and (str(manifest.get("apiVersion")), manifest.get("kind")) in _WHOLE:
                    obj = await _replace(conn, manifest, obj)
        except member_mod.MemberUnavailable as exc:
            return Outcome(ok=False, error=f"{cluster.name} unavailable: {exc}", retryable=True)
        except member_mod.MemberRejected as exc:
            return Outcome(ok=False, error=f"{cluster.name} rejected the object: {exc}")
        except errors.FedctlError as exc:
            return Outcome(ok=False, error=f"{cluster.name}: {exc}", retryable=True)
        self.applied += 1
        return Outcome(ok=True, obj=obj)

    async def remove(
        self,
        cluster: Cluster,
        manifest: Mapping[str, Any],
        ref: keys.WorkloadRef | None,
        *,
        release: bool = False,
    ) -> Removal:
        """Take our copy of `ref` off `cluster`: delete it or, `release`, leave it there as
        the member's own (`_release`). Raises on member errors.

        Only what is fedctl's (`render.is_fedctls`, as `Abort` judges it), read first:
        any other object of that name is the member's (one `Abort` refused to take over,
        one created there since ours went, a watch event older than a release), and is
        neither deleted nor written, as Karmada's execution controller skips deleting an
        object it does not manage. Deleting it took a team's object, or a whole namespace
        with its contents, from a member where fedctl never managed it."""
        with self._counted(cluster.name, "release" if release else "delete"):
            async with self._current(cluster, manifest) as (conn, current):
                if current is None:
                    return "gone"
                if not render.is_fedctls(current, ref):
                    return "foreign"
                if release:
                    done = await _release(conn, manifest, current)
                else:
                    done = await conn.delete(object_ref(manifest))
                return "removed" if done else "gone"

    async def delete_if_ours(
        self, cluster: Cluster, manifest: Mapping[str, Any], ref: keys.WorkloadRef | None
    ) -> bool:
        """Delete the object named by `manifest` only if it is still fedctl's (`remove`):
        our copy of `ref` (a watch event can be older than a release) or, with `ref` None,
        any object of ours (a FederatedResourceQuota's quota); False when it was not, or
        was gone."""
        return await self.remove(cluster, manifest, ref) == "removed"

    async def read(self, cluster: Cluster, manifest: Mapping[str, Any]) -> dict[str, Any] | None:
        """The member's object named by `manifest`, None when there is none. Raises on
        member errors."""
        async with self._current(cluster, manifest) as (_, current):
            return current

    @contextlib.asynccontextmanager
    async def _current(
        self, cluster: Cluster, manifest: Mapping[str, Any]
    ) -> AsyncIterator[tuple[member_mod.Member, dict[str, Any] | None]]:
        """The member's connector and its object named by `manifest` (None: not there),
        inside the member's call limit."""
        conn = await self.members.get(cluster)
        async with self.members.limit(cluster.name):
            try:
                current: dict[str, Any] | None = await conn.get(object_ref(manifest))
            except member_mod.MemberNotFound:
                current = None
            yield conn, current

    async def delete(self, cluster: Cluster, manifest: Mapping[str, Any]) -> bool:
        """Delete our copy from `cluster`; False when it was gone already. Raises on
        member errors."""
        with self._counted(cluster.name, "delete"):
            conn = await self.members.get(cluster)
            async with self.members.limit(cluster.name):
                return await conn.delete(object_ref(manifest))


async def _release(
    conn: member_mod.Member, manifest: Mapping[str, Any], current: Mapping[str, Any]
) -> bool:
    """Leave our copy as the member's own: the same manifest applied without fedctl's
    labels and annotation, so server-side apply drops exactly those (the fields we own and
    still send stay as they are). False when it was gone.

    Applied with the resourceVersion read: a copy deleted (or taken by someone else) in
    between is refused (409), not created again or written over."""
    released = render.released(manifest)
    version = (current.get("metadata") or {}).get("resourceVersion")
    if version:
        released["metadata"]["resourceVersion"] = version
    try:
        await conn.apply(released, force=True)
    except member_mod.MemberNotFound:
        return False
    return True


_WHOLE = frozenset(
    {("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"),
     ("apps/v1", "ReplicaSet")}
)  # fmt: skip
"""Kinds whose edited copy is written whole when restored: their spec is ours alone (no
member controller writes it), so nothing of the member's is lost by it."""


async def _replace(
    conn: member_mod.Member, manifest: Mapping[str, Any], current: member_mod.Obj
) -> member_mod.Obj:
    """Write `manifest` whole over the copy, read again after each lost race: the member's
    controllers write the copy's status as it rolls, each write a new resourceVersion."""
    for _ in range(_REPLACE_TRIES - 1):
        try:
            return await conn.replace(_replaced(manifest, current))
        except member_mod.MemberConflict:
            current = await conn.get(object_ref(manifest))
    return await conn.replace(_replaced(manifest, current))


_REPLACE_TRIES = 5


def _replaced(manifest: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """`manifest` as the whole object to write over `current`: at its resourceVersion, with
    the labels and annotations set there kept beside ours (as Karmada keeps them).

    Why whole: server-side apply takes back only the fields we set, so a field someone
    added in the member (a container `command`, an `env` entry, `paused`) stayed while the
    copy read restored and Healthy. Karmada's execution controller updates the member
    object to its manifest the same way."""
    desired = copy.deepcopy(dict(manifest))
    meta = desired.setdefault("metadata", {})
    now = current.get("metadata") or {}
    meta["resourceVersion"] = now.get("resourceVersion")
    for field in ("labels", "annotations"):
        kept = dict(now.get(field) or {})
        kept.update(meta.get(field) or {})
        if kept:
            meta[field] = kept
    return desired
