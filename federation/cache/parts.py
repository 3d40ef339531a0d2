"""One cluster's share of a snapshot: its models joined into a `ClusterInfo` and its node
flavors as integer rows, computed from one (Cluster, ClusterStatus) pair of objects.

Why apart from `snapshot`: a part depends on its own cluster only, so the `BuildCache` keeps
parts across builds and recomputes a cluster's only when its objects were replaced; the
snapshot then numbers chips and architectures fleet-wide and assembles the arrays. Column
order of the resource axis is `RESOURCES`; amounts are Kubernetes milli-units, exact in int64.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt

from federation.cache.currency import Currency
from federation.resources import ResourceList
from policies.models.cluster import Cluster, ClusterStatus, NodeFlavor, Prices, Taint
from policies.models.queue import chip_resource

__all__ = [
    "ALLOC",
    "ARCH",
    "CHIP",
    "COLUMNS",
    "CPU",
    "DEVICES",
    "FREE",
    "GROUPED",
    "LARGEST",
    "MEMORY",
    "NODES",
    "PODS",
    "REQUEST_CAP",
    "RESOURCES",
    "BoolArray",
    "ClusterInfo",
    "FloatArray",
    "IntArray",
    "Part",
    "compute",
    "frozen",
    "request_amount",
]

log = logging.getLogger(__name__)

RESOURCES: Final = ("cpu", "memory", "devices", "pods")
CPU, MEMORY, DEVICES, PODS = 0, 1, 2, 3
_DEFAULT_PODS: Final = 110 * 1000

REQUEST_CAP: Final = 2**62
"""The largest amount a pod's vector holds. Quantities parse up to 10^27 milli-units, past
int64; a request that large fits no node, so it is read as this cap (`request_amount`): a
typo such as `64Ei` leaves its job Pending with a reason instead of failing every cycle."""
_SUM_CAP: Final = 2**62
"""The most a cluster's amounts of one resource may add up to over its flavors, which the
cycle sums in int64 (`CycleState.free_total`); see `_bounded`."""

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
_A = TypeVar("_A", IntArray, FloatArray, BoolArray)
USD = Currency()
"""The federation's currency unless the settings say otherwise."""


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """One member as the scheduler sees it: spec and observed status joined."""

    index: int
    name: str
    region: str
    zone: str
    provider: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    ready: bool
    apis: frozenset[tuple[str, str]]
    prices: Prices | None
    """In the federation's currency (`currency.Currency`); None: unpriced."""
    flavors: tuple[NodeFlavor, ...]
    price_note: str = ""
    """Why the cluster's own prices are not used (a currency with no exchange rate)."""


def frozen(array: _A) -> _A:
    """`array`, read-only: parts and snapshots are shared, and a write would reach them all."""
    array.setflags(write=False)
    return array


def request_amount(milli: int) -> int:
    """One resource of a pod's request as its vector holds it: capped at `REQUEST_CAP`."""
    return milli if milli < REQUEST_CAP else REQUEST_CAP


def _bounded(rows: list[list[int]], name: str) -> list[list[int]]:
    """`rows` with each resource's amounts cut so that none of the three vectors adds up
    past `_SUM_CAP` over the flavors; unchanged unless one would.

    Amounts are milli-units, so a member of tens of thousands of terabyte nodes reports
    more memory than int64 holds: unbounded, its snapshot part failed to build and no
    cycle ran at all. Cut, such a member reads as holding the most int64 can say, which is
    still more than any workload asks of it.
    """
    width = len(RESOURCES)
    cut: list[tuple[int, int]] = []
    for start in (0, width, 2 * width):
        for r in range(width):
            if sum(row[start + r] for row in rows) > _SUM_CAP:
                cut.append((start + r, _SUM_CAP // len(rows)))
    if not cut:
        return rows
    log.warning("cluster %s reports amounts past int64 in milli-units; read as %s", name, cut)
    out = [list(row) for row in rows]
    for column, most in cut:
        for row in out:
            row[column] = min(row[column], most)
    return out


def _vector(resources: ResourceList, device: str | None, *, pods_default: int) -> list[int]:
    pods = resources.amount("pods") if "pods" in resources else pods_default
    return [
        resources.amount("cpu"),
        resources.amount("memory"),
        resources.amount(device) if device else 0,
        pods,
    ]


_Rows = tuple[list[int], list[int], list[int], list[list[int]]]
_FLAVOR_ROWS: dict[int, tuple[NodeFlavor, _Rows]] = {}
"""Per node flavor object (by identity, the object kept alongside): its allocatable, free
and emptiest-node vectors and its groups of nodes by free amounts (`_free_groups`). The
controller builds a snapshot every cycle from status objects that mostly did not change,
and reading three ResourceLists per flavor was most of it."""
_FLAVOR_ROWS_LIMIT = 65536


def _flavor_rows(flavor: NodeFlavor) -> _Rows:
    hit = _FLAVOR_ROWS.get(id(flavor))
    if hit is not None and hit[0] is flavor:
        return hit[1]
    device = flavor.accelerator_resource
    per_node = _vector(flavor.allocatable, device, pods_default=_DEFAULT_PODS)
    rows = (
        per_node,
        _vector(flavor.free, device, pods_default=per_node[PODS] * flavor.node_count),
        _vector(flavor.largest_free, device, pods_default=per_node[PODS]),
        _free_groups(flavor, per_node),
    )
    if len(_FLAVOR_ROWS) >= _FLAVOR_ROWS_LIMIT:
        _FLAVOR_ROWS.clear()
    _FLAVOR_ROWS[id(flavor)] = (flavor, rows)
    return rows


def _free_groups(flavor: NodeFlavor, per_node: list[int]) -> list[list[int]]:
    """The flavor's groups of nodes by free amounts, each [*free of one node, count], an
    amount never above the node's allocatable; a status without them (written before they
    were reported) reads as one group of every node empty, which caps nothing that the
    free sum and emptiest node do not cap already (`GROUPED` tells the two apart)."""
    if not flavor.free_nodes:
        return [[*per_node, flavor.node_count]]
    device = flavor.accelerator_resource
    return [
        [
            *(
                min(a, most)
                for a, most in zip(
                    _vector(g.free, device, pods_default=per_node[PODS]), per_node, strict=True
                )
            ),
            g.count,
        ]
        for g in flavor.free_nodes
    ]


def _price(table_value: object) -> float:
    return float(str(table_value)) if table_value is not None else float("nan")


# Columns of a cluster's per-flavor integer block: three resource vectors, then scalars.
ALLOC, FREE, LARGEST = (slice(k * len(RESOURCES), (k + 1) * len(RESOURCES)) for k in range(3))
NODES, CHIP, ARCH = 3 * len(RESOURCES), 3 * len(RESOURCES) + 1, 3 * len(RESOURCES) + 2
GROUPED = 3 * len(RESOURCES) + 3
"""1 where the status reports how the flavor's free room is split over nodes."""
COLUMNS = 3 * len(RESOURCES) + 4


@dataclass(frozen=True, slots=True)
class Part:
    """One cluster's share of a snapshot, computed from one (spec, status) pair of objects.

    Chips and architectures are kept by name (distinct, in first-seen order; the block holds
    each flavor's position in that list): their snapshot-wide indices depend on the clusters
    sorted before this one, so they are assigned only when the parts are put together.
    One block per kind keeps that assembly to a few array operations for the whole fleet.
    """

    cluster: Cluster
    status: ClusterStatus | None
    info: ClusterInfo
    block: IntArray  # [F, COLUMNS]; CHIP is -1 where there is no accelerator
    groups: IntArray  # [F, G, R + 1]: nodes grouped by free amounts, the last column a count
    price_dev: FloatArray  # [F, 2]
    price_base: FloatArray  # [1, 4]: cpu on-demand, cpu spot, memory on-demand, memory spot
    chip_names: tuple[str, ...]
    arch_names: tuple[str, ...]
    resources: tuple[str | None, ...]
    capacity: Mapping[str, int]
    devices: frozenset[str]


def compute(
    cluster: Cluster,
    status: ClusterStatus | None,
    *,
    index: int,
    currency: Currency = USD,
    device_defaults: Mapping[str, Decimal] | None = None,
) -> Part:
    """The part of `cluster` (at `index` in name order) with its observed `status`, priced
    in `currency`; what the build cache keeps until either object is replaced.

    `device_defaults`: chip model -> device-hour price in `currency` (the AcceleratorProfiles'
    `defaultPricePerHour`), for the chips the cluster's on-demand prices leave out."""
    flavors = tuple(status.flavors) if status is not None else ()
    chips: dict[str, int] = {}
    arches: dict[str, int] = {}
    rows: list[list[int]] = []
    groups: list[list[list[int]]] = []
    capacity: dict[str, int] = {}
    devices: set[str] = set()
    for flavor in flavors:
        per_node, free, largest, grouped = _flavor_rows(flavor)
        groups.append(grouped)
        device, model = flavor.accelerator_resource, flavor.accelerator_model
        chip = -1
        if model is not None and device:
            chip = chips.setdefault(model, len(chips))
            devices.add(device)
            total = per_node[DEVICES] * flavor.node_count
            capacity[chip_resource(model)] = capacity.get(chip_resource(model), 0) + total
            capacity[device] = capacity.get(device, 0) + total
        for column, name in ((CPU, "cpu"), (MEMORY, "memory")):
            capacity[name] = capacity.get(name, 0) + per_node[column] * flavor.node_count
        arch = arches.setdefault(flavor.arch, len(arches))
        rows.append(
            [
                *per_node,
                *free,
                *largest,
                flavor.node_count,
                chip,
                arch,
                int(bool(flavor.free_nodes)),
            ]
        )
    prices, note = currency.convert(cluster.spec.prices)
    if prices is not None and device_defaults:
        prices = prices.with_device_defaults(device_defaults)
    price_base, price_dev = _prices(prices, flavors)
    return Part(
        cluster=cluster,
        status=status,
        info=_info(cluster, status, flavors, index=index, prices=prices, price_note=note),
        block=frozen(np.array(_bounded(rows, cluster.name), np.int64).reshape(-1, COLUMNS)),
        groups=frozen(_padded(groups)),
        price_dev=frozen(price_dev),
        price_base=frozen(price_base),
        chip_names=tuple(chips),
        arch_names=tuple(arches),
        resources=tuple(f.accelerator_resource for f in flavors),
        capacity=MappingProxyType(capacity),
        devices=frozenset(devices),
    )


def _padded(groups: list[list[list[int]]]) -> IntArray:
    """[F, G, R + 1] from each flavor's groups, padded with empty groups (count 0)."""
    width = max([len(g) for g in groups] or [1])
    out = np.zeros((len(groups), width, len(RESOURCES) + 1), np.int64)
    for f, rows in enumerate(groups):
        out[f, : len(rows)] = rows
    return out


def _info(
    cluster: Cluster,
    status: ClusterStatus | None,
    flavors: tuple[NodeFlavor, ...],
    *,
    index: int,
    prices: Prices | None,
    price_note: str,
) -> ClusterInfo:
    apis = frozenset(
        (e.group_version, r.kind)
        for e in (status.api_enablements if status is not None else [])
        for r in e.resources
    )
    taints = (*cluster.spec.taints, *(status.taints if status is not None else []))
    return ClusterInfo(
        index=index,
        name=cluster.name,
        region=cluster.spec.region,
        zone=cluster.spec.zone or "",
        provider=cluster.spec.provider or "",
        labels=MappingProxyType(dict(cluster.metadata.labels)),
        taints=tuple(taints),
        ready=status is not None and status.ready(),
        apis=apis,
        prices=prices,
        flavors=flavors,
        price_note=price_note,
    )


def _prices(prices: Prices | None, flavors: Sequence[NodeFlavor]) -> tuple[FloatArray, FloatArray]:
    """Per core-hour and GiB-hour (on-demand, spot each) and per each flavor's device-hour."""
    base, per_device = np.full((1, 4), np.nan), np.full((len(flavors), 2), np.nan)
    if prices is None:
        return base, per_device
    for column, table in enumerate((prices.on_demand, prices.spot)):
        if table is None:
            continue
        base[0, column], base[0, 2 + column] = _price(table.cpu), _price(table.memory)
        for fi, flavor in enumerate(flavors):
            if flavor.accelerator_model is not None:
                per_device[fi, column] = _price(table.accelerators.get(flavor.accelerator_model))
    return base, per_device
