"""`fedctl drill run|plan|list|show`: rehearse losing a member and read what happened.

Fed by the command line, the registry (etcd, as `fedctl controller` uses it) and, for
simulated members, `--kubeconfig` (whose fleet state file names the admin URLs); feeds
`federation.failover.faults` (breaking and mending the member, shared with the
controller's drill API), `federation.failover.drills` (sampling and judging) and the
report files.

Why only `down` and `blackhole` may fall back to the drill taint when the member's fault
API cannot be found: they rehearse a dead member, whose untolerated work failover moves
away, which is what the NoExecute taint does. `slow` and `errors` rehearse a degraded
member that stays Ready and keeps its work; a taint in their place would evict the very
work the drill means to show staying, so `run` refuses before it touches anything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from federation import errors
from federation import settings as settings_mod
from federation.cli import registry_cmd
from federation.failover import faults
from federation.registry import keys

__all__ = ["register"]

_FAULTS = faults.FAULTS
_TAINT_LIKE = frozenset({"down", "blackhole", "taint"})
"""Faults whose effect the drill taint reproduces (the member is lost, its work moves)."""


def register(sub: Any) -> None:
    cmd = sub.add_parser("drill", help="failover drills: break a member, measure recovery")
    verbs = cmd.add_subparsers(dest="verb", metavar="VERB", required=True)
    run = verbs.add_parser("run", help="inject a fault, watch recovery, write the report")
    _member(run, "the member to break")
    run.add_argument(
        "--fault",
        choices=_FAULTS,
        default="down",
        help="all but taint need a simulated member's fault API (see --kubeconfig)",
    )
    # 90 s: with the default settings a dead member is NotReady after 30-40 s and its work
    # moves 30 s later, so a 60 s fault often healed just before anything moved.
    run.add_argument(
        "--duration", default="90s", help="how long the fault lasts (default %(default)s)"
    )
    run.add_argument("--settle", default="60s", help="how long to watch after healing")
    run.add_argument("--report", type=Path, help="directory for report.json/.md/.svg")
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="name each workload as it moves, and list them all in the printed report"
        " (above 20 to move the drill prints counts; report.md always lists them)",
    )
    run.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="kubeconfig of a simulated fleet (its .fleet.json names the fault APIs;"
        " env KUBECONFIG)",
    )
    registry_cmd.etcd_option(run)
    run.set_defaults(func=_run)
    plan = verbs.add_parser("plan", help="what would move if the member went, touching nothing")
    _member(plan, "the member whose loss to plan")
    plan.add_argument("--output", "-o", choices=["text", "json"], default="text")
    registry_cmd.etcd_option(plan)
    plan.set_defaults(func=_plan)
    listing = verbs.add_parser("list", help="past drills")
    registry_cmd.etcd_option(listing)
    listing.set_defaults(func=_list)
    show = verbs.add_parser("show", help="one drill's report")
    show.add_argument("id")
    show.add_argument("--output", "-o", choices=["markdown", "json"], default="markdown")
    registry_cmd.etcd_option(show)
    show.set_defaults(func=_show)


def _member(parser: argparse.ArgumentParser, what: str) -> None:
    """The member, given as `--cluster NAME` or as the one argument (`fedctl drill run
    us-east-cpu`, as `kubectl drain NODE` takes its node); one of the two is required."""
    parser.add_argument("member", nargs="?", metavar="CLUSTER", help=f"{what} (or --cluster)")
    parser.add_argument("--cluster", help=what)
    parser.set_defaults(parser=parser)


def _cluster(args: argparse.Namespace) -> None:
    """`args.cluster` set to the member given either way; naming none or two is an error."""
    if args.member and args.cluster and args.member != args.cluster:
        args.parser.error(f"two members named: {args.member} and --cluster {args.cluster}")
    if not (args.member or args.cluster):
        args.parser.error("name the member: CLUSTER or --cluster CLUSTER")
    args.cluster = args.member or args.cluster


async def _run(args: argparse.Namespace) -> int:
    from federation import clock
    from federation.failover import drills

    _cluster(args)
    duration = drills.seconds("--duration", args.duration, minimum=0.001)
    settle = drills.seconds("--settle", args.settle)
    store = await registry_cmd.connect(args)
    try:
        if await store.get(keys.cluster_key(args.cluster)) is None:
            # First: every other word (not simulated, the taint instead, the registry key
            # the taint could not be written to) is about a member that is not there.
            print(f"fedctl drill: no cluster {args.cluster!r}", file=sys.stderr)
            return 1
        missing = _no_fault_api(cluster=args.cluster, fault=args.fault, kubeconfig=args.kubeconfig)
        if missing and args.fault not in _TAINT_LIKE:
            raise errors.Invalid(
                f"--fault {args.fault}: {missing}. A {args.fault} member stays Ready and keeps"
                " its work, and the drill taint would evict it instead, so no drill was"
                " started. Pass the simulated fleet's kubeconfig with --kubeconfig FILE"
                " (`fedctl up` writes <data-dir>/fleet.kubeconfig), or use --fault taint to"
                " rehearse losing the member"
            )
        if await store.get(keys.leader_key()) is None:
            # The leader's lease key is there while a controller leads. Without one, the
            # fault goes in and nothing reacts: the report would read as a failover that
            # never came.
            print(
                "fedctl drill: no controller leads this federation (no leader key in the"
                " registry): nothing will react to the fault",
                file=sys.stderr,
                flush=True,
            )
        injector = faults.injector(
            store,
            cluster=args.cluster,
            fault=args.fault,
            kubeconfig=args.kubeconfig,
            hold=duration,
        )
        if injector.fell_back:
            print(f"fedctl drill: {missing or 'no fault API'}; using a NoExecute taint instead")
        now = clock.real.now()
        report = drills.Report(
            id=drills.new_id(now, args.cluster),
            cluster=args.cluster,
            fault=injector.fault,
            started=now.isoformat(),
            duration=duration,
        )
        progress = drills.Progress()
        narrator = drills.Narrator(report, settle=settle, verbose=args.verbose)
        telling = asyncio.create_task(_tell(narrator, progress))
        try:
            report = await drills.run(
                store,
                report=report,
                inject=injector.inject,
                heal=injector.heal,
                settle=settle,
                progress=progress,
            )
        except asyncio.CancelledError:
            # Ctrl-C or SIGTERM: healed, and the report so far stored; said and written
            # as a finished drill's is, then the exit says it was stopped (130 or 143).
            if progress.report is not None:
                _say([f"{progress.report.error}; report stored as {progress.report.id}"])
                _write(progress.report, args.report, verbose=args.verbose)
            raise
        finally:
            telling.cancel()
        _say(narrator.lines(progress))
    finally:
        await store.close()
    _write(report, args.report, verbose=args.verbose)
    return 0 if report.lost == 0 and report.double_runs == 0 else 1


def _write(report: Any, folder: Path | None, *, verbose: bool = False) -> None:
    """The report on stdout, and in `folder` (--report) when given. The printed one lists
    the workloads one by one only for a small drill or with -v: the files always do."""
    from federation.failover import drills

    text = drills.markdown(report)
    small = report.affected <= drills.Narrator.COMPACT_ABOVE
    print(text if verbose or small else drills.markdown(report, table=False), flush=True)
    if folder:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(json.dumps(report.to_json(), indent=2))
        (folder / "report.md").write_text(text)
        (folder / "timeline.svg").write_text(drills.svg(report))


async def _tell(narrator: Any, progress: Any) -> None:
    """Say what the drill sees as it goes, on stderr (stdout is the report)."""
    from federation import clock

    while True:
        _say(narrator.lines(progress))
        await clock.real.sleep(1.0)


def _say(lines: list[str]) -> None:
    for line in lines:
        print(f"fedctl drill: {line}", file=sys.stderr, flush=True)


def _no_fault_api(*, cluster: str, fault: str, kubeconfig: str | None) -> str:
    """Why the simulator's fault API of `cluster` cannot be reached, or '' when it can (or
    the fault is the taint, which needs none)."""
    if fault == "taint":
        return ""
    if not kubeconfig:
        return (
            f"no kubeconfig was given (--kubeconfig or KUBECONFIG), so the fault API"
            f" of {cluster} is unknown"
        )
    state_file = f"{kubeconfig}.fleet.json"
    if not Path(state_file).exists():
        return (
            f"there is no fleet state file {state_file} beside the kubeconfig, so the"
            f" fault API of {cluster} is unknown"
        )
    if faults.admin_url(kubeconfig, cluster) is None:
        return f"{cluster} is not simulated ({state_file} names no fault API for it)"
    return ""


async def _plan(args: argparse.Namespace) -> int:
    """Where every workload on the member would go if it went down now, and what would not
    fit: failover's eviction rules and one scheduling cycle, on a copy (nothing written).
    Exit 3 when something would not fit, as `fedctl plan` does."""
    from federation import clock
    from federation.runtime import drill_plan, whatif

    _cluster(args)

    store = await registry_cmd.connect(args)
    try:
        live = await whatif.load(store)
    finally:
        await store.close()
    if args.cluster not in {c.name for c in live.clusters}:
        print(f"fedctl drill: no cluster {args.cluster!r}")
        return 1
    settings = settings_mod.from_env().scheduler
    predictions = drill_plan.predict(live, args.cluster, now=clock.real.now(), settings=settings)
    currency = settings.currency
    if args.output == "json":
        print(
            json.dumps(drill_plan.to_json(args.cluster, predictions, currency=currency), indent=2)
        )
    else:
        print(drill_plan.table(args.cluster, predictions, currency=currency))
    return 3 if any(p.action == "pending" for p in predictions) else 0


async def _list(args: argparse.Namespace) -> int:
    from federation.failover import drills
    from federation.registry import keys

    store = await registry_cmd.connect(args)
    try:
        listed = await store.list(keys.prefix("drills"))
    finally:
        await store.close()
    print(f"{'ID':40} {'FAULT':10} {'DETECT':>8} {'RTO':>8} {'LOST':>5} {'DOUBLE':>6}")
    for kv in listed.items:
        try:
            r = drills.decode(kv.value)
        except drills.UNREADABLE as exc:  # one bad record must not hide the others
            drill_id = kv.key.rpartition("/")[2]
            print(f"{drill_id:40} <unreadable: {type(exc).__name__}: {exc}>")
            continue
        rto = "-" if r.rto is None else f"{r.rto:.1f}s"
        detect = "-" if r.detect is None else f"{r.detect:.1f}s"
        print(f"{r.id:40} {r.fault:10} {detect:>8} {rto:>8} {r.lost:>5} {r.double_runs:>6}")
    return 0


async def _show(args: argparse.Namespace) -> int:
    from federation.failover import drills
    from federation.registry import keys

    store = await registry_cmd.connect(args)
    try:
        kv = await store.get(keys.drill_key(args.id))
    finally:
        await store.close()
    if kv is None:
        print(f"fedctl drill: no drill {args.id!r}")
        return 1
    try:
        report = drills.decode(kv.value)
    except drills.UNREADABLE as exc:
        raise errors.Invalid(
            f"drill {args.id!r}: its stored report does not read ({type(exc).__name__}: {exc});"
            " was it written by another release of fedctl?"
        ) from exc
    if args.output == "json":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(drills.markdown(report))
    return 0
