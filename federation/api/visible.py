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

Also what a reader may see of what the controllers wrote about a workload (`told`): a
Binding's reasons and an Event's message name other workloads (the head a StrictFIFO
queue waits behind, the job that preempted or reclaimed one), and a queue may be shared
by several namespaces, so a tenant read another department's workload names in its own
Binding. They are written once for every reader, so they are cut as they are read: a
workload of a namespace the reader may not read is said as "a workload of another
namespace", as Kueue names a preemptor by UID only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from federation.registry import keys, objects

__all__ = ["OTHER", "TOLD", "parts", "readable_key", "teller", "told"]

OTHER: Final = "a workload of another namespace"
"""What a reader is told in place of a workload of a namespace it may not read."""

TOLD: Final = frozenset({"bindings", "events"})
"""Kinds whose text is the controllers' own, naming workloads as `ns/Kind.group/name`."""

_REF: Final = re.compile(
    r"(?<![\w./-])(_|[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)"  # namespace, `_`: cluster-scoped
    r"/([A-Z][A-Za-z0-9]*(?:\.[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)?)"  # Kind.group
    r"/([a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)"  # name
)
"""A workload reference as `str(keys.WorkloadRef)` writes it into reasons and events."""


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


def teller(plural: str, owned: frozenset[str] | None) -> Callable[[Any], Any]:
    """How objects of `plural` are shown to a reader of the namespaces `owned` (None:
    every one): `told` for Bindings and Events, as they are for everything else."""
    if plural not in TOLD or owned is None:
        return lambda wire: wire
    return lambda wire: told(wire, owned)


def told(wire: Any, owned: frozenset[str] | None) -> Any:
    """`wire` (a Binding or an Event as JSON, or any part of one) as a reader of the
    namespaces `owned` (None: every one, `auth.readable`) may see it: each workload it
    names in another namespace said as `OTHER` (module doc)."""
    if owned is None:
        return wire
    if isinstance(wire, str):
        return _REF.sub(lambda m: _named(m, owned), wire)
    if isinstance(wire, dict):
        return {k: told(v, owned) for k, v in wire.items()}
    if isinstance(wire, list):
        return [told(v, owned) for v in wire]
    return wire


def _named(match: re.Match[str], owned: frozenset[str]) -> str:
    ref = keys.WorkloadRef(match[1], match[2], match[3])
    return match[0] if (objects.namespace_of(ref) or ref.namespace) in owned else OTHER
