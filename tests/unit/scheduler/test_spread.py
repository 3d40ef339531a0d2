"""Spread selection, written from Karmada's `spreadconstraint` package and its tests."""

from __future__ import annotations

import random

import pytest

from federation.scheduler import division, spread
from federation.scheduler.spread import Constraint, ScoredCluster


def cluster(
    name: str,
    score: int,
    available: int = 0,
    *,
    region: str = "",
    zone: str = "",
    provider: str = "",
    labels: dict[str, str] | None = None,
) -> ScoredCluster:
    return ScoredCluster(
        name,
        score,
        available,
        region=region,
        zone=zone,
        provider=provider,
        labels=labels or {},
    )


KARMADA_EXAMPLE = [
    cluster("member1", 60, 40),
    cluster("member2", 50, 30),
    cluster("member3", 40, 60),
]

# r1: one strong cluster; r2: two medium ones; r3: one small one (10 replicas, divided).
REGIONS = [
    cluster("r1-a", 100, 10, region="r1"),
    cluster("r2-a", 50, 3, region="r2"),
    cluster("r2-b", 50, 3, region="r2"),
    cluster("r3-a", 100, 2, region="r3"),
]


@pytest.mark.parametrize(
    ("clusters", "constraints", "workload", "previous", "expected"),
    [
        pytest.param(
            [cluster("a", 50, 5), cluster("b", 80, 1), cluster("c", 50, 9)],
            [],
            ("dynamic_weight", 3),
            None,
            ["b", "c", "a"],
            id="no constraint: every cluster, by score, then free capacity",
        ),
        pytest.param(
            [cluster("a", 50, 5), cluster("b", 50, 12)],
            [],
            ("dynamic_weight", 3),
            {"a": 10},
            ["a", "b"],
            id="replicas a cluster already holds count as its capacity",
        ),
        pytest.param(
            [cluster("a", 0), cluster("b", 0)],
            [Constraint("cluster", min_groups=5)],
            ("static_weight", 3),
            None,
            ["a", "b"],
            id="static weights ignore spread constraints, as in Karmada",
        ),
        pytest.param(
            [cluster("a", 10), cluster("b", 30), cluster("c", 20), cluster("d", 0)],
            [Constraint("cluster", min_groups=1, max_groups=2)],
            ("duplicated", 3),
            None,
            ["b", "c"],
            id="spread by cluster takes the best max_groups clusters",
        ),
        pytest.param(
            KARMADA_EXAMPLE,
            [Constraint("cluster", min_groups=1, max_groups=2)],
            ("dynamic_weight", 80),
            None,
            ["member1", "member3"],
            id="the weakest chosen cluster is swapped for a bigger one until 80 replicas fit",
        ),
        pytest.param(
            KARMADA_EXAMPLE,
            [Constraint("cluster", min_groups=1, max_groups=2)],
            ("duplicated", 80),
            None,
            ["member1", "member2"],
            id="duplicated work ignores free capacity when choosing clusters",
        ),
        pytest.param(
            KARMADA_EXAMPLE,
            [Constraint("cluster", min_groups=2)],
            ("aggregated", 5),
            None,
            ["member1", "member2", "member3"],
            id="max_groups 0 means no upper bound",
        ),
    ],
)
def test_spread_by_cluster(
    clusters: list[ScoredCluster],
    constraints: list[Constraint],
    workload: tuple[str, int],
    previous: dict[str, int] | None,
    expected: list[str],
) -> None:
    strategy, replicas = workload
    chosen = spread.select(
        clusters, constraints, strategy=strategy, replicas=replicas, previous=previous
    )
    assert chosen == expected


@pytest.mark.parametrize(
    ("constraints", "expected"),
    [
        pytest.param(
            [Constraint("region", min_groups=2, max_groups=2)],
            ["r1-a", "r2-a"],
            id="region only: the two best-scored regions, one cluster each (Karmada)",
        ),
        pytest.param(
            [Constraint("region", min_groups=2, max_groups=2), Constraint("cluster", 3)],
            ["r1-a", "r2-a", "r2-b"],
            id="regions are chosen so that together they hold at least 3 clusters",
        ),
        pytest.param(
            [
                Constraint("region", min_groups=2, max_groups=2),
                Constraint("cluster", min_groups=1, max_groups=2),
            ],
            ["r1-a", "r2-a"],
            id="the cluster max_groups caps the clusters taken from the chosen regions",
        ),
        pytest.param(
            [Constraint("region", min_groups=3, max_groups=3), Constraint("cluster", 1)],
            ["r1-a", "r2-a", "r3-a", "r2-b"],
            id="each chosen region gives its best cluster (regions by score), then the rest",
        ),
    ],
)
def test_spread_by_region(constraints: list[Constraint], expected: list[str]) -> None:
    chosen = spread.select(REGIONS, constraints, strategy="dynamic_weight", replicas=10)
    assert chosen == expected


def test_a_single_group_that_satisfies_everything_beats_a_larger_set_starting_with_it() -> None:
    clusters = [
        cluster("big-a", 100, 5, region="big"),
        cluster("big-b", 90, 5, region="big"),
        cluster("small-a", 50, 10, region="small"),
    ]
    constraints = [Constraint("region", min_groups=1, max_groups=2), Constraint("cluster", 2)]
    chosen = spread.select(clusters, constraints, strategy="dynamic_weight", replicas=4)
    assert chosen == ["big-a", "big-b"]


def test_duplicated_regions_are_scored_by_clusters_that_can_hold_every_replica() -> None:
    clusters = [
        cluster("strong-but-small", 100, 5, region="a"),
        cluster("weak-but-large", 10, 20, region="b"),
    ]
    constraints = [Constraint("region", min_groups=1, max_groups=1), Constraint("cluster", 1)]
    chosen = spread.select(clusters, constraints, strategy="duplicated", replicas=10)
    assert chosen == ["weak-but-large"]


@pytest.mark.parametrize(
    ("clusters", "constraints", "expected"),
    [
        pytest.param(
            [
                cluster("a", 10, zone="z1"),
                cluster("b", 20, zone="z2"),
                cluster("c", 30, zone="z2"),
            ],
            [Constraint("zone", min_groups=2, max_groups=2), Constraint("cluster", 3)],
            ["c", "a", "b"],
            id="zones spread like regions",
        ),
        pytest.param(
            [cluster("a", 10, provider="aws"), cluster("b", 20, provider="gcp")],
            [Constraint("provider", min_groups=2, max_groups=2)],
            ["b", "a"],
            id="providers spread like regions",
        ),
        pytest.param(
            [
                cluster("a", 10, labels={"rack": "1"}),
                cluster("b", 20, labels={"rack": "2"}),
                cluster("c", 30, labels={"rack": "2"}),
                cluster("unlabelled", 99),
            ],
            [Constraint("label:rack", min_groups=2, max_groups=2)],
            ["c", "a"],
            id="a label spreads like a field and clusters without it are left out",
        ),
    ],
)
def test_other_groupings_reuse_the_region_algorithm(
    clusters: list[ScoredCluster], constraints: list[Constraint], expected: list[str]
) -> None:
    chosen = spread.select(clusters, constraints, strategy="aggregated", replicas=2)
    assert chosen == expected


@pytest.mark.parametrize(
    ("clusters", "constraints", "strategy", "replicas", "words"),
    [
        pytest.param(
            [
                cluster("a", 10, region="eu-west"),
                cluster("b", 10, region="us-east"),
                cluster("c", 10, region="us-east"),
            ],
            [Constraint("region", min_groups=3)],
            "dynamic_weight",
            3,
            "spread by region needs at least 3 regions, only 2 have a feasible cluster: "
            "eu-west, us-east",
            id="too few regions have a feasible cluster",
        ),
        pytest.param(
            [cluster("a", 10, region="eu-west"), cluster("b", 10)],
            [Constraint("region", min_groups=2)],
            "dynamic_weight",
            3,
            "spread by region needs at least 2 regions, only 1 has a feasible cluster: "
            "eu-west (1 feasible cluster has no region)",
            id="clusters without a region are counted in the message",
        ),
        pytest.param(
            [cluster("a", 10, labels={"team": "x"})],
            [Constraint("label:team", min_groups=2)],
            "aggregated",
            3,
            "spread by label team needs at least 2 values, only 1 has a feasible cluster: x",
            id="label groups are called values",
        ),
        pytest.param(
            [cluster("a", 10, region="r1"), cluster("b", 10, region="r2")],
            [Constraint("region", min_groups=1, max_groups=1), Constraint("cluster", 2)],
            "dynamic_weight",
            3,
            "spread by region (1-1 regions) cannot meet spread by cluster (at least 2 "
            "clusters): no such set of regions holds enough feasible clusters; feasible "
            "clusters per region: r1 (1), r2 (1)",
            id="no allowed set of regions holds enough clusters",
        ),
        pytest.param(
            [cluster("a", 10), cluster("b", 20)],
            [Constraint("cluster", min_groups=3)],
            "duplicated",
            3,
            "spread by cluster needs at least 3 clusters, only 2 are feasible: b, a",
            id="too few feasible clusters",
        ),
        pytest.param(
            KARMADA_EXAMPLE,
            [Constraint("cluster", min_groups=1, max_groups=2)],
            "dynamic_weight",
            200,
            "spread by cluster: at most 2 clusters can hold only 100 of 200 replicas "
            "(member1=40, member3=60)",
            id="the allowed number of clusters cannot hold the replicas",
        ),
    ],
)
def test_unmet_constraints_say_which_and_why(
    clusters: list[ScoredCluster],
    constraints: list[Constraint],
    strategy: str,
    replicas: int,
    words: str,
) -> None:
    with pytest.raises(division.Unschedulable) as caught:
        spread.select(clusters, constraints, strategy=strategy, replicas=replicas)
    assert str(caught.value) == words


@pytest.mark.parametrize(
    ("constraints", "strategy"),
    [
        pytest.param(
            [Constraint("region"), Constraint("zone")],
            "dynamic_weight",
            id="two group constraints are refused, not silently ignored",
        ),
        pytest.param(
            [Constraint("cluster"), Constraint("cluster")], "duplicated", id="two cluster rules"
        ),
        pytest.param([Constraint("rack")], "duplicated", id="an unknown field"),
        pytest.param([Constraint("label:")], "duplicated", id="a label without a key"),
        pytest.param([], "weighted", id="an unknown strategy"),
    ],
)
def test_malformed_constraints_are_refused(constraints: list[Constraint], strategy: str) -> None:
    with pytest.raises(ValueError):
        spread.select([cluster("a", 1)], constraints, strategy=strategy, replicas=1)


def test_spread_output_feeds_division() -> None:
    chosen = spread.select(
        REGIONS,
        [Constraint("region", min_groups=2, max_groups=2), Constraint("cluster", 3)],
        strategy="dynamic_weight",
        replicas=10,
    )
    by_name = {c.name: c for c in REGIONS}
    candidates = [division.Candidate(n, available=by_name[n].available) for n in chosen]
    assert division.divide("dynamic_weight", 10, candidates) == {
        "r1-a": 6,
        "r2-a": 2,
        "r2-b": 2,
    }


def _walk_every_set(
    groups: list[spread._Group], *, minimum: int, maximum: int, target: int
) -> tuple[spread._Group, ...]:
    """Karmada's `selectGroups` as written: every recorded set by a depth-first walk, the
    best by weight, value and order, then the swap for a recorded set of its heaviest
    groups. The reference the polynomial search must agree with."""
    order = sorted(groups, key=lambda g: (g.value, -g.weight, g.name))
    paths: list[tuple[int, tuple[spread._Group, ...], int, int]] = []
    stack: list[spread._Group] = []

    def visit(total: int, begin: int) -> None:
        if total >= target and minimum <= len(stack) <= maximum:
            ranked = tuple(sorted(stack, key=lambda g: (-g.weight, g.name)))
            weight, value = sum(g.weight for g in ranked), sum(g.value for g in ranked)
            paths.append((len(paths) + 1, ranked, weight, value))
            return
        if len(stack) >= maximum:
            return
        for index in range(begin, len(order)):
            stack.append(order[index])
            visit(total + order[index].value, index + 1)
            stack.pop()

    visit(0, 0)
    if not paths:
        return ()
    paths.sort(key=lambda p: (-p[2], -p[3], p[0]))
    best = paths[0][1]
    for _, found, _, _ in paths[1:]:
        shorter = len(found) < len(best)
        if shorter and all(a.name == b.name for a, b in zip(best, found, strict=False)):
            best = found
    return best


def test_group_selection_agrees_with_walking_every_set() -> None:
    """Random fleets of up to 9 groups: equal weights and values (ties broken by name and
    walk order), a cluster constraint's target above and below `minimum`, and caps."""
    rng = random.Random(1206)
    found = 0
    for _ in range(3000):
        names = rng.sample("abcdefghijklmnop", rng.randint(1, 9))
        groups = [
            spread._Group(n, rng.randint(1, 4), rng.choice([0, 5, 10, rng.randint(0, 40)]))
            for n in names
        ]
        minimum = rng.randint(1, 5)
        maximum = rng.choice([len(groups), rng.randint(1, len(groups) + 1)])
        target = rng.choice([0, 0, rng.randint(0, 12)])
        expected = _walk_every_set(groups, minimum=minimum, maximum=maximum, target=target)
        chosen = spread._select_groups(groups, minimum=minimum, maximum=maximum, target=target)
        assert chosen == expected, (groups, minimum, maximum, target)
        found += bool(expected)
    assert found > 1000  # most draws have an answer to agree on


def test_many_groups_are_selected_without_walking_every_set() -> None:
    """60 zones with `minGroups: 10` are 75 billion sets to walk (the walk took hours; 40
    zones with 6 took 13 s per decision). Counted in reads of the groups' numbers, so a
    return to walking fails at once rather than hangs."""
    reads = [0]

    class Counted(spread._Group):
        def __getattribute__(self, name: str) -> object:
            if name in ("value", "weight"):
                reads[0] += 1
                if reads[0] > 1_000_000:
                    raise AssertionError("more than a million reads to select 10 of 60 groups")
            return super().__getattribute__(name)

    groups = [Counted(f"z{i:02d}", 1 + i % 3, 100 - i) for i in range(60)]

    chosen = spread._select_groups(groups, minimum=10, maximum=60, target=0)

    # Every set of 10 is recorded (target 0); the ten heaviest win, and the swap finds no
    # shorter recorded set (each needs 10 groups).
    assert [g.name for g in chosen] == [f"z{i:02d}" for i in range(10)]
