"""Replica division, written from Karmada's documented behaviour (v1.16+, Webster method).

Cases come from Karmada's `webstermethod_test.go`, `division_algorithm_test.go`,
`assignment_test.go` and `binding_test.go`, restated as behaviour; where Webster changes a
pre-v1.16 expectation the case says so.
"""

from __future__ import annotations

import random

import pytest

from federation import errors
from federation.scheduler import division
from federation.scheduler.division import Candidate

C = Candidate


def weights(**by_name: int) -> list[Candidate]:
    return [Candidate(name, weight=weight) for name, weight in by_name.items()]


def free(**by_name: int) -> list[Candidate]:
    return [Candidate(name, available=available) for name, available in by_name.items()]


# FNV-32a test vectors: "a" -> 0xe40c292c (even), "b" -> 0xe70c2de5 (odd).
EVEN_SEED = "a"
ODD_SEED = "b"


WIKIPEDIA_VOTES = weights(PartyA=100_000, PartyB=80_000, PartyC=30_000, PartyD=20_000)


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        pytest.param(1, {"PartyA": 1}, id="round 1: the largest party takes the first seat"),
        pytest.param(2, {"PartyA": 1, "PartyB": 1}, id="round 2: B's 80k beats A's 100k/3"),
        pytest.param(3, {"PartyA": 2, "PartyB": 1}, id="round 3"),
        pytest.param(4, {"PartyA": 2, "PartyB": 1, "PartyC": 1}, id="round 4: C enters"),
        pytest.param(5, {"PartyA": 2, "PartyB": 2, "PartyC": 1}, id="round 5"),
        pytest.param(6, {"PartyA": 2, "PartyB": 2, "PartyC": 1, "PartyD": 1}, id="round 6"),
        pytest.param(7, {"PartyA": 3, "PartyB": 2, "PartyC": 1, "PartyD": 1}, id="round 7"),
        pytest.param(8, {"PartyA": 3, "PartyB": 3, "PartyC": 1, "PartyD": 1}, id="round 8"),
    ],
)
def test_static_weight_follows_the_sainte_lague_rounds_of_the_classic_example(
    replicas: int, expected: dict[str, int]
) -> None:
    assert division.divide("static_weight", replicas, WIKIPEDIA_VOTES) == expected


@pytest.mark.parametrize(
    ("replicas", "candidates", "expected"),
    [
        pytest.param(
            4,
            weights(Alpha=1200, Beta=900, Gamma=400),
            {"Alpha": 2, "Beta": 1, "Gamma": 1},
            id="4 seats over 1200:900:400 give 2:1:1",
        ),
        pytest.param(9, weights(A=1, B=2), {"A": 3, "B": 6}, id="9 at 1:2 divides exactly"),
        pytest.param(9, weights(A=1, B=3), {"A": 2, "B": 7}, id="9 at 1:3 rounds to 2:7"),
        pytest.param(5, weights(A=1, B=1), {"A": 3, "B": 2}, id="5 at 1:1 gives the odd one to A"),
        pytest.param(
            2,
            weights(a=1, b=0, c=1),
            {"a": 1, "c": 1},
            id="weight 0 excludes a cluster",
        ),
        pytest.param(
            3,
            weights(a=0, b=0, c=0),
            {"a": 1, "b": 1, "c": 1},
            id="all weights 0 fall back to equal weights",
        ),
        pytest.param(
            1,
            weights(a=5, b=1),
            {"a": 1},
            id="a cluster that gets nothing is left out, not listed with 0",
        ),
        pytest.param(
            5,
            [C("big", weight=1, available=0), C("small", weight=1, available=100)],
            {"big": 3, "small": 2},
            id="capacity is ignored: a full cluster still gets its share and the odd replica",
        ),
        pytest.param(0, weights(a=1, b=1), {}, id="zero replicas give an empty result"),
    ],
)
def test_static_weight_divides_by_weights_from_zero(
    replicas: int, candidates: list[Candidate], expected: dict[str, int]
) -> None:
    assert division.divide("static_weight", replicas, candidates) == expected


def test_static_weight_ignores_the_previous_result() -> None:
    fresh = division.divide("static_weight", 7, weights(a=1, b=1, c=1))
    after = division.divide(
        "static_weight", 7, weights(a=1, b=1, c=1), previous={"a": 0, "b": 0, "c": 7}
    )
    assert after == fresh == {"a": 3, "b": 2, "c": 2}


def test_static_weight_never_takes_replicas_away_when_the_total_grows() -> None:
    # Karmada issue #6735: the pre-v1.16 remainder rule could shrink a cluster on scale-up.
    candidates = weights(southcentralus=170, westus=110, eastus2=60)
    before = division.divide("static_weight", 1, candidates)
    for total in range(2, 60):
        after = division.divide("static_weight", total, candidates)
        assert all(after.get(name, 0) >= count for name, count in before.items()), total
        before = after


@pytest.mark.parametrize(
    ("replicas", "candidates", "expected"),
    [
        pytest.param(
            12,
            free(member1=18, member2=12, member3=6),
            {"member1": 6, "member2": 4, "member3": 2},
            id="12 over free 18:12:6 divides exactly",
        ),
        pytest.param(
            12,
            free(member1=6, member2=8, member3=10),
            {"member1": 3, "member2": 4, "member3": 5},
            id="12 over free 6:8:10 divides exactly",
        ),
        pytest.param(
            12,
            free(member1=6, member2=12, member3=6),
            {"member1": 3, "member2": 6, "member3": 3},
            id="12 over free 6:12:6 divides exactly",
        ),
        pytest.param(
            12,
            free(member1=20, member2=12, member3=6),
            {"member1": 6, "member2": 4, "member3": 2},
            id="12 over free 20:12:6 is 6:4:2 by Webster (the old floor-and-remainder gave 7:4:1)",
        ),
        pytest.param(
            12,
            free(member1=8, member2=8, member3=10),
            {"member1": 4, "member2": 4, "member3": 4},
            id="12 over free 8:8:10 is 4:4:4 by Webster (the old rule gave 4:3:5)",
        ),
        pytest.param(
            3,
            free(a=0, b=5),
            {"b": 3},
            id="a cluster without free capacity gets nothing",
        ),
    ],
)
def test_dynamic_weight_first_placement_divides_by_free_capacity(
    replicas: int, candidates: list[Candidate], expected: dict[str, int]
) -> None:
    assert division.divide("dynamic_weight", replicas, candidates) == expected


@pytest.mark.parametrize(
    ("replicas", "candidates", "previous", "expected"),
    [
        pytest.param(
            6,
            free(a=10, b=0, c=10),
            {"a": 2, "b": 2},
            {"a": 2, "b": 2, "c": 2},
            id="scale-up keeps old replicas and the new ones favour the cluster holding fewer",
        ),
        pytest.param(
            7,
            free(a=0, b=0, c=3),
            {"a": 2, "b": 2},
            {"a": 2, "b": 2, "c": 3},
            id="scale-up places only the added replicas, where there is free capacity",
        ),
        pytest.param(
            8,
            free(a=6, b=6),
            {"a": 3, "b": 3},
            {"a": 4, "b": 4},
            id="scale-up over equal capacity and equal holdings stays balanced",
        ),
        pytest.param(
            6,
            free(a=0, b=0, c=0),
            {"a": 6, "b": 4, "c": 2},
            {"a": 3, "b": 2, "c": 1},
            id="scale-down shrinks in proportion to the previous result, ignoring capacity",
        ),
        pytest.param(
            5,
            free(a=100, b=100),
            {"a": 3, "b": 2},
            {"a": 3, "b": 2},
            id="an unchanged total keeps the previous result even if capacity changed",
        ),
        pytest.param(
            6,
            free(a=0, b=10),
            {"gone": 4, "a": 2},
            {"a": 2, "b": 4},
            id="replicas on a cluster that is no longer a candidate are placed again",
        ),
        pytest.param(
            0,
            free(a=1, b=1),
            {"a": 3, "b": 1},
            {},
            id="scale to zero empties the result",
        ),
    ],
)
def test_dynamic_weight_is_incremental(
    replicas: int, candidates: list[Candidate], previous: dict[str, int], expected: dict[str, int]
) -> None:
    assert division.divide("dynamic_weight", replicas, candidates, previous=previous) == expected


@pytest.mark.parametrize(
    ("replicas", "candidates", "previous", "expected"),
    [
        pytest.param(
            12,
            free(member1=6, member2=8, member3=10),
            None,
            {"member2": 5, "member3": 7},
            id="first placement keeps the two largest clusters and divides by their capacity",
        ),
        pytest.param(
            12,
            free(member1=12, member2=8, member3=10),
            None,
            {"member1": 12},
            id="one cluster that can hold everything takes everything",
        ),
        pytest.param(
            12,
            free(member1=6, member2=6, member3=6),
            None,
            {"member1": 6, "member2": 6},
            id="equal capacities keep the candidates' order",
        ),
        pytest.param(
            5,
            free(big=100, small=5),
            {"small": 2},
            {"small": 5},
            id="scale-up fills a previous host first even when another cluster is bigger",
        ),
        pytest.param(
            6,
            free(a=1, b=10, c=8),
            {"a": 2},
            {"a": 2, "b": 4},
            id="scale-up adds the fewest new clusters when the previous host is full",
        ),
        pytest.param(
            9,
            free(a=0, b=0, c=0),
            {"a": 6, "b": 4, "c": 2},
            {"a": 5, "b": 4},
            id="scale-down drains the smallest previous host first",
        ),
    ],
)
def test_aggregated_uses_the_fewest_clusters(
    replicas: int,
    candidates: list[Candidate],
    previous: dict[str, int] | None,
    expected: dict[str, int],
) -> None:
    assert division.divide("aggregated", replicas, candidates, previous=previous) == expected


@pytest.mark.parametrize(
    ("candidates", "replicas", "expected"),
    [
        pytest.param(
            [C("a", available=0), C("b", available=100)],
            3,
            {"a": 3, "b": 3},
            id="every candidate runs all replicas, without a capacity check",
        ),
        pytest.param([C("a"), C("b")], 0, {}, id="zero replicas give an empty result"),
    ],
)
def test_duplicated_gives_every_candidate_all_replicas(
    candidates: list[Candidate], replicas: int, expected: dict[str, int]
) -> None:
    assert division.divide("duplicated", replicas, candidates, previous={"a": 9}) == expected


@pytest.mark.parametrize(
    ("strategy", "replicas", "candidates", "tie_seed", "expected"),
    [
        pytest.param(
            "static_weight",
            5,
            weights(A=1, B=1),
            ODD_SEED,
            {"A": 2, "B": 3},
            id="an odd FNV-32a seed sends the odd replica to the larger name",
        ),
        pytest.param(
            "static_weight",
            5,
            weights(A=1, B=1),
            EVEN_SEED,
            {"A": 3, "B": 2},
            id="an even FNV-32a seed keeps ascending name order",
        ),
        pytest.param(
            "static_weight",
            2,
            weights(a=1, b=1, c=1),
            "",
            {"a": 1, "b": 1},
            id="no seed: remainders go to the smallest names",
        ),
        pytest.param(
            "static_weight",
            2,
            weights(a=1, b=1, c=1),
            ODD_SEED,
            {"b": 1, "c": 1},
            id="odd seed: remainders go to the largest names",
        ),
        pytest.param(
            "dynamic_weight",
            1,
            free(a=4, b=4),
            ODD_SEED,
            {"b": 1},
            id="the seed also breaks ties in dynamic division",
        ),
    ],
)
def test_ties_go_to_fewer_replicas_then_seeded_name_order(
    strategy: str,
    replicas: int,
    candidates: list[Candidate],
    tie_seed: str,
    expected: dict[str, int],
) -> None:
    assert division.divide(strategy, replicas, candidates, tie_seed=tie_seed) == expected


def test_ties_prefer_the_cluster_holding_fewer_replicas_before_names() -> None:
    # a holds 1 of weight 3 and b none of weight 1: both have priority 1 for the next one.
    result = division.divide("dynamic_weight", 2, free(a=3, b=1), previous={"a": 1})
    assert result == {"a": 1, "b": 1}


@pytest.mark.parametrize(
    ("seed", "descending"),
    [
        pytest.param("", False, id="empty seed is ascending"),
        pytest.param("a", False, id="fnv32a('a') = 0xe40c292c is even"),
        pytest.param("b", True, id="fnv32a('b') = 0xe70c2de5 is odd"),
        pytest.param("foobar", False, id="fnv32a('foobar') = 0xbf9cf968 is even"),
    ],
)
def test_the_tie_direction_follows_the_low_bit_of_fnv32a(seed: str, descending: bool) -> None:
    assert division.names_descending(seed) is descending


def test_the_same_seed_always_gives_the_same_division() -> None:
    candidates = weights(**{f"cluster-{i:02d}": 1 for i in range(10)})
    seed = "5f0c8a4e-2b7d-4c1e-9a3f-6d2e8b1c7a90"
    first = division.divide("static_weight", 13, candidates, tie_seed=seed)
    for _ in range(5):
        assert division.divide("static_weight", 13, candidates, tie_seed=seed) == first
    assert division.divide("static_weight", 13, list(reversed(candidates)), tie_seed=seed) == first


@pytest.mark.parametrize(
    ("strategy", "replicas", "candidates", "previous", "failure"),
    [
        pytest.param(
            "dynamic_weight",
            12,
            free(member1=3, member2=3, member3=3),
            None,
            (
                3,
                9,
                "cannot place 3 of the 12 replicas: the 3 candidate clusters have free "
                "capacity for 9 (member1=3, member2=3, member3=3)",
            ),
            id="dynamic: 12 replicas over 3+3+3 free",
        ),
        pytest.param(
            "aggregated",
            12,
            free(a=3, b=3),
            {"a": 4},
            (
                2,
                6,
                "cannot place 2 of the 8 replicas added on top of the 4 already placed: the 2 "
                "candidate clusters have free capacity for 6 (a=3, b=3)",
            ),
            id="aggregated: scale-up beyond the free capacity",
        ),
        pytest.param(
            "static_weight",
            2,
            [],
            None,
            (2, 0, "no candidate cluster to place 2 replicas on"),
            id="no candidates at all",
        ),
    ],
)
def test_unschedulable_says_how_many_replicas_do_not_fit_and_what_capacity_was_found(
    strategy: str,
    replicas: int,
    candidates: list[Candidate],
    previous: dict[str, int] | None,
    failure: tuple[int, int, str],
) -> None:
    unplaced, capacity, words = failure
    with pytest.raises(division.Unschedulable) as caught:
        division.divide(strategy, replicas, candidates, previous=previous)
    assert str(caught.value) == words
    assert (caught.value.unplaced, caught.value.capacity) == (unplaced, capacity)
    assert isinstance(caught.value, errors.PermanentError)


@pytest.mark.parametrize(
    ("strategy", "replicas", "candidates"),
    [
        pytest.param("weighted", 1, [C("a")], id="unknown strategy"),
        pytest.param("static_weight", -1, [C("a")], id="negative replicas"),
        pytest.param("static_weight", 1, [C("a"), C("a")], id="a cluster listed twice"),
        pytest.param("dynamic_weight", 1, [C("a", available=-1)], id="negative capacity"),
    ],
)
def test_malformed_input_is_refused(
    strategy: str, replicas: int, candidates: list[Candidate]
) -> None:
    with pytest.raises(ValueError):
        division.divide(strategy, replicas, candidates)


def test_random_divisions_always_add_up_and_never_list_zero() -> None:
    rng = random.Random(20261203)
    for _ in range(400):
        strategy = rng.choice(division.STRATEGIES)
        names = [f"c{i}" for i in rng.sample(range(40), rng.randint(1, 8))]
        candidates = [
            C(name, weight=rng.randint(0, 5), available=rng.randint(0, 30)) for name in names
        ]
        previous = {n: rng.randint(0, 6) for n in rng.sample(names, rng.randint(0, len(names)))}
        replicas = rng.randint(0, 60)
        seed = rng.choice(["", "uid-1", "uid-2"])
        try:
            result = division.divide(
                strategy, replicas, candidates, previous=previous, tie_seed=seed
            )
        except division.Unschedulable as exc:
            assert strategy in {"dynamic_weight", "aggregated"}
            assert exc.unplaced > 0
            continue
        assert set(result) <= set(names)
        assert all(count > 0 for count in result.values())
        if strategy == "duplicated":
            assert set(result.values()) <= {replicas}
        else:
            assert sum(result.values()) == replicas


def test_random_dynamic_scale_ups_never_move_existing_replicas() -> None:
    rng = random.Random(7)
    for _ in range(200):
        strategy = rng.choice(["dynamic_weight", "aggregated"])
        candidates = [C(f"c{i}", available=rng.randint(0, 20)) for i in range(rng.randint(1, 6))]
        placed: dict[str, int] = {}
        total = 0
        for _step in range(4):
            total += rng.randint(1, 10)
            try:
                after = division.divide(strategy, total, candidates, previous=placed)
            except division.Unschedulable:
                break
            assert all(after.get(name, 0) >= count for name, count in placed.items())
            assert sum(after.values()) == total
            placed = after


def _one_by_one(
    seats: int, votes: dict[str, int], initial: dict[str, int], *, descending: bool
) -> dict[str, int]:
    """Webster's rounds as Karmada runs them, one seat per round: the reference the bulk
    step must reach exactly."""
    names = sorted(dict.fromkeys([*initial, *votes]), reverse=descending)
    held = {name: initial.get(name, 0) for name in names}
    for _ in range(seats):
        best = min(
            names,
            key=lambda n: (
                -(float(votes.get(n, 0)) / float(2 * held[n] + 1)),
                held[n],
                names.index(n),
            ),
        )
        held[best] += 1
    return held


def test_many_seats_are_handed_out_as_one_by_one_rounds_would() -> None:
    """Above 64 seats per cluster the division hands most out in bulk; the result must be
    the rounds' own, ties and float quotients included: equal and multiple votes make
    ties at the threshold, previous seats start some clusters ahead of it."""
    rng = random.Random(1206)
    bulk = 0
    for _ in range(300):
        names = [f"c{i}" for i in range(rng.randint(1, 5))]
        base = rng.choice([1, 3, 7, 1000])
        votes = {n: base * rng.choice([0, 1, 1, 2, 3, rng.randint(1, 50)]) for n in names}
        if not any(votes.values()):
            votes[names[0]] = base
        initial = {n: rng.randint(0, 400) for n in rng.sample(names, rng.randint(0, len(names)))}
        seats = rng.randint(0, 1500)
        descending = rng.random() < 0.5
        bulk += seats > 64 * (len(votes) + 1)
        expected = _one_by_one(seats, votes, initial, descending=descending)
        assert division._webster(seats, votes, initial, descending=descending) == expected
    assert bulk > 100  # the bulk step was exercised, not only the rounds


@pytest.mark.parametrize("strategy", ["static_weight", "dynamic_weight", "aggregated"])
def test_a_billion_replicas_are_divided_at_once(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kubernetes allows up to 2^31 - 1 replicas; one round per replica took hours, and a
    scheduling cycle (or `fedctl plan`) dividing such a Deployment froze with it. Counted
    in priorities computed (a round computes one), so a return to rounds fails at once."""
    candidates = [
        C("a", weight=1, available=10**9),
        C("b", weight=3, available=2 * 10**9),
        C("c", weight=3, available=2 * 10**9),
    ]
    priority, computed = division._priority, [0]

    def counted(votes: int, seats: int) -> float:
        computed[0] += 1
        if computed[0] > 100_000:
            raise AssertionError("more than 100,000 priorities for one division")
        return priority(votes, seats)

    monkeypatch.setattr(division, "_priority", counted)

    result = division.divide(strategy, 10**9, candidates, previous={"c": 5})

    assert sum(result.values()) == 10**9
    if strategy == "static_weight":
        # 1:3:3 of 10^9 rounds to one seat too many; b and c tie for the last, and name
        # order (ascending without a seed) gives it to b.
        assert result == {"a": 142_857_143, "b": 428_571_429, "c": 428_571_428}
