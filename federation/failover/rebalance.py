"""Fail-back: move work back to the clusters its policy prefers now, gracefully.

Fed by a what-if over the live registry (computed above this layer, where the scheduler may
be imported: `federation.runtime.whatif`), which rates each placed workload twice - where
it runs and where the scheduler would put it now - as `Option`s; feeds the registry with
amended Bindings (`apply`), which the propagator and the failover controller then act on
exactly as after an eviction: the new placement is rendered first, the old copy stays as a
Gracefully-purged eviction task until the new clusters report the workload ready (or the
graceful timeout), then `graceful.judge` drops the task and the propagator deletes the copy.

Why a separate, explicit step: after a failover the work sits on a worse cluster (a
fallback `clusterAffinities` group, a dearer price) and nothing moves it back by itself,
because moving running work is a choice (Karmada's descheduler, not its scheduler, makes
it). `fedctl rebalance` makes it on request; `spec.fedctl.failback: Automatic` lets the
failover controller make it. The decision is pure (`decide`) so the CLI's dry run, the
controller and the tests share it.

What never moves: a batch job (moving restarts it, and a graceful move would run it in two
clusters at once), a workload whose Binding is not Scheduled or is already leaving a
cluster (an eviction task exists; one application failover left bars the member its copy
failed on for the graceful timeout, and the plan, made without it, would put it back
there), and a move that would not be better by the policy's own
order - an earlier affinity group first, then the split its static weights describe (for a
policy that divides by them: the user's split, whatever it costs), then a lower hourly
cost, then a clearly higher score (`min_score_gain`, so two near-equal clusters do not
trade the work back and forth).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from federation import errors
from federation.registry import codec, keys
from federation.registry import store as st
from policies.models.binding import Binding, TargetCluster, handover

__all__ = [
    "MIN_SCORE_GAIN",
    "Candidate",
    "Option",
    "Outcome",
    "Verdict",
    "apply",
    "decide",
    "moved",
]

MIN_SCORE_GAIN = 10
"""Score points (0-100) a new placement must gain to be worth a move on score alone."""
REASON_PREFIX = "Rebalanced"


@dataclass(frozen=True, slots=True)
class Option:
    """One placement as the scheduler rates it now: replicas, chip and hourly cost per
    cluster, the affinity group it falls in (0 = first) and its replica-weighted score."""

    placement: Mapping[str, int]
    chips: Mapping[str, str | None] = field(default_factory=dict)
    costs: Mapping[str, Decimal | None] = field(default_factory=dict)
    group: int | None = None
    group_name: str = ""
    score: float | None = None
    currency: str = ""
    """What `costs` are in (the snapshot's): said with every cost shown, since a rebalance
    prices in the caller's settings' currency, which may not be the controller's."""

    @property
    def cost(self) -> Decimal | None:
        """All clusters together; None when any of them is unpriced."""
        values = [self.costs.get(name) for name in self.placement]
        if not values or any(v is None for v in values):
            return None
        return sum((v for v in values if v is not None), Decimal(0))

    def money(self, cost: Decimal) -> str:
        """`cost` an hour, with the currency it is in."""
        return f"{cost:.4f} {self.currency}/h" if self.currency else f"{cost:.4f}/h"

    def describe(self) -> str:
        where = ", ".join(f"{n}:{r}" for n, r in sorted(self.placement.items())) or "nowhere"
        cost = self.cost
        shown = self.money(cost) if cost is not None else "unpriced"
        group = f" group {self.group_name}" if self.group_name else ""
        return f"{where} ({shown}{group})"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A placed workload with its current and preferred placements (None: none fits now,
    `reason` says why)."""

    key: str
    revision: int
    binding: Binding
    current: Option
    preferred: Option | None
    reason: str = ""
    batch: bool = False
    static_weights: bool = False
    """Its policy divides replicas by static weights: the split is the user's, not the
    scores' (`decide` restores it whatever it costs)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Move or stay, and why, for one workload."""

    candidate: Candidate
    move: bool
    why: str
    waiting: bool = False
    """Stays only until an eviction in progress ends (worth deciding again then)."""

    @property
    def ref(self) -> str:
        return str(keys.parse_workload_key(self.candidate.key))


def _group(option: Option) -> str:
    return option.group_name or str(option.group)


def _split(option: Option) -> str:
    return ", ".join(f"{n}:{r}" for n, r in sorted(option.placement.items()))


def decide(candidate: Candidate, *, min_score_gain: float = MIN_SCORE_GAIN) -> Verdict:
    """Whether moving `candidate` to its preferred placement is worth it (rules above)."""
    b, cur, pref = candidate.binding, candidate.current, candidate.preferred

    def stay(why: str) -> Verdict:
        return Verdict(candidate, False, why)

    if b.status.phase != "Scheduled" or not b.spec.clusters:
        return stay("not placed")
    if candidate.batch:
        return stay("batch job: moving would restart it")
    if any(not t.from_application for t in b.spec.eviction_tasks):
        leaving = ", ".join(sorted(t.cluster for t in b.spec.eviction_tasks))
        return Verdict(candidate, False, f"already leaving {leaving}", waiting=True)
    if b.spec.eviction_tasks:
        # Only application failover's bars: they last the graceful timeout, nothing to wait
        # on soon, and the plan, made without them, would put it back where it failed.
        barred = ", ".join(sorted(t.cluster for t in b.spec.eviction_tasks))
        return stay(f"kept off {barred}, where its copy failed (application failover), for now")
    if pref is None or not pref.placement:
        return stay(f"no better placement fits now: {candidate.reason or 'unschedulable'}")
    if dict(pref.placement) == dict(cur.placement):
        return stay("already where its policy prefers")
    if pref.group is not None and cur.group is not None and pref.group != cur.group:
        if pref.group < cur.group:
            return Verdict(candidate, True, f"affinity group {_group(cur)} -> {_group(pref)}")
        return stay(f"current group {_group(cur)} comes before {_group(pref)}")
    if candidate.static_weights:
        # The weights are what the user asked for; a failover or taint left a split the
        # policy does not describe, and neither cost nor score is the policy's to weigh.
        why = f"to the split its static weights give: {_split(cur)} -> {_split(pref)}"
        return Verdict(candidate, True, why)
    before, after = cur.cost, pref.cost
    if before is not None and after is not None and before != after:
        if after < before:
            return Verdict(candidate, True, f"cost {cur.money(before)} -> {pref.money(after)}")
        return stay(f"cheaper where it is ({cur.money(before)}, not {pref.money(after)})")
    if pref.score is not None and (cur.score is None or pref.score - cur.score >= min_score_gain):
        shown = "-" if cur.score is None else f"{cur.score:.0f}"
        return Verdict(candidate, True, f"score {shown} -> {pref.score:.0f}")
    return stay("no clear gain over the current placement")


def moved(verdict: Verdict, *, now: dt.datetime) -> Binding:
    """The Binding with the preferred placement and a Gracefully-purged eviction task for
    every cluster it leaves or keeps fewer replicas on (`binding.handover`: what ran there
    runs until the replicas that replace it are ready)."""
    b, pref = verdict.candidate.binding, verdict.candidate.preferred
    assert pref is not None and verdict.move
    targets = [
        TargetCluster(
            name=name,
            replicas=replicas,
            chip=pref.chips.get(name),
            hourly_cost=pref.costs.get(name),
        )
        for name, replicas in sorted(pref.placement.items())
    ]
    tasks = handover(
        b.placement(), pref.placement, reason=f"{REASON_PREFIX}: {verdict.why}", now=now
    )
    spec = b.spec.model_copy(
        update={"clusters": targets, "hourly_cost": pref.cost, "eviction_tasks": tasks}
    )
    status = b.status.model_copy(
        update={
            "phase": "Scheduled",
            "reason": f"{REASON_PREFIX}: {verdict.why}",
            "last_scheduled_time": now,
        }
    )
    return b.model_copy(update={"spec": spec, "status": status})


@dataclass
class Outcome:
    """What `apply` did: refs moved, refs skipped because their Binding changed after the
    decision, and refs still leaving a cluster (both worth deciding again later)."""

    moved: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)


async def apply(
    bindings: codec.TypedStore[Binding],
    verdicts: Sequence[Verdict],
    *,
    now: dt.datetime,
    guards: tuple[st.Guard, ...] = (),
) -> Outcome:
    """Write every move as a compare-and-swap on the revision it was decided on (and, from
    the controller, its leader fence): a Binding the scheduler or failover changed in
    between is left alone rather than overwritten with a stale decision."""
    out = Outcome()
    for verdict in verdicts:
        if verdict.waiting:
            out.waiting.append(verdict.ref)
        if not verdict.move:
            continue
        c = verdict.candidate
        try:
            await bindings.update(
                c.key, moved(verdict, now=now), revision=c.revision, guards=guards
            )
        except (errors.Conflict, errors.NotFound):
            out.changed.append(verdict.ref)
            continue
        out.moved.append(verdict.ref)
    return out
