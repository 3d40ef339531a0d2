"""`fedctl plan`: what-if placement of workload YAML under policy YAML, writing nothing.

Fed by files (`-f`, repeatable: workloads, policies, queues, quotas) and a fleet: a
simulator profile (`--clusters PROFILE`) or, later, the live controller (`--live`). Feeds
stdout: every cluster with its verdict, reason or score breakdown, then the division, the
chip and the cost; `-o json` for scripts. Exit 0 when every workload could be placed, 3
when some would stay pending, 1 on bad input. This is what an engineer runs while editing
policy YAML.
"""

from __future__ import annotations

import argparse
import json
import sys

from federation import errors

__all__ = ["register"]

EXIT_OK, EXIT_PENDING = 0, 3


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `plan` to the `fedctl` parser."""
    parser = subparsers.add_parser(
        "plan",
        help="show where workloads would be placed, and why (writes nothing)",
        description="Run the scheduler's filters, scores and replica division for each"
        " workload in the files against a fleet, and print every cluster's verdict, the"
        " division, the chip and the estimated hourly cost.",
    )
    parser.add_argument(
        "-f",
        "--filename",
        dest="paths",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE|DIR",
        help="workload, policy, queue or quota YAML; repeatable",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--clusters", metavar="PROFILE", help="simulator profile YAML (offline)")
    where.add_argument("--live", action="store_true", help="plan against the running controller")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    parser.set_defaults(func=_plan)


def _plan(args: argparse.Namespace) -> int:
    from federation.scheduler import plan

    if args.live:
        raise errors.Invalid(
            "fedctl plan --live is not available yet: use --clusters PROFILE for an offline plan"
        )
    planned = plan.plan_files(args.paths, profile=args.clusters)
    if args.output == "json":
        doc = [dict(p.plan.to_json(), policy=p.policy) for p in planned]
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n\n".join(plan.render(p) for p in planned) + "\n")
    return EXIT_OK if all(p.plan.placement for p in planned) else EXIT_PENDING
