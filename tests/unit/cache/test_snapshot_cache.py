"""`snapshot.build` with a `BuildCache`: the same snapshot as without one, whatever changed.

The scheduling loop keeps one cache for a leader term and builds every cycle. A reused
per-cluster part that went stale would not fail loudly: a cluster index shifted by a new
member, a chip numbered by where it was first seen, a fleet grown narrower or wider would
each put jobs on the wrong flavor or price. So after every kind of change between builds,
the cached snapshot is compared field by field with a fresh uncached one.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from bench import scheduler as bench_scheduler
from federation.cache import parts
from federation.cache import snapshot as snap
from federation.cache.currency import Currency
from policies.models.accelerator import AcceleratorProfile
from policies.models.base import ObjectMeta
from policies.models.cluster import Cluster, ClusterStatus, Condition, Taint
from tests.unit.scheduler import fleet


def assert_same(cached: snap.Snapshot, fresh: snap.Snapshot) -> None:
    for field in dataclasses.fields(snap.Snapshot):
        got, want = getattr(cached, field.name), getattr(fresh, field.name)
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype, field.name
            assert got.shape == want.shape, field.name
            assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), field.name
        elif field.name == "clusters":
            assert len(got) == len(want)
            for a, b in zip(got, want, strict=True):
                for part in dataclasses.fields(snap.ClusterInfo):
                    assert getattr(a, part.name) == getattr(b, part.name), (a.name, part.name)
        else:
            assert got == want, field.name
    assert list(cached.capacity) == list(fresh.capacity)
    assert_agrees_with_a_walk(cached)


def assert_agrees_with_a_walk(s: snap.Snapshot) -> None:
    """Chips and arches numbered by a walk over the clusters in order, flavor by flavor, and
    each flavor's row where the walk puts it (padding after the last one).

    Independent of how `build` assembles its arrays, so a slip shared by the cached and the
    uncached path still shows.
    """
    chips: dict[str, int] = {}
    arches: dict[str, int] = {}
    flavor_chip = np.full(s.flavor_chip.shape, -2, np.int64)
    flavor_arch = np.full(s.flavor_arch.shape, -1, np.int64)
    for ci, info in enumerate(s.clusters):
        assert info.index == ci == s.index[info.name]
        for fi, flavor in enumerate(info.flavors):
            flavor_arch[ci, fi] = arches.setdefault(flavor.arch, len(arches))
            model = flavor.accelerator_model
            chip = model is not None and flavor.accelerator_resource
            flavor_chip[ci, fi] = chips.setdefault(model, len(chips)) if model and chip else -1
            assert s.nodes[ci, fi] == flavor.node_count
            for column, name in ((snap.CPU, "cpu"), (snap.MEMORY, "memory")):
                assert s.alloc[ci, fi, column] == flavor.allocatable.amount(name)
                assert s.free[ci, fi, column] == flavor.free.amount(name)
                assert s.largest[ci, fi, column] == flavor.largest_free.amount(name)
            table = info.prices.on_demand if info.prices else None
            price = table.accelerators.get(model) if table and model else None
            assert np.array_equal(s.price_dev[ci, fi, 0], float(price or "nan"), equal_nan=True)
        padding = np.s_[ci, len(info.flavors) :]
        assert not s.alloc[padding].any() and not s.nodes[padding].any()
        assert np.isnan(s.price_dev[padding]).all()
    assert s.chips == tuple(chips)
    assert s.arches == tuple(arches)
    assert np.array_equal(s.flavor_chip, flavor_chip)
    assert np.array_equal(s.flavor_arch, flavor_arch)


class Fleet:
    """Clusters and the statuses the monitor reports for them, replaced object by object."""

    def __init__(self, clusters: list[Cluster]) -> None:
        self.clusters = {c.name: c for c in clusters}
        self.statuses = {c.name: c.status for c in clusters if c.status is not None}

    def build(self, cache: snap.BuildCache | None = None) -> snap.Snapshot:
        return snap.build(list(self.clusters.values()), statuses=self.statuses, cache=cache)

    def names(self) -> list[str]:
        return sorted(self.clusters)

    def status(self, name: str) -> ClusterStatus:
        return self.statuses.get(name) or self.clusters[name].status or ClusterStatus()


Change = Callable[[Fleet, random.Random], None]


def nothing(f: Fleet, rng: random.Random) -> None:
    pass


def _update_status(f: Fleet, name: str, **update: object) -> None:
    f.statuses[name] = f.status(name).model_copy(update=update)


def same_content_new_status(f: Fleet, rng: random.Random) -> None:
    name = rng.choice(f.names())
    f.statuses[name] = f.status(name).model_copy(deep=True)


def fewer_flavors(f: Fleet, rng: random.Random) -> None:
    # The widest cluster loses flavors, so the fleet may get narrower.
    name = max(f.names(), key=lambda n: len(f.status(n).flavors))
    _update_status(f, name, flavors=f.status(name).flavors[:1])


def more_flavors(f: Fleet, rng: random.Random) -> None:
    name = rng.choice(f.names())
    extra = [fleet.flavor(cpu=str(rng.randint(1, 64)), nodes=rng.randint(1, 9)) for _ in range(30)]
    _update_status(f, name, flavors=[*f.status(name).flavors, *extra])


def less_free(f: Fleet, rng: random.Random) -> None:
    name = rng.choice(f.names())
    flavors = list(f.status(name).flavors)
    if flavors:
        half = flavors[0].free.scaled(1)  # a new ResourceList object, the same amounts
        flavors[0] = flavors[0].model_copy(update={"free": half, "node_count": 1})
    _update_status(f, name, flavors=flavors)


def ready_flipped(f: Fleet, rng: random.Random) -> None:
    name = rng.choice(f.names())
    was = f.status(name).ready()
    condition = Condition(
        type="Ready", status="False" if was else "True", last_transition_time=fleet.NOW
    )
    _update_status(f, name, conditions=[condition])


def new_chip_first_in_an_early_cluster(f: Fleet, rng: random.Random) -> None:
    # A chip and an arch nobody had, in the first cluster's first flavor: every index after
    # it moves, in clusters whose own parts did not change.
    name = f.names()[0]
    newcomer = fleet.flavor(arch="s390x", chip="nvidia-l4", resource="nvidia.com/gpu", devices=2)
    _update_status(f, name, flavors=[newcomer, *f.status(name).flavors])


def status_tainted(f: Fleet, rng: random.Random) -> None:
    name = rng.choice(f.names())
    taint = Taint(key="cluster.fedctl.io/unreachable", effect="NoExecute", time_added=fleet.NOW)
    _update_status(f, name, taints=[taint])


def status_untainted(f: Fleet, rng: random.Random) -> None:
    for name in f.names():
        if f.status(name).taints:
            _update_status(f, name, taints=[])


def cluster_added_first(f: Fleet, rng: random.Random) -> None:
    added = fleet.cluster(
        "aaa-first",
        fleet.flavor(arch="ppc64le", chip="ascend-310p", resource="huawei.com/Ascend310"),
        fleet.flavor(chip="nvidia-a100-80gb", devices=8),
        gpu_prices={"ascend-310p": "0.9"},
    )
    f.clusters[added.name] = added
    f.statuses[added.name] = added.status or ClusterStatus()


def cluster_removed(f: Fleet, rng: random.Random) -> None:
    name = rng.choice(f.names())
    del f.clusters[name]
    f.statuses.pop(name, None)


def spec_changed(f: Fleet, rng: random.Random) -> None:
    name = rng.choice(f.names())
    old = f.clusters[name]
    prices = fleet.cluster("x", gpu_prices={"nvidia-a100-80gb": "9.5"}, cpu_price="0.3")
    spec = old.spec.model_copy(update={"prices": prices.spec.prices, "zone": "z-9"})
    metadata = ObjectMeta(name=name, labels={"tier": str(rng.randint(0, 9))})
    f.clusters[name] = old.model_copy(update={"spec": spec, "metadata": metadata})


def spec_tainted(f: Fleet, rng: random.Random) -> None:
    name = rng.choice(f.names())
    old = f.clusters[name]
    spec = old.spec.model_copy(
        update={"taints": [Taint(key="maintenance", effect="PreferNoSchedule")], "prices": None}
    )
    f.clusters[name] = old.model_copy(update={"spec": spec})


def status_dropped(f: Fleet, rng: random.Random) -> None:
    # No monitor record: the cluster's own status, here none at all.
    name = rng.choice(f.names())
    f.statuses.pop(name, None)
    f.clusters[name] = f.clusters[name].model_copy(update={"status": None})


CHANGES: dict[str, Change] = {
    "nothing changed": nothing,
    "a status rewritten with the same content": same_content_new_status,
    "the widest cluster loses flavors": fewer_flavors,
    "a cluster grows wider than the fleet": more_flavors,
    "a flavor's free amount and node count change": less_free,
    "Ready flips": ready_flipped,
    "a new chip and arch in the first cluster": new_chip_first_in_an_early_cluster,
    "the monitor taints a cluster": status_tainted,
    "the monitor lifts the taints": status_untainted,
    "a cluster that sorts first joins": cluster_added_first,
    "a cluster leaves": cluster_removed,
    "a spec's prices, zone and labels change": spec_changed,
    "a spec gains a taint and loses its prices": spec_tainted,
    "a cluster has no status": status_dropped,
}


def hand_made() -> list[Cluster]:
    return [
        fleet.cluster(
            "c-npu", fleet.flavor(arch="arm64", chip="ascend-910b", devices=8), region="cn-north"
        ),
        fleet.cluster("a-cpu", fleet.flavor(arch="arm64"), fleet.flavor(cpu="4", nodes=7)),
        fleet.cluster(
            "b-gpu",
            fleet.flavor(chip="nvidia-h100-80gb", devices=8, free_devices=3, largest_devices=1),
            fleet.flavor(chip="nvidia-a100-80gb", devices=4),
            fleet.flavor(),
            gpu_prices={"nvidia-h100-80gb": "6.5"},
            spot={"cpu": Decimal("0.01"), "memory": Decimal("0.001")},
            apis=[("batch/v1", "Job")],
        ),
    ]


FLEETS = [
    pytest.param(hand_made, id="three hand-made clusters"),
    pytest.param(
        lambda: bench_scheduler.make_fleet(12, random.Random(3), flavors=4), id="12 of 4 flavors"
    ),
    pytest.param(
        lambda: bench_scheduler.make_fleet(40, random.Random(11), flavors=20), id="40 of 20 flavors"
    ),
]


@pytest.mark.parametrize("make", FLEETS)
@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_one_change_after_a_warm_build(make: Callable[[], list[Cluster]], change: Change) -> None:
    f, cache = Fleet(make()), snap.BuildCache()
    assert_same(f.build(cache), f.build())
    change(f, random.Random(5))
    assert_same(f.build(cache), f.build())


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("make", FLEETS)
def test_a_long_sequence_of_changes(make: Callable[[], list[Cluster]], seed: int) -> None:
    rng = random.Random(seed)
    f, cache = Fleet(make()), snap.BuildCache()
    steps = [*CHANGES.values()] * 2
    rng.shuffle(steps)
    for step in steps:
        if len(f.clusters) < 2 and step in (cluster_removed, status_dropped):
            continue
        step(f, rng)
        assert_same(f.build(cache), f.build())
        assert len(cache) == len(f.clusters)


def test_clusters_without_a_statuses_mapping() -> None:
    clusters = bench_scheduler.make_fleet(10, random.Random(2), flavors=3)
    cache = snap.BuildCache()
    assert_same(snap.build(clusters, cache=cache), snap.build(clusters))
    clusters[4] = clusters[4].model_copy(update={"status": None})
    clusters[7] = clusters[7].model_copy(update={"status": hand_made()[2].status})
    assert_same(snap.build(clusters, cache=cache), snap.build(clusters))


def test_only_changed_clusters_are_recomputed(monkeypatch: pytest.MonkeyPatch) -> None:
    f, cache = Fleet(bench_scheduler.make_fleet(30, random.Random(4), flavors=5)), snap.BuildCache()
    f.build(cache)
    computed: list[str] = []
    part = parts.compute

    def counting(
        cluster: Cluster, status: ClusterStatus | None, *, index: int, **priced: Any
    ) -> object:
        computed.append(cluster.name)
        return part(cluster, status, index=index, **priced)

    monkeypatch.setattr(snap, "compute", counting)  # as `build` calls it
    f.build(cache)
    assert computed == []
    same_content_new_status(f, random.Random(1))
    cluster_added_first(f, random.Random(1))
    f.build(cache)
    assert len(computed) == 2
    assert "aaa-first" in computed


def test_snapshots_share_no_array_with_each_other_or_the_cache() -> None:
    f, cache = Fleet(hand_made()), snap.BuildCache()
    first, second = f.build(cache), f.build(cache)
    arrays = [field.name for field in dataclasses.fields(snap.Snapshot)]
    arrays = [name for name in arrays if isinstance(getattr(first, name), np.ndarray)]
    for name in arrays:
        a, b = getattr(first, name), getattr(second, name)
        assert not np.shares_memory(a, b), name
        assert name == "ready" or not a.flags.writeable, name
        a.setflags(write=True)  # a careless caller
        a[...] = 7
    assert_same(f.build(cache), f.build())


def test_a_build_in_another_currency_prices_every_cluster_again() -> None:
    clusters = hand_made()
    cache = snap.BuildCache()
    dollars = snap.build(clusters, cache=cache)
    euro = Currency("EUR", {"USD": Decimal("0.5")})
    converted = snap.build(clusters, cache=cache, currency=euro)
    assert_same(converted, snap.build(clusters, currency=euro))
    assert converted.currency == "EUR"
    gpu = dollars.index["b-gpu"]
    assert converted.price_cpu[gpu, 0] == dollars.price_cpu[gpu, 0] / 2
    assert np.nanmax(converted.price_dev[gpu, :, 0]) == 3.25  # 6.5 USD an H100-hour
    unrated = snap.build(clusters, cache=cache, currency=Currency("CNY"))
    assert np.isnan(unrated.price_cpu).all() and np.isnan(unrated.price_dev).all()
    assert {c.prices for c in unrated.clusters} == {None}
    assert unrated.cluster("b-gpu").price_note.startswith("priced in USD, which has no")


def test_a_changed_default_chip_price_prices_every_cluster_again() -> None:
    """A profile's `defaultPricePerHour` fills a chip the cluster does not price; the cache
    keeps no part priced under other defaults."""
    clusters = hand_made()
    cache = snap.BuildCache()

    def profile(model: str, price: str) -> AcceleratorProfile:
        return AcceleratorProfile.model_validate(
            {
                "metadata": {"name": model},
                "spec": {
                    "arch": "amd64",
                    "resourceName": "nvidia.com/gpu",
                    "defaultPricePerHour": price,
                },
            }
        )

    gpu = "b-gpu"
    listed = snap.build(clusters, cache=cache, profiles=[profile("nvidia-h100-80gb", "9")])
    assert np.nanmax(listed.price_dev[listed.index[gpu], :, 0]) == 6.5  # its own price wins
    bare = [
        c.model_copy(update={"spec": c.spec.model_copy(update={"prices": _without_chips(c)})})
        for c in clusters
    ]
    first = snap.build(bare, cache=cache, profiles=[profile("nvidia-h100-80gb", "9")])
    assert np.nanmax(first.price_dev[first.index[gpu], :, 0]) == 9
    again = snap.build(bare, cache=cache, profiles=[profile("nvidia-h100-80gb", "7")])
    assert np.nanmax(again.price_dev[again.index[gpu], :, 0]) == 7
    assert_same(again, snap.build(bare, profiles=[profile("nvidia-h100-80gb", "7")]))
    none = snap.build(bare, cache=cache)
    assert np.isnan(none.price_dev[none.index[gpu], :, 0]).all()


def _without_chips(cluster: Cluster) -> Any:
    prices = cluster.spec.prices
    if prices is None:
        return None
    table = prices.on_demand.model_copy(update={"accelerators": {}})
    return prices.model_copy(update={"on_demand": table, "spot": None})
