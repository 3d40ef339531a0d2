"""The rows of `fedctl cluster list`: one line per member from its spec and observed status.

Fed by a Cluster (spec: region, declared chips, prices) and its ClusterStatus (Ready,
capacity by node flavor) as the REST API returns them; feeds the CLI's table and the
dashboard. Pure. Capacity shown is what the monitor observed; a cluster never observed
shows its declared chips and no amounts, so a new member is visible before its first probe.

The hourly price is what the whole cluster's allocatable costs for one hour on demand:
cores x core price + GiB x GiB price + devices x the model's device price, a model the
on-demand table leaves out priced at its AcceleratorProfile's default as the scheduler
prices it (`ClusterStatus.default_prices`, which the API fills on read). It is None when
the cluster has no prices, or no price is known for one of its accelerator models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from federation.resources import MILLI, ResourceList, format_like, format_quantity
from policies.models.cluster import Cluster, ClusterStatus, NodeFlavor, PriceTable

__all__ = [
    "HEADER",
    "Amount",
    "ClusterRow",
    "cells",
    "describe",
    "hourly_price",
    "pair",
    "row",
    "table",
]

HEADER = ("NAME", "REGION", "CHIPS", "READY", "CPU", "MEMORY", "ACCELERATORS", "PRICE/H")
"""PRICE/H is in each cluster's own currency, named beside it: a fleet may mix several."""


@dataclass(frozen=True, slots=True)
class Amount:
    """Free and total of one resource, in milli-units."""

    free: int = 0
    total: int = 0

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.free + other.free, self.total + other.total)


@dataclass(frozen=True, slots=True)
class ClusterRow:
    """One member as `fedctl cluster list` shows it."""

    name: str
    region: str
    chips: dict[str, int]
    ready: str
    reason: str
    cpu: Amount
    memory: Amount
    accelerators: dict[str, Amount] = field(default_factory=dict)
    price_per_hour: Decimal | None = None
    currency: str = "USD"
    observed: bool = False


def _chips(cluster: Cluster, status: ClusterStatus | None) -> dict[str, int]:
    if status is None or not status.flavors:
        return {c.model: c.count for c in cluster.spec.chips}
    out: dict[str, int] = {}
    for f in status.flavors:
        if f.accelerator_model and f.accelerator_resource:
            devices = f.allocatable.amount(f.accelerator_resource) // MILLI * f.node_count
            out[f.accelerator_model] = out.get(f.accelerator_model, 0) + devices
        else:
            out[f.arch] = out.get(f.arch, 0) + f.node_count
    return out


def _accelerators(flavors: list[NodeFlavor]) -> dict[str, Amount]:
    out: dict[str, Amount] = {}
    for f in flavors:
        if not (f.accelerator_model and f.accelerator_resource):
            continue
        resource = f.accelerator_resource
        amount = Amount(f.free.amount(resource), f.allocatable.amount(resource) * f.node_count)
        out[f.accelerator_model] = out.get(f.accelerator_model, Amount()) + amount
    return dict(sorted(out.items()))


def hourly_price(cluster: Cluster, status: ClusterStatus | None) -> Decimal | None:
    """On-demand cost of one hour of the whole observed cluster, or None (see module doc)."""
    prices = cluster.spec.prices
    if prices is None or status is None:
        return None
    table = prices.on_demand.with_device_defaults(status.default_prices or {})
    total = Decimal(0)
    for f in status.flavors:
        cost = table.hourly_cost(
            f.allocatable.scaled(f.node_count),
            accelerator_resource=f.accelerator_resource,
            accelerator_model=f.accelerator_model,
        )
        if cost is None:
            return None
        total += cost
    return total


def row(cluster: Cluster, status: ClusterStatus | None) -> ClusterRow:
    """The row for one member (status None: never observed)."""
    ready = status.condition("Ready") if status is not None else None
    totals = status.totals if status is not None else None
    return ClusterRow(
        name=cluster.name,
        region=cluster.spec.region,
        chips=_chips(cluster, status),
        ready=ready.status if ready else "Unknown",
        reason=ready.reason if ready else "NotProbed",
        cpu=Amount(totals.free.amount("cpu"), totals.allocatable.amount("cpu"))
        if totals
        else Amount(),
        memory=(
            Amount(totals.free.amount("memory"), totals.allocatable.amount("memory"))
            if totals
            else Amount()
        ),
        accelerators=_accelerators(status.flavors) if status is not None else {},
        price_per_hour=hourly_price(cluster, status),
        currency=cluster.spec.prices.currency if cluster.spec.prices else "USD",
        observed=status is not None and bool(status.flavors),
    )


def pair(amount: Amount, *, binary: bool) -> str:
    """`free/total`, both in the total's unit (`38.5/40`, `158.5Gi/160Gi`)."""
    return (
        f"{format_like(amount.free, amount.total, binary=binary)}/"
        f"{format_quantity(amount.total, binary=binary)}"
    )


def cells(r: ClusterRow) -> tuple[str, ...]:
    """The row as table cells, in HEADER order."""
    chips = ",".join(f"{model}:{count}" for model, count in r.chips.items()) or "-"
    if not r.observed:
        cpu = memory = accelerators = "-"
    else:
        cpu = pair(r.cpu, binary=False)
        memory = pair(r.memory, binary=True)
        accelerators = (
            ",".join(f"{m} {pair(a, binary=False)}" for m, a in r.accelerators.items()) or "-"
        )
    price = "-" if r.price_per_hour is None else f"{r.price_per_hour:.2f} {r.currency}"
    ready = r.ready if r.ready == "True" else f"{r.ready} ({r.reason})"
    return (r.name, r.region, chips, ready, cpu, memory, accelerators, price)


def table(rows: list[ClusterRow]) -> str:
    """A plain-text table with aligned columns, header first, rows sorted by name."""
    lines = [HEADER, *(cells(r) for r in sorted(rows, key=lambda r: r.name))]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def _amounts(resources: ResourceList) -> str:
    return ", ".join(f"{k}={v}" for k, v in resources.to_wire().items() if k != "pods") or "-"


def _flavor_line(f: NodeFlavor) -> str:
    """The flavor's shape and emptiest node, then how its free room is split over nodes
    (what the scheduler counts pods from): a sum that looks roomy can hold few pods."""
    chip = f.accelerator_model or f.arch
    line = (
        f"  {chip} ({f.arch}) x{f.node_count}: {_amounts(f.allocatable)};"
        f" largest free node: {_amounts(f.largest_free)}"
    )
    if f.free_nodes:
        groups = "; ".join(f"{g.count}x {_amounts(g.free)}" for g in f.free_nodes)
        line += f"\n    free per node: {groups}"
    return line


def _table_line(table: PriceTable, defaults: Mapping[str, Decimal] | None = None) -> str:
    """One table's prices; `defaults`: the chip prices the profiles give where the table
    lists none (`ClusterStatus.default_prices`), said to be the profile's."""
    extra = "".join(f", {m}={p}/h" for m, p in table.accelerators.items())
    extra += "".join(
        f", {m}={p.quantize(Decimal('0.0001')).normalize():f}/h (profile default)"
        for m, p in (defaults or {}).items()
        if m not in table.accelerators
    )
    return f"cpu={table.cpu}/core-h memory={table.memory}/GiB-h{extra}"


def describe(cluster: Cluster, status: ClusterStatus | None) -> str:
    """`fedctl cluster describe`: where, conditions, node flavors, APIs, taints, prices."""
    spec = cluster.spec
    where = " / ".join(x for x in (spec.region, spec.zone, spec.provider) if x)
    lines = [f"Name:        {cluster.name}", f"Location:    {where}"]
    if status is None:
        lines.append("Status:      not observed yet")
    else:
        lines.append(f"Kubernetes:  {status.kubernetes_version or '-'}")
        same = f" (also joined as {status.duplicate_of}: see Ready)" if status.duplicate_of else ""
        lines.append(f"Cluster ID:  {status.cluster_id or '-'}{same}")
        lines.append("Conditions:")
        for c in status.conditions:
            since = f"{c.last_transition_time:%Y-%m-%dT%H:%M:%SZ}"
            detail = f": {c.message}" if c.message else ""
            lines.append(f"  {c.type}={c.status} {c.reason} since {since}{detail}")
        lines.append("Node flavors:")
        lines.extend(_flavor_line(f) for f in status.flavors)
        apis = ", ".join(e.group_version for e in status.api_enablements) or "-"
        lines.append(f"APIs:        {apis}")
    taints = [*spec.taints, *(status.taints if status else [])]
    shown = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in taints) or "-"
    lines.append(f"Taints:      {shown}")
    if spec.prices is not None:
        currency = spec.prices.currency
        defaults = status.default_prices if status is not None else None
        on_demand = _table_line(spec.prices.on_demand, defaults)
        lines.append(f"Prices:      {currency} {on_demand} (on demand)")
        # The spot table was shown nowhere but raw YAML, though spot jobs here are costed by it.
        spot = spec.prices.spot
        lines.append(
            f"Spot:        {currency} {_table_line(spot)}" if spot else "Spot:        not offered"
        )
        per_hour = hourly_price(cluster, status)
        if per_hour is not None:
            lines.append(f"Per hour:    {per_hour:.2f} {spec.prices.currency} (whole cluster)")
    return "\n".join(lines)
