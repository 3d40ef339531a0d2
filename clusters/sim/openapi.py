"""A stub OpenAPI v3 index and per-group-version documents, enough for `kubectl apply`.

kubectl (1.29 and later) validates `apply` by fetching `/openapi/v3`, following the
group-version's `serverRelativeURL` and looking for a PATCH operation tagged with the
object's group-version-kind that declares a `fieldValidation` query parameter; finding it,
kubectl lets the server validate (`fieldValidation=Strict`) instead of needing schemas.
So each document carries paths and operations but empty `components`.
"""

from __future__ import annotations

from typing import Any

from clusters.sim.resources import RESOURCES, group_versions

__all__ = ["HASH", "gv_path", "openapi_document", "openapi_index"]

HASH = "5a1f1d5e0c0ffee0"

_QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def gv_path(group: str, version: str) -> str:
    """`api/v1` or `apis/apps/v1`: the key of a group-version in the v3 index."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_index() -> dict[str, Any]:
    return {
        "paths": {
            gv_path(g, v): {"serverRelativeURL": f"/openapi/v3/{gv_path(g, v)}?hash={HASH}"}
            for g, v in group_versions()
        }
    }


def _operation(verb: str, group: str, version: str, kind: str) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": f"{verb}{kind}",
        "x-kubernetes-action": verb,
        "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": kind},
        "parameters": [
            {"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
            for name in _QUERY_PARAMS
        ],
        "responses": {"200": {"description": "OK"}},
    }
    if verb == "patch":
        op["requestBody"] = {
            "content": {
                ct: {"schema": {"type": "object"}}
                for ct in (
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                )
            }
        }
    return op


def openapi_document(group: str, version: str, *, server_version: str) -> dict[str, Any] | None:
    """The v3 document for one group-version, or None when it is not served."""
    if (group, version) not in group_versions():
        return None
    prefix = "/" + gv_path(group, version)
    paths: dict[str, Any] = {}
    for rt in RESOURCES:
        if (rt.group, rt.version) != (group, version):
            continue
        scope = f"{prefix}/namespaces/{{namespace}}" if rt.namespaced else prefix
        paths[f"{scope}/{rt.plural}"] = {
            "get": _operation("list", group, version, rt.kind),
            "post": _operation("post", group, version, rt.kind),
        }
        paths[f"{scope}/{rt.plural}/{{name}}"] = {
            verb: _operation(action, group, version, rt.kind)
            for verb, action in (
                ("get", "get"),
                ("put", "put"),
                ("patch", "patch"),
                ("delete", "delete"),
            )
        }
        for sub in sorted(rt.subresources):
            kind = "Scale" if sub == "scale" else rt.kind
            g, v = ("autoscaling", "v1") if sub == "scale" else (group, version)
            paths[f"{scope}/{rt.plural}/{{name}}/{sub}"] = {
                verb: _operation(verb, g, v, kind) for verb in ("get", "put", "patch")
            }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": server_version},
        "paths": paths,
        "components": {"schemas": {}},
    }
