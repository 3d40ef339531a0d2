"""Making room: which admitted work a job that does not fit may evict, and the fewest
victims that let it in - preemption inside its queue, then reclaim across queues.

Fed by admission with a job that failed on capacity, quota or lending, the cycle state and
a check of whether the job is admissible in a given state; feeds admission the victims to
evict, the state without them and where the job then goes, for admission to commit. Also
feeds `release` to the cycle's what-if of an admitted workload.

Why what-if on a copy: whether evicting a victim really lets the preemptor in depends on
capacity and quota together, so each trial releases victims on a copy of the state, and
admission keeps the copy only when the job is admitted there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from federation.cache import snapshot as snap
from federation.cache.parts import request_amount
from federation.queue.pending import PendingJob
from federation.quota import accounting, hierarchy
from federation.resources import ResourceList
from federation.scheduler import framework as fw
from federation.scheduler import held
from federation.scheduler import placement as pl
from federation.scheduler.plugins import chips as chip_plugin
from federation.scheduler.plugins import quota
from federation.settings import SchedulerSettings

__all__ = ["Admissible", "Room", "charge_of", "make", "pools", "release"]

_MEMBERS = 8
"""Members whose victims preemption offers apart when its pool is longer than a trial
(`_member_by_member`): each costs one trial."""
_ONE_BY_ONE = 32
"""Victims a trial releases one at a time, with a placement after each (`make`), and the
most that `_fewest` spares one by one."""

Admissible = Callable[[fw.JobRequest, fw.CycleState], pl.Placed | None]
"""Where a job goes in a state when it is placed there and passes every limit, else None."""


class Room(NamedTuple):
    """Room made for a job: who goes, the state without them, and where the job lands."""

    victims: list[accounting.Admission]
    state: fw.CycleState
    placed: pl.Placed


def pools(
    job: PendingJob,
    kind: str,
    request: fw.JobRequest,
    *,
    state: fw.CycleState,
    settings: SchedulerSettings,
    placer: pl.Placer,
) -> Iterator[list[accounting.Admission]]:
    """Distinct sets of victims, at most the number one job may evict, for `make` to try
    in turn: one chip's charge often picks the same victims as another's."""
    tried: set[tuple[str, ...]] = set()
    for found in _pools(job, kind, request, state=state, settings=settings, placer=placer):
        pool = found[: accounting.MAX_VICTIMS]
        key = tuple(str(a.ref) for a in pool)
        if key not in tried:
            tried.add(key)
            yield pool


def _pools(
    job: PendingJob,
    kind: str,
    request: fw.JobRequest,
    *,
    state: fw.CycleState,
    settings: SchedulerSettings,
    placer: pl.Placer,
) -> Iterator[list[accounting.Admission]]:
    """Sets of victims to try in turn, each in the order they are given up, found only
    when the one before could not make room: preemption inside the job's queue first,
    then reclaim from queues borrowing beyond their guarantee."""
    usage = state.usage
    if kind == "quota" and settings.preemption:
        queue = state.snapshot.queues.get(job.queue)
        above = (
            hierarchy.ancestor_limits(queue.name, state.snapshot.queues, usage)
            if queue is not None and queue.spec.parent is not None
            else ()
        )
        namespace = _namespace_limit(job, state)
        if queue is not None or namespace is not None:
            for charge in _charges(request, state):
                victims = accounting.preemption_victims(
                    queue if queue is not None else job.queue,
                    usage=usage,
                    charge=charge,
                    priority=job.priority,
                    above=above,
                    namespace=namespace,
                )
                if victims:  # none needed on this chip: the limit is not what stops it there
                    yield victims
        yield from _share_victims(job, request, state=state, placer=placer)
    elif kind == "capacity" and (settings.preemption or settings.reclaim):
        # Only victims on clusters the job could use at all can make room for it.
        rows, _ = placer.static_rows(request, state)
        names = {state.snapshot.clusters[r].name for r in rows.tolist()}
        if settings.preemption:
            own = sorted(
                (
                    a
                    for a in usage.in_queue(job.queue)
                    if a.priority < job.priority and names.intersection(a.placement)
                ),
                key=lambda a: (a.priority, -a.seq),
            )
            if own:
                yield own
                yield from _member_by_member(own)
        # A fleet full of borrowed work fails on capacity, not on lending: a queue under
        # its guarantee reclaims there too, also when its own lower-priority work alone
        # cannot make room.
        yield from _reclaim(job, request, state=state, settings=settings, clusters=names)
    elif kind == "lend":
        yield from _reclaim(job, request, state=state, settings=settings)


def _member_by_member(victims: list[accounting.Admission]) -> Iterator[list[accounting.Admission]]:
    """The victims grouped by member, when there are more than one trial releases: the
    first `MAX_VICTIMS` in order may sit one per member, each freeing too little for a
    job that needs more on one (within those, the trial already releases every victim a
    member holds). First all of them member after member, the members holding the most
    first (a divided job needing room on several members finds it there); then, one
    member at a time, the victims of the (up to `_MEMBERS`) members a trial of the first
    set does not reach."""
    if len(victims) <= accounting.MAX_VICTIMS:
        return
    on: dict[str, list[accounting.Admission]] = {}
    for victim in victims:
        for name in victim.placement:
            on.setdefault(name, []).append(victim)
    members = sorted(on, key=lambda n: (-len(on[n]), n))
    grouped = list({id(v): v for name in members for v in on[name]}.values())
    yield grouped
    reached = {name for v in grouped[: accounting.MAX_VICTIMS] for name in v.placement}
    for name in [n for n in members if n not in reached][:_MEMBERS]:
        yield on[name]


def _namespace_limit(job: PendingJob, state: fw.CycleState) -> accounting.NamespaceLimit | None:
    """The job's namespace quota as a limit preemption inside its queue can make room
    under (None: the namespace has no FederatedResourceQuota)."""
    namespace = job.ref.namespace
    frq = state.snapshot.quotas.get(namespace)
    if frq is None:
        return None
    used = state.usage.namespace_used(namespace)
    return accounting.NamespaceLimit(namespace, used, frq.spec.overall)


def _share_victims(
    job: PendingJob, request: fw.JobRequest, *, state: fw.CycleState, placer: pl.Placer
) -> Iterator[list[accounting.Admission]]:
    """Lower-priority work of the job's queue and namespace holding the namespace's static
    share on a member the job may use: a job that only a share keeps out preempts there as
    one that capacity keeps out does (queue limits are not what stops it)."""
    namespace = job.ref.namespace
    hard = quota.static_hard(state, namespace)
    if not hard:
        return
    rows, _ = placer.static_rows(request, state)
    names = {state.snapshot.clusters[r].name for r in rows.tolist()}.intersection(hard)
    own = sorted(
        (
            a
            for a in state.usage.in_queue(job.queue)
            if a.namespace == namespace
            and a.priority < job.priority
            and names.intersection(a.placement)
        ),
        key=lambda a: (a.priority, -a.seq),
    )
    if own:
        yield own


def _reclaim(
    job: PendingJob,
    request: fw.JobRequest,
    *,
    state: fw.CycleState,
    settings: SchedulerSettings,
    clusters: set[str] | None = None,
) -> Iterator[list[accounting.Admission]]:
    if not settings.reclaim:
        return
    snapshot = state.snapshot
    for charge in _charges(request, state):
        yield from accounting.reclaim_pools(
            job.queue,
            queues=snapshot.queues,
            usage=state.usage,
            capacity=snapshot.capacity,
            charge=charge,
            clusters=clusters,
        )


def charge_of(request: fw.JobRequest, state: fw.CycleState) -> ResourceList:
    """What admitting the job charges on the chip it most prefers of those it may get."""
    return _charges(request, state)[0]


def _charges(request: fw.JobRequest, state: fw.CycleState) -> list[ResourceList]:
    """What admitting the job charges on each chip it may land on, most preferred
    first: a queue capped on one model must make room on the chip the job can get,
    which need not be its first choice."""
    if not request.devices:
        return [quota.charge_for(request, None, state.snapshot.chip_devices)]
    s = state.snapshot
    kinds = np.unique(s.flavor_chip[chip_plugin.flavor_mask(request, state)])
    found = [s.chips[int(i)] for i in kinds.tolist() if i >= 0]
    found.sort(key=lambda c: fw.chip_rank(request, c))  # stable: the fleet's order next
    if not found:
        first = request.chips[0] if request.chips else None
        return [quota.charge_for(request, first, s.chip_devices)]
    return list(dict.fromkeys(quota.charge_for(request, chip, s.chip_devices) for chip in found))


def make(
    request: fw.JobRequest,
    pool: list[accounting.Admission],
    *,
    state: fw.CycleState,
    admissible: Admissible,
) -> Room | None:
    """Release the pool's victims in order on a copy of `state` until the job is
    admissible there, then spare those it turns out not to need; None when even the
    whole pool does not let it in. `state` itself is left as it was.

    The first `_ONE_BY_ONE` go one at a time, a placement after each. Past them (a job of
    hundreds of replicas may need hundreds of one-pod jobs gone) they go in doubling steps,
    and once a step lets the job in, the shortest start of the pool that does is found by
    bisection: a placement per step rather than per victim, so even a pool that cannot
    make room costs a few placements more than the first few dozen."""
    trial = state.copy()
    victims: list[accounting.Admission] = []
    for victim in pool[:_ONE_BY_ONE]:
        release(trial, victim)
        victims.append(victim)
        placed = admissible(request, trial)
        if placed is not None:
            made = _fewest(
                request, Room(victims, trial, placed), state=state, admissible=admissible
            )
            return _one_instead(request, pool, made, state=state, admissible=admissible)
    rest = pool[_ONE_BY_ONE : accounting.MAX_VICTIMS]
    step, failed = _ONE_BY_ONE, len(victims)
    while rest:
        for victim in rest[:step]:
            release(trial, victim)
            victims.append(victim)
        rest = rest[step:]
        placed = admissible(request, trial)
        if placed is not None:
            made = _shortest(request, Room(victims, trial, placed), failed, state, admissible)
            return _fewest(request, made, state=state, admissible=admissible)
        failed, step = len(victims), step * 2
    return None


def _shortest(
    request: fw.JobRequest,
    made: Room,
    failed: int,
    state: fw.CycleState,
    admissible: Admissible,
) -> Room:
    """The shortest start of `made.victims` that lets the job in, by bisection between
    `failed` victims (which did not) and all of them (which did)."""
    low, high = failed, len(made.victims)
    while high - low > 1:
        middle = (low + high) // 2
        trial = state.copy()
        for victim in made.victims[:middle]:
            release(trial, victim)
        placed = admissible(request, trial)
        if placed is None:
            low = middle
        else:
            high, made = middle, Room(made.victims[:middle], trial, placed)
    return made


def _fewest(
    request: fw.JobRequest, made: Room, *, state: fw.CycleState, admissible: Admissible
) -> Room:
    """Spare each victim the job turns out not to need, so it evicts no more than it
    must: those on clusters it does not land on first (they free nothing it uses),
    then the latest taken. Each smaller set is tried afresh, placement and limits; past
    `_ONE_BY_ONE` victims that would cost a placement per victim, each releasing all the
    others, so a larger set (the shortest start of the pool that lets the job in) stays."""
    if len(made.victims) < 2:  # the job did not fit before its one victim went
        return made
    landed = set(made.placed.placement)
    made = _spare_elsewhere(request, made, landed, state=state, admissible=admissible)
    if len(made.victims) > _ONE_BY_ONE:
        return made
    order = sorted(reversed(made.victims), key=lambda v: not landed.isdisjoint(v.placement))
    for spare in order:
        rest = [v for v in made.victims if v is not spare]
        if not rest:
            break
        retry = state.copy()
        for victim in rest:
            release(retry, victim)
        again = admissible(request, retry)
        if again is not None:
            made = Room(rest, retry, again)
    return made


def _one_instead(
    request: fw.JobRequest,
    pool: list[accounting.Admission],
    made: Room,
    *,
    state: fw.CycleState,
    admissible: Admissible,
) -> Room:
    """One victim of the pool, of no higher priority than those `made` takes, that lets
    the job in on its own, when `made` takes several; else `made`.

    Why: the pool goes in order (lowest priority, latest first), so two small late jobs
    went where one larger job of the same priority, a little earlier, would have done
    alone: a preemption promised to evict the fewest took two. Only the pool's first
    `_ONE_BY_ONE` are tried, a placement each, and only for preemption inside the job's
    queue, while `made` holds several.
    """
    if len(made.victims) < 2 or any(v.queue != request.job.queue for v in made.victims):
        return made  # reclaim's sets come fewest-first from `accounting.reclaim_pools`
    worst = max(v.priority for v in made.victims)
    taken = {id(v) for v in made.victims}
    for victim in pool[:_ONE_BY_ONE]:
        if victim.priority > worst or id(victim) in taken:
            continue
        trial = state.copy()
        release(trial, victim)
        placed = admissible(request, trial)
        if placed is not None:
            return Room([victim], trial, placed)
    return made


def _spare_elsewhere(
    request: fw.JobRequest,
    made: Room,
    landed: set[str],
    *,
    state: fw.CycleState,
    admissible: Admissible,
) -> Room:
    """Spare at once every victim on clusters the job does not land on, when the job is
    still admitted without them; else `made` unchanged, for `_fewest` to spare them one by
    one (they may free what a fleet-wide limit counts). Why: a reclaim that released
    candidates in order until the job fit may hold dozens of them spread over the fleet,
    and sparing each in turn costs a placement apiece."""
    rest = [v for v in made.victims if not landed.isdisjoint(v.placement)]
    if not rest or len(rest) == len(made.victims) or len(made.victims) - len(rest) < 2:
        return made
    retry = state.copy()
    for victim in rest:
        release(retry, victim)
    again = admissible(request, retry)
    return made if again is None else Room(rest, retry, again)


def release(state: fw.CycleState, victim: accounting.Admission) -> None:
    """Un-charge an admission and give its capacity back where it was taken: what a
    preemption trial and a what-if of an admitted workload both start from."""
    state.usage.release(victim.ref)
    s = state.snapshot
    devices = sum(victim.pod.amount(n) for n in victim.pod if n in s.device_resources)
    amounts = (victim.pod.amount("cpu"), victim.pod.amount("memory"), devices)
    vector = np.array([*(request_amount(a) for a in amounts), 1000], dtype=np.int64)
    for name in victim.placement:
        row = s.index.get(name)
        if row is None:
            continue
        for flavor, pods in _held_on(state, victim, name=name, row=row, vector=vector):
            state.give_back(row, flavor, pods, vector)


def _most_first(room: npt.NDArray[np.int64], pods: int) -> list[tuple[int, int]]:
    """(flavor, pods): `pods` poured into the flavors with the most `room` first, each up
    to its room; what does not fit is left out."""
    out: list[tuple[int, int]] = []
    left = pods
    for flavor in np.argsort(-room, kind="stable").tolist():
        if left <= 0 or room[flavor] <= 0:
            break
        n = min(left, int(room[flavor]))
        out.append((int(flavor), n))
        left -= n
    return out


def _counted_on(
    state: fw.CycleState, victim: accounting.Admission, *, name: str, row: int, replicas: int
) -> list[tuple[int, int]]:
    """(flavor, pods) of the victim's pods on one cluster taken from where the cycle began
    by counting pods like them (`CycleState.attribution`), most first, and no longer
    counted there. Why: given back anywhere else, on a cluster of two arches its room went
    to the other arch's nodes, and a pod pinned to this one was placed into room it lacks.
    """
    key = held.group_of(state.snapshot, victim, name)
    counted = state.attribution.get(key)
    if counted is None or not counted[row].any():
        return []
    out = _most_first(counted[row], replicas)
    if out:
        counted = counted.copy()  # shared with the state's copies: replaced, not written
        for flavor, n in out:
            counted[row, flavor] -= n
        state.attribution[key] = counted
    return out


def _held_on(
    state: fw.CycleState,
    victim: accounting.Admission,
    *,
    name: str,
    row: int,
    vector: npt.NDArray[np.int64],
) -> list[tuple[int, int]]:
    """(flavor, pods) the victim's pods on one cluster hold in `state`.

    Only flavors of the chip it was charged to (none for CPU work) whose node can hold one
    of its pods. Where this cycle admitted it, the flavors it took are used while `state`
    still shows that much in use there; where an earlier one did, the flavors this cycle
    began by counting pods like its own on (`_counted_on`). Otherwise, as `held` charges
    admitted work when a cycle starts, the pods go first where `state` shows room in use
    for them (most first), the rest to the largest such flavor: giving a big pod back to a
    flavor of small nodes would free room nothing can use, and a trial would then miss that
    the job fits.
    """
    s = state.snapshot
    replicas = victim.placement[name]
    chip = victim.chips.get(name)
    kind = s.chips.index(chip) if chip in s.chips else -1
    same = s.flavor_chip[row] == kind
    need = vector > 0
    fits = same & np.all(s.alloc[row][:, need] >= vector[need], axis=-1)
    if not fits.any():  # no node of its chip holds its pod now: the first of the chip
        flavors = np.flatnonzero(same)
        return [(int(flavors[0]), replicas)] if flavors.size else []
    total = s.alloc[row] * s.nodes[row][:, None]
    in_use = np.maximum(total - state.free[row], 0)
    seen = need.copy()
    if need.sum() > 1:
        seen[snap.PODS] = False  # as in `held`: a member may not report pod slots as used
    holds = np.where(fits, np.min(in_use[:, seen] // vector[seen], axis=-1), 0)
    wanted: dict[int, int] = {}
    for cluster, flavor, pods in victim.flavors:
        if cluster == name:
            wanted[flavor] = wanted.get(flavor, 0) + pods
    recorded = wanted and sum(wanted.values()) == replicas and id(victim) in state.fresh
    if recorded and all(
        0 <= f < fits.size and fits[f] and holds[f] >= n for f, n in wanted.items()
    ):
        return list(wanted.items())
    out = _counted_on(state, victim, name=name, row=row, replicas=replicas)
    left = replicas - sum(n for _, n in out)
    if left <= 0:
        return out
    poured = _most_first(holds, left)
    out += poured
    left -= sum(n for _, n in poured)
    if left > 0:
        room = np.where(fits, np.min(total[:, need] // vector[need], axis=-1), -1)
        out.append((int(np.argmax(room)), left))
    return out
