"""`fedctl apply | diff | get | describe | delete`: user objects through the REST API.

`apply` and `diff` read files with the same loader as `fedctl validate`, so a broken file is
reported with FILE:LINE:COL before anything reaches the controller, and nothing is stored
unless every document is valid.

A workload is addressed as NAME, NS/NAME, KIND/NAME or NS/KIND/NAME (`workloads_view.pick`)
because one name can belong to a Job and a Deployment at once, and a cluster-scoped one
(a Namespace) has no namespace to give. A name that fits several is refused with the
address of each, never resolved by list order: `delete` would remove whichever came first.
Every verb reads KIND and NAME by the one rule `addressing` draws (a NAME in -n NS or
`default`, as kubectl). Errors name objects as the user does, never by registry key.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from federation import clock, errors, secrets
from federation.cli import render

if TYPE_CHECKING:
    from federation.cli import client as client_mod
    from policies.loading import Loaded, LoadResult

# The HTTP client pulls in aiohttp; it is imported when a command runs, so that offline
# commands such as `fedctl validate` start fast.

__all__ = ["against_server", "refused_at", "register", "server_option"]

_NAME_HELP = (
    "NAME (looked for in -n NS, or without -n in default, as kubectl does), or NS/NAME;"
    " a workload also KIND/NAME or NS/KIND/NAME"
)
_TYPE_GROUP = {"fedctl.io/v1alpha1": "fedctl.io", "policy.karmada.io/v1alpha1": "policy.karmada.io"}


def server_option(parser: argparse.ArgumentParser) -> None:
    """`--server` and `--token`, as every command that calls the API takes them."""
    parser.add_argument(
        "--server",
        default=os.environ.get("FEDCTL_SERVER", "http://127.0.0.1:8080"),
        help="controller API URL; a bare HOST:PORT means http:// (env FEDCTL_SERVER;"
        " default %(default)s)",
    )
    parser.add_argument("--token", default=None, help="bearer token (env FEDCTL_TOKEN)")


def register(sub: Any) -> None:
    apply = sub.add_parser("apply", help="create or update objects from YAML files")
    apply.add_argument("-f", "--filename", action="append", required=True, metavar="FILE|DIR")
    apply.add_argument(
        "--dry-run",
        action="store_true",
        help="let the server check everything and say what would change; store nothing",
    )
    server_option(apply)
    apply.set_defaults(func=_apply)

    diff = sub.add_parser(
        "diff",
        help="show what apply would change",
        description="Exit status, as kubectl diff's: 0 no differences, 1 differences, 2 an"
        " error (a broken file, an API that refused or did not answer).",
    )
    diff.add_argument("-f", "--filename", action="append", required=True, metavar="FILE|DIR")
    server_option(diff)
    # 1 says "differences": an error must not read as one (`fedctl diff -f x || apply`).
    diff.set_defaults(func=_diff, error_exit=2)

    get = sub.add_parser("get", help="list objects of a kind, or show one")
    get.add_argument(
        "kind",
        help="clusters, queues, propagationpolicies (pp), workloads, …, or a workload kind"
        " as kubectl names it (deploy, jobs, sts, …: jobs are jobs.batch; Volcano's are"
        " jobs.batch.volcano.sh or vcjob; priorityclasses or pc); either with its group"
        " (deployments.apps), or any kind apply stored as plural.group"
        " (clusterqueues.kueue.x-k8s.io), or KIND/NAME",
    )
    get.add_argument(
        "name",
        nargs="?",
        help=f"{_NAME_HELP}; for works and events, the workload they are about (all of them)",
    )
    get.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="the namespace of a NAME (without -n: default) or of the list (without -n:"
        " every namespace the token may read)",
    )
    get.add_argument(
        "-A", "--all-namespaces", action="store_true", help="list every namespace (no NAME)"
    )
    get.add_argument("-o", "--output", choices=["table", "wide", "yaml", "json"], default="table")
    get.add_argument(
        "-l",
        "--selector",
        default=None,
        metavar="SELECTOR",
        help="only objects whose labels match, as kubectl takes it (app=web,tier!=db;"
        " 'env in (a,b)'); a workload's labels are its template's. A cluster's region, zone"
        " and provider are fields, not labels: --field-selector",
    )
    get.add_argument(
        "--field-selector",
        default=None,
        metavar="SELECTOR",
        help="only objects whose fields match, chosen by the API as Kubernetes' are:"
        " metadata.name and metadata.namespace; for clusters also spec.region, spec.zone"
        " and spec.provider (spec.region=eu-west,spec.provider!=aws); =, == or !=",
    )
    get.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="after the table, print each row again when it changes, and an object's last"
        " row when it is deleted, as kubectl does (Ctrl-C stops)",
    )
    server_option(get)
    get.set_defaults(func=_get)

    describe = sub.add_parser("describe", help="show one object in detail")
    describe.add_argument("kind", help="a kind as get takes it, or KIND/NAME")
    describe.add_argument("name", nargs="?", help=_NAME_HELP)
    describe.add_argument("-n", "--namespace", default=None)
    server_option(describe)
    describe.set_defaults(func=_describe)

    delete = sub.add_parser("delete", help="delete objects named in files, or KIND NAME")
    delete.add_argument("kind", nargs="?")
    delete.add_argument(
        "name",
        nargs="*",
        help=f"{_NAME_HELP}; several are deleted in turn, as kubectl takes them (so are"
        " several KIND/NAME)",
    )
    delete.add_argument(
        "-f",
        "--filename",
        action="append",
        metavar="FILE|DIR",
        help="delete the objects a file or directory names; repeat -f for more (-f a -f b);"
        " not with KIND, NAME or -l",
    )
    delete.add_argument("-n", "--namespace", default=None)
    delete.add_argument(
        "-l",
        "--selector",
        default=None,
        metavar="SELECTOR",
        help="delete every object of KIND whose labels match, in -n NS (default: default),"
        " as kubectl delete -l does; a workload's labels are its template's; an empty"
        " selector is refused",
    )
    delete.add_argument(
        "--dry-run",
        action="store_true",
        help="say what deleting would do (the server's warnings); delete nothing",
    )
    server_option(delete)
    delete.set_defaults(func=_delete)


def _client() -> Any:
    from federation.cli import client

    return client


async def _describe(args: argparse.Namespace) -> int:
    """`describing.describe`, imported when `describe` runs, as the client is."""
    from federation.cli import describing

    return await describing.describe(args)


def _to_delete(paths: list[str]) -> list[Any]:
    """The objects files name, for `delete -f`: only errors are printed (a document that
    does not load names nothing to delete). A warning says what an object would do, or
    lacks, once applied (a parent queue the files do not hold): nothing to say to delete."""
    from policies import loading

    result = loading.load_paths(paths).without_warnings()
    return [o.model for o in _reported(result, refused="deleted")]


def _reported(result: LoadResult, *, refused: str = "applied") -> list[Loaded]:
    """The objects loaded, once every finding is printed; refused if any is an error,
    saying what was not done (`refused`: applied, compared, deleted)."""
    for finding in result.findings:
        print(str(finding), file=sys.stderr)
    if result.errors:
        raise errors.Invalid(f"{len(result.errors)} error(s) in the input; nothing was {refused}")
    return list(result.objects)


def _label(kind: str, api_version: str, name: str) -> str:
    group = _TYPE_GROUP.get(api_version, api_version.rpartition("/")[0])
    return f"{kind.lower()}.{group}/{name}" if group else f"{kind.lower()}/{name}"


async def _server_fleet(api: Any) -> list[Any] | None:
    """The server's Clusters and AcceleratorProfiles as models (None: unreadable, e.g. a
    token that may not list them): what `claims.against` judges files by."""
    from federation.cli import client
    from policies.models import kinds
    from policies.models.rules import STORED

    try:
        items = list((await api.request("GET", "clusters"))["items"])
    except client.ApiError:
        return None
    with contextlib.suppress(client.ApiError):  # the chips the clusters define still count
        items += (await api.request("GET", "acceleratorprofiles"))["items"]
    return [
        kinds.model_for(i["apiVersion"], i["kind"]).model_validate(i, context=STORED) for i in items
    ]


async def _server_queues(api: Any) -> list[Any] | None:
    """The server's Queues as models (None: unreadable, e.g. a token that may not list
    them): what a workload's queue and a queue's parent are judged by."""
    from federation.cli import client
    from policies.models.queue import Queue
    from policies.models.rules import STORED

    try:
        items = (await api.request("GET", "queues"))["items"]
    except client.ApiError:
        return None
    return [Queue.model_validate(i, context=STORED) for i in items]


async def against_server(api: Any, result: LoadResult) -> LoadResult:
    """`result` judged by `claims.against` on what the server behind `api` holds: its
    Clusters and AcceleratorProfiles, and its queues. `fedctl apply` and a live `fedctl
    plan` call it alike, so both warn of the same affinities and spreads no joined member
    can satisfy, members not joined, chips and queues nothing defines, as an offline plan
    does against its profile. Only what the files need is read; what the token may not
    list judges nothing."""
    from federation.scheduler import claims
    from federation.scheduler import plan as planning
    from policies.loading import targets
    from policies.loading.documents import queue_children

    placing = any(isinstance(o.model, planning.AnyPolicy) for o in result.objects)
    targeting = targets.selects_clusters(result.objects)  # an override's targetCluster
    fleet = None
    if result.names_undefined_chips or result.names_clusters or placing or targeting:
        fleet = await _server_fleet(api)
    stored = await _server_queues(api) if result.needs_queues else None
    queues = None
    if stored is not None:
        queues = queue_children((q.metadata.name, q.spec.parent) for q in stored)
    if fleet is not None or queues is not None:
        result = claims.against(result, fleet or [], queues=queues)
    if stored is not None:
        result = result.with_stored_queues(stored)
    return result


def refused_at(exc: client_mod.ApiError, loaded: Sequence[Loaded]) -> client_mod.ApiError:
    """A 403 that names the document refused (`Kind ns/name: user ...`), put at its
    FILE:LINE in `loaded`, as the controller's other findings are: `apply` and `plan
    --live` send many documents and the refusal must say which."""
    from federation.cli import client

    return client.ApiError(exc.code, exc.reason, render.placed(str(exc), loaded), {})


async def _apply(args: argparse.Namespace) -> int:
    from federation.cli import client
    from policies import loading

    result = loading.load_paths(args.filename)
    if not result.ok:
        _reported(result)  # raises: nothing is sent while the input is wrong
    async with _client().ApiClient(args.server, token=args.token) as api:
        loaded = _reported(await against_server(api, result))
        if not loaded:
            print("no objects found", file=sys.stderr)
            return 1
        body = {"items": [o.model.to_wire() for o in loaded]}
        leaves = await _leaves_with_work(api, loaded)
        try:
            answer = await _posted(api, body, dry=args.dry_run)
        except client.ApiError as exc:
            if exc.code == 403:
                raise refused_at(exc, loaded) from exc
            if exc.code != 400:
                raise
            found = [render.placed(f, loaded) for f in exc.details.get("findings") or [str(exc)]]
            raise errors.Invalid(
                f"{len(found)} error(s) found by the controller; nothing was applied",
                findings=found,
            ) from exc
        dry = _DRY if args.dry_run else ""
        for item in answer["results"]:
            label = _label(item["kind"], item["apiVersion"], item["name"])
            print(f"{label} {item['result']}{dry}")
        await _over_limits(api, loaded, answer["results"], leaves=leaves)
    return 0


async def _leaves_with_work(api: Any, loaded: list[Any]) -> dict[str, tuple[int, int]]:
    """The admitted and waiting counts of each queue that the files name as a parent and
    that, before the apply, is a leaf holding work. Read before the write because after it
    a parent's children include those just written, and its counts are its subtree's: a
    re-written child made its parent look newly adopted, holding its children's work."""
    from federation.cli import queues_view
    from policies.models.queue import Queue

    parents = {o.model.spec.parent for o in loaded if isinstance(o.model, Queue)} - {None}
    if not parents:
        return {}
    stored = await _server_queues(api)
    try:
        view = (await api.request("GET", queues_view.PATH))["items"]
    except errors.FedctlError:
        return {}  # a token that may not read the view: no warning, the write stands
    if stored is None:
        return {}
    # The stored queues, not the view's children: the view may be an answer kept from
    # before the last apply (`queue_status.REFRESH_SECONDS`), while the queues are current.
    adopted = {q.spec.parent for q in stored}
    return {
        item["name"]: (item["admitted"], item["pending"])
        for item in view
        if item["name"] in parents - adopted
        and not item.get("children")
        and (item["admitted"] or item["pending"])
    }


async def _posted(api: Any, body: dict[str, Any], *, dry: bool) -> Any:
    """The answer to POST /apply (`dry`: Kubernetes' dryRun=All), once every note it holds
    is printed, from its body: the API sends only the first few as `Warning` headers, and
    an apply of hundreds of policies has a note on each."""
    params = {"dryRun": "All"} if dry else None
    answer = await api.request("POST", "apply", body=body, params=params, warnings=False)
    for note in answer.get("warnings") or ():
        print(f"Warning: {note}", file=sys.stderr)
    return answer


async def _over_limits(
    api: Any, loaded: list[Any], results: list[Any], *, leaves: dict[str, tuple[int, int]]
) -> None:
    """Warn of each queue just written whose capability is below what it holds now, or
    whose budget is below what its placed work costs: the write is fine (nothing is
    evicted for it), but a user lowering a limit expects it to bite, and it bites only as
    admitted work finishes. And of a queue that was a leaf holding work (`leaves`, read
    before the write) and that a queue just written makes a parent: a parent takes no
    work, so what waits in it stays waiting."""
    from federation.cli import queues_view
    from policies.models.queue import Queue

    queues = [
        o.model
        for o, r in zip(loaded, results, strict=True)
        if isinstance(o.model, Queue) and r["result"] != "unchanged"
    ]
    written = {q.metadata.name: q.to_wire().get("spec", {}).get("capability") or {} for q in queues}
    budgets = {q.metadata.name: q.spec.max_hourly_cost for q in queues if q.spec.max_hourly_cost}
    adopting: dict[str, list[str]] = {}  # a parent -> its children written now
    for q in queues:
        if q.spec.parent:
            adopting.setdefault(q.spec.parent, []).append(q.metadata.name)
    if not any(written.values()) and not budgets and not adopting:
        return
    try:
        view = (await api.request("GET", queues_view.PATH))["items"]
        if budgets:
            costs = await queues_view.costs(api)
            view = queues_view.costed(view, costs)
    except errors.FedctlError:
        return  # a token that may not read the view, or the API gone: the write stands
    for item in view:
        cap = written.get(item["name"])
        over = queues_view.over_capability(item.get("used") or {}, cap or {})
        if over:
            print(
                f"Warning: queue {item['name']} holds more than its capability"
                f" ({', '.join(over)}): {queues_view.OVER}",
                file=sys.stderr,
            )
        kids = adopting.get(item["name"])
        held = leaves.get(item["name"])
        if kids and held is not None:
            print(
                f"Warning: queue {item['name']} holds {held[0]} admitted and"
                f" {held[1]} waiting workload(s) and now has child queues"
                f" ({', '.join(sorted(kids))}): {queues_view.ADOPTED}",
                file=sys.stderr,
            )
        budget = budgets.get(item["name"])
        if budget is not None and item.get("hourlyCost", 0) > budget:
            print(
                f"Warning: queue {item['name']}'s placed work costs"
                f" {item['hourlyCost']:.4f} {item['currency']}/h, above its budget"
                f" {budget:.4f}: {queues_view.OVER_BUDGET}",
                file=sys.stderr,
            )


def _path(res: Any, obj: Any) -> str:
    """The API path of a file's object; a workload's namespace segment is the registry's
    (`_` for a cluster-scoped kind), from the same `workload_ref` the API stores it by."""
    from federation.registry import objects

    if res.plural == "workloads":
        ref = objects.workload_ref(obj)
        return f"namespaces/{ref.namespace}/workloads/{ref.kind}/{ref.name}"
    if res.namespaced:
        return f"namespaces/{obj.metadata.namespace or 'default'}/{res.plural}/{obj.metadata.name}"
    return f"{res.plural}/{obj.metadata.name}"


def _comparable(doc: dict[str, Any] | None) -> str:
    """The user's part of `doc` as YAML, keys sorted at every level: the API returns
    stored objects with sorted keys, and key order is no change."""
    if doc is None:
        return ""
    doc = dict(doc)
    meta = {
        k: v
        for k, v in doc.get("metadata", {}).items()
        if k not in ("resourceVersion", "uid", "generation", "creationTimestamp")
    }
    doc["metadata"] = meta
    doc.pop("status", None)
    return render.dump(json.loads(json.dumps(doc, sort_keys=True)), "yaml") + "\n"


def _as_stored(res: Any, model: Any) -> dict[str, Any]:
    """`model` as the API stores it: a namespaced object without one goes to `default`,
    a Secret's `stringData` is folded into its `data` (`secret_data.fold`)."""
    from policies.models import kinds, secret_data

    wire: dict[str, Any] = secret_data.fold(model.to_wire())
    meta = wire.setdefault("metadata", {})
    if res.namespaced and kinds.is_namespaced(model.kind) and not meta.get("namespace"):
        meta["namespace"] = "default"
    return wire


async def _diff(args: argparse.Namespace) -> int:
    """What applying the files would change, as `kubectl diff`: the server says which
    objects its apply would change (a dry run, judging chips and queues against what it
    holds, as `apply` does), and those are shown against their live form with secrets
    masked on both sides (`_masked`).

    Why the server decides: a Cluster's inline kubeconfig is never read back (it is
    `<redacted>`), so comparing texts reported drift on every run where `apply` said
    unchanged, and printed the member's credential into the log."""
    from federation.registry import objects
    from policies import loading

    result = loading.load_paths(args.filename)
    if not result.ok:
        _reported(result, refused="compared")  # raises: nothing is compared
    changed = 0
    async with _client().ApiClient(args.server, token=args.token) as api:
        models = [o.model for o in _reported(await against_server(api, result), refused="compared")]
        if not models:
            return 0
        body = {"items": [m.to_wire() for m in models]}
        answer = await _posted(api, body, dry=True)
        for model, outcome in zip(models, answer["results"], strict=True):
            if outcome["result"] == "unchanged":
                continue
            changed += 1
            res = objects.resource_for_kind(model)
            live = await api.request("GET", _path(res, model), allow_missing=True)
            have, want = _masked(live, _as_stored(res, model))
            label = _label(model.kind, model.api_version, model.metadata.name)
            sys.stdout.writelines(
                difflib.unified_diff(
                    _comparable(have).splitlines(True),
                    _comparable(want).splitlines(True),
                    f"live/{label}",
                    f"file/{label}",
                )
            )
    return 1 if changed else 0


_MASK = "***"


def _masked(
    have: dict[str, Any] | None, want: dict[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """`have` (live) and `want` (the file) with their secrets masked, as `kubectl diff`
    masks a Secret's values: `***` when the same on both sides, `*** (before)` and
    `*** (after)` when they differ. A Cluster's inline kubeconfig, which the API never
    shows, is `<redacted>` on both sides, `<redacted> (changed)` in the file when the
    server says the object changes and nothing else differs."""
    want = json.loads(json.dumps(want))
    have = json.loads(json.dumps(have)) if have is not None else None
    if want.get("kind") == "Secret":
        for field in ("data", "stringData"):
            mine = want.get(field) or {}
            theirs = (have or {}).get(field) or {}
            for key, value in mine.items():
                mine[key] = _MASK if theirs.get(key) == value else f"{_MASK} (after)"
            for key in theirs:
                theirs[key] = _MASK if mine.get(key) == _MASK else f"{_MASK} (before)"
    conn = (want.get("spec") or {}).get("connection") or {}
    if want.get("kind") == "Cluster" and conn.get("kubeconfig"):
        conn["kubeconfig"] = secrets.REDACTED
        if _comparable(have) == _comparable(want):
            conn["kubeconfig"] = f"{secrets.REDACTED} (changed)"
    return have, want


async def _get(args: argparse.Namespace) -> int:
    from federation.cli import addressing, labels

    res = addressing.resolve(args)
    addressing.check_name(args, res)
    args.labels = labels.parse(args.selector) if args.selector else None
    if args.labels is not None and res.plural == "queues":
        raise errors.Invalid("-l selects by labels; the queue table has none to select by")
    if getattr(args, "field_selector", None) is not None and (
        res.plural in ("workloads", "queues", "events") or args.name
    ):
        raise errors.Invalid(
            "--field-selector chooses from a list of clusters, policies and other stored"
            f" kinds: not from {'one named object' if args.name else res.plural}"
        )
    if args.watch:
        from federation.cli import watching

        if args.output in ("yaml", "json"):
            raise errors.Invalid("--watch prints the table: it takes no -o yaml or json")
        return await watching.watch(lambda: _get_once(args, res))
    return await _get_once(args, res)


async def _get_once(args: argparse.Namespace, res: Any) -> int:
    from federation.cli import addressing

    if res.plural == "workloads":
        return await _get_workloads(args)
    if res.plural == "queues":
        return await _get_queues(args)
    one = bool(args.name) and res.plural not in addressing.ABOUT
    async with _client().ApiClient(args.server, token=args.token) as api:
        if one:
            items = [await addressing.one(api, res, args)]
        else:
            field = getattr(args, "field_selector", None)
            fields = {"fieldSelector": field} if field else None
            path = addressing.list_path(res, args)
            items = (await api.request("GET", path, params=fields))["items"]
        if args.name and res.plural == "events":  # an event has no name: NAME is its object's
            items = await addressing.events_about(api, args, items)
    if args.labels is not None:
        from federation.cli import labels

        items = [i for i in items if labels.matches(args.labels, i)]
    if res.plural == "works" and args.namespace and not args.all_namespaces:
        items = [i for i in items if i.get("metadata", {}).get("namespace") == args.namespace]
    if args.name and res.plural == "works":  # a workload's, one per member
        items = [i for i in items if addressing.matches(i, args.name)]
        if not items:
            raise errors.NotFound(f'{res.plural} "{args.name}"')
    if args.output in ("yaml", "json"):
        # One object for a NAME, a list otherwise: never a shape that depends on how
        # many matched (a workload's works and events are always a list).
        doc: Any = items[0] if one else items
        print(render.dump(doc, args.output))
        return 0
    now, wide = clock.real.now(), args.output == "wide"
    if res.plural == "clusters":
        text = render.clusters(items, now=now, wide=wide)
    elif res.plural == "works":
        from federation.cli import workloads_view

        text = workloads_view.works_table(items, now=now, wide=wide)
    elif res.plural == "events":
        from federation.cli import workloads_view

        text = workloads_view.events_table(items, now=now)
    else:
        text = render.objects(items, namespaced=res.namespaced, now=now, wide=wide)
    if text is None:
        print(f"No {res.plural} found.", file=sys.stderr)
        return 0
    print(text)
    return 0


async def _get_queues(args: argparse.Namespace) -> int:
    """The queue table (`queues_view`), from the queue status view and the stored queues:
    every queue is read, since a parent's counts are its subtree's, and only the named one
    shown if named. The implicit default queue, and one only workloads name, are found by
    name as the table lists them."""
    from federation.cli import queues_view

    async with _client().ApiClient(args.server, token=args.token) as api:
        status = await api.request("GET", queues_view.PATH)
        stored = (await api.request("GET", "queues"))["items"]
        costs = None
        if args.output in ("wide", "json", "yaml"):
            costs = await queues_view.costs(api)
    items = queues_view.merge(status["items"], stored)
    if costs is not None:
        items = queues_view.costed(items, costs)
    if args.name and not any(item["name"] == args.name for item in items):
        raise errors.NotFound(f'queues "{args.name}"')
    if args.output in ("yaml", "json"):
        docs = queues_view.documents(items, stored, only=args.name)
        print(render.dump(docs[0] if args.name else docs, args.output))
        return 0
    now = clock.real.now()
    text = queues_view.table(items, now=now, only=args.name, wide=args.output == "wide")
    if text is None:
        print("No queues found.", file=sys.stderr)
        return 0
    print(text)
    return 0


async def _get_workloads(args: argparse.Namespace) -> int:
    """The workload table, or for `-o json|yaml` the templates, each with the table's
    answer as its `status` (`workloads_view.status`)."""
    from federation.cli import addressing, workloads_view

    params = {"namespace": args.namespace} if args.namespace and not args.all_namespaces else {}
    async with _client().ApiClient(args.server, token=args.token) as api:
        if args.name:
            items = [await addressing.find_workload(api, args)]
        else:
            path = f"{workloads_view.PREFIX}/workloads"
            items = (await api.request("GET", path, params=params))["items"]
            items = workloads_view.of_kind(items, args.workload_kind)
        templates = []
        if args.output in ("yaml", "json") and args.name:
            templates = [await api.request("GET", addressing.workload_path(items[0]))]
        elif args.output in ("yaml", "json") or args.labels is not None:
            path = f"namespaces/{params['namespace']}/workloads" if params else "workloads"
            templates = (await api.request("GET", path))["items"]
            templates = workloads_view.of_kind(templates, args.workload_kind)
        if args.labels is not None:
            from federation.cli import labels

            chosen = args.labels
            items = workloads_view.labelled(items, templates, lambda t: labels.matches(chosen, t))
    if args.output in ("yaml", "json"):
        docs = workloads_view.documents(items, templates)
        print(render.dump(docs[0] if args.name and docs else docs, args.output))
        return 0
    if not items:
        kind = f"{args.workload_kind} workloads" if args.workload_kind else "workloads"
        print(f"No {kind} found.", file=sys.stderr)
        return 0
    print(workloads_view.table(items, wide=args.output == "wide", now=clock.real.now()))
    return 0


async def _delete(args: argparse.Namespace) -> int:
    unused = _beside_files(args)
    if unused:
        print(
            f"fedctl delete: {' '.join(unused)}: -f takes one file or directory; give -f"
            " before each (-f a.yaml -f b.yaml), or the directory that holds them. KIND and"
            " NAME cannot be given with -f, nor -l",
            file=sys.stderr,
        )
        return 2
    async with _client().ApiClient(args.server, token=args.token) as api:
        if args.filename:
            return await _delete_all(api, _to_delete(args.filename), dry=args.dry_run)
        if args.selector is not None:
            if not args.selector.strip():
                print(
                    "fedctl delete: -l takes a selector (app=web); an empty one would select"
                    " every object: give KIND NAME to delete one",
                    file=sys.stderr,
                )
                return 2
            return await _delete_selected(api, args)
        if not args.kind or ("/" not in args.kind and not args.name):
            print("fedctl delete: give -f FILE, KIND NAME or KIND/NAME", file=sys.stderr)
            return 2
        missing = 0
        for kind, name in _targets(args):
            one = argparse.Namespace(**{**vars(args), "kind": kind, "name": name})
            try:
                label = await _delete_one(api, one)
            except errors.NotFound as exc:
                print(f"fedctl: {exc}", file=sys.stderr)
                missing = 1
                continue
            print(f"{label} deleted{_DRY if args.dry_run else ''}")
    return missing


def _beside_files(args: argparse.Namespace) -> list[str]:
    """What `delete -f` was also given and would not use: KIND and NAMEs, or `-l`.

    Why: `delete -f a.yaml b.yaml c.yaml` read b.yaml and c.yaml as KIND and NAME, deleted
    a.yaml's objects alone and exited 0. As `apply -f a b` ("unrecognized arguments") and
    kubectl (no resource arguments with -f), that is refused before anything is deleted."""
    if not args.filename:
        return []
    given = [*([args.kind] if args.kind else []), *(args.name or ())]
    return given + (["-l", args.selector] if args.selector is not None else [])


def _targets(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """(KIND, NAME) of each object `delete KIND NAME...` or `delete KIND/NAME...` names.

    Why: `kubectl delete job a b` deletes both, and `fedctl delete job big next` stopped
    at `unrecognized arguments`. As kubectl, once the first is KIND/NAME every one is,
    and one not found is reported while the rest are still deleted."""
    names: list[str] = list(args.name or ())
    if "/" not in args.kind:
        return [(args.kind, name) for name in names]
    plain = [name for name in names if "/" not in name]
    if plain:
        raise errors.Invalid(
            f"{plain[0]}: give every object as KIND/NAME once the first is ({args.kind}),"
            " or KIND once followed by its NAMEs"
        )
    return [(args.kind, None), *((name, None) for name in names)]


async def _delete_one(api: Any, args: argparse.Namespace) -> str:
    """DELETE the one object `args.kind` and `args.name` address; its outcome's label."""
    from federation.cli import addressing

    dry = args.dry_run
    res = addressing.resolve(args)
    if res.plural == "workloads" and args.workload_kind == "Namespace":
        path, label = _namespace_path(args.name)
        await _delete_at(api, path, f'namespaces "{args.name.rpartition("/")[2]}"', dry=dry)
        return label
    if res.plural == "workloads":
        from federation.cli import workloads_view

        item = await addressing.find_workload(api, args)
        what = f'workloads "{workloads_view.address(item)}"'
        await _delete_at(api, addressing.workload_path(item), what, dry=dry)
        return f"{item['kind'].lower()}/{item['name']}"
    return await _delete_named(api, res, args)


async def _delete_selected(api: Any, args: argparse.Namespace) -> int:
    """`delete KIND -l SELECTOR [-n NS]`: every object of KIND in the namespace (kubectl's
    default, `default`) whose labels match, deleted as `delete -f` deletes them.

    Why: a bulk clean-up by label (`kubectl delete deploy -l tier=fe`) had to be scripted
    around `get -o json`."""
    from federation.cli import addressing
    from federation.registry import keys

    if not args.kind or args.name or "/" in args.kind:
        print("fedctl delete: give KIND with -l, not a NAME", file=sys.stderr)
        return 2
    res = addressing.resolve(args)
    ns = args.namespace or "default"
    listed = await api.request(
        "GET",
        f"namespaces/{ns}/{res.plural}" if res.namespaced else res.plural,
        params={"labelSelector": args.selector},
    )
    items = listed.get("items", [])
    if res.plural == "workloads":
        from federation.cli import workloads_view

        items = workloads_view.of_kind(items, args.workload_kind)
    paths: list[tuple[str, str]] = []
    for item in items:
        meta = item.get("metadata") or {}
        name = str(meta.get("name", ""))
        if res.plural == "workloads":
            segment = keys.kind_segment(item.get("apiVersion", ""), item.get("kind", ""))
            path = f"namespaces/{ns}/workloads/{segment}/{name}"
            label = _label(item.get("kind", ""), item.get("apiVersion", ""), name)
        else:
            base = f"namespaces/{ns}/{res.plural}" if res.namespaced else res.plural
            path, label = f"{base}/{name}", f"{res.singular} {name}"
        paths.append((path, label))
    if not paths:
        print(f"No resources found in {ns} namespace." if res.namespaced else "No resources found.")
        return 0
    return await _delete_paths(api, paths, dry=args.dry_run)


async def _delete_named(api: Any, res: Any, args: argparse.Namespace) -> str:
    """DELETE the stored object `args.name` addresses, as `_one` finds it for get and
    describe; its label for the outcome."""
    from federation.cli import addressing

    ns, name = addressing.namespaced_name(res, args.name, args.namespace)
    path = f"namespaces/{ns}/{res.plural}/{name}" if ns else f"{res.plural}/{name}"
    shown = f"{ns}/{name}" if ns else name
    try:
        await _delete_at(api, path, f'{res.plural} "{shown}"', dry=args.dry_run)
    except errors.NotFound:
        raise await addressing.missing_from(api, res, ns, name, args) from None
    return f"{res.singular} {shown}"


def _namespace_path(name: str) -> tuple[str, str]:
    """The API path and the outcome's label of the Namespace `name` (`Namespace/NAME` once
    `_resource` narrowed it). A Namespace is named by its name alone, so it is not looked
    up in the workload view, which shows a tenant what is in its namespaces but not the
    Namespace that is one of them."""
    from federation.registry import objects

    parts = name.split("/")
    if len(parts) != 2:
        raise errors.Invalid("namespaces are cluster-scoped: give NAME, not NS/NAME")
    ref = objects.namespace_workload(parts[1])
    return f"namespaces/{ref.namespace}/workloads/{ref.kind}/{ref.name}", f"namespace/{ref.name}"


_DELETES = 16
"""DELETE requests `delete -f` has in flight at once."""
_DRY = " (server dry run)"
"""What kubectl adds to an outcome the server only checked (`dryRun=All`)."""


async def _delete_all(api: Any, models: list[Any], *, dry: bool = False) -> int:
    """Delete every object of the files, `_DELETES` requests at a time, reported in file
    order (namespaces last) as they finish. One at a time, a sweep of 10,000 Jobs took
    three minutes. One not found is reported and the rest still deleted (exit status 1),
    as kubectl does; any other refusal stops the rest.

    Workloads go first, then policies and the rest: a policy deleted beside the workloads
    it claims warned that they "stay where they are, their copies running" (or are placed
    again under another policy), judged while they were still there. Namespaces go last:
    deleting one deletes what it holds, so the files' objects in it, deleted at the same
    time, were reported not found."""
    from federation.registry import objects
    from policies.models.workload import Workload

    def phase(model: Any) -> int:
        if not isinstance(model, Workload):
            return 1
        return 2 if objects.namespace_of(objects.workload_ref(model)) else 0

    missing = 0
    for step in (0, 1, 2):
        chosen = [m for m in models if phase(m) == step]
        if chosen:
            missing = max(missing, await _delete_each(api, chosen, dry=dry))
    return missing


async def _delete_each(api: Any, models: list[Any], *, dry: bool) -> int:
    """`_delete_all` for `models` at once: 1 when one was not found, else 0."""
    from federation.registry import objects

    return await _delete_paths(
        api,
        [
            (_path(objects.resource_for_kind(m), m), _label(m.kind, m.api_version, m.metadata.name))
            for m in models
        ],
        dry=dry,
    )


async def _delete_paths(api: Any, paths: list[tuple[str, str]], *, dry: bool) -> int:
    """DELETE each (path, label), `_DELETES` at a time, reported in the given order as they
    finish: 1 when one was not found (reported, the rest still deleted), else 0."""
    slots = asyncio.Semaphore(_DELETES)

    async def one(path: str, label: str) -> errors.NotFound | None:
        async with slots:
            try:
                await _delete_at(api, path, label, dry=dry)
            except errors.NotFound as exc:
                return exc
        return None

    tasks = [(label, asyncio.ensure_future(one(path, label))) for path, label in paths]
    missing = 0
    try:
        for label, task in tasks:
            exc = await task
            if exc is None:
                print(f"{label} deleted{_DRY if dry else ''}")
            else:
                print(f"fedctl: {exc}", file=sys.stderr)
                missing += 1
    finally:
        for _, task in tasks:
            task.cancel()
        await asyncio.gather(*(task for _, task in tasks), return_exceptions=True)
    return 1 if missing else 0


async def _delete_at(api: Any, path: str, what: str, *, dry: bool = False) -> None:
    """DELETE `path` (`dry`: Kubernetes' dryRun=All, nothing deleted); a missing object is
    reported as `what`, never by its registry key."""
    from federation.cli import client

    try:
        await api.request("DELETE", path, params={"dryRun": "All"} if dry else None)
    except client.ApiError as exc:
        if exc.code != 404:
            raise
        raise errors.NotFound(what) from exc
