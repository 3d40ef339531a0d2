"""How `fedctl get | describe | delete` read the KIND and NAME a user types: one rule for
every verb, kubectl's, so that the same words find the same object whatever the verb.

- KIND is a resource as fedctl names it (`pp`, `queues`), a workload kind as kubectl names
  it (`deploy`, `jobs`), or either with its API group (`deployments.apps`, `jobs.batch`,
  `propagationpolicy.policy.karmada.io`), the forms `fedctl apply` prints; `KIND/NAME`
  names the object in one word (`deploy/storefront`), as kubectl takes it.
- A namespaced NAME is looked for in `-n NS`, or without it in `default`, never across
  namespaces: a name two namespaces share would otherwise pick by list order, and `delete`
  would remove whichever came first. `NS/NAME` names the namespace in the word. A NAME
  found only in other namespaces is not found, and the error names those namespaces.
- Works and events have no name of their own: their NAME is the workload they are about,
  and selects all of them (one per member, one per happening).

Fed by `objects_cmd`'s parsed arguments; feeds it the resource, the workload kind and the
(namespace, name) to look up, and the not-found error to raise.
"""

from __future__ import annotations

import contextlib
from typing import Any

from federation import errors
from federation.registry import objects
from policies.models import kinds

__all__ = ["ABOUT", "elsewhere", "kind_and_name", "namespaced_name", "not_found", "resource"]

ABOUT = frozenset({"works", "events"})
"""Resources whose NAME is the object they are about, selecting all of them."""


def kind_and_name(kind: str, name: str | None) -> tuple[str, str | None]:
    """KIND and NAME from `KIND NAME` or kubectl's one-word `KIND/NAME`."""
    word, slash, named = kind.partition("/")
    if not slash:
        return kind, name
    if name is not None:
        raise errors.Invalid(f"{kind!r} names the object already: give KIND/NAME or KIND NAME")
    if not word or not named:
        raise errors.Invalid(f"{kind!r}: give KIND/NAME, as deploy/storefront")
    return word, named


def resource(word: str) -> tuple[objects.Resource, str | None]:
    """The resource `word` names and, for a workload kind, the kind (`Deployment`, or with
    the group given `Deployment.apps`, as the KIND column prints it)."""
    from federation.cli import workloads_view

    try:
        return objects.resource_named(word), None
    except errors.Invalid as exc:
        refused = exc
    base, _, group = word.partition(".")
    if group in kinds.CLOSED_GROUPS:
        with contextlib.suppress(errors.Invalid):
            return objects.resource_named(base), None
    kind = workloads_view.kind_named(base)
    if kind is None:
        raise errors.Invalid(
            f"{refused}; or a workload kind as kubectl names it (deployments, jobs, deploy,"
            " ..., or with its group: deployments.apps)"
        ) from None
    return objects.resource_named("workloads"), f"{kind}.{group}" if group else kind


def namespaced_name(res: objects.Resource, name: str, namespace: str | None) -> tuple[str, str]:
    """(namespace, name) of NAME or NS/NAME: NS, else -n, else `default`, as kubectl;
    the namespace is '' for a cluster-scoped resource, which refuses NS/NAME."""
    ns, _, bare = name.rpartition("/")
    if not bare or "/" in ns:
        raise errors.Invalid(f"{res.plural} {name!r}: give NAME or NS/NAME")
    if not res.namespaced:
        if ns:
            raise errors.Invalid(f"{res.plural} are cluster-scoped: give NAME, not NS/NAME")
        return "", bare
    if ns and namespace and ns != namespace:
        raise errors.Invalid(f"{name!r} and -n {namespace} name two namespaces: give one")
    return ns or namespace or "default", bare


def elsewhere(items: list[dict[str, Any]], name: str, namespace: str) -> list[str]:
    """The other namespaces holding an object named `name`, in order."""
    found = {
        str(i.get("metadata", {}).get("namespace"))
        for i in items
        if i.get("metadata", {}).get("name") == name
    }
    return sorted(found - {namespace})


def not_found(what: str, others: list[str]) -> errors.NotFound:
    """Not found, saying where else the name is, when it is (a NAME without -n is looked
    for in `default` only, which a user coming from a namespace may not expect)."""
    if not others:
        return errors.NotFound(what)
    return errors.NotFound(
        f"{what}; there is one in namespace {', '.join(others)}: give -n NS or NS/NAME"
    )
