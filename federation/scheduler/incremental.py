"""Incremental single-cluster decisions: the scores of every eligible cluster kept per request
signature across a cycle and refreshed only where capacity changed.

Fed by the placer with a `JobRequest` that goes whole to one cluster (a gang, or a workload
without a dividing policy), and by the cycle state (capacity left and the version of each
cluster, bumped whenever the cycle charges or gives back capacity there). Feeds the placer
with the same `Placed` decision the general path would reach, with the Binding's short
explanation already built, or None when the general path must decide (no cluster fits, a
quota limit applies, or the request needs what only the general path models).

Why it gives the same answer as filtering and scoring from scratch: every part of a
cluster's total score depends only on that cluster (its free replicas, chosen flavor and
chip, utilisation, chip rank), except the cost part, which is min-max normalised over the
feasible clusters. So a signature keeps its per-cluster parts and totals, recomputes the
clusters whose version moved since it last looked, and recomputes the cost part everywhere
only when the cheapest or dearest feasible cost moved. The arithmetic is the general path's,
element by element (the few-clusters replay does it on Python floats, the same IEEE doubles
in the same order), so totals, ties (first cluster in name order) and explanations match it
exactly; `tests/unit/scheduler/test_incremental.py` holds both paths to that.

Why it matters: in a cycle over 100,000 queued jobs most jobs share a signature with one
decided shortly before, and between the two only a few clusters changed (the cycle state
logs every flavor it charges). Replaying those few, in plain Python when there are only a
handful and vectorised otherwise, keeps a decision's cost independent of the fleet's size.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from federation.cache import snapshot as snap
from federation.scheduler import framework as fw
from federation.scheduler.free_replicas import REPLAY_LIMIT, Shape
from federation.scheduler.plugins import binpack, capacity, cost, locality, preference, quota
from policies.models.binding import ClusterVerdict

if TYPE_CHECKING:
    from federation.scheduler import placement as pl

__all__ = [
    "Decision",
    "Incremental",
    "eligible",
    "quota_passes",
    "standard",
    "top_order",
]

_RUNNERS_UP = 3
_BY_ID = ("by-id",)
_PACKS = ("binpack-parts",)
_SCORES = {
    "cost": cost.Cost,
    "binpack": binpack.Binpack,
    "locality": locality.Locality,
    "affinity": preference.Preference,
}
_DYNAMIC = {"capacity": capacity.Capacity, "max-cost": cost.MaxCost, "quota": quota.Quota}


@dataclass(slots=True)
class Decision:
    """The cluster chosen, its chip, and the Binding's short explanation."""

    cluster: str
    chip: str | None
    verdicts: list[ClusterVerdict]
    counts: dict[str, int]
    flavor: int
    """The node flavor the job takes there, and how many replicas of it that flavor holds."""
    flavor_free: int
    flavors_free: list[int] | None = None
    """When that flavor holds fewer than the job's replicas: every flavor's free replicas
    there, as the decision saw them (`capacity.flavor_available`'s row), where the rest go."""


def standard(placer: pl.Placer) -> bool:
    """Whether the placer runs only plugins whose per-cluster nature this module relies on."""
    dynamic_ok = all(isinstance(p, _DYNAMIC.get(p.name, ())) for p in placer.dynamic)
    scores_ok = all(isinstance(p, _SCORES.get(p.name, ())) for p in placer.scores)
    return dynamic_ok and scores_ok


def eligible(job: fw.JobRequest) -> bool:
    """A whole-to-one-cluster request with nothing that depends on more than one cluster."""
    if not job.single_cluster or job.holding or job.evicting or job.max_hourly_cost is not None:
        return False
    return len(job.terms) == 1


def quota_passes(job: fw.JobRequest, state: fw.CycleState, shape: Shape) -> bool:
    """Whether the quota filter passes every cluster, whatever chip the job gets there.

    The filter asks per chip (the charge names the chip), so when some chip is refused
    it removes only the clusters that would use it, which moves the cost bounds of the
    rest; the general path decides then, and also words the reason when all are refused.
    When every chip the job could use passes, the filter removes nothing and the
    incremental decision is the general path's. Checked afresh each decision: admitted
    usage grows with every admission.
    """
    if quota.static_hard(state, job.job.ref.namespace):
        return False  # a member's share removes clusters one by one: the general path decides
    cycle_charges = quota.charges(state)
    for chip in shape.chips:
        charge = (
            quota.charge_for(job, chip, state.snapshot.chip_devices)
            if job.pod_sets
            else cycle_charges.of(job.pod, job.devices, job.replicas, chip)
        )
        if quota.problem(job, state, chip, charge) is not None:
            return False
    return True


def top_order(total: snap.IntArray, count: int) -> snap.IntArray:
    """Positions of the `count` best ranks (`Scored.rank`): highest first, then lowest
    position.

    Deterministic under ties (a key unique per position), so both paths name the same
    runners-up in a Binding's explanation.
    """
    n = len(total)
    if count <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    key = total.astype(np.int64) * (n + 1) + (n - np.arange(n, dtype=np.int64))
    best = np.argpartition(-key, count - 1)[:count] if count < n else np.arange(n)
    result: snap.IntArray = best[np.argsort(-key[best])].astype(np.int64)
    return result


class _Signature:
    """One signature's per-cluster parts and totals over its statically eligible clusters.

    `table` rows are [cluster row, total, part per active score plugin], so the clusters an
    explanation names come out as they are; `key` orders clusters by rank, then name, with
    -1 for clusters the job does not fit. Per-position values live in Python lists: a
    decision reads and writes a handful of them, where numpy's per-element access costs more
    than the arithmetic; the rare vectorised refresh converts them on the way.
    """

    __slots__ = (
        "chip",
        "consts",
        "counts",
        "feasible",
        "hi",
        "high",
        "key",
        "lo",
        "logpos",
        "low",
        "nfeasible",
        "outside",
        "position",
        "raw_cost",
        "row_list",
        "rows",
        "seen",
        "table",
        "tie",
        "top",
    )

    def __init__(self, rows: snap.IntArray, counts: dict[str, int], parts: int) -> None:
        n = len(rows)
        self.rows = rows
        self.row_list: list[int] = rows.tolist()
        self.counts = counts
        self.seen = np.full(n, -1, dtype=np.int64)
        self.chip = [-1] * n
        self.raw_cost = [0.0] * n
        self.feasible = [False] * n
        self.lo = np.full(n, math.inf)
        self.hi = np.full(n, -math.inf)
        """Each position's cost where it is feasible and finite, else +inf (`lo`) or -inf
        (`hi`): the feasible set's cost bounds are then one reduction each."""
        self.nfeasible = 0
        self.table = [[row, 0] + [0] * parts for row in self.row_list]
        self.key = [-1] * n
        self.tie = n - np.arange(n, dtype=np.int64)
        self.low = self.high = math.nan
        self.position = {row: i for i, row in enumerate(self.row_list)}
        self.logpos = 0
        self.top: list[int] | None = None
        """The best feasible positions, best first: every key in it is above `outside`."""
        self.outside = -1
        """At least every key of a position not in `top` (-1: none of them is feasible)."""
        self.consts: tuple[Any, ...] | None = None
        """What the replay needs that the signature alone decides, worked out once."""


class Incremental:
    """The incremental decision for one placer; its per-signature data lives in the state."""

    def __init__(self, placer: pl.Placer) -> None:
        self.placer = placer
        self.enabled = standard(placer)
        self.active = [
            (p.name, w, p) for p in placer.scores if (w := placer.weights.get(p.name, 1)) > 0
        ]
        self.names = [name for name, _, _ in self.active]
        self.weights = np.array([w for _, w, _ in self.active], dtype=np.int64)
        self.weight_sum = max(sum(w for _, w, _ in self.active), 1)
        self.weight_list = [w for _, w, _ in self.active]
        self.columns = [
            (column, name, plugin)
            for column, (name, _, plugin) in enumerate(self.active, start=2)
            if name != "cost"
        ]
        self.cost_column = next(
            (2 + i for i, (_, _, p) in enumerate(self.active) if isinstance(p, cost.Cost)), None
        )
        # The replay's columns by what decides them (`standard` admits no other plugins):
        # bin-pack by the cluster's free capacity, affinity by the chip, locality none.
        by_name = {name: column for column, name, _ in self.columns}
        self.pack_column = by_name.get("binpack")
        self.pack = any(isinstance(p, binpack.Binpack) and p.pack for _, _, p in self.active)
        self.affinity_column = by_name.get("affinity")
        self.zero_columns = [
            c for name, c in by_name.items() if name not in ("binpack", "affinity")
        ]
        self._verdicts: dict[tuple[object, ...], ClusterVerdict] = {}

    def place(self, job: fw.JobRequest, state: fw.CycleState) -> Decision | None:
        """The general path's decision for an eligible request, or None to let it decide."""
        if not self.enabled or not eligible(job):
            return None
        # Stamped jobs share their request's signature and shape tuples: find this cycle's
        # data by the tuple's identity before hashing it (the entry keeps the tuple alive).
        by_id = state.incremental.get(_BY_ID)
        if by_id is None:
            by_id = state.incremental[_BY_ID] = {}
        assert isinstance(by_id, dict)
        hit = by_id.get(id(job.signature))
        if hit is not None and hit[0] is job.signature and hit[1] is job.shape:
            shape, sig = hit[2], hit[3]
        else:
            shape = state.incremental.get(("shape", job.shape))
            if shape is None:
                shape = state.incremental[("shape", job.shape)] = Shape(job, state)
            sig = state.incremental.get(job.signature)
            if sig is not None:
                by_id[id(job.signature)] = (job.signature, job.shape, shape, sig)
        assert isinstance(shape, Shape)
        shape.sync(job, state)
        if sig is None:
            rows, counts = self.placer.static_rows(job, state)
            if rows.size == 0:
                return None
            sig = _Signature(rows, counts, len(self.active))
            state.incremental[job.signature] = sig
            by_id[id(job.signature)] = (job.signature, job.shape, shape, sig)
            self._refresh(sig, job, state)
        assert isinstance(sig, _Signature)
        if not self._replay(sig, shape, job, state):
            self._refresh(sig, job, state)
        sig.logpos = len(state.touched_rows)
        if sig.nfeasible == 0:
            return None
        if quota.limited(job, state) and not quota_passes(job, state, shape):
            return None
        count = min(1 + _RUNNERS_UP, sig.nfeasible)
        if sig.top is None or len(sig.top) < count:
            _leaders(sig)
        assert sig.top is not None
        order = sig.top[:count]
        first = order[0]
        chip_index = sig.chip[first]
        chip = state.snapshot.chips[chip_index] if job.devices and chip_index >= 0 else None
        verdicts = self._explain(sig, order, state)
        dynamic = len(sig.rows) - sig.nfeasible
        counts = {**sig.counts, "capacity/cost/quota": dynamic} if dynamic > 0 else {**sig.counts}
        row = sig.row_list[first]
        flavor = shape.flavor[row]
        every = shape.favail[row]
        free = every[flavor]
        spill = every[:] if free < job.replicas else None  # a copy: later syncs write the row
        return Decision(verdicts[0].cluster, chip, verdicts, counts, flavor, free, spill)

    def _explain(
        self, sig: _Signature, order: list[int], state: fw.CycleState
    ) -> list[ClusterVerdict]:
        """The verdicts of the chosen cluster and the runners-up, shared between decisions
        that see the same scores (they are never mutated)."""
        names = state.snapshot.clusters
        verdicts = []
        table = sig.table
        for i, p in enumerate(order):
            entry = table[p]
            verdict = self._verdicts.get((*entry, i == 0))
            if verdict is None:
                verdict = ClusterVerdict.model_construct(
                    cluster=names[entry[0]].name,
                    verdict="ok",
                    plugin=None,
                    reasons=[],
                    score=entry[1],
                    scores=dict(zip(self.names, entry[2:], strict=True)),
                    selected=i == 0,
                )
                self._verdicts[(*entry, i == 0)] = verdict
            verdicts.append(verdict)
        return verdicts

    # -- replaying a few touched clusters in plain Python

    def _replay(
        self, sig: _Signature, shape: Shape, job: fw.JobRequest, state: fw.CycleState
    ) -> bool:
        """Re-score the clusters touched since the signature last looked, one by one, with
        the vector path's arithmetic; False when too many changed (or a PreferNoSchedule
        taint needs the preference plugin), so the caller refreshes vectorised instead."""
        log = state.touched_rows
        if sig.logpos == len(log):
            return True
        touched = set(log[sig.logpos :])
        if len(touched) > REPLAY_LIMIT or state.snapshot.soft_tainted:
            return False
        if sig.consts is None:
            needed, scale, used, totals, affinity = _constants(job, state)
            # The bin-pack parts live in the same state as the signature: found once.
            pack_parts = _pack_parts(state, used, pack=self.pack)
            sig.consts = (needed, scale, used, totals, affinity, pack_parts)
        needed, scale, used, totals, affinity, pack_parts = sig.consts
        table, feasible, raw_cost, position = sig.table, sig.feasible, sig.raw_cost, sig.position
        chips, lo, hi = sig.chip, sig.lo, sig.hi
        free_total, flavors, chip_of, pod_cost = (
            shape.total,
            shape.flavor,
            shape.chip,
            shape.pod_cost,
        )
        pack_column, affinity_column = self.pack_column, self.affinity_column
        low, high = sig.low, sig.high
        dirty = False
        nfeasible = sig.nfeasible
        changed: list[int] = []
        for c in touched:
            p = position.get(c)
            if p is None:
                continue
            changed.append(p)
            flavor = flavors[c]
            chip = chip_of[c][flavor]
            raw = pod_cost[c][flavor] * scale
            feas = free_total[c] >= needed
            bounded = feas and math.isfinite(raw)
            old_feas, old_raw = feasible[p], raw_cost[p]
            if old_feas and math.isfinite(old_raw) and old_raw in (low, high):
                # A bound may move only if its value leaves the feasible set's costs: the
                # cheapest cluster, charged, mostly keeps its flavor and its cost.
                dirty = dirty or not (bounded and raw == old_raw)
            if bounded and not low <= raw <= high:
                dirty = True  # also when there are no bounds yet (NaN compares False)
            nfeasible += feas - old_feas
            chips[p] = chip
            feasible[p] = feas
            raw_cost[p] = raw
            if bounded:
                lo[p] = hi[p] = raw
            else:
                lo[p], hi[p] = math.inf, -math.inf
            entry = table[p]
            if pack_column is not None:
                entry[pack_column] = _pack_part(
                    state, pack_parts, c, used, totals[c], pack=self.pack
                )
            if affinity_column is not None:
                entry[affinity_column] = affinity[chip]  # by the chip alone
            for column in self.zero_columns:  # locality: nothing runs anywhere yet
                entry[column] = 0
        sig.nfeasible = nfeasible
        if changed:
            self._rescore_some(sig, changed, state, dirty=dirty)
        return True

    def _rescore_some(
        self, sig: _Signature, changed: list[int], state: fw.CycleState, *, dirty: bool
    ) -> None:
        table, feasible, raw_cost, keys = sig.table, sig.feasible, sig.raw_cost, sig.key
        seen, version, rows = sig.seen, state.version, sig.row_list
        for p in changed:
            seen[p] = version[rows[p]]
        cost_column = self.cost_column
        if cost_column is not None and dirty:
            low, high = _bounds(sig)
            if not _same(low, sig.low) or not _same(high, sig.high):
                sig.low, sig.high = low, high
                self._rescore(sig, None)
                return
        if cost_column is not None:
            low, high = sig.low, sig.high
            for p in changed:
                table[p][cost_column] = _min_best_one(raw_cost[p], low, high)
        n = len(rows)
        weights, weight_sum = self.weight_list, self.weight_sum
        for p in changed:
            entry = table[p]
            # Integer parts times integer weights: the sum is exact in any order.
            rank = sum(map(operator.mul, weights, entry[2:]))
            entry[1] = round(rank / weight_sum)
            key = rank * (n + 1) + (n - p) if feasible[p] else -1
            before = keys[p]
            keys[p] = key
            _promote(sig, p, before, key)

    # -- the vectorised refresh

    def _refresh(self, sig: _Signature, job: fw.JobRequest, state: fw.CycleState) -> None:
        versions = state.version[sig.rows]
        stale = np.flatnonzero(versions != sig.seen)
        if stale.size == 0:
            return
        sig.seen[stale] = versions[stale]
        rows = sig.rows[stale]
        ints, pod_cost = capacity.view(job, state)
        fits = ints[rows, capacity.AVAIL] >= capacity.needed_here(job)
        costs = pod_cost[rows] * (job.replicas * job.duration_hours)
        bounded = fits & np.isfinite(costs)
        sig.lo[stale] = np.where(bounded, costs, math.inf)
        sig.hi[stale] = np.where(bounded, costs, -math.inf)
        feasible = fits.tolist()
        chips = ints[rows, capacity.CHIP].tolist()
        raw = costs.tolist()
        parts: list[tuple[int, list[int]]] = []
        for column, (_, _, plugin) in enumerate(self.active, start=2):
            if column != self.cost_column:
                values = plugin.raw_all(job, state, rows)  # type: ignore[attr-defined]
                parts.append((column, fw.normalise(values, plugin.scale).tolist()))
        table, was = sig.table, sig.feasible
        where: list[int] | None = stale.tolist()
        assert where is not None
        for i, p in enumerate(where):
            sig.nfeasible += int(feasible[i]) - int(was[p])
            was[p] = feasible[i]
            sig.chip[p] = chips[i]
            sig.raw_cost[p] = raw[i]
            entry = table[p]
            for column, part in parts:
                entry[column] = part[i]
        if self.cost_column is not None:
            low, high = _bounds(sig)
            if not _same(low, sig.low) or not _same(high, sig.high):
                sig.low, sig.high = low, high
                where = None
        self._rescore(sig, where)

    def _rescore(self, sig: _Signature, where: list[int] | None) -> None:
        """Cost parts, totals and keys of the positions `where` (None: all), vectorised."""
        sig.top = None
        n = len(sig.row_list)
        if where is None:
            index = np.arange(n, dtype=np.int64)
            table = np.array(sig.table, dtype=np.int64)
            raw = np.array(sig.raw_cost, dtype=np.float64)
            feasible = np.array(sig.feasible, dtype=bool)
        elif not where:
            return
        else:
            index = np.array(where, dtype=np.int64)
            table = np.array([sig.table[p] for p in where], dtype=np.int64)
            raw = np.array([sig.raw_cost[p] for p in where], dtype=np.float64)
            feasible = np.array([sig.feasible[p] for p in where], dtype=bool)
        if self.cost_column is not None:
            table[:, self.cost_column] = _min_best(raw, sig.low, sig.high)
        # The general path sums weight x part in floats; over these small integers that sum
        # is exact, so an integer dot product gives the very same ranks and totals.
        ranks = table[:, 2:] @ self.weights
        totals = np.rint(ranks / self.weight_sum).astype(np.int64)
        keys = np.where(feasible, ranks * (n + 1) + sig.tie[index], -1).tolist()
        costs = table[:, self.cost_column].tolist() if self.cost_column is not None else None
        for i, (p, total) in enumerate(zip(index.tolist(), totals.tolist(), strict=True)):
            entry = sig.table[p]
            entry[1] = total
            if costs is not None:
                entry[self.cost_column] = costs[i]  # type: ignore[index]
            sig.key[p] = keys[i]


_LEADERS = 8


def _leaders(sig: _Signature) -> None:
    """Recompute the best `_LEADERS` feasible positions of a signature (keys are unique),
    and the best key of the rest."""
    key = np.array(sig.key, dtype=np.int64)
    count = min(_LEADERS + 1, len(key))
    best = np.argpartition(key, len(key) - count)[len(key) - count :]
    ranked = best[np.argsort(-key[best])].tolist()
    top = [p for p in ranked if sig.key[p] >= 0]
    sig.outside = sig.key[top[_LEADERS]] if len(top) > _LEADERS else -1
    del top[_LEADERS:]
    sig.top = top


def _promote(sig: _Signature, p: int, old: int, new: int) -> None:
    """Keep `sig.top` exact after position `p`'s key went from `old` to `new`.

    A leader that fell to the rest (to `outside` or below) leaves it: the others are still
    the best, one fewer, and the leaders are worked out afresh only once fewer remain than
    a decision names. A position that climbed above the rest is ranked among the leaders.
    (Forgetting the leaders whenever one fell below the last recomputed them at about one
    decision in five: the cluster just chosen is charged, and its score drops.)
    """
    top = sig.top
    if top is None:
        return
    keys = sig.key
    if new <= sig.outside:
        if old > sig.outside:  # a leader (every leader's key is above `outside`)
            top.remove(p)
        return
    if old <= sig.outside:  # a newcomer
        top.append(p)
    top.sort(key=keys.__getitem__, reverse=True)  # keys of feasible positions are unique
    if len(top) > _LEADERS:
        sig.outside = max(sig.outside, keys[top[_LEADERS]])
        del top[_LEADERS:]


def _constants(job: fw.JobRequest, state: fw.CycleState) -> tuple[Any, ...]:
    """The replay's inputs that depend only on the signature (and the snapshot)."""
    s = state.snapshot
    needed = capacity.needed_here(job)
    scale = job.replicas * job.duration_hours
    # One list per set of resources asked for, not per shape: the bin-pack parts kept for
    # it (`_pack_part`) are then shared by every shape asking for the same resources.
    asked = tuple(np.flatnonzero(job.vector > 0).tolist())
    used = _memo(state, ("used", asked), lambda: list(asked))
    totals = _memo(state, ("alloc-total",), s.allocatable_total.tolist)
    # The affinity part of a cluster by the index of its chip (-1, -2: none), as
    # `Preference.raw_all` rates it: worked out here once rather than at every replay.
    affinity = [100] * (len(s.chips) + 2)
    if job.chips and job.devices:
        ranks = [fw.chip_rank(job, c) for c in s.chips] + [len(job.chips)] * 2
        affinity = [
            round(min(max(100.0 * (1 - float(rank) / len(job.chips)), 0.0), 100.0))
            for rank in ranks
        ]
    return needed, scale, used, totals, affinity


def _memo(state: fw.CycleState, key: tuple[object, ...], make: Callable[[], Any]) -> Any:
    value = state.memo.get(key)
    if value is None:
        value = state.memo[key] = make()
    return value


def _pack_parts(state: fw.CycleState, used: list[int], *, pack: bool) -> dict[int, tuple[Any, int]]:
    """The cycle's bin-pack parts (`_pack_part`) for one request shape's `used` resources."""
    packs = state.incremental.get(_PACKS)
    if packs is None:
        packs = state.incremental[_PACKS] = {}
    assert isinstance(packs, dict)
    parts = packs.get((id(used), pack))
    if parts is None:
        parts = packs[(id(used), pack)] = {}
    return parts


def _pack_part(
    state: fw.CycleState,
    parts: dict[int, tuple[Any, int]],
    c: int,
    used: list[int],
    whole: list[int],
    *,
    pack: bool,
) -> int:
    """The bin-pack part of cluster `c`: every signature over that cluster replays it after a
    charge there, so it is worked out once per cluster version. `parts` holds them for one
    request shape's `used` resources and one `pack` (`used` is one list per shape, kept in
    the state's memo, so its identity names it)."""
    version = state.version[c]
    hit = parts.get(c)
    if hit is not None and hit[0] == version:
        return hit[1]
    value = _binpack(state.free_total[c].tolist(), whole, used, pack=pack)
    part = round(min(max(value, 0.0), 100.0))
    parts[c] = (version, part)
    return part


def _binpack(free: list[int], whole: list[int], used: list[int], *, pack: bool) -> float:
    """`Binpack.raw_all` for one cluster: the utilisation of the resources the job asks for,
    divided in floats as numpy divides int64 arrays (the first maximum, as `max` keeps)."""
    util = -math.inf
    for r in used:
        w = whole[r]
        u = (1 - float(free[r]) / float(w)) if w > 0 else 0.0
        if u > util:  # noqa: PLR1730 - keeps the first of equals, as `max` would
            util = u
    value = min(max(util, 0.0), 1.0) * 100
    return value if pack else 100 - value


def _min_best_one(value: float, low: float, high: float) -> int:
    """`_min_best` for one value (Python's round, like numpy's rint, rounds half to even)."""
    if math.isnan(low) or not math.isfinite(value):
        return 0
    if math.isclose(low, high):
        return 100
    return round((high - value) / (high - low) * 100)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _bounds(sig: _Signature) -> tuple[float, float]:
    """The cheapest and dearest finite cost among feasible positions (NaN when none)."""
    low = float(sig.lo.min())
    if low == math.inf:
        return math.nan, math.nan
    return low, float(sig.hi.max())


def _min_best(values: snap.FloatArray, low: float, high: float) -> snap.IntArray:
    """`framework.normalise(values, "min_best")` given the feasible set's bounds."""
    finite_mask = np.isfinite(values)
    if math.isnan(low):
        return np.zeros(values.shape, np.int64)
    if math.isclose(low, high):
        scaled = np.full(values.shape, 100.0)
    else:
        scaled = (high - values) / (high - low) * 100
    scaled = np.where(finite_mask, scaled, 0.0)
    result: snap.IntArray = np.rint(scaled).astype(np.int64)
    return result
