"""Spread selection: which of the feasible clusters a workload is placed on.

Fed by the scheduling cycle after filtering and scoring: every feasible cluster with its
total score, its free capacity in replicas and its topology (region, zone, provider,
labels), plus the policy's spread constraints. Feeds `division.divide`, which shares the
replicas among the clusters returned here, in the order returned here.

Why Karmada's algorithm (`pkg/scheduler/core/spreadconstraint`: `SelectBestClusters`,
`group_clusters.go`, `select_clusters_by_cluster.go`, `select_clusters_by_region.go`,
`select_groups.go`): the same policy must pick the same clusters under fedctl as under
Karmada. What it does:

* Clusters are ranked by score, then free capacity (capacity counts the replicas a cluster
  already holds for this workload), then name. Without constraints, or under
  ``static_weight`` (Karmada ignores spread constraints for static weights), every feasible
  cluster is returned in that order.
* Spread by cluster only: at least ``min_groups`` feasible clusters are needed; the best
  ``max_groups`` are taken, and for divided work (not ``duplicated``) the lowest-ranked of
  them are swapped, from the last upwards, for the unchosen cluster with the most free
  capacity until the chosen ones can hold the replicas.
* Spread by a group (region in Karmada): every group is scored (Karmada's
  ``calcGroupScore``: mostly how well its best clusters cover a ``1/minGroups`` share of the
  replicas, then their mean score), then a depth-first search lists every set of
  ``min..max`` groups that together hold at least the cluster constraint's ``min_groups``
  clusters; the set with the highest summed score wins (then more clusters, then discovery
  order), preferring a strict prefix of the winner. fedctl finds that same set by dynamic
  programming rather than listing every set, which is exponential in the groups (see
  `_select_groups`). The best cluster of each chosen group is
  taken, then the best remaining clusters of those groups up to the cluster constraint's
  ``max_groups``. As in Karmada, a group spread with no cluster constraint takes exactly one
  cluster per group, and the group path does not check capacity (division does).
* Divided by free room (``dynamic_weight``), the selection must still meet ``min_groups``
  once divided (`select_divided`). Binpack scores the fullest clusters highest, so
  selection favours clusters with a replica or two of room, and dividing by free room
  then gives them nothing, dropping their region: 260 workloads asking for 3 regions ran
  75 in one or two, on a fleet with 90 empty clusters. A cluster the division gave no
  replica is too full for a share, so it is left out and the clusters are chosen again,
  until the division meets every minimum or no choice is left, when the workload stays
  unschedulable with a reason naming the constraint. A minimum above the replicas counts
  as the replicas (3 replicas cannot run in 4 regions). Done for a placement made afresh
  only: a workload placed already is divided Steady, from the replicas it holds (a
  re-choice cannot change where a kept or shrunk placement runs, and would only turn a
  running workload's scale into a Pending one). Nor for ``aggregated``, whose point is to
  use as few clusters as hold the replicas.

Where fedctl simplifies or extends, on purpose:

* Karmada selects by region or by cluster only and rejects zone and provider; fedctl runs
  the region algorithm for zone, provider and ``label:<key>`` groups as well. One group
  constraint may be combined with one cluster constraint; more is refused (`ValueError`)
  rather than silently ignored, which is what Karmada does with a zone next to a region.
* A cluster belongs to one zone (Karmada's ``zones`` list is not modelled).
* ``max_groups`` of 0 means no upper bound; ``min_groups`` below 1 counts as 1.
* Clusters with no value for the grouping field are left out of a group spread (Karmada's
  SpreadConstraint filter drops them earlier) and are counted in the error message.
* The search is exhaustive, like Karmada's; it is meant for tens of groups, not thousands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from federation.scheduler import division

__all__ = ["FIELDS", "Constraint", "ScoredCluster", "select", "select_divided"]

FIELDS: Final[tuple[str, ...]] = ("cluster", "region", "zone", "provider")
_LABEL: Final = "label:"
_WEIGHT_UNIT: Final = 1000
_NAMES_SHOWN: Final = 8


@dataclass(frozen=True, slots=True)
class ScoredCluster:
    """A feasible cluster: total score, free replicas and topology."""

    name: str
    score: int
    available: int = 0
    rank: int = 0
    """Orders clusters of equal `score` (the finer weighted sum it was rounded from)."""
    region: str = ""
    zone: str = ""
    provider: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)

    def group_of(self, by: str) -> str:
        """This cluster's value for a grouping ("region", "label:team", ...); "" if none."""
        if by.startswith(_LABEL):
            return self.labels.get(by[len(_LABEL) :], "")
        if by == "cluster":
            return self.name
        return {"region": self.region, "zone": self.zone, "provider": self.provider}[by]


@dataclass(frozen=True, slots=True)
class Constraint:
    """Spread over `by` ("cluster", "region", "zone", "provider" or "label:<key>")."""

    by: str = "cluster"
    min_groups: int = 1
    max_groups: int = 0


@dataclass(frozen=True, slots=True)
class _Member:
    name: str
    score: int
    available: int
    cluster: ScoredCluster


@dataclass(frozen=True, slots=True)
class _Group:
    name: str
    value: int
    weight: int


def select(
    clusters: Sequence[ScoredCluster],
    constraints: Sequence[Constraint],
    *,
    strategy: str,
    replicas: int,
    previous: Mapping[str, int] | None = None,
) -> list[str]:
    """The names of the clusters to place on, best first.

    `strategy` is the division strategy (see `division.STRATEGIES`); `previous` maps cluster
    -> replicas it holds now. Raises `division.Unschedulable` naming the constraint that
    cannot be met, and `ValueError` on constraints fedctl does not combine.
    """
    cluster_rule, group_rule = _split(constraints, strategy)
    held = previous or {}
    members = sorted(
        (_Member(c.name, c.score, c.available + held.get(c.name, 0), c) for c in clusters),
        key=_rank,
    )
    if not constraints or strategy == "static_weight":
        return [m.name for m in members]
    if group_rule is not None:
        return _by_group(members, group_rule, cluster_rule, strategy=strategy, replicas=replicas)
    assert cluster_rule is not None
    need = -1 if strategy == "duplicated" else replicas
    return _by_cluster(members, cluster_rule, need=need)


def select_divided(
    clusters: Sequence[ScoredCluster],
    constraints: Sequence[Constraint],
    *,
    strategy: str,
    replicas: int,
    divide: Callable[[Sequence[str]], dict[str, int]],
    previous: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """`select`, then `divide` (the chosen names -> cluster -> replicas), chosen again
    without the clusters the division left empty until every constraint's minimum holds
    in the division too, for a placement made afresh (no `previous`; see the module
    docstring for why and when).

    Raises `division.Unschedulable` naming the constraint the division could not meet.
    """
    held = previous or {}
    chosen = select(clusters, constraints, strategy=strategy, replicas=replicas, previous=held)
    divided = divide(chosen)
    if strategy != "dynamic_weight" or not constraints or held or replicas <= 0:
        return divided
    by_name = {c.name: c for c in clusters}
    pool = list(clusters)
    first = _unmet(divided, by_name, constraints, replicas)
    dropped: list[str] = []
    while (short := _unmet(divided, by_name, constraints, replicas)) is not None:
        empty = [name for name in chosen if not divided.get(name)]
        if not empty:  # every chosen cluster holds some: choosing again gives the same
            raise division.Unschedulable(short)
        dropped += empty
        pool = [c for c in pool if c.name not in empty]
        try:
            chosen = select(pool, constraints, strategy=strategy, replicas=replicas, previous=held)
        except division.Unschedulable as exc:
            raise division.Unschedulable(
                f"{first}; leaving out the clusters too full to take a share "
                f"({_names(dropped)}): {exc}"
            ) from exc
        divided = divide(chosen)
    return divided


def _unmet(
    divided: Mapping[str, int],
    clusters: Mapping[str, ScoredCluster],
    constraints: Sequence[Constraint],
    replicas: int,
) -> str | None:
    """Why `divided` falls short of a constraint's minimum (capped at `replicas`); None
    when it meets them all."""
    placed = [clusters[name] for name, n in divided.items() if n > 0 and name in clusters]
    for rule in constraints:
        need = min(max(rule.min_groups, 1), replicas)
        groups = sorted({c.group_of(rule.by) for c in placed} - {""})
        if len(groups) >= need:
            continue
        title, plural = _words(rule.by)
        shown = f": {_names(groups)}" if groups else ""
        return (
            f"spread by {title} needs at least {need} {plural}, but dividing {replicas} "
            f"replicas by free room places them in {len(groups)}{shown}"
        )
    return None


def _rank(member: _Member) -> tuple[int, int, int, str]:
    return (-member.score, -member.cluster.rank, -member.available, member.name)


def _split(
    constraints: Sequence[Constraint], strategy: str
) -> tuple[Constraint | None, Constraint | None]:
    if strategy not in division.STRATEGIES:
        raise ValueError(f"unknown division strategy {strategy!r}")
    for rule in constraints:
        if rule.by not in FIELDS and not (
            rule.by.startswith(_LABEL) and len(rule.by) > len(_LABEL)
        ):
            raise ValueError(f"cannot spread by {rule.by!r}")
    by_cluster = [rule for rule in constraints if rule.by == "cluster"]
    by_group = [rule for rule in constraints if rule.by != "cluster"]
    if len(by_cluster) > 1 or len(by_group) > 1:
        raise ValueError(
            "spread constraints combine at most one cluster constraint with one of "
            f"region, zone, provider or a label; got {[rule.by for rule in constraints]}"
        )
    return (by_cluster[0] if by_cluster else None, by_group[0] if by_group else None)


def _by_cluster(members: Sequence[_Member], rule: Constraint, *, need: int) -> list[str]:
    total = len(members)
    if total < rule.min_groups:
        listed = f": {_names([m.name for m in members])}" if members else ""
        raise division.Unschedulable(
            f"spread by cluster needs at least {rule.min_groups} clusters, only {total} "
            f"{'is' if total == 1 else 'are'} feasible{listed}"
        )
    count = min(rule.max_groups, total) if rule.max_groups else total
    if need < 0:
        return [m.name for m in members[:count]]
    chosen, rest = list(members[:count]), list(members[count:])
    slot = count - 1
    while sum(m.available for m in chosen) < need and slot >= 0:
        best, most = -1, chosen[slot].available
        for index, member in enumerate(rest):
            if member.available > most:
                best, most = index, member.available
        if best >= 0:
            chosen[slot], rest[best] = rest[best], chosen[slot]
        slot -= 1
    capacity = sum(m.available for m in chosen)
    if capacity < need:
        detail = ", ".join(f"{m.name}={m.available}" for m in chosen[:_NAMES_SHOWN])
        which = f"the {count} feasible" if count == total else f"at most {count}"
        raise division.Unschedulable(
            f"spread by cluster: {which} clusters can hold only {capacity} of {need} "
            f"replicas ({detail})",
            replicas=need,
            unplaced=need - capacity,
            capacity=capacity,
        )
    return [m.name for m in chosen]


def _by_group(
    members: Sequence[_Member],
    rule: Constraint,
    cluster_rule: Constraint | None,
    *,
    strategy: str,
    replicas: int,
) -> list[str]:
    groups: dict[str, list[_Member]] = {}
    for member in members:
        value = member.cluster.group_of(rule.by)
        if value:
            groups.setdefault(value, []).append(member)
    unlabelled = len(members) - sum(len(group) for group in groups.values())
    title, plural = _words(rule.by)
    minimum = max(rule.min_groups, 1)
    if len(groups) < minimum:
        has = "has" if len(groups) == 1 else "have"
        message = (
            f"spread by {title} needs at least {minimum} {plural}, only {len(groups)} {has} "
            f"a feasible cluster"
        )
        message += f": {_names(sorted(groups))}" if groups else ""
        if unlabelled:
            many = "clusters have" if unlabelled > 1 else "cluster has"
            message += f" ({unlabelled} feasible {many} no {title})"
        raise division.Unschedulable(message)
    least_clusters = cluster_rule.min_groups if cluster_rule is not None else 0
    scored = [
        _Group(name, len(group), _group_score(group, strategy, replicas, minimum))
        for name, group in groups.items()
    ]
    chosen = _select_groups(
        scored, minimum=minimum, maximum=rule.max_groups or len(groups), target=least_clusters
    )
    if not chosen:
        counts = ", ".join(f"{g.name} ({g.value})" for g in sorted(scored, key=lambda g: g.name))
        span = f"{minimum}-{rule.max_groups}" if rule.max_groups else f"at least {minimum}"
        raise division.Unschedulable(
            f"spread by {title} ({span} {plural}) cannot meet spread by cluster (at least "
            f"{least_clusters} clusters): no such set of {plural} holds enough feasible "
            f"clusters; feasible clusters per {title}: {counts}"
        )
    firsts = [groups[g.name][0] for g in chosen]
    rest = sorted((m for g in chosen for m in groups[g.name][1:]), key=_rank)
    wanted = 0 if cluster_rule is None else len(firsts) + len(rest)
    if cluster_rule is not None and cluster_rule.max_groups:
        wanted = min(wanted, cluster_rule.max_groups)
    extra = max(wanted - len(firsts), 0)
    return [m.name for m in [*firsts, *rest[:extra]]]


def _group_score(group: Sequence[_Member], strategy: str, replicas: int, min_groups: int) -> int:
    """Karmada's ``calcGroupScore``: coverage of a share of the replicas first, score second."""
    if strategy == "duplicated":
        fitting = [m for m in group if m.available >= replicas]
        mean = sum(m.score for m in fitting) // len(fitting) if fitting else 0
        return len(fitting) * _WEIGHT_UNIT + mean
    share = replicas // min_groups + 1
    available = score = 0
    for counted, member in enumerate(group, start=1):
        available += member.available
        score += member.score
        if available >= share:
            return share * _WEIGHT_UNIT + score // counted
    return available * _WEIGHT_UNIT + score // len(group)


def _select_groups(
    groups: Sequence[_Group], *, minimum: int, maximum: int, target: int
) -> tuple[_Group, ...]:
    """Karmada's ``selectGroups``, with the same result, without listing every set.

    Karmada walks every set of groups depth first (groups by value, then weight, then name;
    a set is recorded, and not extended, once it has `minimum` groups and `target` clusters),
    keeps the set of the largest weight, then value, first found, then swaps it for a
    recorded set made of its heaviest groups, the fewest such. Listing every set is
    exponential: 40 zones with `minGroups: 6` are 3.8 million sets, a decision took 13
    seconds and held the scheduling cycle; 50 zones with 8 took hours. The best recorded set
    is found here by dynamic programming over (groups seen, groups taken, clusters taken up
    to `target`), and the first found among equals is the lexicographically smallest, which
    taking a group whenever that keeps the optimum gives; the swap then only checks the
    sets of its heaviest groups.
    """
    order = sorted(groups, key=lambda g: (g.value, -g.weight, g.name))
    # A walk stops at its first set with `minimum` groups and `target` clusters (each
    # group holds one cluster at least): no walk is longer than this.
    longest = min(maximum, max(minimum, target, 1))
    Best = tuple[int, int] | None

    def taken(i: int, j: int, t: int, after: list[list[Best]]) -> Best:
        group = order[i]
        if j + 1 >= minimum and t + group.value >= target:
            return (group.weight, group.value)  # recorded: the walk stops here
        if j + 1 >= longest:
            return None
        rest = after[j + 1][min(t + group.value, target)]
        return None if rest is None else (rest[0] + group.weight, rest[1] + group.value)

    tables: list[list[list[Best]]] = [[[None] * (target + 1) for _ in range(longest)]]
    for i in range(len(order) - 1, -1, -1):
        after = tables[-1]
        here: list[list[Best]] = []
        for j in range(longest):
            row: list[Best] = []
            for t in range(target + 1):
                take, skip = taken(i, j, t, after), after[j][t]
                row.append(take if skip is None or (take is not None and take >= skip) else skip)
            here.append(row)
        tables.append(here)
    tables.reverse()  # tables[i]: the best completions using groups i onwards
    if tables[0][0][0] is None:
        return ()
    chosen: list[_Group] = []
    j = t = 0
    for i, group in enumerate(order):
        take = taken(i, j, t, tables[i + 1])
        if take is None or take != tables[i][j][t]:
            continue
        chosen.append(group)
        if j + 1 >= minimum and t + group.value >= target:
            break
        j, t = j + 1, min(t + group.value, target)
    ranked = sorted(chosen, key=lambda g: (-g.weight, g.name))
    position = {g.name: k for k, g in enumerate(order)}
    for size in range(1, len(ranked)):
        heaviest = ranked[:size]
        if _recorded(
            sorted(heaviest, key=lambda g: position[g.name]),
            minimum=minimum,
            maximum=maximum,
            target=target,
        ):
            return tuple(heaviest)
    return tuple(ranked)


def _recorded(walk: Sequence[_Group], *, minimum: int, maximum: int, target: int) -> bool:
    """Whether Karmada's walk records this set (its groups in walk order): it has enough
    groups and clusters, and no shorter start of it had (the walk would have stopped)."""
    if not minimum <= len(walk) <= maximum:
        return False
    total = 0
    for size, group in enumerate(walk, start=1):
        total += group.value
        if size >= minimum and total >= target:
            return size == len(walk)
    return False


def _words(by: str) -> tuple[str, str]:
    if by.startswith(_LABEL):
        return f"label {by[len(_LABEL) :]}", "values"
    return by, f"{by}s"


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMES_SHOWN])
    if len(names) > _NAMES_SHOWN:
        shown += f", … {len(names) - _NAMES_SHOWN} more"
    return shown
