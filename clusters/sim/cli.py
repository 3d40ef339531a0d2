"""`fedctl sim …`: run a simulated fleet, and break or heal its members while it runs.

Loaded by `federation/cli/main.py` through the `fedctl.commands` entry point
(`sim = "clusters.sim.cli:register"`), so the controller's CLI never imports the
simulator. `sim up` starts a `SimFleet` from a profile, writes the kubeconfig and fleet
state file, prints what it started and runs until interrupted. `sim fault`, `sim heal`
and `sim status` are separate processes: they find the members' admin URLs in the fleet
state file next to the kubeconfig and speak HTTP to them, as a drill operator would.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import Any

import aiohttp

from clusters.sim import kubeconfig, profile
from clusters.sim.clock import parse_duration
from clusters.sim.faults import MODES
from clusters.sim.fleet import SimFleet, capacity

__all__ = ["register"]

EXIT_OK, EXIT_ERROR = 0, 1


def register(subparsers: Any) -> None:
    """Add `sim up|fault|heal|status` to the `fedctl` parser."""
    sim = subparsers.add_parser("sim", help="run simulated member clusters and inject faults")
    sim.set_defaults(func=lambda _args: _usage(sim))
    sub = sim.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")

    up = sub.add_parser("up", help="start a simulated fleet; runs until interrupted")
    up.add_argument("--profile", required=True, help="fleet profile YAML")
    up.add_argument("--kubeconfig", required=True, help="kubeconfig to write (one context each)")
    up.add_argument("--speed", type=float, default=1.0, help="simulated seconds per real second")
    up.set_defaults(func=_up)

    fault = sub.add_parser("fault", help="inject a fault into one member")
    fault.add_argument("cluster")
    fault.add_argument("mode", choices=MODES)
    fault.add_argument("--for", dest="duration", help="heal after this long (e.g. 60s, 2m)")
    _kubeconfig_arg(fault)
    fault.add_argument("--latency", help="slow: base latency (e.g. 2s)")
    fault.add_argument("--jitter", help="slow: extra random latency up to this")
    fault.add_argument("--rate", type=float, help="errors: fraction of requests failed (0..1)")
    fault.add_argument("--count", type=int, help="node-notready: how many nodes")
    fault.add_argument("--pool", help="node-notready: only nodes of this pool")
    fault.add_argument("--period", help="flapping: seconds per up or down phase")
    fault.add_argument("--interval", help="watch-drop: cut watches again this often")
    fault.set_defaults(func=_fault)

    heal = sub.add_parser("heal", help="end a member's faults (all, or one --mode)")
    heal.add_argument("cluster")
    heal.add_argument("--mode", choices=MODES)
    _kubeconfig_arg(heal)
    heal.set_defaults(func=_heal)

    status = sub.add_parser("status", help="show each member's listener, nodes and faults")
    _kubeconfig_arg(status)
    status.set_defaults(func=_status)


def _kubeconfig_arg(parser: argparse.ArgumentParser) -> None:
    default = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
    parser.add_argument(
        "--kubeconfig",
        default=default,
        help="kubeconfig written by `fedctl sim up` (default: $KUBECONFIG)",
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _fail(message: str) -> int:
    print(f"fedctl sim: {message}", file=sys.stderr)
    return EXIT_ERROR


# -- sim up ---------------------------------------------------------------------------------


def _table(fleet: SimFleet) -> str:
    rows = [("CLUSTER", "REGION", "ZONE", "API", "ADMIN", "NODES", "CPU", "MEMORY", "CHIPS")]
    for member in fleet:
        cap = capacity(member.profile)
        chips = ",".join(f"{m}={n}" for m, n in sorted(cap["accelerators"].items())) or "-"
        rows.append(
            (
                member.name,
                member.profile.region,
                member.profile.zone or "-",
                member.url,
                member.admin_url,
                str(cap["nodes"]),
                cap["cpu"],
                cap["memory"],
                chips,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def _up(args: argparse.Namespace) -> Any:
    """Load the profile before the event loop starts; the returned coroutine runs the fleet."""
    try:
        prof = profile.load(args.profile)
    except (OSError, ValueError) as exc:
        return _fail(f"cannot load profile {args.profile}: {exc}")
    if args.speed <= 0:
        return _fail("--speed must be positive")
    return _run_fleet(args, prof, os.path.abspath(args.profile))


async def _run_fleet(args: argparse.Namespace, prof: profile.Profile, profile_path: str) -> int:
    fleet = SimFleet(prof, speed=args.speed)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await fleet.start()
    state_file = fleet.write(args.kubeconfig, profile_path=profile_path)
    print(_table(fleet))
    print(
        f"\nkubeconfig: {args.kubeconfig}\nfleet state: {state_file}\nspeed: {args.speed}x"
        "\nrunning; interrupt to stop",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await fleet.stop()
        with contextlib.suppress(FileNotFoundError):
            state_file.unlink()
    return EXIT_OK


# -- fault / heal / status --------------------------------------------------------------------


def _admin_url(args: argparse.Namespace) -> str:
    if not args.kubeconfig:
        raise LookupError("no --kubeconfig given and $KUBECONFIG is unset")
    try:
        state = kubeconfig.load_state(args.kubeconfig)
    except FileNotFoundError:
        raise LookupError(
            f"no running fleet for {args.kubeconfig} ({kubeconfig.state_path(args.kubeconfig)} "
            "is missing; start one with `fedctl sim up`)"
        ) from None
    member = state["clusters"].get(args.cluster)
    if member is None:
        known = ", ".join(sorted(state["clusters"]))
        raise LookupError(f"no cluster {args.cluster!r} in this fleet (known: {known})")
    return str(member["adminUrl"])


async def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    timeout = aiohttp.ClientTimeout(total=10)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, json=body) as resp,
    ):
        return resp.status, await resp.json()


def _fault_body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"mode": args.mode}
    if args.duration:
        body["for"] = parse_duration(args.duration)
    for key in ("latency", "jitter", "period", "interval"):
        value = getattr(args, key)
        if value is not None:
            body[key] = parse_duration(value)
    for key in ("rate", "count", "pool"):
        value = getattr(args, key)
        if value is not None:
            body[key] = value
    return body


async def _fault(args: argparse.Namespace) -> int:
    try:
        url = _admin_url(args)
        body = _fault_body(args)
        code, reply = await _post(f"{url}/fault", body)
    except (LookupError, ValueError, aiohttp.ClientError, OSError) as exc:
        return _fail(str(exc))
    if code != 200:
        return _fail(reply.get("error", f"HTTP {code}"))
    print(json.dumps(reply, indent=2, sort_keys=True))
    return EXIT_OK


async def _heal(args: argparse.Namespace) -> int:
    try:
        url = _admin_url(args)
        code, reply = await _post(f"{url}/heal", {"mode": args.mode} if args.mode else {})
    except (LookupError, aiohttp.ClientError, OSError) as exc:
        return _fail(str(exc))
    if code != 200:
        return _fail(reply.get("error", f"HTTP {code}"))
    print(json.dumps(reply, indent=2, sort_keys=True))
    return EXIT_OK


async def _status(args: argparse.Namespace) -> int:
    if not args.kubeconfig:
        return _fail("no --kubeconfig given and $KUBECONFIG is unset")
    try:
        state = kubeconfig.load_state(args.kubeconfig)
    except FileNotFoundError:
        return _fail(f"no running fleet for {args.kubeconfig}")
    timeout = aiohttp.ClientTimeout(total=5)
    rows = [("CLUSTER", "LISTENING", "NODES", "PODS", "RV", "FAULTS")]
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for name, member in sorted(state["clusters"].items()):
            try:
                async with session.get(f"{member['adminUrl']}/state") as resp:
                    st = await resp.json()
            except (aiohttp.ClientError, OSError, TimeoutError):
                rows.append((name, "unreachable", "-", "-", "-", "-"))
                continue
            faults = ",".join(f["mode"] for f in st["faults"]) or "-"
            nodes = f"{st['nodes']['ready']}/{st['nodes']['total']}"
            rows.append(
                (
                    name,
                    str(st["listening"]).lower(),
                    nodes,
                    str(st["pods"]),
                    st["resourceVersion"],
                    faults,
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return EXIT_OK
