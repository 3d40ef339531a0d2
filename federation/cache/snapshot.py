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

Why a `BuildCache`: the scheduling loop builds a snapshot every cycle, and between two
cycles most Cluster and ClusterStatus objects are the very same objects. With the cache, a
build recomputes only the clusters whose objects were replaced (their `parts`) and assembles
the fleet's arrays from per-cluster blocks in a few vector operations; the result is the
same snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from itertools import chain
from operator import itemgetter
from types import MappingProxyType
from typing import Final, NamedTuple, TypeVar

import numpy as np

from federation.cache.currency import Currency
from federation.cache.parts import (
    ALLOC,
    ARCH,
    CHIP,
    COLUMNS,
    CPU,
    DEVICES,
    FREE,
    GROUPED,
    LARGEST,
    MEMORY,
    NODES,
    PODS,
    RESOURCES,
    USD,
    BoolArray,
    ClusterInfo,
    FloatArray,
    IntArray,
    Part,
    compute,
    frozen,
)
from federation.registry import keys
from federation.resources import ResourceList
from policies.models.accelerator import (
    NO_DEVICE_RENAMES,
    AcceleratorProfile,
    ChipDevices,
    is_arch,
)
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.frq import FederatedResourceQuota
from policies.models.queue import Queue

__all__ = [
    "CPU",
    "DEVICES",
    "MEMORY",
    "PODS",
    "RESOURCES",
    "BoolArray",
    "BuildCache",
    "ClusterInfo",
    "FloatArray",
    "IntArray",
    "Snapshot",
    "build",
    "device_defaults",
]

_GIB_MILLI: Final = 1000 * 1024**3
_A = TypeVar("_A", IntArray, FloatArray)


@dataclass(frozen=True)
class Snapshot:
    """Everything one cycle reads; arrays are read-only."""

    clusters: tuple[ClusterInfo, ...]
    index: Mapping[str, int]
    alloc: IntArray  # [C, F, R] allocatable of ONE node
    nodes: IntArray  # [C, F]
    free: IntArray  # [C, F, R] free over all nodes of the flavor
    largest: IntArray  # [C, F, R] free on the emptiest node
    group_free: IntArray  # [C, F, G, R] free on each node of a group (`NodeFlavor.free_nodes`)
    group_count: IntArray  # [C, F, G] nodes in the group (0: no group)
    grouped: BoolArray  # [C, F] the status reports the groups (else one group, all empty)
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
    located: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Workload ref -> replicas per cluster where a workload with no Binding still runs
    copies (its Binding lost from the registry): placed as if its Binding named them."""
    capacity: ResourceList = field(default_factory=ResourceList)
    device_resources: frozenset[str] = frozenset()
    chip_devices: ChipDevices = NO_DEVICE_RENAMES
    """The device resource each chip's AcceleratorProfile names: a pod is charged as the
    propagator renders it for the chip it runs on."""
    soft_tainted: bool = False
    """Whether any cluster has a PreferNoSchedule taint (scores skip the check otherwise)."""
    tainted: bool = False
    """Whether any cluster has a NoSchedule or NoExecute taint."""
    ready: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    currency: str = "USD"
    """The currency every price here is in (`currency.Currency`)."""

    @property
    def size(self) -> int:
        return len(self.clusters)

    def cluster(self, name: str) -> ClusterInfo:
        return self.clusters[self.index[name]]


class _Arrays(NamedTuple):
    """The snapshot's arrays and the names their chip and arch indices point into."""

    alloc: IntArray
    free: IntArray
    largest: IntArray
    group_free: IntArray
    group_count: IntArray
    grouped: BoolArray
    nodes: IntArray
    flavor_chip: IntArray
    flavor_arch: IntArray
    chips: tuple[str, ...]
    arches: tuple[str, ...]
    price_cpu: FloatArray
    price_mem: FloatArray
    price_dev: FloatArray
    allocatable_total: IntArray


class BuildCache:
    """What `build` computed per cluster last time, for a caller that builds over and over.

    The scheduling loop builds a snapshot every cycle from Cluster and ClusterStatus objects
    that are mostly the very objects of the cycle before (the registry mirrors replace an
    object only when it is written). A cluster's part is reused only while both objects are
    the same by identity: comparing content would cost about as much as recomputing, and a
    status rewritten with the same content is simply recomputed. Parts hold references to
    their objects, so an id cannot be taken by a new object while it is remembered. Holds
    the clusters of the last build only. Not thread-safe: one owner.
    """

    __slots__ = ("_currency", "_defaults", "_parts")

    def __init__(self) -> None:
        self._parts: dict[str, Part] = {}
        self._currency: Currency | None = None
        self._defaults: Mapping[str, Decimal] = {}

    def __len__(self) -> int:
        return len(self._parts)


def build(
    clusters: Sequence[Cluster],
    *,
    statuses: Mapping[str, ClusterStatus] | None = None,
    queues: Iterable[Queue] = (),
    quotas: Iterable[FederatedResourceQuota] = (),
    bindings: Iterable[Binding] | Mapping[str, Binding] = (),
    cache: BuildCache | None = None,
    currency: Currency = USD,
    profiles: Iterable[AcceleratorProfile] = (),
) -> Snapshot:
    """A snapshot of `clusters` (sorted by name) with their statuses and the policies.

    `bindings` may come keyed by workload ref already (the scheduling loop keeps them so).
    With a `cache`, only clusters whose spec or status object is not the one of the last
    build with that cache are recomputed; the snapshot is the same as without it. Prices
    are converted to `currency` (`currency.Currency`); a chip a cluster's on-demand prices
    leave out is priced at its profile's `defaultPricePerHour` (in `currency`), as the
    AcceleratorProfile promises, rather than leaving the whole pod unpriced there.
    """
    profiles = list(profiles)
    defaults = device_defaults(profiles)
    parts = _parts(clusters, statuses=statuses, cache=cache, currency=currency, defaults=defaults)
    infos = tuple(p.info for p in parts)
    arrays = _assemble(parts)
    capacity: dict[str, int] = {}
    for part in parts:
        for name, amount in part.capacity.items():
            capacity[name] = capacity.get(name, 0) + amount
    return Snapshot(
        clusters=infos,
        index=MappingProxyType({c.name: c.index for c in infos}),
        **arrays._asdict(),
        flavor_resource=tuple(p.resources for p in parts),
        queues=MappingProxyType({q.name: q for q in queues}),
        quotas=MappingProxyType({q.metadata.namespace or "default": q for q in quotas}),
        bindings=MappingProxyType(
            dict(bindings)
            if isinstance(bindings, Mapping)
            else {_binding_key(b): b for b in bindings}
        ),
        capacity=ResourceList(capacity),
        device_resources=frozenset().union(*(p.devices for p in parts)),
        chip_devices=ChipDevices.of(profiles),
        soft_tainted=any(t.effect == "PreferNoSchedule" for c in infos for t in c.taints),
        tainted=any(t.effect != "PreferNoSchedule" for c in infos for t in c.taints),
        ready=np.array([c.ready for c in infos], dtype=bool),
        currency=currency.code,
    )


def _parts(
    clusters: Sequence[Cluster],
    *,
    statuses: Mapping[str, ClusterStatus] | None,
    cache: BuildCache | None,
    currency: Currency,
    defaults: Mapping[str, Decimal],
) -> list[Part]:
    """Each cluster's part in name order: the cached one while its objects (and the
    currency and default chip prices it is priced with) are the same."""
    same = cache is not None and cache._currency == currency and cache._defaults == defaults
    known = cache._parts if cache is not None and same else {}
    parts: list[Part] = []
    named = sorted(((c.name, c) for c in clusters), key=itemgetter(0))
    for ci, (name, cluster) in enumerate(named):
        status = cluster.status if statuses is None else statuses.get(name, cluster.status)
        part = known.get(name)
        if part is None or part.cluster is not cluster or part.status is not status:
            part = compute(cluster, status, index=ci, currency=currency, device_defaults=defaults)
        elif part.info.index != ci:
            part = replace(part, info=replace(part.info, index=ci))
        parts.append(part)
    if cache is not None:
        cache._parts = {name: part for (name, _), part in zip(named, parts, strict=True)}
        cache._currency = currency
        cache._defaults = defaults
    return parts


def device_defaults(profiles: Iterable[object]) -> dict[str, Decimal]:
    """Chip model -> `defaultPricePerHour`, of the AcceleratorProfiles among `profiles`
    that set one (other objects are passed over, so a caller may hand in all it holds)."""
    return {
        p.metadata.name: p.spec.default_price_per_hour
        for p in profiles
        if isinstance(p, AcceleratorProfile) and p.spec.default_price_per_hour is not None
    }


def _assemble(parts: Sequence[Part]) -> _Arrays:
    """The [C, F, ...] arrays from the per-cluster blocks, padded to the widest cluster.

    Every array returned is new and frozen: the parts' blocks are copied, never handed out,
    so a snapshot shares no memory with the cache or with another snapshot.
    """
    size = len(parts)
    counts = np.array([len(p.block) for p in parts], np.int64)
    width = max([*counts.tolist(), 1])
    present = np.arange(width)[None, :] < counts[:, None]  # row-major, as the parts in order
    flat = _joined([p.block for p in parts], (COLUMNS,), np.int64)
    chips, flat[:, CHIP] = _numbered(parts, counts, flat[:, CHIP], chips=True)
    arches, flat[:, ARCH] = _numbered(parts, counts, flat[:, ARCH], chips=False)
    block = np.zeros((size, width, COLUMNS), np.int64)
    block[:, :, CHIP], block[:, :, ARCH] = -2, -1
    block[present] = flat
    price_dev = np.full((size, width, 2), np.nan)
    price_dev[present] = _joined([p.price_dev for p in parts], (2,), np.float64)
    base = _joined([p.price_base for p in parts], (4,), np.float64)
    alloc, nodes = _copy(block[:, :, ALLOC]), _copy(block[:, :, NODES])
    depth = max([p.groups.shape[1] for p in parts] or [1])
    groups = np.zeros((size, width, depth, len(RESOURCES) + 1), np.int64)
    groups[present] = _joined(
        [np.pad(p.groups, ((0, 0), (0, depth - p.groups.shape[1]), (0, 0))) for p in parts],
        (depth, len(RESOURCES) + 1),
        np.int64,
    )
    return _Arrays(
        alloc=alloc,
        free=_copy(block[:, :, FREE]),
        largest=_copy(block[:, :, LARGEST]),
        group_free=_copy(groups[..., :-1]),
        group_count=_copy(groups[..., -1]),
        grouped=frozen(block[:, :, GROUPED] > 0),
        nodes=nodes,
        flavor_chip=_copy(block[:, :, CHIP]),
        flavor_arch=_copy(block[:, :, ARCH]),
        chips=chips,
        arches=arches,
        price_cpu=_copy(base[:, 0:2]),
        price_mem=_copy(base[:, 2:4]),
        price_dev=frozen(price_dev),
        allocatable_total=frozen(np.einsum("cfr,cf->cr", alloc, nodes)),
    )


def _copy(view: _A) -> _A:
    return frozen(np.ascontiguousarray(view))


def _numbered(
    parts: Sequence[Part], counts: IntArray, local: IntArray, *, chips: bool
) -> tuple[tuple[str, ...], IntArray]:
    """Chip (or arch) names of the fleet in index order, and every flavor's index into them.

    `local` holds each flavor's index into its own cluster's names. Flattened over the
    clusters in order, each cluster's names are first seen in the same order as over its
    flavors, so `dict.fromkeys` numbers them as a flavor-by-flavor walk of the fleet would.
    """
    own = [p.chip_names if chips else p.arch_names for p in parts]
    flat = list(chain.from_iterable(own))
    names = tuple(dict.fromkeys(flat))
    index = {name: i for i, name in enumerate(names)}
    lookup = np.array([*(index[name] for name in flat), -1], np.int64)  # last: none
    lengths = np.array([len(names) for names in own], np.int64)
    starts = np.repeat(np.cumsum(lengths) - lengths, counts)
    return names, lookup[np.where(local >= 0, local + starts, len(flat))]


def _joined(blocks: Sequence[_A], tail: tuple[int, ...], dtype: type) -> _A:
    """The blocks one after another, in a new array (also when there are none)."""
    if not blocks:
        return np.zeros((0, *tail), dtype)
    return np.concatenate(blocks)


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
