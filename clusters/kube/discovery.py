"""API discovery documents to resources, and apiVersion/kind/namespace/name to URL paths.

Fed by the member's `/api`, `/apis` and per-group-version documents (read by
`connector.KubeConnector`); feeds the connector's kind → plural map, which lets it get,
apply, delete and watch any kind without generated client classes, and the monitor's
`api_enablements`. Pure functions: no I/O here, so the path rules are tested alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from clusters.member import APIGroupResources, ResourceInfo

__all__ = ["group_versions", "parse_resource_list", "path"]


def group_versions(core: Mapping[str, Any], groups: Mapping[str, Any]) -> list[str]:
    """Every group-version served: core versions (`v1`) first, then `group/version`."""
    out = [str(v) for v in core.get("versions") or ()]
    for group in groups.get("groups") or ():
        for version in group.get("versions") or ():
            gv = version.get("groupVersion")
            if gv:
                out.append(str(gv))
    return out


def parse_resource_list(group_version: str, doc: Mapping[str, Any]) -> APIGroupResources:
    """An APIResourceList as top-level resources (subresources such as pods/status dropped)."""
    resources = []
    for item in doc.get("resources") or ():
        name = str(item.get("name") or "")
        if not name or "/" in name:
            continue
        resources.append(
            ResourceInfo(
                name=name,
                kind=str(item.get("kind") or ""),
                namespaced=bool(item.get("namespaced")),
                verbs=tuple(str(v) for v in item.get("verbs") or ()),
            )
        )
    return APIGroupResources(group_version=group_version, resources=tuple(resources))


def base(api_version: str) -> str:
    """`/api/v1` for the core group, `/apis/<group>/<version>` otherwise."""
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


def path(
    api_version: str,
    resource: ResourceInfo,
    *,
    namespace: str | None = None,
    name: str | None = None,
) -> str:
    """The URL path of a collection or one object; cluster-scoped kinds ignore `namespace`."""
    parts = [base(api_version)]
    if resource.namespaced and namespace:
        parts.append(f"namespaces/{quote(namespace, safe='')}")
    parts.append(resource.name)
    if name is not None:
        parts.append(quote(name, safe=""))
    return "/".join(parts)
