"""`fedctl cost [--by queue|namespace|cluster|region|provider|chip|workload] [-n NS]`: what the
placed work costs an hour, and over 30 days at that rate.

Fed by the API's costs route (`federation.api.workloads`, summing each Binding's per-cluster
estimate, `scheduler.spend`); feeds the terminal. Why a command of its own: placement by
cost is the reason to run fedctl, and the question that follows is what each department,
region or chip costs now, which no single object answers. The figures are the estimates
placement was made by, in the federation's currency, not a bill: what a member actually
charges (discounts, idle nodes, egress) is not seen here.
"""

from __future__ import annotations

import argparse
from decimal import Decimal
from typing import Any

from federation.cli import render
from federation.cli.objects_cmd import server_option

__all__ = ["register"]

BY = ("queue", "namespace", "cluster", "region", "chip", "workload", "provider")
"""As the API takes them (`api.workloads.COST_BY`; this module stays light to import)."""
MONTH_HOURS = Decimal(720)
"""30 days: what the rate comes to if nothing changes."""


def register(sub: Any) -> None:
    cmd = sub.add_parser(
        "cost",
        help="what the placed work costs per hour, by queue, namespace, cluster, region,"
        " provider or chip",
        description="The hourly cost of every placed workload, as estimated when it was"
        " placed (its clusters' prices, on-demand or spot as its policy asks), summed by the"
        " group asked for, with what 30 days at that rate come to. Finished jobs and"
        " workloads still waiting cost nothing and are counted apart.",
    )
    cmd.add_argument("--by", choices=BY, default="queue", help="group by (default: queue)")
    cmd.add_argument("-n", "--namespace", default=None, help="only this namespace")
    cmd.add_argument("-o", "--output", choices=["table", "yaml", "json"], default="table")
    server_option(cmd)
    cmd.set_defaults(func=_cost)


async def _cost(args: argparse.Namespace) -> int:
    from federation.cli import client, workloads_view

    params = {"by": args.by} | ({"namespace": args.namespace} if args.namespace else {})
    async with client.ApiClient(args.server, token=args.token) as api:
        doc = await api.request("GET", workloads_view.COSTS, params=params)
    if args.output != "table":
        print(render.dump(doc, args.output))
        return 0
    print(table(doc))
    return 0


def table(doc: dict[str, Any]) -> str:
    """The lines dearest first, a total, then what the figures leave out."""
    currency = doc["currency"]
    total = Decimal(doc["total"]["hourlyCost"])
    headers = [
        str(doc["by"]).upper(),
        "WORKLOADS",
        "REPLICAS",
        f"{currency}/H",
        f"{currency}/30D",
        "SHARE",
    ]
    rows = [_row(line, total) for line in doc["items"]]
    if len(rows) > 1:
        rows.append(_row(doc["total"], total))
    out = [render.table(headers, rows)] if rows else ["No placed workload costs anything now."]
    notes = []
    unpriced = doc["total"]["unpricedReplicas"]
    if unpriced:
        notes.append(
            f"{unpriced} replica(s) run where no price is known (a cluster without prices"
            f" for them, or priced in a currency with no rate to {currency}): not in the sums"
        )
    if doc["waiting"]:
        notes.append(f"{doc['waiting']} workload(s) waiting to be placed cost nothing yet")
    if doc["finished"]:
        notes.append(f"{doc['finished']} finished job(s) cost nothing more")
    if rows:
        notes.append(
            "estimates at the prices each workload was placed by, in "
            f"{currency}; fedctl plan shows how each was worked out"
        )
    return "\n".join(out + [f"  {note}" for note in notes])


def _row(line: dict[str, Any], total: Decimal) -> list[str]:
    hourly = Decimal(line["hourlyCost"])
    replicas, unpriced = int(line["replicas"]), int(line.get("unpricedReplicas", 0))
    shown = render.hourly(hourly, replicas=replicas, unpriced=unpriced)
    if shown == render.UNPRICED:
        # Nothing of it has a price: not free, unknown (0.0000 read as free).
        return [line["name"], str(line["workloads"]), str(replicas), shown, "-", "-"]
    share = f"{hourly / total:.1%}" if total else "-"
    return [
        line["name"],
        str(line["workloads"]),
        str(replicas),
        shown,
        f"{hourly * MONTH_HOURS:,.2f}",
        share,
    ]
