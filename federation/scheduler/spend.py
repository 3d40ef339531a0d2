"""What placed work costs now, by queue, namespace, cluster, region, chip or workload.

Fed by Bindings (each target's hourly cost, estimated when it was placed, at that
cluster's prices, in the federation's currency) and the workload statuses (a job that has
finished costs nothing more); feeds `fedctl cost` through the API's costs route and the
`fedctl_hourly_cost` metric. Why from the Bindings: they hold the estimate placement
minimised, so the report answers "what has the scheduler committed each team to" with the
numbers `fedctl plan` showed, and a platform team can see a department's spend by region
or chip without a billing export. Copies kept running while a workload waits to be placed
again are counted (they run); copies leaving under an eviction task are not (no cost is
recorded for them, and they go once the new copy is ready). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal, get_args

from policies.models.binding import Binding

__all__ = ["BY", "By", "Charge", "Line", "charges", "tally"]

By = Literal["queue", "namespace", "cluster", "region", "chip", "workload"]
BY: tuple[str, ...] = get_args(By)


@dataclass(frozen=True, slots=True)
class Charge:
    """The replicas of one workload on one cluster, and what they cost an hour."""

    workload: str
    namespace: str
    queue: str
    cluster: str
    chip: str
    replicas: int
    hourly: Decimal | None
    """None: the cluster has no price for them (or none in a currency the federation
    converts)."""


@dataclass(slots=True)
class Line:
    """One group's total."""

    name: str
    workloads: set[str] = field(default_factory=set)
    replicas: int = 0
    hourly: Decimal = Decimal(0)
    unpriced: int = 0
    """Replicas counted without a cost."""

    def add(self, charge: Charge) -> None:
        self.workloads.add(charge.workload)
        self.replicas += charge.replicas
        if charge.hourly is None:
            self.unpriced += charge.replicas
        else:
            self.hourly += charge.hourly


def charges(ref: str, binding: Binding) -> list[Charge]:
    """What `binding`'s targets run (`ref`: the workload's `ns/Kind.group/name`); nothing
    for an object without pods (a Namespace, a ConfigMap: no requests, no cost)."""
    spec = binding.spec
    if not spec.pod_requests and all(not t.hourly_cost for t in spec.clusters):
        return []
    return [
        Charge(
            workload=ref,
            namespace=spec.workload.namespace,
            queue=spec.queue,
            cluster=t.name,
            chip=t.chip or "-",
            replicas=t.replicas,
            hourly=t.hourly_cost,
        )
        for t in spec.clusters
        if t.replicas > 0
    ]


def tally(
    found: Iterable[Charge], by: By, *, regions: Mapping[str, str] | None = None
) -> tuple[list[Line], Line]:
    """The lines of `by` (dearest first, then by name) and their total. `regions` maps a
    cluster to its region (a cluster it does not name groups under `-`)."""
    lines: dict[str, Line] = {}
    total = Line("TOTAL")
    for charge in found:
        name = _key(charge, by, regions or {})
        lines.setdefault(name, Line(name)).add(charge)
        total.add(charge)
    return sorted(lines.values(), key=lambda line: (-line.hourly, line.name)), total


def _key(charge: Charge, by: By, regions: Mapping[str, str]) -> str:
    if by == "region":
        return regions.get(charge.cluster, "-")
    value: str = getattr(charge, by)
    return value
