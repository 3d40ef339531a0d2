"""`fedctl drill run|plan|list|show`: rehearse losing a member and read what happened.

Fed by the command line, the registry (etcd, as `fedctl controller` uses it) and, for
simulated members, the fleet state file `<kubeconfig>.fleet.json` that `fedctl sim up`
writes (the member's admin URL; federation never imports the simulator, it reads the
file); feeds `federation.failover.drills` (sampling and judging) and the report files.

Why a taint for real members: it is the only fault that is safe on a production cluster
(nothing is broken, work is simply moved away) and it is removed when the drill ends.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["register"]

_FAULTS = ("down", "blackhole", "slow", "errors", "taint")
DRILL_TAINT = "fedctl.io/drill"


def register(sub: Any) -> None:
    cmd = sub.add_parser("drill", help="failover drills: break a member, measure recovery")
    verbs = cmd.add_subparsers(dest="verb", metavar="VERB", required=True)
    run = verbs.add_parser("run", help="inject a fault, watch recovery, write the report")
    run.add_argument("--cluster", required=True)
    run.add_argument("--fault", choices=_FAULTS, default="down")
    run.add_argument("--duration", default="60s", help="how long the fault lasts (e.g. 60s)")
    run.add_argument("--settle", default="60s", help="how long to watch after healing")
    run.add_argument("--report", type=Path, help="directory for report.json/.md/.svg")
    run.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="kubeconfig of a simulated fleet (its .fleet.json names the admin URLs)",
    )
    run.set_defaults(func=_run)
    plan = verbs.add_parser("plan", help="what would move if the member went, touching nothing")
    plan.add_argument("--cluster", required=True)
    plan.set_defaults(func=_plan)
    verbs.add_parser("list", help="past drills").set_defaults(func=_list)
    show = verbs.add_parser("show", help="one drill's report")
    show.add_argument("id")
    show.add_argument("--output", "-o", choices=["markdown", "json"], default="markdown")
    show.set_defaults(func=_show)


def _seconds(text: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * units[suffix]
    return float(text)


async def _store(args: argparse.Namespace) -> Any:
    from federation import settings as settings_mod
    from federation.registry.etcd import EtcdStore

    settings = settings_mod.from_env(
        etcd={"endpoints": [e.strip() for e in args.etcd.split(",") if e.strip()]}
    )
    store = EtcdStore(settings.etcd)
    await store.connect()
    return store


def admin_url(kubeconfig: str, cluster: str) -> str | None:
    """The simulator admin URL of `cluster`, or None when it is not a simulated member."""
    state_file = Path(kubeconfig + ".fleet.json")
    if not state_file.exists():
        return None
    member = json.loads(state_file.read_text()).get("clusters", {}).get(cluster)
    return str(member["adminUrl"]) if member and member.get("adminUrl") else None


async def _post(url: str, body: dict[str, Any]) -> None:
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=10)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, json=body) as resp,
    ):
        if resp.status != 200:
            raise SystemExit(f"fedctl drill: {url} answered {resp.status}: {await resp.text()}")


async def _set_taint(store: Any, cluster: str, *, on: bool) -> None:
    from federation.registry import keys, objects
    from federation.registry.codec import TypedStore
    from policies.models.cluster import Cluster, Taint

    typed = TypedStore(store, objects.ObjectCodec())

    def change(current: Any) -> Any:
        if not isinstance(current, Cluster):
            raise SystemExit(f"fedctl drill: no cluster {cluster!r}")
        kept = [t for t in current.spec.taints if t.key != DRILL_TAINT]
        if on:
            kept.append(Taint(key=DRILL_TAINT, effect="NoExecute"))
        return current.model_copy(update={"spec": current.spec.model_copy(update={"taints": kept})})

    await typed.mutate(keys.cluster_key(cluster), change)


async def _run(args: argparse.Namespace) -> int:
    from federation import clock
    from federation.failover import drills

    store = await _store(args)
    try:
        url = admin_url(args.kubeconfig, args.cluster) if args.kubeconfig else None
        fault = args.fault
        if fault != "taint" and url is None:
            print(f"fedctl drill: {args.cluster} is not simulated; using a NoExecute taint")
            fault = "taint"

        async def inject() -> None:
            if fault == "taint":
                await _set_taint(store, args.cluster, on=True)
            else:
                await _post(f"{url}/fault", {"mode": fault})

        async def heal() -> None:
            if fault == "taint":
                await _set_taint(store, args.cluster, on=False)
            else:
                await _post(f"{url}/heal", {})

        now = clock.real.now()
        report = drills.Report(
            id=drills.new_id(now, args.cluster),
            cluster=args.cluster,
            fault=fault,
            started=now.isoformat(),
            duration=_seconds(args.duration),
        )
        report = await drills.run(
            store, report=report, inject=inject, heal=heal, settle=_seconds(args.settle)
        )
    finally:
        await store.close()
    text = drills.markdown(report)
    print(text)
    if args.report:
        args.report.mkdir(parents=True, exist_ok=True)
        (args.report / "report.json").write_text(json.dumps(report.to_json(), indent=2))
        (args.report / "report.md").write_text(text)
        (args.report / "timeline.svg").write_text(drills.svg(report))
    return 0 if report.lost == 0 and report.double_runs == 0 else 1


async def _plan(args: argparse.Namespace) -> int:
    """Which workloads would leave, which tolerate the fault, and whether the rest fits."""
    from federation.failover import eviction
    from federation.failover.controller import FailoverController
    from federation.registry import keys
    from federation.scheduler import plan
    from policies.models.cluster import Taint

    store = await _store(args)
    try:
        ctl = FailoverController(store, claim=plan.claim)
        for mirror in ctl._mirrors:
            await mirror.load()
        now = ctl.clock.now()
        taint = Taint(key=DRILL_TAINT, effect="NoExecute", time_added=now)
        moving: list[tuple[str, int]] = []
        staying: list[tuple[str, int]] = []
        for key, stored in sorted(ctl.bindings.items.items()):
            b = stored.obj
            if args.cluster not in b.placement():
                continue
            ref = str(keys.parse_workload_key(key))
            verdict = eviction.judge(b, {args.cluster: [taint]}, ctl.terms(b).tolerations, now=now)
            (moving if verdict else staying).append((ref, b.placement()[args.cluster]))
        print(f"If {args.cluster} went down now:")
        print(f"  {len(moving)} workloads would move, {len(staying)} tolerate it and stay")
        for ref, replicas in moving:
            print(f"  move  {ref}  ({replicas} replicas)")
        for ref, replicas in staying:
            print(f"  stay  {ref}  ({replicas} replicas)")
    finally:
        await store.close()
    return 0


async def _list(args: argparse.Namespace) -> int:
    from federation.failover import drills
    from federation.registry import keys

    store = await _store(args)
    try:
        listed = await store.list(keys.prefix("drills"))
    finally:
        await store.close()
    print(f"{'ID':40} {'FAULT':10} {'DETECT':>8} {'RTO':>8} {'LOST':>5} {'DOUBLE':>6}")
    for kv in listed.items:
        r = drills.decode(kv.value)
        rto = "-" if r.rto is None else f"{r.rto:.1f}s"
        detect = "-" if r.detect is None else f"{r.detect:.1f}s"
        print(f"{r.id:40} {r.fault:10} {detect:>8} {rto:>8} {r.lost:>5} {r.double_runs:>6}")
    return 0


async def _show(args: argparse.Namespace) -> int:
    from federation.failover import drills
    from federation.registry import keys

    store = await _store(args)
    try:
        kv = await store.get(keys.drill_key(args.id))
    finally:
        await store.close()
    if kv is None:
        print(f"fedctl drill: no drill {args.id!r}")
        return 1
    report = drills.decode(kv.value)
    if args.output == "json":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(drills.markdown(report))
    return 0
