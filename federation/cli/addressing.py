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

Fed by the parsed arguments of `objects_cmd` and `describing`; feeds them the resource,
the workload kind, the one object a NAME addresses (read through the API), and the
not-found error to raise.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from federation import errors
from federation.registry import keys, objects
from policies.models import kinds

__all__ = [
    "ABOUT",
    "check_name",
    "elsewhere",
    "events_about",
    "find_workload",
    "kind_and_name",
    "list_path",
    "matches",
    "missing",
    "missing_from",
    "namespaced_name",
    "not_found",
    "one",
    "resolve",
    "resource",
    "workload_path",
]

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
    """The resource `word` names and, for a workload kind, the kind as the KIND column
    prints it: in kubectl's group (`jobs` is `Job.batch`), or in the group given
    (`jobs.batch.volcano.sh` is Volcano's `Job.batch.volcano.sh`)."""
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
    if kind is None and group and group not in kinds.CLOSED_GROUPS:
        # `clusterqueues.kueue.x-k8s.io`: a custom resource's plural and group, matched
        # against the stored workloads' kinds (`workloads_view.is_kind_named`).
        return objects.resource_named("workloads"), word.lower()
    if kind is None:
        raise errors.Invalid(
            f"{refused}; or a workload kind as kubectl names it (deployments, jobs, deploy,"
            " ..., or with its group: deployments.apps)"
        ) from None
    return objects.resource_named(
        "workloads"
    ), f"{kind.partition('.')[0]}.{group}" if group else kind


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


def list_path(res: Any, args: argparse.Namespace) -> str:
    """The API path listing `res` in -n NS, or in every namespace."""
    if res.namespaced and not args.all_namespaces and args.namespace:
        return f"namespaces/{args.namespace}/{res.plural}"
    return str(res.plural)


def resolve(args: argparse.Namespace) -> Any:
    """The resource `args.kind` names (`resource`), with KIND/NAME split into
    `args.kind` and `args.name`; a workload kind as kubectl names it (`deploy`,
    `jobs.batch`) is `workloads` of that kind, with `args.name` narrowed to it."""
    from federation.cli import workloads_view

    args.kind, args.name = kind_and_name(args.kind, args.name)
    res, args.workload_kind = resource(args.kind)
    if args.workload_kind and args.name:
        args.name = workloads_view.with_kind(args.name, args.workload_kind)
    return res


def check_name(args: argparse.Namespace, res: Any) -> None:
    """Refuse what cannot address one object: a NAME with -A or -l (kubectl refuses
    both), or NS/NAME of a cluster-scoped resource."""
    if not args.name or res.plural in ABOUT:
        return
    if getattr(args, "all_namespaces", False):
        raise errors.Invalid("a NAME is looked for in one namespace: give -n NS or NS/NAME, not -A")
    if getattr(args, "selector", None):
        raise errors.Invalid("give a NAME or -l SELECTOR, not both")
    if res.plural != "workloads":
        namespaced_name(res, args.name, args.namespace)


async def missing(args: argparse.Namespace, plural: str) -> str:
    """What was not found; for a queue that workloads name but nobody defined, also how
    many wait in it, since that is usually why someone asks for it."""
    what = f'{plural} "{args.name}"'
    if plural != "queues":
        return what
    from federation.cli import client, queues_view

    with contextlib.suppress(errors.FedctlError):
        async with client.ApiClient(args.server, token=args.token) as api:
            status = await api.request("GET", queues_view.PATH)
        for item in status["items"]:
            if item["name"] == args.name and item["pending"]:
                return (
                    f"{what}: not defined, and {item['pending']} workload(s) wait in it;"
                    " create the queue or correct their fedctl.io/queue"
                )
    return what


def matches(item: dict[str, Any], name: str) -> bool:
    """Whether a stored object is NAME, or NS/NAME (in NS)."""
    meta = item.get("metadata", {})
    ns, _, bare = name.rpartition("/")
    return bool(meta.get("name") == bare and (not ns or meta.get("namespace") == ns))


async def one(api: Any, res: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The one stored object `args.name` (and `-n`) address, by the rule above: NAME in
    -n NS or `default`, NS/NAME in NS, a cluster-scoped NAME by itself. Several fitting (a
    Binding of a Job and of a Deployment of one name) are refused with the kind of each,
    never resolved by list order."""
    ns, name = namespaced_name(res, args.name, args.namespace)
    path = f"namespaces/{ns}/{res.plural}" if ns else res.plural
    listed = (await api.request("GET", path))["items"]
    found = [i for i in listed if i.get("metadata", {}).get("name") == name]
    if len(found) > 1:
        kinds = ", ".join(sorted(str(i.get("kind")) for i in found))
        shown = f"{ns}/{name}" if ns else name
        raise errors.Invalid(f'{res.plural} "{shown}" names several objects: {kinds}')
    if not found:
        raise await missing_from(api, res, ns, name, args)
    return dict(found[0])


async def missing_from(
    api: Any, res: Any, ns: str, name: str, args: argparse.Namespace
) -> errors.NotFound:
    """The error for `name` missing from `ns`, saying which other namespaces hold one,
    when the token may list them."""
    from federation.cli import client

    if not ns:
        return errors.NotFound(await missing(args, res.plural))
    others: list[str] = []
    with contextlib.suppress(client.ApiError):
        everywhere = (await api.request("GET", res.plural))["items"]
        others = elsewhere(everywhere, name, ns)
    return not_found(f'{res.plural} "{ns}/{name}"', others)


async def events_about(
    api: Any, args: argparse.Namespace, events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The events about the one workload `args.name` (and `-n`) address, by the rule every
    verb reads a workload's name by (`workloads_view.pick`: NAME, NS/NAME, KIND/NAME,
    NS/KIND/NAME), among the stored workloads and those the events are about (a deleted
    workload's are found too). None for a workload that has none (they are kept about an
    hour); NotFound when no workload has that address, rather than "no events", which
    read a misspelt name (or `NS/NAME`, compared whole with the name) as a quiet one."""
    from federation.cli import workloads_view

    subjects: dict[str, dict[str, str]] = {}
    for event in events:
        about = str(event.get("object"))
        with contextlib.suppress(errors.Invalid):
            ref = keys.parse_workload_key(f"{keys.ROOT}/workloads/{about}")
            subjects[about] = {"namespace": ref.namespace, "kind": ref.kind, "name": ref.name}
    stored = (await api.request("GET", f"{workloads_view.PREFIX}/workloads"))["items"]
    known = {workloads_view.address(s): s for s in subjects.values()}
    for item in stored:
        subject = {k: str(item[k]) for k in ("namespace", "kind", "name")}
        known.setdefault(workloads_view.address(subject), subject)
    try:
        subject = workloads_view.pick(
            list(known.values()), name=args.name, namespace=args.namespace
        )
    except errors.NotFound:
        with contextlib.suppress(errors.NotFound):
            await find_workload(api, args)  # a 403 where the token may not read it
        raise
    return [e for e in events if subjects.get(str(e.get("object"))) == subject]


async def find_workload(api: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The status-view item of the one workload `args.name` (and `-n`) address.

    Not found in the list, which is cut to the namespaces the token may read, it is asked
    of the namespace named (`-n NS`, `NS/NAME`, `NS/KIND/NAME`) alone, so that a token
    that may not read it hears the API's 403 (`user 'alice' has no access to namespace
    'web'`), as kubectl says Forbidden, not "not found", which sent users hunting a typo."""
    from federation.cli import workloads_view

    path = f"{workloads_view.PREFIX}/workloads"
    listed = await api.request("GET", path)
    try:
        return workloads_view.pick(listed["items"], name=args.name, namespace=args.namespace)
    except errors.NotFound:
        named = _namespace_named(args.name, args.namespace)
        if named is not None:
            await api.request("GET", path, params={"namespace": named})  # 403 if not its
        raise


def _namespace_named(name: str, namespace: str | None) -> str | None:
    """The namespace a workload address names, if it names one: `-n NS`, the first part of
    NS/KIND/NAME, or of NS/NAME when that part is no workload kind (`deploy/web`, `Job/x`:
    a namespace is a lower-case DNS label)."""
    from federation.cli import workloads_view

    parts = name.split("/")
    if namespace:
        return namespace
    first = parts[0]
    if len(parts) == 3 or (
        len(parts) == 2
        and first == first.lower()
        and "." not in first  # a label; `clusterqueues.kueue.x-k8s.io/q` names a kind
        and workloads_view.kind_named(first) is None
    ):
        return first
    return None


def workload_path(item: dict[str, Any]) -> str:
    """The API path of the template of a status-view workload item."""
    return f"namespaces/{item['namespace']}/workloads/{item['kind']}/{item['name']}"
