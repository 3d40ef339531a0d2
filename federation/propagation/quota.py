"""Quota to members: a FederatedResourceQuota's static assignments as member ResourceQuotas.

Fed by the controller with an FRQ and, for its status, the member ResourceQuotas the
status watches saw; feeds the applier (one ResourceQuota per assigned member, named after
the FRQ, in its namespace) and the FRQ's status (`QuotaStatus`, stored under
`keys.policy_status_key`). Pure functions; the controller does the calls.

Why the `requests.` spelling: Kubernetes enforces extended resources in a ResourceQuota
only as `requests.nvidia.com/gpu`; a quota that says `nvidia.com/gpu` is accepted by the
member and silently never enforced (`federation.resources.to_quota_name`). `overall` is not
written anywhere: it stays enforced at admission by the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from federation.propagation import render
from federation.resources import ResourceList, normalise_name, to_quota_name
from policies.models.frq import FederatedResourceQuota, StaticClusterAssignment
from policies.models.work import ClusterQuota, QuotaStatus

__all__ = ["LABEL_FRQ", "aggregate", "edited", "manifest"]

LABEL_FRQ = "fedctl.io/federated-resource-quota"


def manifest(frq: FederatedResourceQuota, assignment: StaticClusterAssignment) -> dict[str, Any]:
    """The ResourceQuota written into `assignment.cluster_name`."""
    wire = assignment.hard.to_wire()
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": frq.metadata.name,
            "namespace": frq.metadata.namespace or "default",
            "labels": {
                render.LABEL_MANAGED_BY: render.MANAGED_BY,
                LABEL_FRQ: frq.metadata.name,
            },
        },
        "spec": {"hard": {to_quota_name(name): value for name, value in sorted(wire.items())}},
    }


def edited(wanted: Mapping[str, Any], seen: Mapping[str, Any]) -> bool:
    """The member's ResourceQuota no longer holds a limit we set (raised or lowered by
    hand there), compared as quantities: the apiserver may spell `1024Gi` as `1Ti`. A
    limit someone added beside ours is theirs: our apply would not take it away."""
    ours = _plain((wanted.get("spec") or {}).get("hard"))
    theirs = _plain((seen.get("spec") or {}).get("hard"))
    return any(theirs.get(name) != value for name, value in ours.items())


def _plain(raw: Mapping[str, Any] | None) -> ResourceList:
    if not raw:
        return ResourceList()
    merged: dict[str, str] = {}
    for name, value in raw.items():
        merged[normalise_name(str(name))] = str(value)
    return ResourceList.from_wire(merged)


def aggregate(
    frq: FederatedResourceQuota,
    members: Mapping[str, Mapping[str, Any] | None],
    *,
    errors: Mapping[str, str] | None = None,
) -> QuotaStatus:
    """Hard/used per assigned member (from its ResourceQuota's status) and their sums."""
    errors = errors or {}
    rows = []
    used_total = ResourceList()
    for assignment in sorted(frq.spec.static_assignments, key=lambda a: a.cluster_name):
        obj = members.get(assignment.cluster_name)
        status = (obj or {}).get("status") or {}
        used = _plain(status.get("used"))
        hard = _plain(status.get("hard")) if status.get("hard") else assignment.hard
        used_total = used_total + used
        rows.append(
            ClusterQuota(
                cluster=assignment.cluster_name,
                hard=hard,
                used=used,
                applied=obj is not None,
                error=errors.get(assignment.cluster_name, ""),
            )
        )
    return QuotaStatus(overall=frq.spec.overall, overall_used=used_total, aggregated_status=rows)
