"""Replica division: how a workload's replicas are shared among the clusters chosen for it.

Fed by the scheduling cycle after filtering, scoring and spread selection (`spread.select`):
the candidate clusters with their static weight and free capacity in replicas, plus the
replicas each cluster holds in the previous Binding. Feeds the Binding writer and
`fedctl plan`.

Why a copy of Karmada (v1.16 and later) and not an algorithm of our own: fedctl reads
Karmada policies, and a user moving from Karmada must get the same numbers for the same
policy, or every migration turns into a support question. So this module reproduces
Karmada's `pkg/scheduler/core/assignment.go` and `division_algorithm.go` on top of
`pkg/util/helper/webstermethod.go`:

* Every split uses Webster (Sainte-Laguë) apportionment: the next replica goes to the
  cluster with the largest ``votes / (2 * replicas + 1)``. Ties go to the cluster holding
  fewer replicas, then to name order: ascending when ``tie_seed`` is empty; when it is set,
  the direction follows the low bit of FNV-32a(tie_seed) (odd means descending), as Karmada
  does with the binding UID, so equal-weight remainders do not always land on the same
  cluster across many workloads. Priorities are float64 quotients compared for equality,
  as in Karmada, so even near-ties resolve the same way. Unlike Karmada's loop, a large
  split hands most seats out at once, to the state the rounds reach (`_bulk`): Kubernetes
  allows 2^31 - 1 replicas, and a round per replica would hold a scheduling cycle for hours.
* ``duplicated``: every candidate runs all replicas. Like Karmada, division does not check
  capacity here (Karmada's spread selection ignores free capacity for Duplicated as well);
  capacity for duplicated work is the capacity filter's job.
* ``static_weight``: votes are the weights; weight 0 excludes a cluster, and if every weight
  is 0 all candidates weigh 1. Free capacity and the previous result are ignored; seats are
  always counted from zero, so a larger total never takes replicas away from a cluster.
* ``dynamic_weight`` and ``aggregated`` are Karmada's "Steady" mode: the previous result,
  restricted to current candidates (replicas on clusters that left are placed again), is
  kept when the total is unchanged. On scale-up only the added replicas are divided, with
  the free replicas of each candidate as votes and the previous replicas as the seats each
  cluster already holds (the previous result is Webster's initial assignment, so a cluster
  already holding many replicas wins fewer of the new ones, and one holding few may win
  more than its own free count: only the total is checked, as in Karmada); it raises
  `Unschedulable` when the free capacity cannot hold the added replicas. The votes are free
  replicas only: Karmada adds the replicas a cluster already holds to its capacity when
  choosing clusters (spread selection) and in Fresh mode, never here. On scale-down the new
  total is divided from zero with the previous replicas as votes (a proportional shrink),
  counting only clusters that are still candidates (v1.16 itself counted every previous
  cluster, even one that had left; Karmada fixed that in PR #7110). ``aggregated`` first
  keeps the shortest prefix of clusters, sorted by free replicas (largest first; previous
  hosts moved to the front on scale-up), whose capacity covers the replicas to place, then
  divides within it; on scale-down the prefix is taken over the previous replicas, so the
  smallest previous hosts are drained first.
* Karmada's "Fresh" mode (a full recompute after an explicit reschedule) is reached by
  passing ``previous=None`` and candidates whose ``available`` already includes the
  replicas they hold.

Deviations, each deliberate: zero entries are dropped from the result; an empty candidate
list with replicas to place raises `Unschedulable` (Karmada stops earlier, in its filter
step); when several clusters have equal free capacity, ``aggregated`` keeps the candidates'
order (pass candidates in the order `spread.select` returns them), which matches Go's
`sort.Sort` for up to 12 clusters (it insertion-sorts those); beyond 12 Go's quicksort is
not stable and may order equal values differently.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

from federation import errors

__all__ = ["STRATEGIES", "Candidate", "Strategy", "Unschedulable", "divide", "names_descending"]

Strategy = Literal["duplicated", "static_weight", "dynamic_weight", "aggregated"]
STRATEGIES: Final[tuple[str, ...]] = get_args(Strategy)

_FNV32_OFFSET: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193
_BREAKDOWN_LIMIT: Final = 8


@dataclass(frozen=True, slots=True)
class Candidate:
    """One cluster that may receive replicas.

    `weight` is the static weight (``static_weight`` only); `available` is how many more
    replicas of this workload fit there now (``dynamic_weight`` and ``aggregated`` only).
    """

    name: str
    weight: int = 1
    available: int = 0


class Unschedulable(errors.PermanentError):
    """The replicas cannot be placed under the current capacity or constraints.

    Permanent for this snapshot only: the queue keeps the workload pending and retries when
    capacity or policy changes. `unplaced` and `capacity` are 0 when the cause is not a
    shortage of capacity (for example an unmet spread constraint).
    """

    def __init__(
        self, message: str, *, replicas: int = 0, unplaced: int = 0, capacity: int = 0
    ) -> None:
        super().__init__(message)
        self.replicas = replicas
        self.unplaced = unplaced
        self.capacity = capacity


def divide(
    strategy: str,
    replicas: int,
    candidates: Sequence[Candidate],
    *,
    previous: Mapping[str, int] | None = None,
    tie_seed: str = "",
) -> dict[str, int]:
    """Share `replicas` among `candidates`; return cluster name -> replicas, names sorted.

    `previous` maps cluster -> replicas in the current Binding; `tie_seed` (the workload's
    UID, say) decides the direction of name order in ties. Raises `Unschedulable` when free
    capacity cannot hold the replicas and `ValueError` on malformed input.
    """
    _check_input(strategy, replicas, candidates)
    if replicas > 0 and not candidates:
        raise Unschedulable(
            f"no candidate cluster to place {replicas} replicas on",
            replicas=replicas,
            unplaced=replicas,
        )
    descending = names_descending(tie_seed)
    if strategy == "duplicated":
        result = {c.name: replicas for c in candidates}
    elif strategy == "static_weight":
        result = _divide_static(replicas, candidates, descending=descending)
    else:
        result = _divide_dynamic(
            replicas,
            candidates,
            previous=previous or {},
            aggregated=strategy == "aggregated",
            descending=descending,
        )
    return {name: result[name] for name in sorted(result) if result[name] > 0}


def names_descending(tie_seed: str) -> bool:
    """Whether ties go to the larger name: the low bit of FNV-32a(tie_seed); empty -> no."""
    if not tie_seed:
        return False
    digest = _FNV32_OFFSET
    for byte in tie_seed.encode():
        digest = ((digest ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return digest & 1 == 1


def _check_input(strategy: str, replicas: int, candidates: Sequence[Candidate]) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown division strategy {strategy!r}; expected one of {STRATEGIES}")
    if replicas < 0:
        raise ValueError(f"replicas must not be negative, got {replicas}")
    seen: set[str] = set()
    for candidate in candidates:
        if candidate.name in seen:
            raise ValueError(f"cluster {candidate.name!r} is listed twice")
        if candidate.weight < 0 or candidate.available < 0:
            raise ValueError(f"cluster {candidate.name!r} has a negative weight or capacity")
        seen.add(candidate.name)


def _divide_static(
    replicas: int, candidates: Sequence[Candidate], *, descending: bool
) -> dict[str, int]:
    votes = {c.name: c.weight for c in candidates if c.weight > 0}
    if not votes:
        votes = {c.name: 1 for c in candidates}
    return _webster(replicas, votes, {}, descending=descending)


def _divide_dynamic(
    replicas: int,
    candidates: Sequence[Candidate],
    *,
    previous: Mapping[str, int],
    aggregated: bool,
    descending: bool,
) -> dict[str, int]:
    names = {c.name for c in candidates}
    held = {name: count for name, count in previous.items() if name in names and count > 0}
    assigned = sum(held.values())
    if assigned == replicas:
        return held
    if assigned > replicas:
        # Scale down: the previous result is the weight list and seats start from zero.
        target = replicas
        ranked = sorted(held.items(), key=lambda item: (-item[1], item[0]))
        initial: dict[str, int] = {}
    else:
        # Scale up (a first placement is a scale-up from nothing): divide only the added
        # replicas, by free capacity, on top of what each cluster already holds.
        target = replicas - assigned
        ranked = sorted(((c.name, c.available) for c in candidates), key=lambda item: -item[1])
        initial = held
    capacity = sum(count for _, count in ranked)
    if capacity < target:
        raise _shortage(replicas=replicas, target=target, assigned=assigned, ranked=ranked)
    if aggregated:
        ranked = _fewest_clusters(ranked, target=target, hosts=initial)
    return _webster(target, dict(ranked), initial, descending=descending)


def _fewest_clusters(
    ranked: list[tuple[str, int]], *, target: int, hosts: Mapping[str, int]
) -> list[tuple[str, int]]:
    """The shortest prefix (previous hosts first) whose free replicas cover `target`."""
    ordered = [item for item in ranked if item[0] in hosts]
    ordered += [item for item in ranked if item[0] not in hosts]
    total = 0
    for index, (_, count) in enumerate(ordered):
        total += count
        if total >= target:
            return ordered[: index + 1]
    return ordered


def _shortage(
    *, replicas: int, target: int, assigned: int, ranked: Sequence[tuple[str, int]]
) -> Unschedulable:
    capacity = sum(count for _, count in ranked)
    unplaced = target - capacity
    shown = ", ".join(f"{name}={count}" for name, count in ranked[:_BREAKDOWN_LIMIT])
    if len(ranked) > _BREAKDOWN_LIMIT:
        shown += f", … {len(ranked) - _BREAKDOWN_LIMIT} more"
    what = (
        f"{target} replicas added on top of the {assigned} already placed"
        if assigned
        else f"{target} replicas"
    )
    return Unschedulable(
        f"cannot place {unplaced} of the {what}: the {len(ranked)} candidate clusters have "
        f"free capacity for {capacity} ({shown})",
        replicas=replicas,
        unplaced=unplaced,
        capacity=capacity,
    )


def _webster(
    seats: int, votes: Mapping[str, int], initial: Mapping[str, int], *, descending: bool
) -> dict[str, int]:
    """Hand out `seats` one by one on top of `initial`; a party without votes wins a seat
    only when no party has votes (then ties decide).

    The heap key is (-priority, seats held, name rank): the largest priority first, then the
    party holding fewer seats, then name order in the seeded direction. Many seats are
    first handed out in bulk (`_bulk`), to the very state the one-by-one rounds pass
    through, so the result is the same and a Deployment of a billion replicas is divided
    in microseconds rather than hours.
    """
    if seats > _BULK_FROM * (len(votes) + 1):
        given = _bulk(seats, votes, initial)
        seats -= sum(given.values()) - sum(initial.values())
        initial = given
    names = sorted(dict.fromkeys([*initial, *votes]), reverse=descending)
    heap = [
        (-_priority(votes.get(name, 0), seats_held), seats_held, rank, name)
        for rank, name in enumerate(names)
        for seats_held in (initial.get(name, 0),)
    ]
    heapq.heapify(heap)
    for _ in range(seats if heap else 0):
        _, count, rank, name = heap[0]
        count += 1
        heapq.heapreplace(heap, (-_priority(votes.get(name, 0), count), count, rank, name))
    return {name: count for _, count, _, name in heap}


def _priority(votes: int, seats: int) -> float:
    # float64 quotients, compared for equality exactly as Karmada's Go code does.
    return float(votes) / float(2 * seats + 1)


_BULK_FROM: Final = 64
"""Seats per party above which `_webster` hands most of them out in bulk."""


def _bulk(seats: int, votes: Mapping[str, int], initial: Mapping[str, int]) -> dict[str, int]:
    """Each party's seats once every seat of priority above a threshold is handed out,
    for the largest such count that is still at most `seats` (beyond `initial`).

    Why this is a state the one-by-one rounds reach: each round takes the largest of the
    parties' next priorities, and a party's priorities only fall as it wins seats, so the
    rounds hand out seats in falling priority order; every seat above the threshold comes
    before any at or below it, whatever the ties. The threshold is found by bisection over
    floats; the seats left (those at the threshold, at most about one per party) go one by
    one, ties decided as before.
    """

    def held(threshold: float) -> dict[str, int]:
        return {
            name: max(initial.get(name, 0), _seats_above(votes.get(name, 0), threshold))
            for name in dict.fromkeys([*initial, *votes])
        }

    def given(threshold: float) -> int:
        return sum(held(threshold).values()) - sum(initial.values())

    high = max(
        (_priority(v, initial.get(name, 0)) for name, v in votes.items() if v > 0), default=0.0
    )
    if high <= 0.0:
        return dict(initial)
    low = high
    while given(low) <= seats:
        high, low = low, low / 2
    for _ in range(200):  # given(high) <= seats < given(low)
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if given(middle) <= seats:
            high = middle
        else:
            low = middle
    return held(high)


def _seats_above(votes: int, threshold: float) -> int:
    """How many seats, counted from zero, a party of `votes` wins at priorities above
    `threshold`: the first k whose priority is not above it (priorities fall with k)."""
    if votes <= 0:
        return 0
    k = max(0, int((votes / threshold - 1) / 2))
    while k > 0 and _priority(votes, k - 1) <= threshold:
        k -= 1
    while _priority(votes, k) > threshold:
        k += 1
    return k
