"""Garbage collection: member objects labelled as ours that nothing wants.

Fed by the controller before its workers start, and again every `gc_interval` while it
runs, with each member's connector, the kinds to look at and a `wanted(cluster, obj)`
judgement made from the Works, Bindings and FederatedResourceQuotas in the registry;
feeds the member (deletes). Why at start-up: a controller killed between applying an object
and recording its Work, or while a workload was being deleted, leaves objects no Work
describes; workers only look at what the registry names, so without this pass those copies
would run forever. Why again later: member calls carry no fence, so a deposed leader's
apply can land after the start-up pass. Namespaces we created are left alone: other teams'
objects may live in them. A copy named otherwise than its workload is never wanted: no
Work describes it, and its workload's copy runs beside it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from clusters import member as member_mod
from federation import errors
from federation.propagation import applier, render

__all__ = ["collect"]

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
) -> int:
    """Delete every object of `kinds` in `conn` that is ours and not wanted; returns how many.

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
            log.info("gc: deleted orphan %s from %s", ref, cluster)
    return removed
