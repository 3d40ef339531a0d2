"""`fedctl cluster join|unjoin|list|describe|taint|cordon|uncordon`: members, by the API.

`join` (`cluster_join`) connects to the member first (kubeconfig, readiness) and refuses
one it cannot reach, saying why, unless `--no-verify`: a cluster registered with a typo
in its context would otherwise sit NotReady with nobody knowing it never worked.
`--no-verify` skips only that: the API still refuses a connection another Cluster uses,
and the monitor keeps a second name of a joined member from being used
(`status.duplicateOf`). Cordon is a fedctl taint
(`cluster.fedctl.io/cordoned:NoSchedule`), so the scheduler, failover and the dashboard
see it like any other taint.

`label`, `taint`, `cordon` and `uncordon` take several names, `-l`, `--field-selector` or
`--all`, as kubectl's do, and change the clusters chosen several at a time, one line each
(`choosing`).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from federation import errors
from federation.cli import choosing

__all__ = ["CORDON_KEY", "describe", "parse_labels", "parse_taint", "register"]

CORDON_KEY = "cluster.fedctl.io/cordoned"
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _server(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        default=os.environ.get("FEDCTL_SERVER", "http://127.0.0.1:8080"),
        help="controller API URL (env FEDCTL_SERVER)",
    )
    parser.add_argument("--token", default=None, help="bearer token (env FEDCTL_TOKEN)")


def register(sub: Any) -> None:
    cluster = sub.add_parser(
        "cluster", help="join, inspect, label, taint and cordon member clusters"
    )
    verbs = cluster.add_subparsers(dest="verb", metavar="VERB", required=True)

    join = verbs.add_parser(
        "join",
        help="register a member (connects to it first); on a joined one, change what the"
        " flags give and keep the rest",
    )
    join.add_argument("name", nargs="?", help="cluster name (or give -f)")
    join.add_argument("-f", "--filename", action="append", help="Cluster objects to join")
    join.add_argument("--kubeconfig", help="kubeconfig file of the member")
    join.add_argument("--context", help="kubeconfig context (default: the current one)")
    join.add_argument("--inline", action="store_true", help="store the kubeconfig in the registry")
    join.add_argument("--region", help="region, e.g. eu-west")
    join.add_argument("--zone")
    join.add_argument("--provider")
    join.add_argument("--label", action="append", default=[], metavar="K=V")
    join.add_argument("--taint", action="append", default=[], metavar="K[=V]:EFFECT")
    join.add_argument("--price", action="append", default=[], metavar="RESOURCE=PER_HOUR",
                      help="cpu=0.04, memory=0.005, nvidia-a100-80gb=3.1 (on-demand)")  # fmt: skip
    join.add_argument("--spot-price", action="append", default=[], metavar="RESOURCE=PER_HOUR",
                      help="as --price, for spot capacity (needs on-demand prices)")  # fmt: skip
    join.add_argument("--currency", help="ISO 4217 code of the prices, e.g. EUR (default USD)")
    join.add_argument(
        "--no-verify",
        action="store_true",
        help="do not connect first (a connection another Cluster uses is still refused)",
    )
    _server(join)
    join.set_defaults(func=_join)

    verbs_help = (
        ("unjoin", "remove a member from the federation"),
        ("describe", "conditions, node flavors, APIs, taints, prices"),
    )
    for verb, helptext in verbs_help:
        p = verbs.add_parser(verb, help=helptext)
        p.add_argument("name")
        _server(p)
        p.set_defaults(func=_unjoin if verb == "unjoin" else describe)
        if verb == "unjoin":
            p.add_argument(
                "--now",
                action="store_true",
                help="remove it at once, without moving its workloads away first (for a"
                " member that is gone: what fedctl placed there keeps running on it)",
            )
            p.add_argument(
                "--timeout",
                type=float,
                default=300.0,
                help="seconds to wait for its workloads to move away, 0 or more (default 300)",
            )

    listing = verbs.add_parser(
        "list", help="members with provider, chips, readiness, capacity, pod slots, price/h"
    )
    choosing.options(listing, "list", required=False)
    _server(listing)
    listing.set_defaults(func=_list)

    taint = verbs.add_parser(
        "taint",
        help="add K[=V]:EFFECT or remove K- (or K:EFFECT-) on the clusters named or chosen",
        usage="fedctl cluster taint (NAME... | -l SEL | --field-selector SEL | --all)"
        " K[=V]:EFFECT|K-...",
    )
    taint.add_argument("words", nargs="+", metavar="NAME... K[=V]:EFFECT|K-")
    choosing.options(taint, "taint")
    _server(taint)
    taint.set_defaults(func=_taint)

    label = verbs.add_parser(
        "label",
        help="set K=V or remove K- on the clusters named or chosen (services whose affinity"
        " they enter or leave follow)",
        usage="fedctl cluster label (NAME... | -l SEL | --field-selector SEL | --all)"
        " K=V|K-... [--overwrite]",
    )
    label.add_argument("words", nargs="+", metavar="NAME... K=V|K-")
    label.add_argument(
        "--overwrite", action="store_true", help="let K=V replace a value K already has"
    )
    choosing.options(label, "label")
    _server(label)
    label.set_defaults(func=_label)

    for verb in ("cordon", "uncordon"):
        what = (
            "no new placements (NoSchedule)"
            if verb == "cordon"
            else "lift the cordon: new placements again"
        )
        p = verbs.add_parser(verb, help=f"{verb} members: {what}")
        p.add_argument("names", nargs="*", metavar="NAME")
        choosing.options(p, verb)
        _server(p)
        p.set_defaults(func=_cordon if verb == "cordon" else _uncordon)


def parse_taint(text: str) -> dict[str, str]:
    """`key[=value]:Effect` → a taint dict; raises Invalid naming the bad part."""
    body, sep, effect = text.rpartition(":")
    if not sep or effect not in _EFFECTS:
        raise errors.Invalid(f"taint {text!r}: expected KEY[=VALUE]:EFFECT with EFFECT one of "
                             f"{', '.join(_EFFECTS)}")  # fmt: skip
    key, _, value = body.partition("=")
    if not key:
        raise errors.Invalid(f"taint {text!r}: the key is empty")
    from policies.models import rules

    problems = rules.key_value_problems("taint", key, value)
    if problems:
        raise errors.Invalid(f"taint {text!r}: {'; '.join(str(p) for p in problems)}")
    return {"key": key, "value": value, "effect": effect}


def _client(args: argparse.Namespace) -> Any:
    from federation.cli import client

    return client.ApiClient(args.server, token=args.token)


async def _join(args: argparse.Namespace) -> int:
    from federation.cli import cluster_join

    async with _client(args) as api:
        return await cluster_join.join(args, api)


UNJOIN_KEY = "cluster.fedctl.io/unjoining"  # UNJOINING_TAINT; models load only when used


async def _unjoin(args: argparse.Namespace) -> int:
    """Drain, then remove: a NoExecute taint makes failover move every workload away and
    take its copy off the member; once nothing is placed there and no Work is left for
    it, the Cluster is deleted.

    Why not delete at once: the member's credentials go with the Cluster, so nothing could
    take fedctl's copies off it afterwards. They kept running there while the scheduler
    placed the same workloads elsewhere: 15 pods for 12 replicas.

    A timeout that is not 0 or more is refused before the taint: accepted, it started
    the drain and gave up at once, leaving the cluster tainted."""
    if not args.timeout >= 0:  # NaN too
        raise errors.Invalid(
            f"--timeout {args.timeout:g}: expected seconds to wait, 0 or more; nothing done"
        )
    if not args.now:
        await _edit_taints(args, [{"key": UNJOIN_KEY, "value": "", "effect": "NoExecute"}], set())
        async with _client(args) as api:
            await _drained(api, args.name, timeout=args.timeout)
    async with _client(args) as api:
        await api.request("DELETE", f"clusters/{args.name}")
    print(f"cluster {args.name} unjoined")
    return 0


async def _drained(api: Any, name: str, *, timeout: float) -> None:
    """Wait until no Binding targets `name` and no Work is left for it, saying what is left
    as it changes; raise when `timeout` passes first."""
    from federation import clock

    deadline = clock.real.monotonic() + timeout
    said = ""
    while True:
        bindings = (await api.request("GET", "bindings"))["items"]
        works = (await api.request("GET", "works"))["items"]
        placed = sorted(
            f"{b['metadata'].get('namespace') or '-'}/{b['metadata']['name']}"
            for b in bindings
            if any(t.get("name") == name for t in b.get("spec", {}).get("clusters", []))
        )
        left = [w for w in works if w.get("spec", {}).get("cluster") == name]
        if not placed and not left:
            return
        now = f"draining {name}: {len(placed)} workload(s) placed there, {len(left)} Work(s)"
        now += "".join(f"\n  {why}" for why in _stranded(bindings, name))
        if now != said:
            print(now, file=sys.stderr)
            said = now
        if clock.real.monotonic() >= deadline:
            why = _holding(bindings, left, name, statuses=await _statuses(api))
            shown = "; ".join(why[:5]) + (f"; and {len(why) - 5} more" if len(why) > 5 else "")
            raise errors.Invalid(
                f"cluster {name} still holds {_held(len(placed), len(left))} after"
                f" {timeout:g}s: {shown}. It stays tainted {UNJOIN_KEY}:NoExecute; run"
                f" `fedctl cluster unjoin {name} --now` to remove it anyway, leaving them"
                " running there"
            )
        await clock.real.sleep(1.0)


def _held(placed: int, works: int) -> str:
    """What the timeout names as left. "0 workload(s)" beside workloads listed as still
    running there read as a contradiction: a leaving copy keeps its Work, while its
    workload is no longer placed there."""
    if not placed:
        return f"{works} Work(s), copies of workloads no longer placed there not yet gone"
    return f"{placed} workload(s) still placed there and {works} Work(s)"


async def _statuses(api: Any) -> dict[str, dict[str, Any]]:
    """Workload statuses by `_named` key: which workloads need a dependency (`requiredBy`).
    Empty where the token may not read them: the reasons are then less precise."""
    from federation.cli import client, workloads_view

    try:
        items = (await api.request("GET", f"{workloads_view.PREFIX}/workloads"))["items"]
    except client.ApiError:
        return {}
    return {
        _named({**item, "kind": str(item.get("kind", "")).split(".")[0]}): item.get("status") or {}
        for item in items
    }


def _bare(ref: str) -> str:
    """`ns/Deployment.apps/web` (a status's form) as `_named` writes it: `ns/Deployment/web`."""
    namespace, _, rest = ref.partition("/")
    kind, _, name = rest.partition("/")
    return f"{namespace}/{kind.split('.')[0]}/{name}"


def _named(workload: dict[str, Any]) -> str:
    namespace = workload.get("namespace") or "-"
    return f"{namespace}/{workload.get('kind', '?')}/{workload.get('name', '?')}"


def _nowhere(binding: dict[str, Any], name: str) -> str | None:
    """Why a workload evicted from `name` holds it for good, if it does: the scheduler
    found nowhere else for it, so its copy there is its last and failover keeps it past
    the graceful timeout (`EvictionTask.nowhere_since`). Waiting longer frees nothing."""
    spec = binding.get("spec", {})
    tasks = spec.get("evictionTasks", [])
    if not any(t.get("cluster") == name and t.get("nowhereSince") for t in tasks):
        return None
    reason = (binding.get("status") or {}).get("reason") or "no member takes it"
    return (
        f"{_named(spec.get('workload', {}))} has nowhere else to go ({reason}): its copy"
        " there, the last, keeps running until it can be placed elsewhere; make room for"
        " it, widen its placement, or delete it"
    )


def _stranded(bindings: list[Any], name: str) -> list[str]:
    """`_nowhere` for every Binding that has it: said while the unjoin waits."""
    return [found for b in bindings if (found := _nowhere(b, name)) is not None]


def _holding(
    bindings: list[Any],
    works: list[Any],
    name: str,
    *,
    statuses: dict[str, dict[str, Any]] | None = None,
) -> list[str]:
    """What keeps a draining cluster from being left, each with why: the timeout said only
    "they may tolerate NoExecute taints, or the member may be unreachable" and named
    Namespaces waiting for copies, while graceful evictions were what held it. A
    dependency (propagateDeps) has no Binding: it stays on purpose while a copy of a
    workload needing it is there, which `statuses` (`requiredBy`) tells."""

    out: list[str] = []
    seen: set[str] = set()
    for binding in bindings:
        spec = binding.get("spec", {})
        workload = spec.get("workload", {})
        key = _named(workload)
        leaving = [t for t in spec.get("evictionTasks", []) if t.get("cluster") == name]
        stuck = _nowhere(binding, name)
        if stuck:
            out.append(stuck)
            seen.add(key)
        elif leaving:
            task = leaving[0]
            how = task.get("purgeMode", "Gracefully")
            out.append(
                f"{key} leaving ({how}): its copy there stays until its new placement is"
                " ready, or the graceful eviction times out"
            )
            seen.add(key)
        elif any(t.get("name") == name for t in spec.get("clusters", [])):
            if workload.get("kind") == "Namespace":
                why = "a Namespace, kept there while copies of its workloads remain"
            else:
                why = "still placed there: it tolerates the NoExecute taint, or is not moved yet"
            out.append(f"{key} {why}")
            seen.add(key)
    for work in works:
        workload = work.get("spec", {}).get("workload", {})
        key = _named(workload)
        if key not in seen:
            seen.add(key)
            needers = ((statuses or {}).get(key) or {}).get("requiredBy") or []
            here = {_named(w.get("spec", {}).get("workload", {})) for w in works}
            needers = [n for n in needers if _bare(n) in here] or needers
            if not needers:
                why = "its copy is not removed yet (the member may be unreachable)"
            elif work.get("spec", {}).get("suspendDispatching"):
                why = (
                    f"a dependency of {', '.join(needers)}, kept while dispatching there is"
                    " suspended for it"
                )
            else:
                whose = f"{needers[0]}'s copy is" if len(needers) == 1 else "their copies are"
                why = f"a dependency of {', '.join(needers)}, kept while {whose} there"
            out.append(f"{key}: {why}")
    return out


async def _fetch(args: argparse.Namespace, api: Any, name: str) -> tuple[Any, Any]:
    from policies.models.cluster import Cluster, ClusterStatus
    from policies.models.rules import STORED

    doc = await api.request("GET", f"clusters/{name}")
    status = doc.pop("status", None)
    cluster = Cluster.model_validate(doc, context=STORED)
    return cluster, (ClusterStatus.model_validate(status) if status else None)


async def _list(args: argparse.Namespace) -> int:
    from federation.cli import render
    from federation.monitor import summary
    from policies.models.cluster import Cluster, ClusterStatus
    from policies.models.rules import STORED

    async with _client(args) as api:
        listed = await api.request("GET", "clusters", params=choosing.query(args))
    rows = []
    for doc in sorted(listed["items"], key=lambda d: str(d["metadata"]["name"])):
        raw = doc.pop("status", None)
        cluster = Cluster.model_validate(doc, context=STORED)
        status = ClusterStatus.model_validate(raw) if raw else None
        line = summary.row(cluster, status)
        # PROVIDER after REGION, PODS after MEMORY: a multi-cloud fleet is read by
        # provider, and a member full by pod count looked a third empty by CPU.
        cells = list(summary.cells(line))
        pods = render.pods(status)
        rows.append([*cells[:2], cluster.spec.provider or "-", *cells[2:6], pods, *cells[6:]])
    if not rows:
        if args.selector or args.field_selector:
            print("No clusters found.", file=sys.stderr)
        else:
            print("No clusters joined. Try: fedctl cluster join NAME --kubeconfig FILE"
                  " --region R", file=sys.stderr)  # fmt: skip
        return 0
    header = summary.HEADER
    print(render.table([*header[:2], "PROVIDER", *header[2:6], "PODS", *header[6:]], rows))
    return 0


async def describe(args: argparse.Namespace) -> int:
    """`fedctl cluster describe NAME`, and `fedctl describe cluster NAME` alike."""
    from federation.cli import client, workloads_view
    from federation.monitor import summary

    async with _client(args) as api:
        cluster, status = await _fetch(args, api, args.name)
        try:
            path = f"{workloads_view.PREFIX}/workloads"
            placed: str | None = workloads_view.on_cluster(
                (await api.request("GET", path))["items"], args.name
            )
        except client.ApiError:
            placed = None  # a token that may not read workloads: the cluster alone
    print(_with_pods(summary.describe(cluster, status), status))
    if placed is not None:
        print(placed)
    return 0


def _with_pods(text: str, status: Any) -> str:
    """The description with the member's pod slots after its node flavors: the scheduler
    stops at them as at cpu, and a member full by pod count read a third empty."""
    from federation.cli import render

    slots = render.pods(status)
    if slots == "-":
        return text
    free, _, total = slots.partition("/")
    line = f"Pod slots:   {free} free of {total} (the nodes' allocatable pods)"
    lines = text.split("\n")
    at = next((i for i, x in enumerate(lines) if x.startswith("APIs:")), len(lines))
    return "\n".join([*lines[:at], line, *lines[at:]])


async def _edit_taints(args: argparse.Namespace, add: list[dict[str, str]], drop: set[str]) -> None:
    async with _client(args) as api:
        await _retaint(api, args.name, add, drop)


async def _retaint(
    api: Any, name: str, add: list[dict[str, str]], drop: set[str], *, absent_ok: bool = True
) -> None:
    """Add `add` (replacing a taint of the same key and effect) and remove the `drop` ids
    (`key:Effect`, or a bare key for every effect) on one cluster; without `absent_ok`, a
    `drop` it does not have is NotFound, as `kubectl taint K-` says."""
    doc = await api.request("GET", f"clusters/{name}")
    doc.pop("status", None)
    spec = doc.setdefault("spec", {})
    existing = spec.get("taints", [])
    for key in sorted(drop):
        if not absent_ok and not any(key in (t["key"], _taint_id(t)) for t in existing):
            raise errors.NotFound(f"taint {key!r} on cluster {name}")
    taints = [t for t in existing if not drop & {t["key"], _taint_id(t)}]
    for new in add:
        taints = [t for t in taints if (t["key"], t["effect"]) != (new["key"], new["effect"])]
        taints.append(new)
    spec["taints"] = taints
    await api.request("PUT", f"clusters/{name}", body=doc)


def _taint_id(taint: dict[str, str]) -> str:
    return f"{taint['key']}:{taint['effect']}"


async def _taint(args: argparse.Namespace) -> int:
    names, texts = choosing.split(args.words, change=lambda w: ":" in w or w.endswith("-"))
    if not texts:
        raise errors.Invalid("expected K[=V]:EFFECT to add or K- to remove after the clusters")
    add = [parse_taint(text) for text in texts if not text.endswith("-")]
    drop = {text[:-1] for text in texts if text.endswith("-")}
    said = "tainted" if add else "untainted"  # as kubectl says

    async def change(api: Any, name: str) -> str:
        await _retaint(api, name, add, drop, absent_ok=False)
        return f"cluster {name} {said}"

    async with _client(args) as api:
        return await choosing.each(api, args, names, change)


def parse_labels(texts: list[str]) -> tuple[dict[str, str], set[str]]:
    """`K=V` to set and `K-` to remove, as kubectl label takes them; raises Invalid naming
    the bad argument, and a label Kubernetes refuses, before anything is written. A key to
    remove is not judged: a label stored before the rule was checked can still go."""
    from policies.models import rules

    put: dict[str, str] = {}
    drop: set[str] = set()
    for text in texts:
        if text.endswith("-") and "=" not in text:
            drop.add(text[:-1])
            continue
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise errors.Invalid(f"label {text!r}: expected KEY=VALUE to set or KEY- to remove")
        problems = rules.label_problems({key: value})
        if problems:
            raise errors.Invalid(f"label {text!r}: {'; '.join(str(p) for p in problems)}")
        put[key] = value
    both = sorted(put.keys() & drop)
    if both:
        raise errors.Invalid(f"label {both[0]!r} is both set and removed")
    return put, drop


async def _label(args: argparse.Namespace) -> int:
    names, texts = choosing.split(args.words, change=lambda w: "=" in w or w.endswith("-"))
    if not texts:
        raise errors.Invalid("expected KEY=VALUE to set or KEY- to remove after the clusters")
    put, drop = parse_labels(texts)

    async def change(api: Any, name: str) -> str:
        doc = await api.request("GET", f"clusters/{name}")
        doc.pop("status", None)
        labels: dict[str, str] = doc.setdefault("metadata", {}).setdefault("labels", {}) or {}
        for key, value in put.items():
            if key in labels and labels[key] != value and not args.overwrite:
                raise errors.Invalid(
                    f"cluster {name}: label {key!r} already has a value ({labels[key]}),"
                    " and --overwrite is not given"
                )
        for key in sorted(drop - labels.keys()):
            print(f"label {key!r} not found on cluster {name}", file=sys.stderr)
        changed = {**{k: v for k, v in labels.items() if k not in drop}, **put}
        if changed == labels:
            return f"cluster {name} not labeled (no change)"
        doc["metadata"]["labels"] = changed
        await api.request("PUT", f"clusters/{name}", body=doc)
        return f"cluster {name} labeled"

    async with _client(args) as api:
        return await choosing.each(api, args, names, change)


async def _cordon(args: argparse.Namespace) -> int:
    cordon = {"key": CORDON_KEY, "value": "", "effect": "NoSchedule"}

    async def change(api: Any, name: str) -> str:
        await _retaint(api, name, [cordon], set())
        return f"cluster {name} cordoned"

    async with _client(args) as api:
        return await choosing.each(api, args, args.names, change)


async def _uncordon(args: argparse.Namespace) -> int:
    async def change(api: Any, name: str) -> str:
        await _retaint(api, name, [], {f"{CORDON_KEY}:NoSchedule"})
        return f"cluster {name} uncordoned"

    async with _client(args) as api:
        return await choosing.each(api, args, args.names, change)
