"""PATCH bodies applied to stored objects: JSON patch, merge patch, strategic merge patch.

The server turns a PATCH request into a full object with these functions and then hands
it to `ObjectStore.update`, so patches go through the same conflict, generation and
admission rules as a PUT. Strategic merge patch matters because client-side `kubectl
apply` and every dict patch from `kubernetes_asyncio` use it: lists such as `containers`
merge by their key (`name`), so patching one image keeps the container's resources; a
naive deep merge would replace the list. The merge-key table stands in for the Go struct
tags (`patchStrategy`, `patchMergeKey`) upstream reads; where one field name is two
structs' lists (`ports`: a container's and a Service's), `merge_key` tells them apart by
their entries.
"""

from __future__ import annotations

import copy
from typing import Any

from clusters.sim.api_errors import ApiError

__all__ = [
    "MERGE_KEYS",
    "PRIMITIVE_MERGE",
    "PROTOCOL_KEYED",
    "json_patch",
    "merge_key",
    "merge_patch",
    "strategic_merge_patch",
]

# field name -> merge key, for lists that merge entry by entry.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "hostAliases": "ip",
}
# Merge keys whose list entries are told apart by `protocol` too in server-side apply
# (the list-map keys `containerPort`+`protocol` and `port`+`protocol`; TCP when unset).
PROTOCOL_KEYED = frozenset({"containerPort", "port"})


def merge_key(field: str, *lists: Any) -> str | None:
    """The merge key of the list `field` (None: not a keyed list), judged by the entries of
    `lists` where two structs share the name: a Service's `ports` are keyed by `port`,
    a container's by `containerPort`. Keyed as a container's, every Service port had the
    key `containerPort: null`, so a changed port was added beside the old one."""
    if field == "ports":
        entries = [i for items in lists if isinstance(items, list) for i in items]
        container = any(isinstance(i, dict) and "containerPort" in i for i in entries)
        return "containerPort" if container or not entries else "port"
    return MERGE_KEYS.get(field)


# lists of scalars that merge as sets (patchStrategy: merge on a primitive list).
PRIMITIVE_MERGE = frozenset({"finalizers"})

_DELETE = object()


def _invalid_patch(message: str) -> ApiError:
    return ApiError(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
        details={"causes": [{"reason": "UnexpectedServerResponse", "message": message}]},
    )


# -- RFC 7386 ------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """JSON merge patch: maps merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# -- RFC 6902 ------------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise _invalid_patch(f"path {path!r} does not exist")
    return doc


def _add(doc: Any, parts: list[str], value: Any, path: str) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _invalid_patch(f"index out of range in {path!r}")
    else:
        raise _invalid_patch(f"path {path!r} does not exist")
    return doc


def _remove(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        raise _invalid_patch("cannot remove the whole document")
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise _invalid_patch(f"unable to remove nonexistent key: {path}: missing value")


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 operation list; 422 when an operation or `test` fails."""
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise _invalid_patch(f"invalid operation {op!r}")
        kind, path = op["op"], op.get("path", "")
        parts = _pointer(path)
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), path)
        elif kind == "remove":
            _remove(doc, parts, path)
        elif kind == "replace":
            _walk(doc, parts, path)
            if parts:
                _remove(doc, parts, path)
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), path)
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = copy.deepcopy(_walk(doc, source, op.get("from", "")))
            if kind == "move":
                _remove(doc, source, op.get("from", ""))
            doc = _add(doc, parts, value, path)
        elif kind == "test":
            if _walk(doc, parts, path) != op.get("value"):
                raise _invalid_patch(f"testing value {path} failed: test failed")
        else:
            raise _invalid_patch(f"Unexpected kind: {kind}")
    return doc


# -- strategic merge patch ------------------------------------------------------------------


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        merged = _smp_map({}, value)
        return {} if merged is _DELETE else merged
    if isinstance(value, list):
        return [_strip_directives(v) for v in value if not _is_directive_item(v)]
    return value


def _is_directive_item(item: Any) -> bool:
    return isinstance(item, dict) and "$patch" in item and len(item) == 1


def _same(one: dict[str, Any], other: dict[str, Any], key: str) -> bool:
    """Whether two entries of a list keyed by `key` are the same entry: for ports, of the
    same protocol too (TCP when unset), as Kubernetes' list-map keys say (80/TCP and
    80/UDP are two ports of one Service)."""
    if one.get(key) != other.get(key):
        return False
    return key not in PROTOCOL_KEYED or (one.get("protocol") or "TCP") == (
        other.get("protocol") or "TCP"
    )


def _merge_keyed(original: list[Any], patch: list[Any], key: str) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [_strip_directives(p) for p in patch if not _is_directive_item(p)]
    result = list(original)
    for item in patch:
        if not isinstance(item, dict):
            result.append(item)
            continue
        match = next(
            (
                i
                for i, o in enumerate(result)
                if isinstance(o, dict) and key in item and _same(o, item, key)
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if match is not None:
                result.pop(match)
            continue
        if match is None:
            result.append(_strip_directives(item))
        else:
            merged = _smp_map(result[match], item)
            if merged is _DELETE:
                result.pop(match)
            else:
                result[match] = merged
    return result


def _reorder(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def ident(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [ident(o) for o in order]
    rank = {repr(w): i for i, w in enumerate(wanted)}
    return sorted(items, key=lambda it: rank.get(repr(ident(it)), len(wanted)))


def _smp_field(result: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        result.pop(key, None)
    elif key in MERGE_KEYS and isinstance(value, list):
        current = result.get(key)
        current = current if isinstance(current, list) else []
        result[key] = _merge_keyed(current, value, merge_key(key, current, value) or "")
    elif key in PRIMITIVE_MERGE and isinstance(value, list):
        current = list(result.get(key) or [])
        result[key] = current + [v for v in value if v not in current]
    elif isinstance(value, dict):
        current = result.get(key)
        merged = _smp_map(current if isinstance(current, dict) else {}, value)
        if merged is _DELETE:
            result.pop(key, None)
        else:
            result[key] = merged
    else:
        result[key] = _strip_directives(value)


def _smp_map(original: dict[str, Any], patch: dict[str, Any]) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _strip_directives({k: v for k, v in patch.items() if k != "$patch"})
    result = dict(original)
    orders: list[tuple[str, list[Any]]] = []
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders.append((key.split("/", 1)[1], value or []))
        elif key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            drop = value or []
            result[field] = [v for v in result.get(field) or [] if v not in drop]
        else:
            _smp_field(result, key, value)
    for field, order in orders:
        if isinstance(result.get(field), list):
            result[field] = _reorder(result[field], order, merge_key(field, result[field]))
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain or k in patch}
    return result


def strategic_merge_patch(original: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a strategic merge patch using the merge-key table and `$` directives."""
    if not isinstance(patch, dict):
        raise ApiError(400, "BadRequest", "strategic merge patch must be a JSON object")
    merged = _smp_map(copy.deepcopy(original), patch)
    if merged is _DELETE:
        raise ApiError(400, "BadRequest", "a patch cannot delete the whole object")
    result: dict[str, Any] = merged
    return result
