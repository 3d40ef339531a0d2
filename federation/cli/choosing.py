"""Which clusters a `fedctl cluster` change is for, as kubectl chooses objects: names, a
label selector (`-l`), a field selector (`--field-selector`, for where a member is:
`spec.region`, `spec.zone`, `spec.provider`) or `--all`; and the change made on each,
several at a time, with one line per cluster.

Fed by `cluster_cmd`'s `label`, `taint`, `cordon` and `uncordon` (and `list`, which takes
the selectors); feeds the API's cluster list and each cluster's read and write. Why: a
fleet of 150 was relabelled one process and one round trip after another (5 s a cluster),
and region or provider could not be chosen on at all, being spec fields, not labels.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from federation import errors

__all__ = ["AT_ONCE", "each", "field_selector", "options", "query", "split"]

AT_ONCE = 16
"""Clusters changed at a time by one `label`/`taint`/`cordon`: each is a read and a write,
and the API's per-client rate (200/s by default) takes 16 in flight without a 429."""


def field_selector(parser: argparse.ArgumentParser) -> None:
    """`--field-selector`, as kubectl's: for clusters, where they are."""
    parser.add_argument(
        "--field-selector",
        metavar="SELECTOR",
        help="only clusters whose fields match: spec.region, spec.zone, spec.provider,"
        " metadata.name, with =, == or != (spec.region=eu-west,spec.provider!=aws)",
    )


def options(parser: argparse.ArgumentParser, verb: str, *, required: bool = True) -> None:
    """`-l`, `--field-selector` and `--all`, as kubectl's; `required`: names or one of
    them must be given."""
    parser.add_argument(
        "-l",
        "--selector",
        help=f"{verb} the clusters whose labels match (kubectl's syntax: tier=gpu,"
        " 'team in (a,b)', !legacy); region, zone and provider are fields, not labels:"
        " --field-selector",
    )
    field_selector(parser)
    if required:
        parser.add_argument("--all", action="store_true", help=f"{verb} every joined cluster")


def query(args: argparse.Namespace) -> dict[str, str]:
    """`-l` and `--field-selector` as the list's query: the API chooses, as Kubernetes'."""
    query = {"labelSelector": args.selector} if args.selector else {}
    field = getattr(args, "field_selector", None)
    return query | ({"fieldSelector": field} if field else {})


async def _chosen(api: Any, args: argparse.Namespace, names: list[str]) -> list[str]:
    """The clusters a change is for: the names given, or those `-l` or `--all` choose (one
    way only, as kubectl takes it). A selector that chooses none is an error: a script
    that relabels by selector should hear that it changed nothing."""
    ways = [bool(names), bool(args.selector or args.field_selector), bool(args.all)]
    if sum(ways) != 1:
        raise errors.Invalid(
            "give cluster NAMEs, -l/--field-selector SELECTOR or --all (one of them)"
            if not any(ways)
            else "give cluster NAMEs, -l/--field-selector SELECTOR or --all, not more than"
            " one of them"
        )
    if names:
        return list(dict.fromkeys(names))
    listed = await api.request("GET", "clusters", params=query(args))
    found = sorted(str(i["metadata"]["name"]) for i in listed["items"])
    if not found:
        given = " ".join(
            f"{flag} {value!r}"
            for flag, value in (("-l", args.selector), ("--field-selector", args.field_selector))
            if value
        )
        raise errors.NotFound(f"no cluster matches {given}" if given else "no cluster joined")
    return found


def split(words: list[str], *, change: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """NAME... then changes, as kubectl reads `label`/`taint` arguments: names up to the
    first word that is a change (a cluster name has no `=` or `:` and does not end in `-`),
    every word from there on a change."""
    at = next((i for i, word in enumerate(words) if change(word)), len(words))
    return words[:at], words[at:]


async def each(
    api: Any,
    args: argparse.Namespace,
    names: list[str],
    change: Callable[[Any, str], Awaitable[str]],
) -> int:
    """`change` on every cluster chosen, `AT_ONCE` at a time, then one line each in the
    order chosen: what was done, or `fedctl: why not` on stderr (the others still done, as
    kubectl goes on past one object's error). Exit status 1 when any failed."""
    chosen = await _chosen(api, args, names)
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(name: str) -> str | errors.FedctlError:
        async with gate:
            try:
                return await change(api, name)
            except errors.FedctlError as exc:
                return exc

    said = await asyncio.gather(*(one(name) for name in chosen))
    for line in said:
        if isinstance(line, errors.FedctlError):
            print(f"fedctl: {line}", file=sys.stderr)
        else:
            print(line)
    return 1 if any(isinstance(line, errors.FedctlError) for line in said) else 0
