"""Replica division against Karmada's own test tables (v1.16 and later, Webster method).

Each case transcribes one row of a Karmada `_test.go` table; its id names the Go test and
the row. Karmada's helpers work on weights and seats, fedctl's `divide` on candidates, so a
row is restated through the public function:

* `helper.AllocateWebsterSeats` / `Dispenser.AllocateByWeight` (votes plus initial seats) is
  ``dynamic_weight`` with the votes as free replicas and the initial seats as `previous`,
  or ``static_weight`` with the votes as weights when there are no initial seats or the
  votes cannot hold the seats (the helpers do not check capacity; ``dynamic_weight`` does).
* Karmada lists clusters that end with 0 replicas; fedctl drops them, so a row's zero
  entries are left out of the expected result.

Rows of the scheduler-core tables (`assignment_test.go`, `division_algorithm_test.go`) were
written for the floor-and-remainder rule that v1.16 replaced. Rows whose numbers do not
depend on that rule are kept as they are; the few that do are kept with the Webster result
and the old number in the id, so a reader can see what changed.
"""

from __future__ import annotations

import pytest

from federation.scheduler import division
from federation.scheduler.division import Candidate

# binding_test.go: FNV-32a of these binding UIDs is even and odd respectively.
EVEN_UID = "4858ca61-3ff8-4095-8267-f3d059d8074c"
ODD_UID = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"


def weights(**by_name: int) -> list[Candidate]:
    return [Candidate(name, weight=weight) for name, weight in by_name.items()]


def free(**by_name: int) -> list[Candidate]:
    return [Candidate(name, available=available) for name, available in by_name.items()]


def test_the_binding_uids_of_karmadas_tables_have_the_expected_parity() -> None:
    assert division.names_descending(EVEN_UID) is False
    assert division.names_descending(ODD_UID) is True


# --- pkg/util/helper/binding_test.go: Test_dispenser_AllocateByWeight -------------------


@pytest.mark.parametrize(
    ("strategy", "replicas", "candidates", "previous", "tie_seed", "expected"),
    [
        pytest.param(
            "dynamic_weight",
            12,
            free(A=1, B=2, C=3),
            {"A": 1, "B": 2, "C": 3},
            "",
            {"A": 2, "B": 4, "C": 6},
            id="Test_dispenser_AllocateByWeight/Scale up 6 replicas",
        ),
        pytest.param(
            "dynamic_weight",
            9,
            free(A=1, B=2, C=3),
            {"A": 1, "B": 2, "C": 3},
            "",
            {"A": 2, "B": 3, "C": 4},
            id="Test_dispenser_AllocateByWeight/Scale up 3 replicas",
        ),
        pytest.param(
            "dynamic_weight",
            8,
            free(A=1, B=2, C=3),
            {"A": 1, "B": 2, "C": 3},
            "",
            {"A": 1, "B": 3, "C": 4},
            id="Test_dispenser_AllocateByWeight/Scale up 2 replicas",
        ),
        pytest.param(
            "static_weight",
            1,
            weights(A=2, B=1),
            None,
            "",
            {"A": 1},
            id="Test_dispenser_AllocateByWeight/HA scenario with weight 2:1: assign 1 replica",
        ),
        pytest.param(
            "static_weight",
            2,
            weights(A=2, B=1),
            None,
            "",
            {"A": 1, "B": 1},
            id="Test_dispenser_AllocateByWeight/HA scenario with weight 2:1: assign 2 replicas",
        ),
        pytest.param(
            "static_weight",
            3,
            weights(A=2, B=1),
            None,
            "",
            {"A": 2, "B": 1},
            id="Test_dispenser_AllocateByWeight/HA scenario with weight 2:1: assign 3 replicas",
        ),
        pytest.param(
            "static_weight",
            5,
            weights(A=170, B=110, C=60),
            None,
            "",
            {"A": 2, "B": 2, "C": 1},
            id="Test_dispenser_AllocateByWeight/brand new assign 5 replicas",
        ),
        pytest.param(
            "static_weight",
            6,
            weights(A=170, B=110, C=60),
            None,
            "",
            {"A": 3, "B": 2, "C": 1},
            id="Test_dispenser_AllocateByWeight/brand new assign 6 replicas",
        ),
        pytest.param(
            "static_weight",
            5,
            weights(A=1, B=1),
            None,
            ODD_UID,
            {"A": 2, "B": 3},
            id="Test_dispenser_AllocateByWeight/brand new assign 5 replicas with odd uuid",
        ),
        pytest.param(
            "static_weight",
            5,
            weights(A=1, B=1),
            None,
            EVEN_UID,
            {"A": 3, "B": 2},
            id="Test_dispenser_AllocateByWeight/brand new assign 5 replicas with even uuid",
        ),
    ],
)
def test_dispenser_allocate_by_weight(
    *,
    strategy: str,
    replicas: int,
    candidates: list[Candidate],
    previous: dict[str, int] | None,
    tie_seed: str,
    expected: dict[str, int],
) -> None:
    result = division.divide(strategy, replicas, candidates, previous=previous, tie_seed=tie_seed)
    assert result == expected


# --- pkg/util/helper/binding_test.go: TestDispenseReplicasByTargetClusters ---------------
# SpreadReplicasByTargetClusters(sum, clusters, nil, "") divides `sum` using each cluster's
# replicas as its weight, without a capacity check: a static division here.


@pytest.mark.parametrize(
    ("replicas", "candidates", "expected"),
    [
        pytest.param(
            10,
            weights(member1=5),
            {"member1": 10},
            id="TestDispenseReplicasByTargetClusters/1 cluster, 5 replicas, 10 sum",
        ),
        pytest.param(
            12,
            weights(member1=5, member2=5, member3=5),
            {"member1": 4, "member2": 4, "member3": 4},
            id="TestDispenseReplicasByTargetClusters/3 cluster, 1:1:1, 12 sum",
        ),
        pytest.param(
            10,
            weights(member1=5, member2=5, member3=5),
            {"member1": 4, "member2": 3, "member3": 3},
            id="TestDispenseReplicasByTargetClusters/3 cluster, 1:1:1, 10 sum "
            "(of the three accepted results, the one an empty UID gives)",
        ),
        pytest.param(
            13,
            weights(member1=1, member2=2, member3=3),
            {"member1": 2, "member2": 4, "member3": 7},
            id="TestDispenseReplicasByTargetClusters/3 cluster, 1:2:3, 13 sum",
        ),
    ],
)
def test_dispense_replicas_by_target_clusters(
    replicas: int, candidates: list[Candidate], expected: dict[str, int]
) -> None:
    assert division.divide("static_weight", replicas, candidates) == expected
    # Where the weights can hold the replicas, dynamic division by free capacity agrees.
    capacity = sum(c.weight for c in candidates)
    if capacity >= replicas:
        as_free = [Candidate(c.name, available=c.weight) for c in candidates]
        assert division.divide("dynamic_weight", replicas, as_free) == expected


# --- pkg/util/helper/webstermethod_test.go: TestAllocateWebsterSeats / Example ------------


@pytest.mark.parametrize(
    ("replicas", "candidates", "previous", "tie_seed", "expected"),
    [
        pytest.param(
            4,
            free(Alpha=1200, Beta=900, Gamma=400),
            None,
            "",
            {"Alpha": 2, "Beta": 1, "Gamma": 1},
            id="ExampleAllocateWebsterSeats",
        ),
        pytest.param(
            2,
            free(PartyA=3, PartyB=1),
            {"PartyA": 1, "PartyB": 0},
            "",
            {"PartyA": 1, "PartyB": 1},
            id="TestAllocateWebsterSeats/tie-breaker is nil, expect break tie by seats",
        ),
        pytest.param(
            1,
            free(PartyA=1, PartyB=1),
            None,
            "",
            {"PartyA": 1},
            id="TestAllocateWebsterSeats/tie-breaker is nil, expect break tie by name",
        ),
        pytest.param(
            1,
            free(PartyA=1, PartyB=1),
            None,
            EVEN_UID,
            {"PartyA": 1},
            id="TestAllocateWebsterSeats/custom tie-breaker returns true "
            "(ascending names, as an even UID gives)",
        ),
        pytest.param(
            1,
            free(PartyA=1, PartyB=1),
            None,
            ODD_UID,
            {"PartyB": 1},
            id="TestAllocateWebsterSeats/custom tie-breaker returns false "
            "(descending names, as an odd UID gives)",
        ),
        pytest.param(
            2,
            free(NewParty1=1, NewParty2=1),
            {"OldParty": 0},
            "",
            {"NewParty1": 1, "NewParty2": 1},
            id="TestAllocateWebsterSeats/non-initial allocation, new party joins, "
            "only new party gets new seats",
        ),
        pytest.param(
            3,
            free(OldParty=1, NewParty=1),
            {"OldParty": 1},
            "",
            {"NewParty": 2, "OldParty": 1},
            id="TestAllocateWebsterSeats/non-initial allocation, both new and old parties "
            "compete for new seats",
        ),
        pytest.param(
            5,
            free(PartyA=100, PartyB=0),
            {"PartyB": 3},
            "",
            {"PartyA": 2, "PartyB": 3},
            id="TestAllocateWebsterSeats/non-initial allocation, initialAssignments party not "
            "in partyVotes, expect no new seats for that party",
        ),
    ],
)
def test_allocate_webster_seats(
    replicas: int,
    candidates: list[Candidate],
    previous: dict[str, int] | None,
    tie_seed: str,
    expected: dict[str, int],
) -> None:
    result = division.divide(
        "dynamic_weight", replicas, candidates, previous=previous, tie_seed=tie_seed
    )
    assert result == expected


# --- pkg/scheduler/core/assignment_test.go: Test_assignByStaticWeightStrategy -------------


@pytest.mark.parametrize(
    ("replicas", "candidates", "expected"),
    [
        pytest.param(
            12,
            weights(member1=3, member2=2, member3=1),
            {"member1": 6, "member2": 4, "member3": 2},
            id="Test_assignByStaticWeightStrategy/replica 12, weight 3:2:1",
        ),
        pytest.param(
            12,
            weights(member1=1, member2=1, member3=1),
            {"member1": 4, "member2": 4, "member3": 4},
            id="Test_assignByStaticWeightStrategy/replica 12, default weight",
        ),
        pytest.param(
            14,
            weights(member1=3, member2=2, member3=1),
            {"member1": 7, "member2": 5, "member3": 2},
            id="Test_assignByStaticWeightStrategy/replica 14, weight 3:2:1 "
            "(Webster 7:5:2; the pre-v1.16 table had 8:4:2)",
        ),
        pytest.param(
            0,
            weights(member1=1, member2=1),
            {},
            id="Test_assignByStaticWeightStrategy/insufficient replica assignment should get "
            "0 replica (zero entries dropped)",
        ),
        pytest.param(
            2,
            weights(member1=1, member2=0),
            {"member1": 2},
            id="Test_assignByStaticWeightStrategy/selected cluster without weight should be "
            "ignored",
        ),
        pytest.param(
            3,
            weights(member1=2, member2=1),
            {"member1": 2, "member2": 1},
            id="Test_assignByStaticWeightStrategy/cluster with multiple weights "
            "(the caller passes the largest matching weight, 2)",
        ),
    ],
)
def test_assign_by_static_weight_strategy(
    replicas: int, candidates: list[Candidate], expected: dict[str, int]
) -> None:
    assert division.divide("static_weight", replicas, candidates) == expected


# --- pkg/scheduler/core/assignment_test.go: Test_dynamicScale ------------------------------


@pytest.mark.parametrize(
    ("strategy", "replicas", "candidates", "previous", "expected"),
    [
        pytest.param(
            "dynamic_weight",
            6,
            free(member1=1, member2=1, member3=1),
            {"member1": 2, "member2": 4, "member3": 6},
            {"member1": 1, "member2": 2, "member3": 3},
            id="Test_dynamicScale/replica 12 -> 6, dynamic weighted 1:1:1",
        ),
        pytest.param(
            "dynamic_weight",
            24,
            free(member1=10, member2=10, member3=10),
            {"member1": 2, "member2": 4, "member3": 6},
            {"member1": 8, "member2": 8, "member3": 8},
            id="Test_dynamicScale/replica 12 -> 24, dynamic weighted 10:10:10 "
            "(Webster with the previous replicas as seats evens out to 8:8:8; "
            "the pre-v1.16 table had 6:8:10)",
        ),
        pytest.param(
            "aggregated",
            6,
            free(member1=1, member2=1, member3=1),
            {"member1": 4, "member2": 8},
            {"member2": 6},
            id="Test_dynamicScale/replica 12 -> 6, aggregated 1:1:1",
        ),
        pytest.param(
            "aggregated",
            8,
            free(member1=100, member2=100),
            {"member1": 4, "member2": 8},
            {"member2": 8},
            id="Test_dynamicScale/replica 12 -> 8, aggregated 100:100",
        ),
        pytest.param(
            "aggregated",
            24,
            free(member1=4, member2=6, member3=8),
            {"member1": 4, "member2": 8},
            {"member1": 5, "member2": 8, "member3": 11},
            id="Test_dynamicScale/replica 12 -> 24, aggregated 4:6:8 "
            "(Webster 5:8:11; the pre-v1.16 table had 6:12:6)",
        ),
        pytest.param(
            "aggregated",
            24,
            free(member1=6, member2=6, member3=20),
            {"member1": 4, "member2": 8},
            {"member1": 12, "member2": 12},
            id="Test_dynamicScale/replica 12 -> 24, aggregated 6:6:20 "
            "(previous hosts cover the 12 added; Webster evens them to 12:12; "
            "the pre-v1.16 table had 10:14)",
        ),
        pytest.param(
            "aggregated",
            24,
            free(member1=4, member3=8, member4=12),
            {"member1": 4, "member2": 8},
            {"member1": 4, "member3": 8, "member4": 12},
            id="Test_dynamicScale/replica 12 -> 24, aggregated 4:8:12, with cluster2 "
            "disappeared and cluster4 appeared (Webster 4:8:12; the pre-v1.16 table had 7:6:11)",
        ),
    ],
)
def test_dynamic_scale(
    strategy: str,
    replicas: int,
    candidates: list[Candidate],
    previous: dict[str, int],
    expected: dict[str, int],
) -> None:
    assert division.divide(strategy, replicas, candidates, previous=previous) == expected


@pytest.mark.parametrize(
    ("strategy", "candidates", "previous"),
    [
        pytest.param(
            "dynamic_weight",
            free(member1=1, member2=1, member3=1),
            {"member1": 2, "member2": 4, "member3": 6},
            id="Test_dynamicScale/replica 12 -> 24, dynamic weighted 1:1:1",
        ),
        pytest.param(
            "aggregated",
            free(member1=1, member2=1, member3=1),
            {"member1": 4, "member2": 8},
            id="Test_dynamicScale/replica 12 -> 24, aggregated 1:1:1",
        ),
    ],
)
def test_dynamic_scale_up_beyond_free_capacity_is_unschedulable(
    strategy: str, candidates: list[Candidate], previous: dict[str, int]
) -> None:
    with pytest.raises(division.Unschedulable) as caught:
        division.divide(strategy, 24, candidates, previous=previous)
    assert (caught.value.unplaced, caught.value.capacity) == (9, 3)


# --- pkg/scheduler/core/assignment_test.go: Test_dynamicScaleUp ----------------------------


@pytest.mark.parametrize(
    ("strategy", "candidates", "previous", "expected"),
    [
        pytest.param(
            "dynamic_weight",
            free(member1=6, member2=8, member3=10),
            None,
            {"member1": 3, "member2": 4, "member3": 5},
            id="Test_dynamicScaleUp/replica 12, dynamic weight 6:8:10",
        ),
        pytest.param(
            "dynamic_weight",
            free(member1=8, member2=8, member3=10),
            None,
            {"member1": 4, "member2": 4, "member3": 4},
            id="Test_dynamicScaleUp/replica 12, dynamic weight 8:8:10 "
            "(Webster 4:4:4; the pre-v1.16 table accepted 4:3:5 or 3:4:5)",
        ),
        pytest.param(
            "aggregated",
            free(member1=6, member2=8, member3=10),
            None,
            {"member2": 5, "member3": 7},
            id="Test_dynamicScaleUp/replica 12, aggregated 6:8:10",
        ),
        pytest.param(
            "aggregated",
            free(member1=12, member2=8, member3=10),
            None,
            {"member1": 12},
            id="Test_dynamicScaleUp/replica 12, aggregated 12:8:10",
        ),
        pytest.param(
            "dynamic_weight",
            free(member1=3, member2=3),
            {"member1": 6, "member3": 6},
            {"member1": 6, "member2": 6},
            id="Test_dynamicScaleUp/replica 12, dynamic weight 3:3, with cluster3 disappeared "
            "and cluster2 appeared (the 6 from member3 are placed again; Webster with "
            "member1's 6 as seats gives them all to member2; the pre-v1.16 table had 9:3)",
        ),
    ],
)
def test_dynamic_scale_up(
    strategy: str,
    candidates: list[Candidate],
    previous: dict[str, int] | None,
    expected: dict[str, int],
) -> None:
    assert division.divide(strategy, 12, candidates, previous=previous) == expected


@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param("dynamic_weight", id="Test_dynamicScaleUp/replica 12, dynamic weight 3:3:3"),
        pytest.param("aggregated", id="Test_dynamicScaleUp/replica 12, aggregated 3:3:3"),
    ],
)
def test_dynamic_scale_up_without_enough_capacity_is_unschedulable(strategy: str) -> None:
    with pytest.raises(division.Unschedulable):
        division.divide(strategy, 12, free(member1=3, member2=3, member3=3))


# --- pkg/scheduler/core/division_algorithm_test.go: Test_divideReplicasByPreference --------


@pytest.mark.parametrize(
    ("strategy", "candidates", "expected"),
    [
        pytest.param(
            "dynamic_weight",
            free(member1=18, member2=12, member3=6),
            {"member1": 6, "member2": 4, "member3": 2},
            id="Test_divideReplicasByPreference/replica 12, dynamic weight 18:12:6",
        ),
        pytest.param(
            "dynamic_weight",
            free(member1=20, member2=12, member3=6),
            {"member1": 6, "member2": 4, "member3": 2},
            id="Test_divideReplicasByPreference/replica 12, dynamic weight 20:12:6 "
            "(Webster 6:4:2; the pre-v1.16 table had 7:4:1)",
        ),
        pytest.param(
            "dynamic_weight",
            free(member1=6, member2=12, member3=6),
            {"member1": 3, "member2": 6, "member3": 3},
            id="Test_divideReplicasByPreference/replica 12, dynamic weight 6:12:6",
        ),
        pytest.param(
            "aggregated",
            free(member2=12, member1=6, member3=6),
            {"member2": 12},
            id="Test_divideReplicasByPreference/replica 12, aggregated 12:6:6",
        ),
        pytest.param(
            "aggregated",
            free(member1=6, member2=6, member3=6),
            {"member1": 6, "member2": 6},
            id="Test_divideReplicasByPreference/replica 12, aggregated 6:6:6 "
            "(equal capacity keeps candidate order, as Go's insertion sort does)",
        ),
    ],
)
def test_divide_replicas_by_preference(
    strategy: str, candidates: list[Candidate], expected: dict[str, int]
) -> None:
    assert division.divide(strategy, 12, candidates) == expected


# --- Behaviour the tables imply rather than state -----------------------------------------


def test_scale_down_shrinks_only_clusters_that_are_still_candidates() -> None:
    # Karmada issue #7109 / PR #7110: v1.16 divided a scale-down over every cluster of the
    # previous result, so a cluster that had left the candidates could get replicas back.
    # Since the fix the previous result is restricted to candidates first, as here.
    result = division.divide(
        "dynamic_weight", 5, free(member1=0, member2=0), previous={"member1": 6, "member3": 4}
    )
    assert result == {"member1": 5}


def test_scale_up_divides_the_added_replicas_with_previous_replicas_as_seats() -> None:
    # The previous result is Webster's initial assignment, not merged afterwards: with equal
    # free capacity the cluster holding fewer replicas wins the added ones (here all of
    # them), and so may receive more than its own free count; only the total is checked.
    result = division.divide(
        "dynamic_weight", 12, free(member1=3, member2=3), previous={"member1": 6}
    )
    assert result == {"member1": 6, "member2": 6}


def test_static_weight_is_order_independent_and_ignores_capacity_and_previous() -> None:
    forward = [Candidate("a", weight=2, available=0), Candidate("b", weight=1, available=99)]
    backward = list(reversed(forward))
    assert division.divide("static_weight", 4, forward, previous={"b": 4}) == {"a": 3, "b": 1}
    assert division.divide("static_weight", 4, backward) == {"a": 3, "b": 1}
