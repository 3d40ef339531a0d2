"""Drill reports: what a drill saw, and the pure judgement of it.

Fed by the samples `drills.run` takes of the registry (one `Sample` per poll, each workload
that has a Binding as a `WorkloadState`); feeds the `Report` that `drills` stores at
`keys.drill_key(id)` and renders, and the live `curve` the drill API shows while a drill
runs. Kept apart from the running so the rules can be read, and tested with made-up
timelines, without a registry or a clock:

    detect      first failover taint on the member (or Ready=False), from the fault
    re-place    the last affected workload placed again away from the member: its Binding
                Scheduled on other clusters; `-` when one never was
    RTO         the last affected workload healthy on all of its new targets; `-` when one
                never was
    affected    workloads on the member at the start that left it, or were lost or left
                Pending, or whose outcome is unknown (never left a member never NoExecute
                but still down at the end); work that stayed there (it tolerates the
                fault, or the member was never NoExecute and is back), had finished or was
                deleted by its owner is listed with that outcome, not counted
    lost        affected workloads with no Binding at the end though their template is
                still there, or neither healthy anywhere nor Pending with a reason (must
                be 0)
    double-run  a batch workload running in two members in the same sample (must be 0)
    shortfall   affected workloads that found no new placement: still Pending at the end,
                or Pending until the member came back, each with the scheduler's reason

Why "re-placed" asks for a Scheduled Binding and not only one without the member: eviction
takes the member out of the Binding at once, and a workload the scheduler then cannot place
(three regions needed, two left) waits Pending with the copies it kept. Its replicas went
nowhere; read as re-placed, a drill reported it recovered with no shortfall.

Why a workload whose template is gone at the end is "deleted during the drill" and not
lost: its Binding goes with it, and a drill that counted that as a loss failed (exit 1, no
RTO) because a user ran `fedctl delete` while it held the fault. Failover lost nothing.
Once deleted it stays so: a workload created again under its name (another uid, or seen
after a sample without its template) is a new object, as in Kubernetes, and not the one
that was on the member. Followed by name alone, the running lines said it dropped out
twice, its "to move" total rose on a deletion, and the report listed it as stayed.

Why the services not placed on the member again after the heal are named (`not_back`):
lifting a user's taint, the drill's among them, moves no divided service back (as `kubectl
uncordon` moves no pod back; only a member back from failover's own taints gets its share
again), so after a taint drill, the one safe in production, the member stayed empty while
every line read `recovered`. `fedctl rebalance` moves them back on request.

Why the live counters (`k/n` as the drill runs, the dashboard's curve) count only work that
must move: a Namespace is never evicted and a finished job is never moved, so counting them
made a drill that moved its one service read `1/4` for good. Why they, the running report
and the final one count through one judgement (`_Follow`), the running one counting work
still on the member as `not moved yet`: counted apart, the counters kept work deleted or
finished before it moved, and work that tolerated the fault, which the report left out,
and read `re-placed 5/22` beside a report of 18 affected.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from federation.failover import eviction

__all__ = [
    "UNREADABLE",
    "Narrator",
    "Progress",
    "Report",
    "Sample",
    "WorkloadState",
    "WorkloadTimeline",
    "curve",
    "decode",
    "encode",
    "must_move",
    "new_id",
    "recovered",
    "summarise",
]


@dataclass(frozen=True, slots=True)
class WorkloadState:
    """One workload in one sample."""

    targets: tuple[str, ...] = ()
    healthy: tuple[str, ...] = ()
    running: tuple[str, ...] = ()
    phase: str = "Pending"
    """The Binding's phase (`Pending` with `reason` when the scheduler found no room)."""
    reason: str = ""
    finished: bool = False
    """The workload itself has ended (a Succeeded or Failed job): nothing runs to move."""
    evictable: bool = True
    """Failover may move it (False for a Namespace, which stays on every member)."""
    batch: bool = False
    """It runs to completion (a job, a gang): once moved it finishes where it went, and
    nothing, `fedctl rebalance` included, moves it back."""
    stays_away: bool = False
    """A service its policy divides aggregated or by dynamic weights, without `failback:
    Automatic`: failover never places it back on a member that returns (Steady division);
    only `fedctl rebalance` does."""
    uid: str = ""
    """Its template's uid (empty: not known). Another uid under the same name is a new
    object, created after the one followed was deleted: not the workload the drill
    followed, whatever it does."""


@dataclass(frozen=True, slots=True)
class Sample:
    """The registry at `t` seconds into the drill."""

    t: float
    member_down: bool
    workloads: Mapping[str, WorkloadState]
    no_execute: bool = False
    """The member carried a NoExecute taint (failover's or the drill's): work that does not
    tolerate it was due to leave."""
    templates: frozenset[str] | None = None
    """The workloads whose template (the object the user applied) exists; None when not
    read (a made-up timeline), taken as every one. A workload without one was deleted by
    its owner, whatever is left of its Binding."""

    def deleted(self, workload: str) -> bool:
        return self.templates is not None and workload not in self.templates


_RECOVERED = "recovered"
_PENDING = "pending"
_PENDING_UNTIL_BACK = "pending until the member came back"
_PARTLY = "re-placed, not healthy on all of its clusters"
_STAYED = "stayed (tolerates the fault)"
_NOT_EVICTED = "stayed (no eviction during the drill)"
_UNKNOWN = "outcome unknown: member still down at the drill's end"
"""Work still on a member that is not Ready, or carries a failover taint, when the drill
stops, which never carried a NoExecute taint: it may yet be evicted (the member's taint
turns NoExecute when its eviction grace runs out, and a healed member is Ready again only
after the success threshold), so it is neither stayed nor moved. Counted as affected, so
RTO stays open: the drill did not see the end of what the fault did to it."""
_FINISHED = "finished (not moved)"
_RETURNED = "back on the member, not healthy yet"
_RETURNED_HEALTHY = "back on the member, healthy"
_LOST_BINDING = "lost: Binding gone"
_LOST_HEALTH = "lost: healthy nowhere"
_DELETED = "deleted during the drill"
_NOT_YET = "not moved yet"
"""While the drill runs: work that must move and has not left the member yet. Counted;
judged at the end, it stayed if it never left."""
_UNAFFECTED = frozenset({_STAYED, _NOT_EVICTED, _FINISHED, _DELETED})
"""Outcomes of work the fault did not touch: listed in the report, not counted as affected."""
_SHORT = frozenset({_PENDING, _PENDING_UNTIL_BACK})
"""Outcomes of work that found no new placement: the shortfall."""


@dataclass
class WorkloadTimeline:
    """One workload that was on the member when the drill began; `outcome` is set by
    `summarise` from what the samples show (one of the constants above).

    `left`: when its Binding first stopped targeting the member; `replaced`: when it was
    first Scheduled away from it (the two differ for work that waited Pending); `waiting`:
    the last reason it was Pending for in between (empty: it never waited)."""

    workload: str
    replaced: float | None = None
    ready: float | None = None
    outcome: str = ""
    left: float | None = None
    waiting: str = ""

    @property
    def affected(self) -> bool:
        """The fault moved it, or should have: counted in the report's measures."""
        return self.outcome not in _UNAFFECTED


@dataclass
class Report:
    """What a drill measured; times in seconds from the fault."""

    id: str
    cluster: str
    fault: str
    started: str
    duration: float
    detect: float | None = None
    replace: float | None = None
    rto: float | None = None
    affected: int = 0
    lost: int = 0
    double_runs: int = 0
    shortfall: dict[str, str] = field(default_factory=dict)
    healed_at: float | None = None
    workloads: list[WorkloadTimeline] = field(default_factory=list)
    error: str = ""
    """Why the drill stopped early (the fault could not be injected, say); empty if not."""
    not_back: list[str] = field(default_factory=list)
    """Services that moved off the member and were not placed on it again by the end,
    though the fault was lifted and the member was back: judged only then."""
    kept_away: list[str] = field(default_factory=list)
    """Services that moved off the member and that failover never brings back (their
    division is Steady, `WorkloadState.stays_away`), judged as `not_back` is."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Report:
        data = dict(doc)
        data["workloads"] = [WorkloadTimeline(**w) for w in data.get("workloads", [])]
        return cls(**data)

    def blank(self) -> Report:
        """The same drill before judgement: what `summarise` starts from."""
        return Report(self.id, self.cluster, self.fault, self.started, self.duration)


@dataclass
class Progress:
    """What a running drill has seen so far, for a caller that shows it while it runs.

    `run` appends every sample as it is taken and stamps the fault and heal times, so
    `partial` gives the report as of any moment.
    """

    samples: list[Sample] = field(default_factory=list)
    fault_at: float | None = None
    healed_at: float | None = None
    stage: str = "starting"
    """starting → fault (held) → settling (healed, watching recovery) → done; or
    interrupted (cancelled: healed, the report so far stored as `report`)."""
    report: Report | None = None
    """The report of a drill interrupted before it was done, marked so in its `error`."""

    def partial(self, report: Report, *, final: bool = False) -> Report:
        """The report from the samples so far; `final` when no more will come (the drill
        is done, or stopped), so work that never left is judged to have stayed."""
        return summarise(
            self.samples,
            report=report.blank(),
            fault_at=self.fault_at or 0.0,
            healed_at=self.healed_at,
            final=final,
        )


class Narrator:
    """What a running drill has seen since it last said, as lines for a terminal.

    A drill holds its fault for 90 s by default and then watches as long again: the CLI
    was silent all that time, then printed the report. These lines say when the fault
    went in, when the controller noticed, each workload re-placed and ready elsewhere,
    and the heal, each once, stamped with the time from the start.

    The `k/n` counters count what the running report counts as affected (`summarise`
    before the end): work that must move, less work deleted or finished before it moved,
    each said once as it drops out. Work that never leaves is judged to have stayed only
    at the end, so the last line, once the drill is done, gives the report's own totals
    and what it no longer counts: the counters read `re-placed 5/22` against a report of
    18 affected, and nothing said where the other four went.

    Above `COMPACT_ABOVE` workloads to move (and not `verbose`), the per-workload lines
    give way to one counter line, said at most every `COUNTER_EVERY` seconds of the drill
    while it changes: a busy member of 220 workloads printed 440 of them, two per
    workload, and the table after them said it all again. A Pending wait is then said
    once, by one example, and counted in the counter line."""

    COMPACT_ABOVE = 20
    COUNTER_EVERY = 5.0

    def __init__(self, report: Report, *, settle: float, verbose: bool = False) -> None:
        self.report = report
        self.settle = settle
        self.verbose = verbose
        self._compact = False
        self._told: tuple[int, int, int] = (0, 0, 0)
        self._told_at: float | None = None
        self._example = False
        self._stage = "starting"
        self._detected = False
        self._replaced: set[str] = set()
        self._ready: set[str] = set()
        self._waiting: dict[str, str] = {}
        self._counted: set[str] = set()
        self._not_back = False

    def lines(self, progress: Progress) -> list[str]:
        if not progress.samples:
            return []
        now = progress.samples[-1].t
        out: list[str] = []
        r = self.report
        if progress.fault_at is not None and self._stage == "starting":
            self._stage = "fault"
            out.append(f"fault in: {r.fault} on {r.cluster}, held {r.duration:g}s")
        partial = progress.partial(r) if progress.fault_at is not None else None
        if partial is not None:
            if partial.detect is not None and not self._detected:
                self._detected = True
                out.append(f"detected: {r.cluster} marked down after {partial.detect:.1f}s")
            out += self._counters(partial, now=now)
        if progress.healed_at is not None and self._stage == "fault":
            self._stage = "settling"
            out.append(f"healed: watching recovery for up to {self.settle:g}s")
        away = partial.not_back if partial is not None and progress.stage != "done" else []
        if away and not self._not_back:
            self._not_back = True
            out.append(
                f"not back on {r.cluster} yet: {len(away)} of the services that moved;"
                " watching for them until the settle runs out"
            )
        if partial is not None and progress.stage == "done" and self._stage != "done":
            self._stage = "done"
            judged = progress.partial(r, final=True)
            out.append(self._totals(judged, must_move(progress.samples[0], r.cluster)))
        return [f"[{now:6.1f}s] {text}" for text in out]

    def _counters(self, partial: Report, *, now: float) -> list[str]:
        out: list[str] = []
        counted = {line.workload for line in partial.workloads if line.affected}
        total = len(counted)
        for line in partial.workloads:
            if line.workload in self._counted - counted:
                out.append(f"{line.workload}: {line.outcome}; not counted, {total} to move")
        self._counted = counted
        self._compact = self._compact or (not self.verbose and total > self.COMPACT_ABOVE)
        if self._compact:
            return out + self._counter_line(partial, counted, now=now)
        for line in partial.workloads:
            if line.workload not in counted:
                continue
            if line.replaced is not None and line.workload not in self._replaced:
                self._replaced.add(line.workload)
                out.append(
                    f"re-placed {len(self._replaced & counted)}/{total}: {line.workload}"
                    f" after {line.replaced:.1f}s"
                )
            if line.ready is not None and line.workload not in self._ready:
                self._ready.add(line.workload)
                out.append(
                    f"ready elsewhere {len(self._ready & counted)}/{total}: {line.workload}"
                    f" after {line.ready:.1f}s"
                )
            waits = line.replaced is None and _scheduler_said(line.waiting)
            if waits and self._waiting.get(line.workload) != line.waiting:
                self._waiting[line.workload] = line.waiting
                out.append(f"not re-placed: {line.workload} is Pending: {line.waiting}")
        return out

    def _counter_line(self, partial: Report, counted: set[str], *, now: float) -> list[str]:
        """The compact form: one line of counts when they changed, at most every
        `COUNTER_EVERY` seconds (at once when everything is ready elsewhere), and the
        first Pending wait by way of example."""
        out: list[str] = []
        lines = [line for line in partial.workloads if line.workload in counted]
        replaced = sum(1 for line in lines if line.replaced is not None)
        ready = sum(1 for line in lines if line.ready is not None)
        waiting = [
            line for line in lines if line.replaced is None and _scheduler_said(line.waiting)
        ]
        if waiting and not self._example:
            self._example = True
            out.append(
                f"not re-placed: {waiting[0].workload} is Pending: {waiting[0].waiting}"
                f" ({len(waiting)} Pending now; -v names each)"
            )
        counts = (replaced, ready, len(waiting))
        total = len(counted)
        due = self._told_at is None or now - self._told_at >= self.COUNTER_EVERY
        if counts != self._told and (due or ready == total):
            self._told, self._told_at = counts, now
            text = f"re-placed {replaced}/{total}, ready elsewhere {ready}/{total}"
            out.append(text + (f", {len(waiting)} Pending" if waiting else ""))
        return out

    @staticmethod
    def _totals(report: Report, movers: list[str]) -> str:
        """The judged report's counts, and what of the work that had to move it does not
        count, by outcome."""
        affected = [line for line in report.workloads if line.affected]
        replaced = sum(1 for line in affected if line.replaced is not None)
        ready = sum(1 for line in affected if line.ready is not None)
        n = report.affected
        text = f"done: {n} affected"
        if n:
            text += f", re-placed {replaced}/{n}, ready elsewhere {ready}/{n}"
        left_out = Counter(
            line.outcome
            for line in report.workloads
            if line.workload in movers and not line.affected
        )
        if left_out:
            text += "; not counted: " + ", ".join(f"{c} {o}" for o, c in sorted(left_out.items()))
        unknown = sum(1 for line in affected if line.outcome == _UNKNOWN)
        if unknown:
            # Counted but neither re-placed nor ready: without this the counters read as a
            # failover that never came, not as a drill that stopped before it could.
            text += f"; {unknown} {_UNKNOWN}"
        if report.not_back:
            text += f"; not back on {report.cluster}: {len(report.not_back)}"
        return text


def must_move(sample: Sample, cluster: str) -> list[str]:
    """The workloads of `sample` on `cluster` that failover moves when it loses the member,
    unless their policy tolerates it: not a Namespace, never evicted, nor a finished job,
    never moved."""
    return sorted(
        w
        for w, s in sample.workloads.items()
        if cluster in s.targets and s.evictable and not s.finished
    )


def recovered(samples: list[Sample], cluster: str) -> bool:
    """Every workload that was on `cluster` at the start is whole again (Scheduled and
    healthy on each of its targets), has finished or was deleted, and every service is
    placed on `cluster` again: nothing is left that a drill still waits to see.

    Copies kept while the rest waits to be placed are not whole: a drill watching them
    would stop before learning whether the rest ever found room. A service whole elsewhere
    is not back: a member returning from failover's taints gets its share again a moment
    after they go, and a drill that stopped as they went reported it never did; after a
    user's taint nothing comes back, which only watching to the end can tell apart."""
    first, last = samples[0], samples[-1]
    on_member = [w for w, s in first.workloads.items() if cluster in s.targets]
    return all(
        _replaced(first.workloads[w], last, w)
        or (
            (s := last.workloads.get(w)) is not None
            and (s.finished or (_whole(s) and (s.batch or s.stays_away or cluster in s.targets)))
        )
        for w in on_member
    )


def _replaced(start: WorkloadState, sample: Sample, workload: str) -> bool:
    """Whether `sample` no longer has the object that was `workload` at the start: its
    template is deleted, or another object of that name (another uid) stands there."""
    if sample.deleted(workload):
        return True
    now = sample.workloads.get(workload)
    return now is not None and bool(start.uid and now.uid) and now.uid != start.uid


def _scheduler_said(reason: str) -> bool:
    """Whether a Pending reason is the scheduler's verdict, not failover's note that it
    evicted the workload and the scheduler has yet to look (`eviction.evict`)."""
    return bool(reason) and not reason.endswith(eviction.RE_PLACING)


def _placed_elsewhere(state: WorkloadState, cluster: str) -> bool:
    """Scheduled on clusters other than `cluster`. Only a Scheduled Binding counts: a
    Pending one names the copies left while the rest waits to be placed, which is not a
    new placement, nor a recovery however healthy those copies are."""
    return state.phase == "Scheduled" and bool(state.targets) and cluster not in state.targets


def _whole(state: WorkloadState) -> bool:
    """Scheduled and healthy on every one of its targets."""
    return (
        state.phase == "Scheduled"
        and bool(state.targets)
        and all(t in state.healthy for t in state.targets)
    )


def _healthy_elsewhere(state: WorkloadState, cluster: str) -> bool:
    """Placed away from `cluster` and healthy on every target."""
    return _placed_elsewhere(state, cluster) and _whole(state)


def summarise(
    samples: list[Sample],
    *,
    report: Report,
    fault_at: float,
    healed_at: float | None,
    final: bool = True,
) -> Report:
    """Fill `report` from the samples (pure). `final`: these are all the samples there
    will be; before that (a running drill), work that must move and has not yet left the
    member is `not moved yet` and counted, not judged to have stayed."""
    if not samples:
        return report
    report.healed_at = None if healed_at is None else healed_at - fault_at
    report.detect = next(
        (s.t - fault_at for s in samples if s.member_down and s.t >= fault_at), None
    )
    follow = _Follow(samples[0], report.cluster, fault_at)
    doubled: set[str] = set()
    for sample in samples:
        follow.see(sample)
        # While the member is cut off its last report is all we have: its copies may or may
        # not still run and nothing can stop them until it returns (then they are purged
        # before it takes new work). A double run is one seen in two observable members.
        unseen = {report.cluster} if sample.member_down else set()
        doubled.update(n for n, s in sample.workloads.items() if len(set(s.running) - unseen) > 1)
    report.double_runs = len(doubled)
    follow.judge(final=final)
    last = follow.last
    for name, line in follow.lines.items():
        end = last.workloads.get(name)
        if line.outcome == _PENDING and end is not None and end.reason:
            report.shortfall[name] = end.reason
        elif line.outcome in _SHORT:
            report.shortfall[name] = line.waiting or "never placed away from the member"
    affected = follow.counted()
    report.affected = len(affected)
    report.lost = sum(1 for line in affected if line.outcome.startswith("lost"))
    report.workloads = list(follow.lines.values())
    # Each measure is the moment the last affected workload got there, so it is known only
    # when every one did: a workload still waiting leaves it open, as its line says.
    if affected and all(line.replaced is not None for line in affected):
        report.replace = max(line.replaced for line in affected if line.replaced is not None)
    if affected and all(line.outcome == _RECOVERED for line in affected):
        report.rto = max(line.ready for line in affected if line.ready is not None)
    if healed_at is not None and not (last.member_down or last.no_execute):
        report.not_back = follow.not_back()
        report.kept_away = follow.not_back(kept=True)
    return report


class _Follow:
    """Each workload on the member at the start, followed one sample at a time and judged
    at any point: the one judgement behind the report, the running counters and the curve,
    so the three count the same workloads."""

    def __init__(self, first: Sample, cluster: str, fault_at: float) -> None:
        self.cluster = cluster
        self.fault_at = fault_at
        on_member = sorted(w for w, s in first.workloads.items() if cluster in s.targets)
        self.lines = {w: WorkloadTimeline(w) for w in on_member}
        self.movers = frozenset(must_move(first, cluster))
        self.first = first
        self.last = first
        self.deleted: set[str] = set()
        """Workloads deleted since the start (`_replaced`): so they stay, though an
        object of the same name comes back."""
        self.evicting = False
        """The member carried a NoExecute taint at some point since the fault."""

    def see(self, sample: Sample) -> None:
        at = sample.t - self.fault_at
        for name, line in self.lines.items():
            if name in self.deleted or _replaced(self.first.workloads[name], sample, name):
                self.deleted.add(name)
                continue
            state = sample.workloads.get(name)
            if state is None:
                continue
            if line.left is None and self.cluster not in state.targets:
                line.left = at
            if line.replaced is None and _placed_elsewhere(state, self.cluster):
                line.replaced = at
            if (
                line.left is not None
                and line.replaced is None
                and state.phase == "Pending"
                and state.reason
            ):
                line.waiting = state.reason
            if line.ready is None and _healthy_elsewhere(state, self.cluster):
                line.ready = at
        self.evicting = self.evicting or (sample.no_execute and sample.t >= self.fault_at)
        self.last = sample

    def judge(self, *, final: bool) -> None:
        """Set every line's outcome as of the latest sample."""
        for name, line in self.lines.items():
            line.outcome = _outcome(
                line,
                end=self.last.workloads.get(name),
                cluster=self.cluster,
                evicting=self.evicting,
                still_down=self.last.member_down and self.last.t >= self.fault_at,
                deleted=name in self.deleted,
                due=not final and name in self.movers,
            )

    def counted(self) -> list[WorkloadTimeline]:
        """The lines judged affected: the report's count and the counters' denominator."""
        return [line for line in self.lines.values() if line.affected]

    def not_back(self, *, kept: bool = False) -> list[str]:
        """The services re-placed away from the member that the latest sample does not
        place on it again (a batch job finishes where it went, and is never moved back):
        those failover would bring back, or (`kept`) those it never does."""
        out = []
        for name, line in self.lines.items():
            end = self.last.workloads.get(name)
            if line.replaced is None or end is None or end.batch or name in self.deleted:
                continue
            if self.cluster not in end.targets and end.stays_away is kept:
                out.append(name)
        return out


def _outcome(
    line: WorkloadTimeline,
    *,
    end: WorkloadState | None,
    cluster: str,
    evicting: bool,
    still_down: bool,
    deleted: bool,
    due: bool,
) -> str:
    """What happened to one workload that was on the member, judged at the last sample.

    Work its owner deleted is no business of the drill's, whatever it did before. Work
    that never left the member was not moved by the fault: a finished job (moving it
    would only run it again), work that tolerates the fault (it stayed while the member was
    NoExecute, `evicting`), or work nothing asked to leave (the member never became
    NoExecute and is back at the end: degraded but Ready, or a fault over before the
    failure threshold marked it down). Work on a member never NoExecute but still down at
    the end (`still_down`: not Ready, or tainted by failover) is unknown: its eviction may
    be seconds away, and calling it stayed counted work about to move as untouched. While
    the drill runs (`due`) work that must move is only not moved yet, since any may come.
    Only work that left, or should have and could not, is recovered, pending or lost.
    Work that left and found no new placement waited: still Pending at the end, or
    Pending until the member came back and took it again, which is no recovery by
    failover. Recovered is work that was ready elsewhere and is healthy at the end; work
    that failed back to the member before that is back, healthy or not yet."""
    if deleted:
        return _DELETED
    if end is None:
        return _LOST_BINDING
    if end.phase == "Pending" and end.reason:  # with targets: the copies it still has
        return _PENDING
    if line.left is None and end.finished:
        return _FINISHED
    if line.left is None and due:
        return _NOT_YET
    if line.left is None and evicting:  # every sample, the last one too, has it there
        return _STAYED
    if line.left is None:
        return _UNKNOWN if still_down else _NOT_EVICTED
    if line.replaced is None:
        return _PENDING_UNTIL_BACK if cluster in end.targets else _PENDING
    if line.ready is not None and end.healthy:
        return _RECOVERED
    if cluster in end.targets:
        return _RETURNED_HEALTHY if _whole(end) else _RETURNED
    return _PARTLY if end.healthy else _LOST_HEALTH


def curve(samples: list[Sample], *, cluster: str, fault_at: float) -> list[dict[str, Any]]:
    """Per sample, how many workloads the drill counts as affected so far (as the running
    report and counters do), how many of them are placed away from the member and how many
    are ready there: the live view of a drill before it is judged. `t` is from the fault."""
    if not samples:
        return []
    follow = _Follow(samples[0], cluster, fault_at)
    out = []
    for s in samples:
        follow.see(s)
        follow.judge(final=False)
        states = [s.workloads.get(line.workload) for line in follow.counted()]
        out.append(
            {
                "t": round(s.t - fault_at, 3),
                "memberDown": s.member_down,
                "affected": len(states),
                "moved": sum(1 for x in states if x and _placed_elsewhere(x, cluster)),
                "ready": sum(1 for x in states if x and _healthy_elsewhere(x, cluster)),
            }
        )
    return out


def encode(report: Report) -> bytes:
    return json.dumps({"schemaVersion": 1, "object": report.to_json()}).encode()


UNREADABLE = (ValueError, KeyError, TypeError, AttributeError)
"""What `decode` raises for a record it cannot read: not JSON, no `object`, a field this
release does not know (a report written by a newer one) or a value of the wrong shape."""


def decode(data: bytes) -> Report:
    return Report.from_json(json.loads(data)["object"])


def new_id(now: dt.datetime, cluster: str) -> str:
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{cluster}"
