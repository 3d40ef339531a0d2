"""Server-side apply and `metadata.managedFields`, as far as clients can observe them.

The server calls `apply` for `application/apply-patch+yaml` and `record_update` for other
writes that name a field manager. Field ownership is kept in the upstream `FieldsV1`
shape (`f:spec`, `k:{"name":"api"}`, `v:"x"`, `.`) so `kubectl get -o yaml
--show-managed-fields` looks familiar, and it is what makes apply correct: a field the
manager applied before but no longer applies is removed (unless someone else owns it), and
a field another manager owns with a different value is a 409 conflict unless `force`.
Merging the applied configuration reuses the strategic-merge rules of `patch.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from clusters.sim import patch
from clusters.sim.api_errors import ApiError

__all__ = ["apply", "record_update"]

Path = tuple[str, ...]
_RESET_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "deletionTimestamp",
        "selfLink",
    }
)
_MISSING = object()


def _item_key(key: str, item: Any) -> str:
    ident = {key: item.get(key)}
    if key in patch.PROTOCOL_KEYED:
        ident["protocol"] = item.get("protocol") or "TCP"
    return "k:" + json.dumps(ident, separators=(",", ":"))


def _flatten(value: Any, prefix: Path, out: dict[Path, Any]) -> None:
    """Leaf paths of a value: maps recurse, keyed lists recurse by key, other lists are leaves."""
    if isinstance(value, dict) and value:
        for key, child in value.items():
            if not prefix and key in ("apiVersion", "kind"):
                continue
            if prefix == ("f:metadata",) and key in _RESET_META:
                continue
            path = (*prefix, f"f:{key}")
            merge_key = patch.merge_key(key, child) if isinstance(child, list) else None
            if (
                isinstance(child, list)
                and merge_key is not None
                and all(isinstance(i, dict) and merge_key in i for i in child)
            ):
                for item in child:
                    item_path = (*path, _item_key(merge_key, item))
                    out[(*item_path, ".")] = True
                    _flatten(item, item_path, out)
            elif isinstance(child, list) and key in patch.PRIMITIVE_MERGE:
                for item in child:
                    out[(*path, "v:" + json.dumps(item))] = True
            elif isinstance(child, dict) and child:
                _flatten(child, path, out)
            else:
                out[path] = child


def _fields(obj: dict[str, Any], *, status: bool) -> dict[Path, Any]:
    body = {k: v for k, v in obj.items() if (k == "status") == status or k == "metadata"}
    if status:
        body = {"status": obj.get("status") or {}}
    out: dict[Path, Any] = {}
    _flatten(body, (), out)
    return out


def _to_fieldsv1(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return root


def _from_fieldsv1(tree: dict[str, Any], prefix: Path = ()) -> Iterator[Path]:
    for key, child in tree.items():
        path = (*prefix, key)
        if key == "." or not child:
            yield path
        else:
            yield from _from_fieldsv1(child, path)


def _managers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(m) for m in obj.get("metadata", {}).get("managedFields") or []]


def _owned(entry: dict[str, Any]) -> set[Path]:
    return set(_from_fieldsv1(entry.get("fieldsV1") or {}))


def _set_entry(
    entries: list[dict[str, Any]],
    *,
    manager: str,
    operation: str,
    api_version: str,
    now: str,
    paths: set[Path],
    subresource: str | None,
) -> list[dict[str, Any]]:
    kept = [
        e
        for e in entries
        if not (
            e.get("manager") == manager
            and e.get("operation") == operation
            and e.get("subresource") == subresource
        )
    ]
    if paths:
        entry: dict[str, Any] = {
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version,
            "time": now,
            "fieldsType": "FieldsV1",
            "fieldsV1": _to_fieldsv1(paths),
        }
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    return kept


def _without(entries: list[dict[str, Any]], paths: set[Path]) -> list[dict[str, Any]]:
    out = []
    for e in entries:
        remaining = _owned(e) - paths
        if remaining:
            out.append({**e, "fieldsV1": _to_fieldsv1(remaining)})
    return out


def record_update(
    new: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    manager: str,
    now: str,
    subresource: str | None = None,
) -> None:
    """Give `manager` (operation Update) the fields this write changed, in place."""
    status = subresource == "status"
    before = _fields(old, status=status) if old is not None else {}
    after = _fields(new, status=status)
    changed = {p for p, v in after.items() if before.get(p, _MISSING) != v}
    entries = _managers(old) if old is not None else []
    entries = _without(entries, changed | (set(before) - set(after)))
    mine = next(
        (
            _owned(e)
            for e in entries
            if e.get("manager") == manager
            and e.get("operation") == "Update"
            and e.get("subresource") == subresource
        ),
        set(),
    )
    new["metadata"]["managedFields"] = _set_entry(
        entries,
        manager=manager,
        operation="Update",
        api_version=new.get("apiVersion", ""),
        now=now,
        paths=(mine & set(after)) | changed,
        subresource=subresource,
    )


def _segment(part: str) -> str:
    if part.startswith("f:"):
        return "." + part[2:]
    if part.startswith("k:"):
        inner = json.loads(part[2:])
        return "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in inner.items()) + "]"
    if part.startswith("v:"):
        return f"[={part[2:]}]"
    return ""


def _path_text(path: Path) -> str:
    return "".join(_segment(p) for p in path)


def _conflict_error(conflicts: list[tuple[str, Path]], api_version: str) -> ApiError:
    n = len(conflicts)
    if n == 1:
        manager, path = conflicts[0]
        text = f'conflict with "{manager}" using {api_version}: {_path_text(path)}'
    else:
        by_manager: dict[str, list[str]] = {}
        for manager, path in conflicts:
            by_manager.setdefault(manager, []).append(_path_text(path))
        text = "\n".join(
            f'conflicts with "{m}" using {api_version}:\n' + "\n".join(f"- {p}" for p in paths)
            for m, paths in by_manager.items()
        )
    return ApiError(
        409,
        "Conflict",
        f"Apply failed with {n} conflict{'s' if n > 1 else ''}: {text}",
        details={
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": f'conflict with "{m}" using {api_version}',
                    "field": _path_text(p),
                }
                for m, p in conflicts
            ]
        },
    )


def _remove_path(obj: Any, path: Path) -> None:
    """Remove one owned leaf (or a keyed list item for a `.` path); prune emptied maps."""
    trail: list[tuple[Any, Any]] = []
    node = obj
    for part in path[:-1]:
        nxt: Any = _MISSING
        if part.startswith("f:") and isinstance(node, dict):
            nxt = node.get(part[2:], _MISSING)
            trail.append((node, part[2:]))
        elif part.startswith("k:") and isinstance(node, list):
            want = json.loads(part[2:])
            for i, item in enumerate(node):
                if isinstance(item, dict) and _item_key(next(iter(want)), item) == part:
                    nxt = item
                    trail.append((node, i))
                    break
        if nxt is _MISSING:
            return
        node = nxt
    last = path[-1]
    if last == "." and trail:
        container, key = trail.pop()
        del container[key]
    elif last.startswith("f:") and isinstance(node, dict):
        node.pop(last[2:], None)
    elif last.startswith("v:") and isinstance(node, list):
        value = json.loads(last[2:])
        node[:] = [v for v in node if v != value]
    for container, key in reversed(trail):
        child = container[key]
        if isinstance(container, dict) and isinstance(child, dict) and not child:
            del container[key]
        else:
            break


def apply(
    current: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    now: str,
) -> dict[str, Any]:
    """The object after `manager` applies `applied` to `current` (None: it is created)."""
    api_version = applied.get("apiVersion", "")
    new_fields = _fields(applied, status=False)
    new_set = set(new_fields)
    entries = _managers(current) if current is not None else []
    base = current if current is not None else {}
    current_fields = _fields(base, status=False) if current is not None else {}
    conflicts: list[tuple[str, Path]] = []
    for e in entries:
        if e.get("manager") == manager and e.get("operation") == "Apply":
            continue
        for path in sorted(_owned(e) & new_set):
            if path[-1] != "." and current_fields.get(path, _MISSING) != new_fields[path]:
                conflicts.append((str(e.get("manager")), path))
    if conflicts and not force:
        raise _conflict_error(conflicts, api_version)
    if conflicts:
        entries = _without(entries, {p for _, p in conflicts})
    previous = next(
        (
            _owned(e)
            for e in entries
            if e.get("manager") == manager and e.get("operation") == "Apply"
        ),
        set(),
    )
    others: set[Path] = set()
    for e in entries:
        if not (e.get("manager") == manager and e.get("operation") == "Apply"):
            others |= _owned(e)
    result = json.loads(json.dumps(base))
    # Whole list entries first (outermost first), then leaves deepest first.
    stale = previous - new_set - others
    for path in sorted(stale, key=lambda p: (p[-1] != ".", len(p) if p[-1] == "." else -len(p))):
        _remove_path(result, path)
    body = {k: v for k, v in applied.items() if k != "status"}
    body["metadata"] = {
        k: v for k, v in (applied.get("metadata") or {}).items() if k != "managedFields"
    }
    merged = patch.strategic_merge_patch(result, body)
    merged.setdefault("metadata", {})["managedFields"] = _set_entry(
        entries,
        manager=manager,
        operation="Apply",
        api_version=api_version,
        now=now,
        paths=new_set,
        subresource=None,
    )
    return merged
