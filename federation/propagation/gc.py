"""Garbage collection: member objects labelled as ours that nothing wants.

Fed by the controller before its workers start, and again every `gc_interval` while it
runs, with each member's connector, the kinds to look at and a `wanted(cluster, obj)`
judgement made from the Works, Bindings and FederatedResourceQuotas in the registry;
feeds the member (deletes). Why at start-up: a controller killed between applying an object
and recording its Work, or while a workload was being deleted, leaves objects no Work
describes; workers only look at what the registry names, so without this pass those copies
would run forever. Why again later: member calls carry no fence, so a deposed leader's
apply can land after the start-up pass. A copy named otherwise than its workload is never
wanted: no Work describes it, and its workload's copy runs beside it.

Namespaces are judged apart (`collect_namespaces`): only one the applier created ahead of
a workload or a quota sent there without a Namespace template (ours by label, no workload
named: `render.is_placeholder`) is deleted, once nothing of fedctl's is kept in it and it
holds nothing else. Left, it stayed for good, and no fedctl command could reach it (the
federation holds no Namespace of that name). One holding anything not fedctl's (a team's
ConfigMap) is never deleted: deleting a namespace deletes all it holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from clusters import member as member_mod
from federation import errors
from federation.propagation import applier, render

__all__ = ["collect", "collect_namespaces"]

log = logging.getLogger(__name__)


async def collect(
    cluster: str,
    conn: member_mod.Member,
    *,
    kinds: Iterable[tuple[str, str]],
    wanted: Callable[[str, Mapping[str, Any]], bool],
    served: set[tuple[str, str]] | None = None,
    skip: Callable[[str, str], bool] | None = None,
    failed: Callable[[str, str, BaseException], None] | None = None,
    deleted: Callable[[str, str], None] | None = None,
) -> int:
    """Delete every object of `kinds` in `conn` that is ours and not wanted; returns how many.

    Each deletion is a WARNING and told to `deleted(cluster, kind)` (a metric): after an
    etcd restore every copy submitted since the snapshot goes this way, running Jobs
    included, and an operator must be able to see what was deleted and re-apply it.

    `served`, when given, collects the kinds the member serves (their watches start next).
    `skip(apiVersion, kind)` leaves a kind out (one whose watch already shows every copy).
    `failed(cluster, "delete", error)` is told of each delete the member refused
    (`Applier.failed`).
    """
    removed = 0
    for api_version, kind in sorted(set(kinds)):
        if kind == "Namespace" or (skip is not None and skip(api_version, kind)):
            continue
        try:
            listed = await conn.list(api_version, kind)
        except member_mod.MemberNotFound:
            continue  # the member does not serve this kind
        if served is not None:
            served.add((api_version, kind))
        for obj in listed.items:
            if not render.is_ours(obj) or (not render.renamed(obj) and wanted(cluster, obj)):
                continue
            ref = applier.object_ref({"apiVersion": api_version, "kind": kind, **obj})
            try:
                await conn.delete(ref)
            except errors.FedctlError as exc:
                log.warning("gc: cannot delete %s from %s: %s", ref, cluster, exc)
                if failed is not None:
                    failed(cluster, "delete", exc)
                continue
            removed += 1
            log.warning(
                "gc: deleted %s from %s: ours, but no Work in the registry wants it there",
                ref,
                cluster,
            )
            if deleted is not None:
                deleted(cluster, kind)
    return removed


async def collect_namespaces(
    cluster: str,
    conn: member_mod.Member,
    *,
    kept: Callable[[str], bool],
    failed: Callable[[str, str, BaseException], None] | None = None,
) -> list[str]:
    """Delete each namespace the applier created in `conn` that `kept(name)` does not keep
    (no copy, quota or Namespace of fedctl's wants it there) and that holds nothing;
    returns their names. `kept` is asked again right before the delete: a worker may
    have applied into it while its objects were listed."""
    try:
        listed = await conn.list("v1", "Namespace")
    except errors.FedctlError as exc:
        log.info("gc: namespaces of %s not listed: %s", cluster, exc)
        return []
    removed: list[str] = []
    kinds: list[tuple[str, str]] | None = None  # discovered once a namespace may go
    for namespace in listed.items:
        meta = namespace.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not render.is_placeholder(namespace) or meta.get("deletionTimestamp") or kept(name):
            continue
        if kinds is None:
            try:
                kinds = await _listable(conn)
            except errors.FedctlError as exc:
                log.info("gc: what the namespaces of %s hold is not known: %s", cluster, exc)
                return removed
        if await _holds_anything(conn, name, kinds) or kept(name):
            continue
        try:
            await conn.delete(member_mod.ObjectRef("v1", "Namespace", name))
        except errors.FedctlError as exc:
            log.warning("gc: cannot delete namespace %s from %s: %s", name, cluster, exc)
            if failed is not None:
                failed(cluster, "delete", exc)
            continue
        removed.append(name)
        log.info("gc: deleted namespace %s from %s: nothing is left in it", name, cluster)
    return removed


async def _listable(conn: member_mod.Member) -> list[tuple[str, str]]:
    """(group version, kind) of every namespaced kind `conn` serves and lists, events
    aside: what a namespace can hold, read once a pass."""
    return [
        (group.group_version, resource.kind)
        for group in await conn.discover()
        for resource in group.resources
        if resource.namespaced and "list" in resource.verbs and resource.kind != "Event"
    ]


async def _holds_anything(
    conn: member_mod.Member, namespace: str, kinds: list[tuple[str, str]]
) -> bool:
    """Whether `namespace` in `conn` holds an object of any of `kinds`, but those every
    namespace gets (`_BUILT_IN`) and dependents (an owner reference: a Deployment's pods
    go with it). Taken as yes when the member does not answer: a namespace is deleted
    only when it surely holds nothing."""
    try:
        for group_version, kind in kinds:
            try:
                listed = await conn.list(group_version, kind, namespace=namespace)
            except member_mod.MemberNotFound:
                continue
            if any(_counts(kind, obj) for obj in listed.items):
                return True
    except errors.FedctlError as exc:
        log.info("gc: what namespace %s of %s holds is not known: %s", namespace, conn.name, exc)
        return True
    return False


_BUILT_IN = frozenset({("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")})
"""What Kubernetes' controllers put in every namespace: not a sign anyone uses it."""


def _counts(kind: str, obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    return not meta.get("ownerReferences") and (kind, meta.get("name")) not in _BUILT_IN
