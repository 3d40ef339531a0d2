"""`fedctl cluster join`: register a member, or change what the flags give of a joined one.

Fed by the command line (flags, or `-f` Cluster files) and the API (the stored Cluster,
the statuses' cluster ids); feeds the API's `apply` (a new Cluster, or `-f`) and `PUT`
(a joined one). `cluster_cmd` registers the verb.

Why a join of a joined name merges: it built a whole spec from the flags and replaced
the stored one, so re-running `cluster join NAME --label owner=platform` dropped the
cordon, the unjoining drain taint, `cluster taint`'s taints, the prices (spot too), the
zone, provider, chips, labels and evictionGraceSeconds, and said only "updated". Now a
flag sets its field (a label, a taint by key and effect, a price by resource) and every
other field stays as stored; the output names each change. Removing is never a join's
doing: `cluster taint K-`, `cluster label K-`, or `fedctl apply` of the Cluster YAML.
`-f` applies whole Cluster objects, as `fedctl apply` does.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import os
import sys
from decimal import Decimal
from typing import Any

from federation import errors

__all__ = ["join", "merge_flags", "parse_price"]

_BASE = ("cpu", "memory")
"""The resources a price names directly; every other name is a chip model."""


def parse_price(text: str) -> tuple[str, str]:
    """`RESOURCE=PER_HOUR` → (resource, price); raises Invalid naming the bad part.

    Why as a Cluster's YAML price is judged: `cpu=1e400` (or `nan`) was stored, and every
    view then printed a cost of 400 digits. A name close to `cpu` or `memory` is refused
    too: every other name is taken for a chip model, so `cpus=0.05` priced a chip no
    cluster has and left the cores at their old price."""
    from policies.models.cluster import MAX_PRICE, price_problem

    name, sep, value = text.partition("=")
    try:
        price = Decimal(value)
        if not sep or not name or not price.is_finite():
            raise ValueError(value)
    except (ValueError, ArithmeticError) as exc:
        raise errors.Invalid(
            f"price {text!r}: expected RESOURCE=PER_HOUR with a non-negative number"
        ) from exc
    if not 0 <= price <= MAX_PRICE:
        raise errors.Invalid(f"price {text!r}: {price_problem(price)}")
    close = difflib.get_close_matches(name, _BASE, n=1, cutoff=0.6)
    if name not in _BASE and close:
        raise errors.Invalid(
            f"price {text!r}: did you mean {close[0]}? (cpu and memory are priced by those"
            " names; any other name is a chip model)"
        )
    return name, value


def _connection(args: argparse.Namespace, stored: dict[str, Any] | None) -> dict[str, Any]:
    """The connection the flags give: a new one with --kubeconfig, else the stored one
    with --context applied."""
    if not args.kubeconfig:
        if stored is None:
            raise errors.Invalid("cluster join NAME needs --kubeconfig FILE")
        if args.context and "kubeconfig" in stored:
            raise errors.Invalid(
                "--context: this Cluster's kubeconfig is stored inline, and not shown: give"
                " --kubeconfig FILE --inline with the context"
            )
        return {**stored, **({"context": args.context} if args.context else {})}
    path = os.path.abspath(os.path.expanduser(args.kubeconfig))
    connection: dict[str, Any] = {"context": args.context} if args.context else {}
    if args.inline:
        with open(path, encoding="utf-8") as handle:
            connection["kubeconfig"] = handle.read()
    else:
        connection["kubeconfigPath"] = path
    return connection


def _prices(args: argparse.Namespace, stored: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored prices with each `--price` (on-demand), `--spot-price` and `--currency`
    set over them; None when neither had nor gives any."""
    if not (args.price or args.spot_price or args.currency):
        return stored
    prices = copy.deepcopy(stored) if stored else {}
    for texts, table in ((args.price, "onDemand"), (args.spot_price, "spot")):
        for name, value in (parse_price(p) for p in texts):
            entry = prices.setdefault(table, {})
            if name in _BASE:
                entry[name] = value
            else:
                entry.setdefault("accelerators", {})[name] = value
    if "onDemand" not in prices:
        raise errors.Invalid(
            "--spot-price and --currency need on-demand prices too: give --price RESOURCE=PER_HOUR"
        )
    if args.currency:
        prices["currency"] = args.currency
    return prices


def _parsed(args: argparse.Namespace) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The labels and taints the flags give; raises Invalid naming a bad one (also a bad
    price), before anything is asked of the API."""
    from federation.cli import cluster_cmd

    labels: dict[str, str] = {}
    for text in args.label:
        if "=" not in text:  # as `cluster label` reads them, a removal aside
            raise errors.Invalid(f"--label {text!r}: expected KEY=VALUE")
        labels.update(cluster_cmd.parse_labels([text])[0])
    for text in (*args.price, *args.spot_price):
        parse_price(text)
    return labels, [cluster_cmd.parse_taint(t) for t in args.taint]


def merge_flags(
    args: argparse.Namespace, stored: dict[str, Any] | None
) -> tuple[dict[str, Any], list[str]]:
    """The Cluster document the flags make of `stored` (a wire document; None: a new
    Cluster), and what they change in it, one phrase each (none for a new Cluster)."""
    doc: dict[str, Any] = {"metadata": {"name": args.name}, "spec": {}}
    if stored is not None:
        doc = copy.deepcopy(stored)
        doc.pop("status", None)
    doc["apiVersion"], doc["kind"] = "fedctl.io/v1alpha1", "Cluster"
    spec, meta = doc.setdefault("spec", {}), doc.setdefault("metadata", {})
    before = copy.deepcopy(doc)
    if args.region:
        spec["region"] = args.region
    if not spec.get("region"):
        raise errors.Invalid("cluster join NAME needs --region (or give -f FILE)")
    spec["connection"] = _connection(args, spec.get("connection"))
    for field in ("zone", "provider"):
        if getattr(args, field):
            spec[field] = getattr(args, field)
    labels, added = _parsed(args)
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    taints = list(spec.get("taints") or [])
    for new in added:
        taints = [t for t in taints if (t["key"], t["effect"]) != (new["key"], new["effect"])]
        taints.append(new)
    spec["taints"] = taints
    prices = _prices(args, spec.get("prices"))
    if prices is not None:
        spec["prices"] = prices
    return doc, ([] if stored is None else _changes(before, doc))


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What a join changed, one phrase per field, values shown (the connection's, which
    may be a secret, only named)."""
    old, new = before["spec"], after["spec"]
    out = [
        f"{field} {old.get(field) or '-'} -> {new[field]}"
        for field in ("region", "zone", "provider")
        if new.get(field) != old.get(field)
    ]
    if old.get("connection") != new.get("connection"):
        out.append("connection")
    was = before["metadata"].get("labels") or {}
    out += [
        f"label {k}={v}" for k, v in sorted(after["metadata"]["labels"].items()) if was.get(k) != v
    ]
    had = old.get("taints") or []
    for taint in new.get("taints") or []:
        if taint not in had:
            value = f"={taint['value']}" if taint.get("value") else ""
            out.append(f"taint {taint['key']}{value}:{taint['effect']}")
    if old.get("prices") != new.get("prices"):
        out.append("prices")
    return out


def _models(args: argparse.Namespace, stored: dict[str, Any] | None) -> tuple[list[Any], list[str]]:
    """The Clusters to join (from -f, or from the flags over `stored`) and, for a joined
    NAME, what the flags change."""
    from policies import loading
    from policies.models.cluster import Cluster

    if args.filename:
        result = loading.load_paths(args.filename)
        for finding in result.findings:
            print(str(finding), file=sys.stderr)
        if result.errors:
            raise errors.Invalid(f"{len(result.errors)} error(s) in the input; nothing joined")
        found = [o.model for o in result.objects if isinstance(o.model, Cluster)]
        if len(found) != len(result.objects):
            raise errors.Invalid("cluster join -f takes only Cluster objects")
        return found, []
    doc, changes = merge_flags(args, stored)
    checked = loading.validate_document(doc, filename="<flags>")
    if checked.model is None:
        raise errors.Invalid("; ".join(str(f) for f in checked.findings))
    # The warnings `apply` and `validate` give for the same Cluster (a price for a chip it
    # does not list, a base price left out): a join said nothing of them.
    for finding in checked.findings:
        print(f"Warning: cluster {args.name}: {finding.path}: {finding.message}", file=sys.stderr)
    return [checked.model], changes


async def _verify(cluster: Any, joined: dict[str, str]) -> None:
    """Reach the member, and refuse it when it is a Kubernetes cluster already joined
    under another name, or when `name` is joined and reaches another cluster (`joined`:
    cluster id → name, from the monitor's statuses).

    Why: two Clusters reaching one member (another context, a copied kubeconfig) each
    get their share and apply it under the same object names, so each overwrote the
    other's replicas. Karmada refuses the same cluster ID twice for the same reason.
    Credentials the member rejects are refused too: /readyz and /version answer anyone,
    so such a member looked reachable, and joined, while nothing could be read or
    applied there (and its id, unread, could not be compared)."""
    from clusters import member as member_api
    from clusters.kube import connector
    from federation.monitor import member

    name = cluster.metadata.name
    conn = await connector.connect(name, cluster.spec.connection)
    try:
        probe = await conn.ready(timeout=10)
        if not probe.ok:
            raise errors.Invalid(
                f"cluster {name} is not reachable: {probe.message} "
                "(fix the kubeconfig or context, or join with --no-verify)"
            )
        version = await conn.version()
        try:
            await conn.discover()
        except member_api.MemberError as exc:
            refused = member.rejected(exc)
            if refused is None:
                raise
            raise errors.Invalid(
                f"cluster {name}: {refused}: fix the credentials, or join with --no-verify"
            ) from exc
        found = await member.cluster_id(conn)
    finally:
        await conn.close()
    other = joined.get(found or "")
    if other is not None and other != name:
        raise errors.Invalid(
            f"cluster {name} is the Kubernetes cluster already joined as {other} (kube-system"
            f" uid {found}): joined twice, each name would apply its share of every workload"
            f" over the other's. Use {other}, or unjoin it first"
        )
    was = next((uid for uid, known in joined.items() if known == name), None)
    if found and was is not None and was != found:
        raise errors.Invalid(
            f"cluster {name} is joined and reaches another Kubernetes cluster (kube-system uid"
            f" {was}; this kubeconfig reaches {found}): pointed elsewhere, every copy on the"
            f" first would be left running there, out of fedctl's sight. Unjoin {name} first,"
            " or join this one under another name"
        )
    print(f"cluster {name}: reachable, Kubernetes {version}")


def _unreadable(model: Any, stored: dict[str, Any] | None) -> bool:
    """Whether `model` keeps the stored inline kubeconfig, which the API shows redacted:
    nothing here can connect with it (the monitor follows it as before)."""
    from federation import secrets

    kept = stored is not None and model.spec.connection.kubeconfig == secrets.REDACTED
    return bool(kept)


async def join(args: argparse.Namespace, api: Any) -> int:
    """`fedctl cluster join`, through `api` (a `client.ApiClient` in use)."""
    if not args.filename and not args.name:
        raise errors.Invalid("cluster join needs NAME or -f FILE")
    stored = None
    if not args.filename:
        _parsed(args)
        stored = await api.request("GET", f"clusters/{args.name}", allow_missing=True)
    models, changes = _models(args, stored)
    if not args.no_verify:
        listed = (await api.request("GET", "clusters"))["items"]
        joined = {
            str(doc["status"]["clusterId"]): doc["metadata"]["name"]
            for doc in listed
            if (doc.get("status") or {}).get("clusterId")
        }
        for model in models:
            if _unreadable(model, stored):
                print(f"cluster {model.metadata.name}: connection unchanged (inline), not verified")
                continue
            await _verify(model, joined)
    if stored is not None:
        (model,) = models
        body = model.to_wire()
        body["metadata"]["resourceVersion"] = stored["metadata"].get("resourceVersion")
        await api.request("PUT", f"clusters/{args.name}", body=body)
        said = f"updated: {'; '.join(changes)}" if changes else "unchanged"
        print(f"cluster {args.name} {said}")
        return 0
    answer = await api.request("POST", "apply", body={"items": [m.to_wire() for m in models]})
    for item in answer["results"]:
        verb = {"created": "joined", "configured": "updated", "unchanged": "unchanged"}
        print(f"cluster {item['name']} {verb.get(item['result'], item['result'])}")
    return 0
