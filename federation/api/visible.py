"""What a caller may see of a list or a watch that spans namespaces: a tenant's is cut to
its own namespaces rather than refused.

Role: the object routes' lists and watches (`objects.ObjectsApi`) and the multiplexed
watch (`watch.WatchApi`) ask here which keys to read and which to keep, given the
namespaces the caller reads (`auth.readable`: None for an admin). Fed by nothing else.

Why cut, not refuse: the docs promise that a list without `-n` (`fedctl get pp`) shows
every namespace the token may read, as `-A` does; refused, a tenant's `get pp`, `get jobs
-o json`, `get works` of its own workload and the dashboard's Workloads tab all failed.
A Namespace template is cluster-scoped (`_` in its key) but its tenant's
(`objects.namespace_of`), and a Work is keyed by member, then by its workload's namespace.
"""

from __future__ import annotations

from collections.abc import Callable

from federation.registry import keys, objects

__all__ = ["parts", "readable_key"]


def parts(
    res: objects.Resource, prefix: str, owned: frozenset[str] | None
) -> list[tuple[str, Callable[[str], bool]]]:
    """The prefixes a list reads, each with which keys under it it keeps: all of `prefix`
    for a caller who may read every namespace; else each namespace it owns and, for
    workloads, each one's Namespace template (cluster-scoped, but its tenant's:
    `objects.namespace_of`), read by its key; Works (cluster-scoped, keyed by member) are
    kept when their workload's namespace is the caller's (`readable_key`). A tenant's
    `fedctl get pp` lists what it may read, as `-A` does for an admin, not a 403."""
    if owned is None or res.plural == "works":
        return [(prefix, readable_key(res, owned))]
    found: list[tuple[str, Callable[[str], bool]]] = [
        (objects.list_prefix(res, ns), lambda _key: True) for ns in sorted(owned)
    ]
    if res.plural == "workloads":
        for ns in sorted(owned):
            key = keys.workload_key(objects.namespace_workload(ns))
            found.append((key, key.__eq__))
    return found


def readable_key(res: objects.Resource, owned: frozenset[str] | None) -> Callable[[str], bool]:
    """Whether a caller who reads the namespaces `owned` (None: every one, `auth.readable`)
    may see the object of `res` at a key: a list's, or a watch event's (the per-kind
    watch and the multiplexed one, `api.watch`), so a tenant's watch across namespaces
    streams what it may read instead of being refused."""
    if owned is None:
        return lambda _key: True
    base = objects.list_prefix(res, None)

    def keep(key: str) -> bool:
        segments = key.removeprefix(base).split("/")
        if res.plural == "works":
            segments = segments[1:]  # works/<cluster>/<ns>/<kind>/<name>
        if res.plural in ("workloads", "bindings", "works") and len(segments) == 3:
            ref = keys.WorkloadRef(*segments)
            return (objects.namespace_of(ref) or ref.namespace) in owned
        return segments[0] in owned

    return keep
