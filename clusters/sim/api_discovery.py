"""Legacy discovery documents: `/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`.

kubectl and the Python client learn from these which kinds exist, their plural names,
short names (`deploy`, `po`), scope and verbs; every kubectl command starts here, and a
missing or malformed document makes every command fail. They are built from the registry
in `resources.py` so discovery never disagrees with what the server routes.
"""

from __future__ import annotations

from typing import Any

from clusters.sim.resources import RESOURCES, group_versions

__all__ = ["api_group_list", "api_resource_list", "api_versions"]

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_SUB_VERBS = ["get", "patch", "update"]


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_group_list() -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for group, version in group_versions():
        if group:
            groups.setdefault(group, []).append(version)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": group,
                "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                "preferredVersion": {
                    "groupVersion": f"{group}/{versions[0]}",
                    "version": versions[0],
                },
            }
            for group, versions in groups.items()
        ],
    }


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    """The `APIResourceList` of one group-version, or None when it is not served."""
    if (group, version) not in group_versions():
        return None
    resources: list[dict[str, Any]] = []
    for rt in RESOURCES:
        if (rt.group, rt.version) != (group, version):
            continue
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": _VERBS,
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for sub in sorted(rt.subresources):
            sub_entry: dict[str, Any] = {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": _SUB_VERBS,
            }
            if sub == "scale":
                sub_entry.update({"group": "autoscaling", "version": "v1", "kind": "Scale"})
            resources.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
