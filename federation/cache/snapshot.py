"""The snapshot: one frozen view of the fleet that a whole scheduling cycle decides against.

Fed by Cluster specs joined with the monitor's ClusterStatus, Queues, FederatedResourceQuotas
and the current Bindings (from the registry cache live, or from a simulator profile for
`fedctl plan`). Feeds the filter and score plugins, the cycle (which copies the capacity
arrays into its own working state and charges placements there, never here) and `explain`.

Why numpy arrays beside the models: capacity fit and cost must be judged for every cluster
and every node flavor for each of ~100,000 jobs; a [cluster, flavor, resource] array turns
that into a few vector operations. The models stay available (`clusters[i]`) for the
per-cluster filters and for explanations. Column order of the resource axis is `RESOURCES`;
amounts are Kubernetes milli-units, exact in int64.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt

from federation.registry import keys
from federation.resources import ResourceList
from policies.models.accelerator import is_arch
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus, NodeFlavor, Prices, Taint
from policies.models.frq import FederatedResourceQuota
from policies.models.queue import Queue, chip_resource

__all__ = ["CPU", "DEVICES", "MEMORY", "PODS", "RESOURCES", "ClusterInfo", "Snapshot", "build"]

RESOURCES: Final = ("cpu", "memory", "devices", "pods")
CPU, MEMORY, DEVICES, PODS = 0, 1, 2, 3
_DEFAULT_PODS: Final = 110 * 1000
_GIB_MILLI: Final = 1000 * 1024**3

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
_A = TypeVar("_A", IntArray, FloatArray)


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
    flavors: tuple[NodeFlavor, ...]


def _frozen(array: _A) -> _A:
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class Snapshot:
    """Everything one cycle reads; arrays are read-only."""

    clusters: tuple[ClusterInfo, ...]
    index: Mapping[str, int]
    alloc: IntArray  # [C, F, R] allocatable of ONE node
    nodes: IntArray  # [C, F]
    free: IntArray  # [C, F, R] free over all nodes of the flavor
    largest: IntArray  # [C, F, R] free on the emptiest node
    flavor_chip: IntArray  # [C, F] index into `chips`; -1: no accelerator; -2: no flavor
    flavor_arch: IntArray  # [C, F] index into `arches`; -1: no flavor
    chips: tuple[str, ...]
    arches: tuple[str, ...]
    flavor_resource: tuple[tuple[str | None, ...], ...]
    price_cpu: FloatArray  # [C, 2] per core-hour: on-demand, spot (NaN: not offered)
    price_mem: FloatArray  # [C, 2] per GiB-hour
    price_dev: FloatArray  # [C, F, 2] per device-hour of the flavor's chip (NaN: unpriced)
    allocatable_total: IntArray  # [C, R] whole-cluster allocatable
    queues: Mapping[str, Queue] = field(default_factory=dict)
    quotas: Mapping[str, FederatedResourceQuota] = field(default_factory=dict)
    bindings: Mapping[str, Binding] = field(default_factory=dict)
    capacity: ResourceList = field(default_factory=ResourceList)
    device_resources: frozenset[str] = frozenset()
    soft_tainted: bool = False
    """Whether any cluster has a PreferNoSchedule taint (scores skip the check otherwise)."""
    tainted: bool = False
    """Whether any cluster has a NoSchedule or NoExecute taint."""
    ready: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def size(self) -> int:
        return len(self.clusters)

    def cluster(self, name: str) -> ClusterInfo:
        return self.clusters[self.index[name]]


def _vector(resources: ResourceList, device: str | None, *, pods_default: int) -> list[int]:
    pods = resources.amount("pods") if "pods" in resources else pods_default
    return [
        resources.amount("cpu"),
        resources.amount("memory"),
        resources.amount(device) if device else 0,
        pods,
    ]


_FLAVOR_ROWS: dict[int, tuple[NodeFlavor, tuple[list[int], list[int], list[int]]]] = {}
"""Per node flavor object (by identity, the object kept alongside): its allocatable, free
and emptiest-node vectors. The controller builds a snapshot every cycle from status objects
that mostly did not change, and reading three ResourceLists per flavor was most of it."""
_FLAVOR_ROWS_LIMIT = 65536


def _flavor_rows(flavor: NodeFlavor) -> tuple[list[int], list[int], list[int]]:
    hit = _FLAVOR_ROWS.get(id(flavor))
    if hit is not None and hit[0] is flavor:
        return hit[1]
    device = flavor.accelerator_resource
    per_node = _vector(flavor.allocatable, device, pods_default=_DEFAULT_PODS)
    rows = (
        per_node,
        _vector(flavor.free, device, pods_default=per_node[PODS] * flavor.node_count),
        _vector(flavor.largest_free, device, pods_default=per_node[PODS]),
    )
    if len(_FLAVOR_ROWS) >= _FLAVOR_ROWS_LIMIT:
        _FLAVOR_ROWS.clear()
    _FLAVOR_ROWS[id(flavor)] = (flavor, rows)
    return rows


def _price(table_value: object) -> float:
    return float(str(table_value)) if table_value is not None else float("nan")


def build(
    clusters: Sequence[Cluster],
    *,
    statuses: Mapping[str, ClusterStatus] | None = None,
    queues: Iterable[Queue] = (),
    quotas: Iterable[FederatedResourceQuota] = (),
    bindings: Iterable[Binding] | Mapping[str, Binding] = (),
) -> Snapshot:
    """A snapshot of `clusters` (sorted by name) with their statuses and the policies.

    `bindings` may come keyed by workload ref already (the scheduling loop keeps them so).
    """
    ordered = sorted(clusters, key=lambda c: c.name)
    joined = [
        (c, (statuses or {}).get(c.name, c.status) if statuses is not None else c.status)
        for c in ordered
    ]
    size = len(joined)
    width = max([len(s.flavors) for _, s in joined if s is not None] + [1])
    shape = (size, width, len(RESOURCES))
    alloc, free, largest = (np.zeros(shape, np.int64) for _ in range(3))
    nodes = np.zeros((size, width), np.int64)
    flavor_chip = np.full((size, width), -2, np.int64)
    flavor_arch = np.full((size, width), -1, np.int64)
    price_cpu = np.full((size, 2), np.nan)
    price_mem = np.full((size, 2), np.nan)
    price_dev = np.full((size, width, 2), np.nan)
    chips: dict[str, int] = {}
    arches: dict[str, int] = {}
    resources_of: list[tuple[str | None, ...]] = []
    infos: list[ClusterInfo] = []
    capacity: dict[str, int] = {}
    devices: set[str] = set()
    for ci, (cluster, status) in enumerate(joined):
        flavors = tuple(status.flavors) if status is not None else ()
        names: list[str | None] = []
        for fi, flavor in enumerate(flavors):
            device = flavor.accelerator_resource
            names.append(device)
            per_node, free[ci, fi], largest[ci, fi] = _flavor_rows(flavor)
            alloc[ci, fi] = per_node
            nodes[ci, fi] = flavor.node_count
            flavor_arch[ci, fi] = arches.setdefault(flavor.arch, len(arches))
            model = flavor.accelerator_model
            if model is not None and device:
                devices.add(device)
                flavor_chip[ci, fi] = chips.setdefault(model, len(chips))
                total = per_node[DEVICES] * flavor.node_count
                capacity[chip_resource(model)] = capacity.get(chip_resource(model), 0) + total
                capacity[device] = capacity.get(device, 0) + total
            else:
                flavor_chip[ci, fi] = -1
            for column, name in ((CPU, "cpu"), (MEMORY, "memory")):
                capacity[name] = capacity.get(name, 0) + per_node[column] * flavor.node_count
        resources_of.append(tuple(names))
        prices = cluster.spec.prices
        _fill_prices(prices, flavors, row=ci, arrays=(price_cpu, price_mem, price_dev))
        ready = status is not None and status.ready()
        apis = frozenset(
            (e.group_version, r.kind)
            for e in (status.api_enablements if status is not None else [])
            for r in e.resources
        )
        taints = (*cluster.spec.taints, *(status.taints if status is not None else []))
        infos.append(
            ClusterInfo(
                index=ci,
                name=cluster.name,
                region=cluster.spec.region,
                zone=cluster.spec.zone or "",
                provider=cluster.spec.provider or "",
                labels=MappingProxyType(dict(cluster.metadata.labels)),
                taints=tuple(taints),
                ready=ready,
                apis=apis,
                prices=prices,
                flavors=flavors,
            )
        )
    totals = (alloc * nodes[:, :, None]).sum(axis=1)
    return Snapshot(
        clusters=tuple(infos),
        index=MappingProxyType({c.name: c.index for c in infos}),
        alloc=_frozen(alloc),
        nodes=_frozen(nodes),
        free=_frozen(free),
        largest=_frozen(largest),
        flavor_chip=_frozen(flavor_chip),
        flavor_arch=_frozen(flavor_arch),
        chips=tuple(chips),
        arches=tuple(arches),
        flavor_resource=tuple(resources_of),
        price_cpu=_frozen(price_cpu),
        price_mem=_frozen(price_mem),
        price_dev=_frozen(price_dev),
        allocatable_total=_frozen(totals),
        queues=MappingProxyType({q.name: q for q in queues}),
        quotas=MappingProxyType({q.metadata.namespace or "default": q for q in quotas}),
        bindings=MappingProxyType(
            dict(bindings)
            if isinstance(bindings, Mapping)
            else {_binding_key(b): b for b in bindings}
        ),
        capacity=ResourceList(capacity),
        device_resources=frozenset(devices),
        soft_tainted=any(t.effect == "PreferNoSchedule" for c in infos for t in c.taints),
        tainted=any(t.effect != "PreferNoSchedule" for c in infos for t in c.taints),
        ready=np.array([c.ready for c in infos], dtype=bool),
    )


def _fill_prices(
    prices: Prices | None,
    flavors: Sequence[NodeFlavor],
    *,
    row: int,
    arrays: tuple[FloatArray, FloatArray, FloatArray],
) -> None:
    if prices is None:
        return
    price_cpu, price_mem, price_dev = arrays
    for column, table in enumerate((prices.on_demand, prices.spot)):
        if table is None:
            continue
        price_cpu[row, column] = _price(table.cpu)
        price_mem[row, column] = _price(table.memory)
        for fi, flavor in enumerate(flavors):
            if flavor.accelerator_model is not None:
                price_dev[row, fi, column] = _price(
                    table.accelerators.get(flavor.accelerator_model)
                )


def _binding_key(binding: Binding) -> str:
    ref = binding.spec.workload
    return str(
        keys.WorkloadRef(ref.namespace, keys.kind_segment(ref.api_version, ref.kind), ref.name)
    )


def gib_hours(memory_milli: int) -> float:
    """Memory in milli-bytes as GiB (for per-GiB-hour prices)."""
    return memory_milli / _GIB_MILLI


def is_plain_arch(chip: str) -> bool:
    """Whether a chip name is a CPU architecture rather than an accelerator model."""
    return is_arch(chip)
