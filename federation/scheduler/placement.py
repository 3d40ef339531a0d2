"""Placing one job against the cycle state: filter, score, spread, divide.

Fed by the cycle with one `JobRequest` and the `CycleState`; feeds the cycle (a `Placed`
decision to admit, or a `Failed` one with the precise reason and its kind, which decides
whether preemption may help) and `explain`. Pure with respect to its inputs: it reads the
state and never charges it; the cycle charges only what it admits.

Why the static filters are cached per request signature: health, taints, affinity, API
enablement and chip match depend only on the request and the snapshot, so thousands of
identical jobs share one pass over the clusters. Capacity, cost cap and quota depend on
what the cycle already placed and run vectorised over the surviving clusters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from federation import clock
from federation.cache import snapshot as snap
from federation.scheduler import division, incremental, spread, taken
from federation.scheduler import framework as fw
from federation.scheduler.plugins import affinity, capacity, cost, quota
from policies.models.binding import ClusterVerdict

__all__ = ["Failed", "Placed", "Placer", "Scored"]

Kind = Literal["static", "capacity", "quota", "cost", "division"]


@dataclass(frozen=True, slots=True)
class Scored:
    """The candidates that passed every filter, with their scores (for explanations)."""

    rows: snap.IntArray
    total: snap.IntArray
    parts: dict[str, snap.IntArray]
    available: snap.IntArray
    rank: snap.IntArray
    """The weighted sum of the parts, of which `total` is the rounded mean: clusters are
    ranked by it (as Karmada ranks by its summed scores), so two whose rounded totals tie
    are told apart by what the rounding hid (a cheaper price), not by name."""


@dataclass(frozen=True, slots=True)
class Placed:
    """A decision to admit. `chips` and `explained` (the Binding's short explanation) are
    filled by the incremental path, which knows them already (and then leaves `scored`
    None); None: admission works them out from `scored`."""

    request: fw.JobRequest
    placement: dict[str, int]
    scored: Scored | None
    chips: dict[str, str | None] | None = None
    explained: tuple[list[ClusterVerdict], dict[str, int]] | None = None
    flavors: dict[str, taken.Hint] | None = None
    """Per cluster, the node flavor to charge, how many replicas it holds, and when fewer
    than those placed there, every flavor's free replicas (`taken.Hint`; incremental)."""
    note: str = ""
    """What the Scheduled Binding's reason says of the placement (empty: nothing): a
    running job kept on its member past that member's room (`Placer._stay`)."""


@dataclass(frozen=True, slots=True)
class Failed:
    request: fw.JobRequest
    reason: str
    kind: Kind

    @property
    def undivided(self) -> bool:
        """Every cluster it may use passed, but together they hold too few replicas (or
        too few of them do for its spread): short of room across clusters, unlike a
        placement its policy cannot describe (`_INVALID_POLICY`), which no room helps."""
        return self.kind == "division" and not self.reason.startswith(_INVALID_POLICY)


_INVALID_POLICY = "invalid placement policy: "
"""How a placement a policy cannot describe fails (kind `division`)."""


def _roomier_chips(failed: Failed) -> bool:
    """Whether a divided device workload the preferred chips could not hold is worth
    placing again on each cluster's roomier chip.

    Its pods on a cluster share one chip, the most preferred with room, so a member with
    one free H100 and five free A100s counts one replica for an H100-first service. When
    the fleet cannot hold the replicas that way, each cluster's chip is chosen again for
    all of them (`chip_need`): the preferred one where it holds them all, else the one
    holding the most.
    """
    job = failed.request
    return (
        failed.undivided
        and bool(job.devices)
        and not job.single_cluster
        and job.strategy in ("dynamic_weight", "aggregated")
        and job.chip_need < job.replicas
        and len(job.chips) != 1
    )


class Placer:
    """Runs the plugins for one job; built once per scheduler from the registry."""

    def __init__(
        self,
        plugins: Sequence[fw.FilterPlugin | fw.ScorePlugin],
        *,
        weights: dict[str, int],
        timings: fw.Timings,
    ) -> None:
        self.filters = [p for p in plugins if isinstance(p, fw.FilterPlugin)]
        self.static = [p for p in self.filters if p.static]
        self.dynamic = [p for p in self.filters if not p.static]
        self.scores = [p for p in plugins if isinstance(p, fw.ScorePlugin)]
        self.vector = {p.name for p in self.filters if hasattr(p, "mask")}
        self.vector_scores = {p.name for p in self.scores if hasattr(p, "raw_all")}
        self.weights = weights
        self.timings = timings
        self.incremental = incremental.Incremental(self)

    # -- filters

    def static_rows(
        self, job: fw.JobRequest, state: fw.CycleState
    ) -> tuple[snap.IntArray, dict[str, int]]:
        """Clusters passing every static filter, and how many each filter turned down."""
        key = ("static", job.signature)
        cached = state.memo.get(key)
        if cached is not None and not job.holding:
            return cached  # type: ignore[return-value]
        counts: dict[str, int] = {}
        rows = np.arange(state.snapshot.size, dtype=np.int64)
        for plugin in self.static:
            if rows.size == 0:
                break
            keep = self.keep(plugin, job, state, rows)
            dropped = int(rows.size - keep.sum())
            if dropped:
                counts[plugin.name] = dropped
                rows = rows[keep]
        result = (rows, counts)
        if not job.holding:
            state.memo[key] = result
        return result

    def keep(
        self,
        plugin: fw.FilterPlugin,
        job: fw.JobRequest,
        state: fw.CycleState,
        rows: snap.IntArray,
    ) -> snap.BoolArray:
        """Which of `rows` `plugin` lets through: its vector form where it has one."""
        if plugin.name in self.vector:
            return plugin.mask(job, state, rows)  # type: ignore[attr-defined,no-any-return]
        clusters = state.snapshot.clusters
        return np.array([plugin.filter(job, clusters[r], state).ok for r in rows.tolist()], bool)

    def _dynamic(
        self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
    ) -> Failed | snap.IntArray:
        for plugin in self.dynamic:
            if rows.size == 0:
                break
            began = clock.real.monotonic()
            keep = self.keep(plugin, job, state, rows)
            self.timings.add(plugin.name, clock.real.monotonic() - began)
            if not keep.any():
                return self._why(plugin.name, job, state, rows)
            rows = rows[keep]
        return rows

    def _why(
        self, name: str, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
    ) -> Failed:
        if name == "capacity":
            return Failed(job, capacity.shortage(job, state, rows), "capacity")
        plugin = next(p for p in self.dynamic if p.name == name)
        row = int(rows[0])
        if name == "max-cost":  # the nearest miss, named: the first by name told nothing
            costs = np.nan_to_num(cost.hourly_cost(job, state, rows), nan=np.inf)
            row = int(rows[int(np.argmin(costs))])
        cluster = state.snapshot.clusters[row]
        verdict = plugin.filter(job, cluster, state)
        kind: Kind = "quota" if name == "quota" else "cost"
        reason = "; ".join(verdict.reasons) or f"filtered by {name}"
        if name == "max-cost":
            reason = f"{_cheapest(len(rows))}, {cluster.name}, {reason}"
        return Failed(job, reason, kind)

    # -- scores

    def score(self, job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray) -> Scored:
        parts: dict[str, snap.IntArray] = {}
        total = np.zeros(len(rows), dtype=np.float64)
        weight_sum = 0
        for plugin in self.scores:
            weight = self.weights.get(plugin.name, 1)
            if weight <= 0:
                continue
            began = clock.real.monotonic()
            if plugin.name in self.vector_scores:
                raw = plugin.raw_all(job, state, rows)  # type: ignore[attr-defined]
            else:
                cl = state.snapshot.clusters
                raw = np.array([plugin.raw(job, cl[r], state) for r in rows.tolist()])
            self.timings.add(plugin.name, clock.real.monotonic() - began)
            parts[plugin.name] = fw.normalise(raw, plugin.scale)
            total += weight * parts[plugin.name]
            weight_sum += weight
        rank = np.rint(total).astype(np.int64)  # integer parts times integer weights
        final = np.rint(total / max(weight_sum, 1)).astype(np.int64)
        available = capacity.on_kept_chips(
            job, state, rows, capacity.cluster_available(job, state, rows)
        )
        room = quota.static_room(job, state, rows)
        if room is not None:  # the namespace's share on a member caps what division gives it
            if job.previous:  # Steady division keeps those, then adds up to `available`
                room = np.maximum(room - capacity.running(job, state, rows), 0)
            available = np.minimum(available, room)
        return Scored(rows, final, parts, available, rank)

    # -- the whole decision

    def place(self, job: fw.JobRequest, state: fw.CycleState) -> Placed | Failed:
        """Try each affinity group in order, from the one the workload runs in now
        (`observed_group`); the first that places the job wins.

        A whole-to-one-cluster request first asks the incremental path, which reaches the
        same decision from per-signature scores refreshed only where capacity changed.
        """
        began = clock.real.monotonic()
        fast = self.incremental.place(job, state)
        self.timings.add("incremental", clock.real.monotonic() - began)
        if fast is not None:
            self.timings.add("incremental-decided", 0.0)
            return _placed(
                job,
                {fast.cluster: job.replicas},
                None,
                {fast.cluster: fast.chip},
                (fast.verdicts, fast.counts),
                {fast.cluster: (fast.flavor, fast.flavor_free, fast.flavors_free)},
                "",
            )
        failures: list[tuple[int, Failed]] = []
        for term in range(observed_group(job, state), len(job.terms)):
            request = job.with_term(term) if term else job
            outcome = self._place_in_term(request, state)
            if isinstance(outcome, Failed) and _roomier_chips(outcome):
                roomier = self._place_in_term(request.with_chip_need(request.replicas), state)
                outcome = roomier if isinstance(roomier, Placed) else outcome
            if isinstance(outcome, Placed):
                return outcome
            failures.append((term, outcome))
        return _every_group(job, failures)

    def _place_in_term(self, job: fw.JobRequest, state: fw.CycleState) -> Placed | Failed:
        began = clock.real.monotonic()
        rows, counts = self.static_rows(job, state)
        self.timings.add("static-filters", clock.real.monotonic() - began)
        if rows.size == 0:
            return Failed(job, _summary(state.snapshot.size, counts), "static")
        host = _running_job_host(job, state, rows)
        if host is not None:
            return self._stay(job, state, host)
        survivors = self._dynamic(job, state, rows)
        if isinstance(survivors, Failed):
            return survivors
        scored = self.score(job, state, survivors)
        try:
            placement = self._choose(job, state, scored)
        except division.Unschedulable as exc:
            return Failed(job, str(exc), "division")
        except ValueError as exc:
            return Failed(job, f"{_INVALID_POLICY}{exc}", "division")
        if not job.single_cluster:
            excess = quota.share_excess(job, state, placement)
            if excess is not None:
                return Failed(job, excess, "quota")
            dear = cost.copies_problem(job, state, placement)
            if dear is not None:
                return Failed(job, dear, "cost")
        return Placed(job, placement, scored)

    def _stay(
        self, job: fw.JobRequest, state: fw.CycleState, host: snap.IntArray
    ) -> Placed | Failed:
        """A running batch job placed again, on the member it runs on (`_running_job_host`):
        there at its new size when every filter but capacity passes, else Failed, and
        its copy runs on at the size it was admitted with (`Admitter._pending`).

        Why capacity is not asked: Kubernetes never restarts a Job for a `parallelism`
        change, and Karmada's Steady division keeps the clusters in use, so the member
        runs the pods its nodes hold and the rest wait Pending there for room. Judged like
        a new job, a raise past the member's room moved the Job to another member, where
        it started again from none of its completions, on a dearer cluster.
        """
        capacity_filter = next((p for p in self.dynamic if p.name == "capacity"), None)
        fits = capacity_filter is None or bool(self.keep(capacity_filter, job, state, host).all())
        others = [p for p in self.dynamic if p is not capacity_filter]
        for plugin in others:
            if not self.keep(plugin, job, state, host).all():
                return self._why(plugin.name, job, state, host)
        scored = self.score(job, state, host)
        name = state.snapshot.clusters[int(host[0])].name
        note = "" if fits else _waits_for_room(job, name, int(scored.available[0]))
        return Placed(job, {name: job.replicas}, scored, note=note)

    def _choose(self, job: fw.JobRequest, state: fw.CycleState, scored: Scored) -> dict[str, int]:
        names = state.snapshot.clusters
        if job.single_cluster:
            best = _kept_host(job, state, scored)
            if best is None:
                best = int(np.argmax(scored.rank))  # ties: first row, i.e. name order
            return {names[int(scored.rows[best])].name: job.replicas}
        ranked = [
            spread.ScoredCluster(
                name=names[row].name,
                score=int(score),
                rank=int(rank),
                available=int(avail),
                region=names[row].region,
                zone=names[row].zone,
                provider=names[row].provider,
                labels=names[row].labels,
            )
            for row, score, rank, avail in zip(
                scored.rows.tolist(),
                scored.total.tolist(),
                scored.rank.tolist(),
                scored.available.tolist(),
                strict=True,
            )
        ]
        previous = job.previous
        if job.copies is not previous:  # resized: `previous` counts only the copies' room
            ranked, previous = _resized_kept(job, ranked)
        constraints = [
            spread.Constraint(by=c.grouping, min_groups=c.min_groups, max_groups=c.max_groups)
            for c in job.spread
        ]
        if job.replicas == 0:  # as Karmada: no replicas to divide, each cluster runs none
            chosen = spread.select(
                ranked, constraints, strategy=job.strategy, replicas=0, previous=previous
            )
            return dict.fromkeys(chosen, 0)
        by_name = {c.name: c for c in ranked}

        def divide(chosen: Sequence[str]) -> dict[str, int]:
            candidates = [
                division.Candidate(
                    name=name,
                    weight=_static_weight(job, names[state.snapshot.index[name]]),
                    available=by_name[name].available,
                )
                for name in chosen
            ]
            if job.strategy == "static_weight" and all(c.weight == 0 for c in candidates):
                candidates = [division.Candidate(c.name, 1, c.available) for c in candidates]
            divided = division.divide(
                job.strategy,
                job.replicas,
                candidates,
                previous=previous or None,
                tie_seed=job.job.workload.metadata.uid or "",
            )
            if job.strategy in ("dynamic_weight", "aggregated"):
                room = {c.name: c.available + (previous or {}).get(c.name, 0) for c in candidates}
                return within_room(divided, room, chosen)
            return divided

        return spread.select_divided(
            ranked,
            constraints,
            strategy=job.strategy,
            replicas=job.replicas,
            divide=divide,
            previous=previous,
        )


def _kept_host(job: fw.JobRequest, state: fw.CycleState, scored: Scored) -> int | None:
    """The position in `scored` of the best cluster the workload runs on now, when one
    passed every filter (so it holds the replicas asked for): None when it runs nowhere or
    no such cluster fits any more.

    Why: a whole-to-one-cluster workload placed again (a replica change, a resize) that
    still fits where it runs stays there, as Karmada's Steady division keeps the clusters
    in use first. By score alone, a 2-replica service scaled to 3 moved whole to another
    member once its own had become the dearest (cost outweighs locality), though nothing
    obliged it to move; a move of running work is fail-back's or `fedctl rebalance`'s
    call, which weighs it and hands over gracefully. A running batch job stays even where
    it no longer fits (`_running_job_host`).
    """
    if not job.copies:
        return None
    index = state.snapshot.index
    hosts = [index[n] for n, r in job.copies.items() if r > 0 and n in index]
    here = np.flatnonzero(np.isin(scored.rows, hosts))
    if here.size == 0:
        return None
    return int(here[np.argmax(scored.total[here])])


def _running_job_host(
    job: fw.JobRequest, state: fw.CycleState, rows: snap.IntArray
) -> snap.IntArray | None:
    """The one member a batch job placed whole runs on, as a one-row array, when it
    passed the static filters (`rows`): None for any other workload, or when the job runs
    nowhere or on several members, or failover is evicting it from its member (an
    eviction task) or its policy no longer takes that member in: it is placed afresh.

    Moving a running job restarts it from nothing (a batch job is never handed over
    gracefully: it would run twice), so only failover or a policy edit moves it, never a
    change of size (`Placer._stay`).
    """
    if not (job.single_cluster and job.copies and job.job.workload.is_batch):
        return None
    index = state.snapshot.index
    hosts = [index[n] for n, r in job.copies.items() if r > 0 and n in index]
    if len(hosts) != 1:
        return None
    here = rows[rows == hosts[0]]
    return here if here.size else None


def _waits_for_room(job: fw.JobRequest, name: str, free: int) -> str:
    """The Scheduled Binding's reason for a running job kept on member `name` past its
    room: how many of its pods that room held (those it runs, and `free` more) when placed.
    Said as of then, since the Binding is not written again once room frees."""
    fit = min(job.previous.get(name, 0) + max(free, 0), job.replicas)
    waiting = job.replicas - fit
    size = "parallelism" if job.api == ("batch/v1", "Job") else "replicas"
    verb = "waits" if waiting == 1 else "wait"
    return (
        f"{size} {job.replicas} kept on {name}, whose room held {fit} of its pods when"
        f" placed: the other {waiting} {verb} Pending there until room frees (a running"
        " job is never moved for a size change)"
    )


_PLACED_SETTERS = tuple(Placed.__dict__[name].__set__ for name in Placed.__dataclass_fields__)


def within_room(
    divided: dict[str, int], room: Mapping[str, int], order: Sequence[str]
) -> dict[str, int]:
    """Karmada's division, with replicas a cluster got beyond its room (those it runs
    plus its free replicas) moved to chosen clusters with room to spare: most spare
    first, those already given replicas before others, so an aggregated workload spreads
    no wider than it must.

    Why: on scale-up Karmada's Steady division seats the added replicas over the ones each
    cluster runs, and checks only the total against free room, so a cluster holding few
    can win more than it has room for (1 running there and 1 free elsewhere: both added
    replicas can go to the other cluster). Karmada leaves those pods Pending on the
    member; fedctl places only what fits a member's nodes. Where nothing is over, the
    result is Karmada's unchanged.
    """
    over = sum(max(n - room.get(name, n), 0) for name, n in divided.items())
    if over <= 0:
        return divided
    out = {name: min(n, room.get(name, n)) for name, n in divided.items()}
    ranked = sorted(
        order, key=lambda name: (out.get(name, 0) == 0, -(room.get(name, 0) - out.get(name, 0)))
    )
    for name in ranked:
        spare = room.get(name, 0) - out.get(name, 0)
        if spare > 0 and over > 0:
            moved = min(spare, over)
            out[name] = out.get(name, 0) + moved
            over -= moved
    if over > 0:  # the total did not fit after all (not from `divide`): as divided
        return divided
    return {name: n for name, n in out.items() if n > 0}


def _resized_kept(
    job: fw.JobRequest, ranked: list[spread.ScoredCluster]
) -> tuple[list[spread.ScoredCluster], dict[str, int]]:
    """After a resize, the replicas each member keeps: those its copies' room holds
    (`previous`), plus as many more of its copies as its free room takes.

    `previous` alone counts only the copies' room, so a member with room to spare kept
    half of four copies grown from 1 to 2 CPU and Steady division sent the rest elsewhere,
    splitting a workload that fits where it runs. Free room the kept copies take is no
    longer free for the replicas division adds.
    """
    previous = dict(job.previous)
    out = []
    for c in ranked:
        extra = min(job.copies.get(c.name, 0) - previous.get(c.name, 0), c.available)
        if extra > 0:
            previous[c.name] = previous.get(c.name, 0) + extra
        out.append(dataclasses.replace(c, available=c.available - extra) if extra > 0 else c)
    return out, previous


def _placed(*values: object) -> Placed:
    """A `Placed` from a value for every field, in order, set through its slots: one per
    decision, where the frozen dataclass's checked assignments cost more than the rest."""
    made = object.__new__(Placed)
    for put, value in zip(_PLACED_SETTERS, values, strict=True):
        put(made, value)
    return made


def _every_group(job: fw.JobRequest, failures: list[tuple[int, Failed]]) -> Failed:
    """The first group's failure, its reason naming each group tried and why it failed.

    Only the first group's reason was given: after a relabel left the workload's own group
    (`backup`) with one usable cluster, the reason named the best of `primary` and hid it."""
    first = failures[0][1]
    if len(failures) == 1 or any(f.reason.startswith(_INVALID_POLICY) for _, f in failures):
        return first  # a policy no room helps is told as it is (`Failed.undivided`)
    said = "; ".join(
        f"group {getattr(job.terms[term], 'affinity_name', None) or term + 1}: {failed.reason}"
        for term, failed in failures
    )
    return Failed(first.request, f"no affinity group can hold it: {said}", first.kind)


def observed_group(job: fw.JobRequest, state: fw.CycleState) -> int:
    """The affinity group a placed workload runs in: where placing it again starts.

    As Karmada's `schedulerObservedAffinityName`: a workload that fell back to a later
    group (its first group's clusters failed) stays in that group when it is placed again
    for a replica change, a policy edit or a member joining, and moves on to later groups
    only if that one cannot hold it. Going back to an earlier group is fail-back's call
    (`spec.fedctl.failback`, `fedctl rebalance`), which hands over gracefully; here it would
    delete the running copy before the new one is ready.
    """
    if len(job.terms) < 2 or not job.copies:
        return 0
    index = state.snapshot.index
    running = [state.snapshot.clusters[index[n]] for n in job.copies if n in index]
    if not running:
        return 0
    for i, term in enumerate(job.terms):
        if all(affinity.matches(term, c) is None for c in running):
            return i
    return 0


def _static_weight(job: fw.JobRequest, cluster: snap.ClusterInfo) -> int:
    if not job.static_weights:
        return 1
    matching = [w for term, w in job.static_weights if affinity.matches(term, cluster) is None]
    return max(matching, default=0)


_WAITING = {"eviction": "waiting for an evicted copy to be removed"}
"""Filters that do not judge the cluster, said as what the workload waits for."""


def _cheapest(fitting: int) -> str:
    return (
        "the one cluster left" if fitting == 1 else f"the cheapest of the {fitting} clusters left"
    )


def _summary(total: int, counts: dict[str, int]) -> str:
    parts = ", ".join(
        f"{n} {_WAITING[name]}" if name in _WAITING else f"{n} filtered by {name}"
        for name, n in sorted(counts.items())
    )
    return f"0/{total} clusters are available: {parts}" if parts else f"0/{total} clusters"
