"""Admitted usage: what every queue and namespace holds, and the checks that guard it.

Fed by the scheduling cycle (each admission charges the workload's requests, plus
`accelerator/<model>` for the chip it landed on) and by the controller (a finished or deleted
workload is released so waiting work is reconsidered at once). Feeds admission (queue
capability, lending of idle capacity beyond guarantees, FederatedResourceQuota `overall`),
fair share (usage per queue) and the choice of victims for preemption and reclaim.

Why a separate store with its own totals: pending work changes every cycle, usage only on
admit and release; keeping them apart means a what-if plan can copy usage cheaply and a
bug in ordering can never double-count or lose a charge. Every check returns a sentence
naming the limit and the numbers ("queue ml-research at capability for nvidia-a100:
64/64"), because that sentence is what a user reads on a pending workload.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import NamedTuple

from federation.registry import keys
from federation.resources import ResourceList, format_quantity
from policies.models.accelerator import NO_DEVICE_RENAMES, ChipDevices
from policies.models.frq import FederatedResourceQuota
from policies.models.queue import CHIP_RESOURCE_PREFIX, Queue

__all__ = [
    "MAX_VICTIMS",
    "NEVER",
    "Admission",
    "NamespaceLimit",
    "Usage",
    "admission",
    "capability_problem",
    "lending_problem",
    "overall_problem",
    "preemption_victims",
    "reclaim_note",
    "reclaim_pools",
    "reclaim_victims",
    "subtrees",
]


@dataclass(frozen=True, slots=True)
class Admission:
    """One admitted workload: what it charges and where it runs.

    `charge` is the queue charge (requests of every pod plus `accelerator/<model>`);
    `placement` maps cluster -> replicas; `pod` is one pod's requests; `job` is kept so a
    victim can be re-queued exactly as it was (typed loosely to keep this layer free of the
    pending store). `flavors`: (cluster, node flavor index, pods) as the admitting cycle
    took them, so a victim evicted in that same cycle gives its room back where it was
    taken; empty when read back from a Binding, which does not say (and a later cycle's
    snapshot may number flavors differently anyway).
    """

    ref: keys.WorkloadRef
    queue: str
    namespace: str
    priority: int
    seq: int
    charge: ResourceList
    placement: Mapping[str, int] = field(default_factory=dict)
    pod: ResourceList = field(default_factory=ResourceList)
    chips: Mapping[str, str] = field(default_factory=dict)
    job: object = None
    flavors: tuple[tuple[str, int, int], ...] = field(default=(), compare=False)
    cost: Decimal = Decimal(0)
    """What it costs an hour as placed (its targets' estimates; one unknown counts 0):
    what a queue's budget (`spec.maxHourlyCost`) is held against."""
    devices_as: ChipDevices = NO_DEVICE_RENAMES
    """The device resource each chip's profile names: on a cluster, `pod` runs as
    `devices_as.on(pod, chips[cluster])`, which a member's static share counts."""


_ADMISSION_SLOTS = tuple(Admission.__dict__[name] for name in Admission.__dataclass_fields__)


def admission(
    *,
    ref: keys.WorkloadRef,
    queue: str,
    namespace: str,
    priority: int,
    seq: int,
    charge: ResourceList,
    placement: Mapping[str, int],
    pod: ResourceList,
    chips: Mapping[str, str],
    job: object,
    flavors: tuple[tuple[str, int, int], ...] = (),
    cost: Decimal = Decimal(0),
    devices_as: ChipDevices = NO_DEVICE_RENAMES,
) -> Admission:
    """An `Admission` from values given for every field, built through its slots (the
    cycle makes one per decision, and the frozen dataclass's checks cost more than that)."""
    made = object.__new__(Admission)
    values = (ref, queue, namespace, priority, seq, charge, placement, pod, chips, job)
    for slot, value in zip(_ADMISSION_SLOTS, (*values, flavors, cost, devices_as), strict=True):
        slot.__set__(made, value)
    return made


def _physical(charge: ResourceList) -> ResourceList:
    return ResourceList({n: a for n, a in charge.items() if not n.startswith(CHIP_RESOURCE_PREFIX)})


_SPLITS: dict[int, tuple[ResourceList, list[tuple[str, int]], list[tuple[str, int]]]] = {}
"""Per charge object (by identity, the object kept alongside): its amounts, and those
without `accelerator/<model>`. A cycle charges thousands of admissions with a few dozen
distinct charge objects, and walking a ResourceList as a Mapping costs more than the sums."""
_SPLITS_LIMIT = 4096
_RECLAIM_CLUSTERS = 8
"""Clusters, those holding the most borrowed work first, whose candidates reclaim offers
apart (`reclaim_pools`): each set costs the caller one trial."""
MAX_VICTIMS = 1024
"""Victims one job may evict: a trial (`scheduler.room.make`) releases no more, so a set
offered in order (`reclaim_pools`) holds no more either. A 1,000-GPU job of high priority
may need that many one-GPU jobs gone; a trial past the first few dozen goes in doubling
steps, so its cost grows with the log of the victims."""


def _split(
    charge: ResourceList,
) -> tuple[ResourceList, list[tuple[str, int]], list[tuple[str, int]]]:
    """`_SPLITS`' entry for a charge: (the charge, its amounts, its physical amounts)."""
    hit = _SPLITS.get(id(charge))
    if hit is None or hit[0] is not charge:
        every = list(charge.items())
        bare = [(n, a) for n, a in every if not n.startswith(CHIP_RESOURCE_PREFIX)]
        if len(_SPLITS) >= _SPLITS_LIMIT:
            _SPLITS.clear()
        hit = _SPLITS[id(charge)] = (charge, every, bare)
    return hit


def _amounts(charge: ResourceList, *, physical: bool) -> list[tuple[str, int]]:
    hit = _split(charge)
    return hit[2] if physical else hit[1]


def _add(totals: dict[str, int], amounts: list[tuple[str, int]], sign: int) -> None:
    for name, amount in amounts:
        totals[name] = totals.get(name, 0) + sign * amount


_VERSIONS = itertools.count(1)


class Usage:
    """Admitted workloads with running totals per queue and per namespace.

    Totals are kept as plain name -> amount maps and turned into `ResourceList`s only when
    asked for (and then remembered until the next change): a cycle admits thousands of
    workloads and reads a queue's totals as a list far less often than it charges them.
    """

    def __init__(self, admissions: Iterable[Admission] = ()) -> None:
        self.version = next(_VERSIONS)
        """Unique to this set of admissions: a change takes a new number, a copy keeps it
        (so what is derived from the admitted set can be kept while it stands)."""
        self._admissions: dict[str, Admission] = {}
        self._queues: dict[str, dict[str, int]] = {}
        self._total: dict[str, int] = {}
        """The sum of every queue's totals, kept as they change: lending reads it for every
        admission, where summing the queues each time cost more than the check."""
        self._namespaces: dict[str, dict[str, int]] = {}
        self._placed: dict[tuple[str, str], dict[str, int]] = {}
        """(namespace, cluster) → what the admitted pods there request, `pods` counted too:
        what a member's ResourceQuota from a FederatedResourceQuota's staticAssignments
        holds them to."""
        self._by_queue: dict[str, dict[str, Admission]] = {}
        self._lists: dict[tuple[str, str], ResourceList] = {}
        self._queue_versions: dict[str, int] = {}
        self._spend: dict[str, tuple[int, Decimal]] = {}
        for admission in admissions:
            self.admit(admission)

    def __len__(self) -> int:
        return len(self._admissions)

    def __contains__(self, ref: object) -> bool:
        return str(ref) in self._admissions

    def admit(self, admission: Admission) -> None:
        """Charge an admission (replacing an older one for the same workload)."""
        self.version = next(_VERSIONS)
        key = str(admission.ref)
        if key in self._admissions:
            self.release(admission.ref)
        self._admissions[key] = admission
        q, ns = admission.queue, admission.namespace
        self._by_queue.setdefault(q, {})[key] = admission
        self._queue_versions[q] = self.version
        _, every, physical = _split(admission.charge)
        _add(self._queues.setdefault(q, {}), every, 1)
        _add(self._total, every, 1)
        _add(self._namespaces.setdefault(ns, {}), physical, 1)
        if admission.placement:
            self._place(admission, 1)
        self._lists.pop(("q", q), None)
        self._lists.pop(("ns", ns), None)

    def _place(self, admission: Admission, sign: int) -> None:
        shared = _amounts(admission.pod, physical=True)
        renames, chips = admission.devices_as, admission.chips
        ns = admission.namespace
        for cluster, replicas in admission.placement.items():
            pod = shared
            if renames.pairs and cluster in chips:  # the member counts the rendered pods
                rendered = renames.on(admission.pod, chips[cluster])
                if rendered is not admission.pod:
                    pod = list(rendered.items())
            totals = self._placed.get((ns, cluster))
            if totals is None:
                totals = self._placed[(ns, cluster)] = {}
            n = sign * replicas
            for name, amount in pod:
                totals[name] = totals.get(name, 0) + n * amount
            totals["pods"] = totals.get("pods", 0) + n * 1000

    def release(self, ref: keys.WorkloadRef) -> Admission | None:
        """Un-charge a finished, deleted or evicted workload; returns what it held."""
        admission = self._admissions.pop(str(ref), None)
        if admission is None:
            return None
        self.version = next(_VERSIONS)
        q, ns = admission.queue, admission.namespace
        self._by_queue[q].pop(str(ref), None)
        self._queue_versions[q] = self.version
        _, every, physical = _split(admission.charge)
        _add(self._queues[q], every, -1)
        _add(self._total, every, -1)
        _add(self._namespaces[ns], physical, -1)
        if admission.placement:
            self._place(admission, -1)
        self._lists.pop(("q", q), None)
        self._lists.pop(("ns", ns), None)
        return admission

    def sync(self, admissions: Iterable[Admission], refs: Iterable[str] | None = None) -> None:
        """Make the admitted set exactly `admissions`, charging only what changed.

        The controller re-reads its admissions from the Bindings every cycle, and almost
        all of them are the very objects of the cycle before (the reconcile memo keeps
        them), so comparing by identity and charging the difference keeps a cycle's cost
        off the number of admitted workloads. `refs`: each admission's `str(ref)`, in order,
        when the caller has them already.
        """
        current = self._admissions
        wanted: dict[str, Admission] = {}
        pairs: Iterable[tuple[str, Admission]] = (
            zip(refs, admissions, strict=True)
            if refs is not None
            else ((str(a.ref), a) for a in admissions)
        )
        for key, admission in pairs:
            wanted[key] = admission
            if current.get(key) is not admission:
                self.admit(admission)
        if len(current) != len(wanted):
            for key in [k for k in current if k not in wanted]:
                self.release(current[key].ref)

    def apply(self, changes: Mapping[str, Admission | None]) -> None:
        """Charge each admission of `changes` (by `str(ref)`) and release each None: `sync`
        for a caller that knows which workloads changed, so it costs what changed."""
        current = self._admissions
        for key, admission in changes.items():
            if admission is None:
                held = current.get(key)
                if held is not None:
                    self.release(held.ref)
            elif current.get(key) is not admission:
                self.admit(admission)

    def get(self, ref: keys.WorkloadRef) -> Admission | None:
        return self._admissions.get(str(ref))

    def by_ref(self) -> Mapping[str, Admission]:
        """Every admission by `str(ref)`, read-only and without a copy (hot paths)."""
        return self._admissions

    def admissions(self) -> list[Admission]:
        return list(self._admissions.values())

    def in_queue(self, queue: str) -> list[Admission]:
        """The admitted workloads of one queue."""
        return list(self._by_queue.get(queue, {}).values())

    def counts(self) -> dict[str, int]:
        """How many workloads with pods each queue has admitted (a queue once charged may
        have 0). A Namespace, ConfigMap or Service is placed and bound like work, but it is
        not a job anyone queued: counted, it made `default` read as busy with nothing run."""
        return {
            q: sum(1 for a in admitted.values() if a.pod) for q, admitted in self._by_queue.items()
        }

    def queue_totals(self, queue: str) -> Mapping[str, int]:
        """A queue's totals as a plain read-only map (for hot paths such as fair share)."""
        return self._queues.get(queue, {})

    def totals_of(self, queues: Iterable[str]) -> dict[str, int]:
        """Several queues' totals summed (what a subtree holds), as a plain map."""
        out: dict[str, int] = {}
        for queue in queues:
            for name, amount in self._queues.get(queue, {}).items():
                out[name] = out.get(name, 0) + amount
        return out

    def queue_version(self, queue: str) -> int:
        """Changes whenever the queue's totals do (0 for a queue never charged), and is
        kept by a copy: what is derived from those totals can be kept while it stands."""
        return self._queue_versions.get(queue, 0)

    def queue_spend(self, queue: str) -> Decimal:
        """What the queue's admitted work costs an hour (`Admission.cost` summed), worked
        out again only after its admissions changed: asked for queues with a budget."""
        version = self._queue_versions.get(queue, 0)
        hit = self._spend.get(queue)
        if hit is None or hit[0] != version:
            admitted = self._by_queue.get(queue, {}).values()
            hit = self._spend[queue] = (version, sum((a.cost for a in admitted), Decimal(0)))
        return hit[1]

    def namespace_totals(self, namespace: str) -> Mapping[str, int]:
        """A namespace's physical totals as a plain read-only map (`queue_totals`' twin)."""
        return self._namespaces.get(namespace, {})

    def placed_totals(self, namespace: str, cluster: str) -> Mapping[str, int]:
        """What the namespace's admitted pods on `cluster` request, with `pods` their count
        (milli, as every amount), as a plain read-only map."""
        return self._placed.get((namespace, cluster), {})

    def _list(self, kind: str, name: str, totals: dict[str, dict[str, int]]) -> ResourceList:
        cached = self._lists.get((kind, name))
        if cached is None:
            cached = ResourceList(totals.get(name, {}))
            self._lists[(kind, name)] = cached
        return cached

    def queue_used(self, queue: str) -> ResourceList:
        return self._list("q", queue, self._queues)

    def namespace_used(self, namespace: str) -> ResourceList:
        return self._list("ns", namespace, self._namespaces)

    def charged_queues(self) -> Collection[str]:
        """The queues charged anything (some may hold 0 now)."""
        return self._queues.keys()

    def by_queue(self) -> dict[str, ResourceList]:
        return {q: self.queue_used(q) for q in self._queues}

    def total(self) -> ResourceList:
        return ResourceList(self._total)

    def total_amounts(self) -> Mapping[str, int]:
        """`total()` as a plain read-only map (`queue_totals`' twin)."""
        return self._total

    def copy(self) -> Usage:
        other = Usage()
        other.version = self.version
        other._admissions = dict(self._admissions)
        other._queues = {q: dict(t) for q, t in self._queues.items()}
        other._total = dict(self._total)
        other._namespaces = {n: dict(t) for n, t in self._namespaces.items()}
        other._placed = {k: dict(t) for k, t in self._placed.items()}
        other._by_queue = {q: dict(a) for q, a in self._by_queue.items()}
        other._lists = dict(self._lists)
        other._queue_versions = dict(self._queue_versions)
        other._spend = dict(self._spend)
        return other


def _show(name: str, milli: int) -> str:
    binary = name == "memory" or name.endswith("storage")
    return format_quantity(milli, binary=binary)


def _label(name: str) -> str:
    return name.removeprefix(CHIP_RESOURCE_PREFIX)


NEVER = "it can never be admitted"
"""What every reason for a request no amount of waiting admits says: a StrictFIFO queue
whose head says it tells the workloads behind that head (`cycle`)."""


def _never(limit: str, name: str, needs: int, allowed: int) -> str:
    """The reason for a request no amount of waiting admits: it is larger than the limit
    itself. Said outright, so nobody waits for capacity to free up."""
    return (
        f"{limit} for {_label(name)} is {_show(name, allowed)}, this workload needs"
        f" {_show(name, needs)}: {NEVER} (raise the limit or shrink the request)"
    )


def capability_problem(
    queue: Queue | None,
    used: Mapping[str, int],
    charge: ResourceList,
    *,
    child: str = "",
    reserved: Mapping[str, int] | None = None,
) -> str | None:
    """Why `charge` would take `queue` over its capability, or None when it fits.

    `used` may be a ResourceList or `Usage.queue_totals` (no list built per decision).
    `child`: the queue the work is for, when `queue` is its ancestor (`hierarchy`), and
    `reserved` what that ancestor keeps for its other children's unused guarantees."""
    if queue is None or queue.spec.capability is None:
        return None
    cap = queue.spec.capability
    # A ResourceList iterates its names sorted, so the first resource over is reported
    # first; asked for every decision (twice), the check reads each amount once and words
    # nothing until a limit is met. Every resource over is named: "1 more cpu must be
    # freed" alone misleads when the GPUs are full too.
    over: list[str] = []
    kept_any = False
    for name, need in charge.items():
        limit = cap.get(name)
        if limit is None or need <= 0:
            continue
        if need > limit:
            return _never(f"{_queue_label(queue, child)} capability", name, need, limit)
        kept = reserved.get(name, 0) if reserved else 0
        held_now = used.get(name, 0)
        if held_now + kept + need > limit:
            held = f" and {_show(name, kept)} guaranteed to its other queues" if kept else ""
            kept_any = kept_any or bool(kept)
            short = held_now + kept + need - limit
            over.append(
                f"{_label(name)}: {_show(name, held_now)}/{_show(name, limit)}{held}"
                f" {_shortfall(name, need, short)}"
            )
    if not over:
        return None
    lent = (
        f"; a guarantee is never lent, even unused: lower the other queues' guarantees or"
        f" raise {queue.name}'s capability"
        if kept_any
        else ""
    )
    return f"{_queue_label(queue, child)} at capability for {', and for '.join(over)}{lent}"


def _queue_label(queue: Queue, child: str) -> str:
    return f"queue {queue.name}" + (f" (parent of {child})" if child else "")


def _shortfall(name: str, need: int, short: int) -> str:
    """`(needs 4)` when nothing is free, else `(needs 4; 2 more must be freed)`: so a
    reason over a limit already exceeded (17/10) does not read as if one unit would do."""
    if short >= need:
        return f"(needs {_show(name, need)})"
    return f"(needs {_show(name, need)}; {_show(name, short)} more must be freed)"


def overall_problem(
    quota: FederatedResourceQuota | None, used: Mapping[str, int], charge: ResourceList
) -> str | None:
    """Why `charge` would take the namespace over its FederatedResourceQuota overall
    (`used`: a ResourceList or `Usage.namespace_totals`)."""
    if quota is None:
        return None
    overall = quota.spec.overall
    physical = _physical(charge)
    for name in sorted(physical):
        if name not in overall or physical[name] <= 0:
            continue
        ns = quota.metadata.namespace or "default"
        if physical[name] > overall[name]:
            limit = f"namespace {ns} FederatedResourceQuota {quota.metadata.name} overall"
            return _never(limit, name, physical[name], overall[name])
        if used.get(name, 0) + physical[name] > overall[name]:
            short = used.get(name, 0) + physical[name] - overall[name]
            return (
                f"namespace {ns} at FederatedResourceQuota {quota.metadata.name} overall for"
                f" {name}: {_show(name, used.get(name, 0))}/{_show(name, overall[name])}"
                f" {_shortfall(name, physical[name], short)}"
            )
    return None


@dataclass(frozen=True, slots=True)
class _Guarantees:
    """One queue set's guarantees, arranged for lending (asked for each admission)."""

    leaves: dict[str, dict[str, int]]
    """Resource -> queue without children -> its guarantee (nonzero only)."""
    nested: frozenset[str]
    """Resources some parent guarantees: only for these does the tree matter."""
    amounts: dict[str, dict[str, int]]
    """Resource -> any queue -> its guarantee (nonzero only)."""
    parent: dict[str, str]
    """Queue -> its defined parent (a chain ends at an undefined parent or a loop)."""
    children: dict[str | None, tuple[str, ...]]
    """Queue (None: the top) -> the queues directly below it."""
    members: dict[str, tuple[str, ...]]
    """Parent -> itself and every queue below it."""
    promised: dict[str, int]
    """Resource -> every queue's guarantee summed: the most `reserved_against` can find."""


_GUARANTEES: list[tuple[Mapping[str, Queue], _Guarantees]] = []
"""The last queue set's arrangement, with that set."""


def subtrees(queues: Mapping[str, Queue]) -> Mapping[str, tuple[str, ...]]:
    """Parent queue -> itself and every queue below it (a queue without children is not
    listed: it is its own subtree), kept per queue set as the guarantees are."""
    return _guarantees(queues).members


def _guarantees(queues: Mapping[str, Queue]) -> _Guarantees:
    """Kept per queue set: most resources (memory, pods) are guaranteed to nobody, and a
    flat queue set needs no tree, which this lets lending see without walking the queues."""
    last = _GUARANTEES[0] if _GUARANTEES else None  # read once: another thread may replace it
    if last is not None and last[0] is queues:
        return last[1]
    parent: dict[str, str] = {}
    for name, queue in queues.items():
        up = queue.spec.parent
        if up is not None and up in queues and up != name:
            parent[name] = up
    for name in list(parent):  # cut loops (validation rejects them; a hand-written registry)
        seen, node = {name}, parent.get(name)
        while node is not None and node not in seen:
            seen.add(node)
            node = parent.get(node)
        if node is not None:
            parent.pop(name, None)
    children: dict[str | None, list[str]] = {}
    for name in sorted(queues):
        children.setdefault(parent.get(name), []).append(name)
    members: dict[str, list[str]] = {}
    for name in queues:
        node = parent.get(name)
        while node is not None:
            members.setdefault(node, [node]).append(name)
            node = parent.get(node)
    leaves: dict[str, dict[str, int]] = {}
    amounts: dict[str, dict[str, int]] = {}
    nested: set[str] = set()
    for name, queue in queues.items():
        for resource, amount in queue.spec.guarantee.items():
            if amount <= 0:
                continue
            amounts.setdefault(resource, {})[name] = amount
            if name in children:
                nested.add(resource)
            else:
                leaves.setdefault(resource, {})[name] = amount
    out = _Guarantees(
        leaves=leaves,
        nested=frozenset(nested),
        amounts=amounts,
        parent=parent,
        children={k: tuple(v) for k, v in children.items()},
        members={k: tuple(v) for k, v in members.items()},
        promised={resource: sum(by_queue.values()) for resource, by_queue in amounts.items()},
    )
    _GUARANTEES[:] = [(queues, out)]
    return out


def reserved_against(
    name: str,
    resource: str,
    *,
    queues: Mapping[str, Queue],
    usage: Usage,
    within: str | None = None,
) -> int:
    """What `resource` is kept for guarantees that are not `name`'s to use: in the whole
    federation, or with `within` only under that ancestor of `name` (its capability).

    Without a parent guaranteeing it: every other queue's unused guarantee. With one, the
    tree decides: a queue's unused guarantee is the larger of its own guarantee minus what
    its subtree holds and the sum of its children's unused guarantees (a parent's
    guarantee covers its children's, and what it adds is kept for any of them); kept
    against `name` is the unused guarantee of each sibling of `name` and of each of its
    ancestors, since everything inside its own ancestors' guarantees is its to use too."""
    g = _guarantees(queues)
    if resource not in g.nested:
        scope = None if within is None else set(g.members.get(within, (within,)))
        reserved = 0
        for other, guaranteed in g.leaves.get(resource, {}).items():
            if other == name or (scope is not None and other not in scope):
                continue
            reserved += max(0, guaranteed - usage.queue_totals(other).get(resource, 0))
        return reserved
    own = g.amounts.get(resource, {})

    def unused(node: str) -> int:
        below = sum(unused(child) for child in g.children.get(node, ()))
        return max(own.get(node, 0) - _held(node, resource, g, usage), below, 0)

    reserved, node = 0, name
    while node != within:
        up = g.parent.get(node)
        reserved += sum(unused(s) for s in g.children.get(up, ()) if s != node)
        if up is None:
            break
        node = up
    return reserved


def lending_problem(
    name: str,
    *,
    queues: Mapping[str, Queue],
    usage: Usage,
    capacity: Mapping[str, int],
    charge: ResourceList,
) -> str | None:
    """Why the federation cannot lend `charge` to queue `name`, or None.

    Capacity still promised to other queues (their guarantee minus what they use) is never
    lent; everything else idle may be borrowed up to the queue's capability. A charge
    larger than the federation itself is no matter of lending, and is told as such.
    """
    total = usage.total_amounts()
    promised = _guarantees(queues).promised
    for resource, need in charge.items():  # names sorted: the first short is reported
        cap = capacity.get(resource, 0)
        if need <= 0 or cap <= 0:
            continue
        in_use = total.get(resource, 0)
        if in_use + need + promised.get(resource, 0) <= cap:
            continue  # lendable even were every guarantee unused: the common case, cheaply
        if need > cap:  # the whole fleet's, which no other queue's guarantee stands in
            return (
                f"the federation holds {_show(resource, cap)} {_label(resource)} in all, and"
                f" this placement needs {_show(resource, need)}: {NEVER} as placed (shrink the"
                " request, change its division or add capacity)"
            )
        reserved = reserved_against(name, resource, queues=queues, usage=usage)
        if in_use + need > cap - reserved:
            return (
                f"queue {name} cannot borrow {_label(resource)}: {_show(resource, in_use)}"
                f" in use and {_show(resource, reserved)} guaranteed to other queues, of"
                f" {_show(resource, cap)} (needs {_show(resource, need)})"
            )
    return None


Limits = Sequence[tuple[ResourceList, ResourceList]]
"""(used, limit) pairs that one set of victims must bring `charge` under, all at once."""


class NamespaceLimit(NamedTuple):
    """A namespace's FederatedResourceQuota `overall` and what the namespace uses of it:
    unlike a queue's limits, only victims of that namespace free any of it."""

    namespace: str
    used: ResourceList
    overall: ResourceList


def preemption_victims(
    queue: Queue | str,
    *,
    usage: Usage,
    charge: ResourceList,
    priority: int,
    above: Limits = (),
    namespace: NamespaceLimit | None = None,
) -> list[Admission] | None:
    """Fewest lower-priority workloads of the same queue whose eviction makes room, or None.

    Room under the queue's capability (`queue` given by name: a queue without a Queue
    object, capped by nothing), under `above`, the (subtree usage, capability) of each
    capped ancestor (`hierarchy.ancestor_limits`): evicting the queue's own work frees its
    share of every subtree it is in; and under `namespace`, the job's namespace quota,
    which only the queue's work of that namespace frees. Lowest priority goes first (latest
    arrival first among equals); then victims that turn out not to be needed are spared,
    so the list is minimal for that order.
    """
    name = queue if isinstance(queue, str) else queue.name
    cap = None if isinstance(queue, str) else queue.spec.capability
    limits = [*above] if cap is None else [(usage.queue_used(name), cap), *above]
    if not limits and namespace is None:
        return None
    # Held back by its namespace quota alone, only that namespace's work frees anything.
    only = namespace.namespace if namespace is not None and not limits else None
    pool = sorted(
        (
            a
            for a in usage.in_queue(name)
            if a.priority < priority and (only is None or a.namespace == only)
        ),
        key=lambda a: (a.priority, -a.seq),
    )
    chosen = _minimal(pool, charge=charge, limits=limits, namespace=namespace)
    if chosen is None or len(chosen) < 2:
        return chosen
    # One victim of no higher priority may free enough alone where the order took two
    # small late ones (a larger job a little earlier): the fewest is then that one.
    worst = max(a.priority for a in chosen)
    for admission in pool:
        if admission.priority > worst:
            break
        alone = _Freed(namespace)
        alone.add(admission, 1)
        if _fits_freed(alone, charge=charge, limits=limits, namespace=namespace):
            return [admission]
    return chosen


def _minimal(
    pool: Sequence[Admission],
    *,
    charge: ResourceList,
    limits: Limits,
    allowed: Callable[[Sequence[Admission]], bool] | None = None,
    namespace: NamespaceLimit | None = None,
) -> list[Admission] | None:
    """Victims from `pool`, taken in its order until `charge` fits `limits`, then each one
    found not needed after all spared (latest taken first). `allowed` rules out a set of
    victims (and so every larger one): a candidate it refuses is passed over. Sparing a
    victim only shrinks the set, so what `allowed` accepted stays accepted.

    What the victims free is kept as a running sum, so taking or sparing one costs one
    addition, not a sum over the set: a job may need hundreds of victims."""
    chosen: list[Admission] = []
    freed = _Freed(namespace)
    for admission in pool:
        if _fits_freed(freed, charge=charge, limits=limits, namespace=namespace):
            break
        if allowed is not None and not allowed([*chosen, admission]):
            continue
        chosen.append(admission)
        freed.add(admission, 1)
    if not _fits_freed(freed, charge=charge, limits=limits, namespace=namespace):
        return None
    for admission in reversed(list(chosen)):
        freed.add(admission, -1)
        if _fits_freed(freed, charge=charge, limits=limits, namespace=namespace):
            chosen = [a for a in chosen if a is not admission]
        else:
            freed.add(admission, 1)
    return chosen


class _Freed:
    """What a set of victims frees: all of it, and its share in one namespace."""

    def __init__(self, namespace: NamespaceLimit | None) -> None:
        self.all: dict[str, int] = {}
        self.own: dict[str, int] = {}
        self.namespace = namespace.namespace if namespace is not None else None

    def add(self, victim: Admission, sign: int) -> None:
        _add(self.all, _amounts(victim.charge, physical=False), sign)
        if victim.namespace == self.namespace:
            _add(self.own, _amounts(victim.charge, physical=False), sign)


def _fits_freed(
    freed: _Freed, *, charge: ResourceList, limits: Limits, namespace: NamespaceLimit | None
) -> bool:
    """Whether `charge` fits every limit, and the namespace quota, once the victims
    summed in `freed` are gone."""
    gone = ResourceList({k: v for k, v in freed.all.items() if v})
    if not all(
        (used - gone + charge).fits_within(limit, unlisted_unlimited=True) for used, limit in limits
    ):
        return False
    if namespace is None:
        return True
    own = ResourceList({k: v for k, v in freed.own.items() if v})
    after = namespace.used - _physical(own) + _physical(charge)
    return after.fits_within(namespace.overall, unlisted_unlimited=True)


def _held(node: str, resource: str, g: _Guarantees, usage: Usage) -> int:
    """What `node` and everything below it hold of `resource`."""
    return sum(usage.queue_totals(m).get(resource, 0) for m in g.members.get(node, (node,)))


def _entitled(
    name: str, relevant: Sequence[str], g: _Guarantees, usage: Usage, charge: ResourceList
) -> frozenset[str] | None:
    """The queues whose guarantee entitles `name` to `charge` (itself, or the nearest
    ancestor's subtree that stays within that ancestor's guarantee), or None."""
    node = _entitling(name, relevant, g, usage, charge)
    return None if node is None else frozenset(g.members.get(node, (node,)))


def _entitling(
    name: str, relevant: Sequence[str], g: _Guarantees, usage: Usage, charge: ResourceList
) -> str | None:
    """The queue whose guarantee entitles `name` to `charge` (`_entitled`), or None."""
    node: str | None = name  # `g.parent` holds no loops: the walk ends
    while node is not None:
        if all(
            _held(node, r, g, usage) + charge[r] <= g.amounts.get(r, {}).get(node, 0)
            for r in relevant
        ):
            return node
        node = g.parent.get(node)
    return None


def reclaim_note(
    name: str, *, queues: Mapping[str, Queue], usage: Usage, charge: ResourceList
) -> str:
    """What the reason of a job that reclaim found no room for adds, when other queues
    hold borrowed work of a resource some queue is guaranteed: why none of it is taken
    back, and what would help.

    Why: "4 more must be freed" or "no node with 4 free cpu" beside another queue's
    borrowed work reads as a full fleet, or as a bug in reclaim. Reclaim returns only what
    was promised (`reclaim_pools`), so a job beyond its queue's guarantee is told that, with
    the guarantee that would admit it; a job within it whose room is held by a queue that
    `spec.reclaimable: false` protects is told whose room it is."""
    if queues.get(name) is None:
        return ""
    g = _guarantees(queues)
    relevant = [r for r, v in charge.items() if v > 0 and r in g.amounts]
    if not relevant:
        return ""
    node = _entitling(name, relevant, g, usage, charge)
    inside = g.members.get(node, (node,)) if node is not None else (name,)
    borrowed: dict[str, dict[str, int]] = {}  # queue -> resource -> held beyond its guarantee
    for queue in sorted(usage.charged_queues()):
        if queue in inside:
            continue
        held = usage.queue_totals(queue)
        over = {
            r: held.get(r, 0) - g.amounts.get(r, {}).get(queue, 0)
            for r in relevant
            if held.get(r, 0) and _over(queue, r, g, usage)
        }
        if any(v > 0 for v in over.values()):
            borrowed[queue] = over
    if not borrowed:
        return ""
    if node is not None:
        shut = [q for q in borrowed if q in queues and not queues[q].spec.reclaimable]
        if not shut:
            return ""
        r = relevant[0]
        promised = g.amounts.get(r, {}).get(node, 0)
        return (
            f"; queue {node} is under its guarantee ({_show(r, _held(node, r, g, usage))} of"
            f" {_show(r, promised)} {_label(r)}) but the room is held by queue"
            f" {', '.join(shut)}, which spec.reclaimable: false keeps from reclaim"
        )
    # Beyond its guarantee: the resource where it goes past it tells what would help.
    promise = g.amounts.get
    r = next(
        (r for r in relevant if _held(name, r, g, usage) + charge[r] > promise(r, {}).get(name, 0)),
        relevant[0],
    )
    mine, held_now = promise(r, {}).get(name, 0), _held(name, r, g, usage)
    lenders = [q for q, over in borrowed.items() if over.get(r, 0) > 0] or list(borrowed)
    lent = sum(max(borrowed[q].get(r, 0), 0) for q in lenders)
    shrink = (
        f", or shrink the workload to {_show(r, mine - held_now)} {_label(r)}"
        if mine > held_now
        else ""
    )
    return (
        f"; queue {', '.join(lenders)} holds {_show(r, lent)} {_label(r)} beyond its"
        f" guarantee, but borrowed room is reclaimed only for work within a guarantee, and"
        f" this workload would take queue {name} to {_show(r, held_now + charge[r])} of its"
        f" {_show(r, mine)} guaranteed {_label(r)}: raise {name}'s guarantee to"
        f" {_show(r, held_now + charge[r])} {_label(r)}{shrink}"
    )


def _over(queue: str, resource: str, g: _Guarantees, usage: Usage) -> bool:
    """Whether `queue` holds `resource` beyond its guarantee and beyond each ancestor's."""
    promised = g.amounts.get(resource, {})
    node: str | None = queue  # `g.parent` holds no loops: the walk ends
    while node is not None:
        if _held(node, resource, g, usage) <= promised.get(node, 0):
            return False
        node = g.parent.get(node)
    return True


def reclaim_victims(
    name: str,
    *,
    queues: Mapping[str, Queue],
    usage: Usage,
    capacity: Mapping[str, int],
    charge: ResourceList,
    clusters: Collection[str] | None = None,
) -> list[Admission] | None:
    """Workloads of queues borrowing beyond their guarantee whose eviction gives `name` room:
    the first of `reclaim_pools`, None when reclaim cannot make room."""
    pools = reclaim_pools(
        name, queues=queues, usage=usage, capacity=capacity, charge=charge, clusters=clusters
    )
    return next(pools, None)


def reclaim_pools(
    name: str,
    *,
    queues: Mapping[str, Queue],
    usage: Usage,
    capacity: Mapping[str, int],
    charge: ResourceList,
    clusters: Collection[str] | None = None,
) -> Iterator[list[Admission]]:
    """Sets of workloads of queues borrowing beyond their guarantee whose eviction may give
    `name` room, for the caller's trial (`scheduler.room.make`) to try in turn; each found
    only when the caller asks for the next (most reclaims end with the first).

    With `clusters`, only workloads placed on one of them are candidates: when the job is
    short of room on the clusters it can use, evicting work elsewhere frees nothing for it.

    Only when `name` stays within its own guarantee with `charge`, or its subtree within
    an ancestor's (reclaim returns what was promised; it is not a way to borrow). Victims
    come from reclaimable queues outside that subtree that hold more than their guarantee,
    where what a queue holds within an ancestor's guarantee is not borrowed; a queue with no
    Queue object (the implicit default queue) is guaranteed nothing, so all it holds is
    borrowed. Lowest queue priority first, then lowest workload priority, latest arrival
    first, passing over any workload whose eviction would take its queue (or an ancestor)
    below its guarantee: only borrowed capacity is taken back. The room counted is what
    lending counts (`lending_problem`), so other queues' unused guarantees stay kept and
    the victims found are enough for the job to pass it.

    The sets, in order: the fewest that free enough across the fleet; then every candidate
    in order, which the trial releases one by one until the job fits (the fewest may free
    one core on each of two clusters for a job needing two on one); then every candidate
    on one cluster, for the clusters holding the most borrowed work (those before may
    reach a queue's guarantee with small victims spread over clusters, when one large
    victim on one cluster would have done).
    """
    if queues.get(name) is None:
        return
    g = _guarantees(queues)
    room, local = _reclaim_room(
        name, queues=queues, usage=usage, capacity=capacity, charge=charge, g=g, clusters=clusters
    )
    if not room:
        return
    relevant = sorted(room)
    judged = _judged(relevant, charge, g)
    scope = _entitled(name, [r for r in judged if r in g.amounts] or relevant, g, usage, charge)
    if scope is None:
        return

    lends: dict[str, bool] = {}  # per queue: whether its work may be reclaimed

    def borrowing(a: Admission) -> bool:
        hit = lends.get(a.queue)
        if hit is None:
            queue = queues.get(a.queue)
            hit = lends[a.queue] = not (
                a.queue in scope or (queue is not None and not queue.spec.reclaimable)
            ) and any(_over(a.queue, r, g, usage) for r in relevant)
        return hit

    def keeps_guarantees(victims: Sequence[Admission]) -> bool:
        return _keeps_guarantees(
            victims, name=name, relevant=judged, g=g, usage=usage, charge=charge
        )

    def in_order(candidates: Iterable[Admission]) -> list[Admission]:
        floors = _Floors(name=name, relevant=judged, g=g, usage=usage, charge=charge)
        chosen: list[Admission] = []
        for a in candidates:
            if floors.take(a):
                chosen.append(a)
                if len(chosen) == MAX_VICTIMS:
                    break
        return chosen

    pool = sorted(
        (
            a
            for a in usage.admissions()
            if borrowing(a) and (clusters is None or not set(a.placement).isdisjoint(clusters))
        ),
        key=lambda a: (_queue_priority(queues, a.queue), a.priority, -a.seq),
    )
    if not local:
        total = usage.total().only(relevant)
        fewest = _minimal(
            pool,
            charge=charge.only(relevant),
            limits=[(total, ResourceList(room))],
            allowed=keeps_guarantees,
        )
        if not fewest:  # no set that keeps the guarantees frees enough in the fleet
            return
        yield fewest
    for candidates in (pool, *_on_each(pool, _most_borrowed(pool, relevant, capacity, clusters))):
        chosen = in_order(candidates)
        if chosen:
            yield chosen


def _judged(relevant: Sequence[str], charge: ResourceList, g: _Guarantees) -> list[str]:
    """The resources a reclaim for `charge` is judged by: those short (`relevant`), and,
    when one of them is a chip model no queue is guaranteed (`accelerator/<model>`), the
    device resources of the charge that queues are guaranteed (`nvidia.com/gpu`).

    Why: a job pinned to A100s finds the fleet short of A100s, not of GPUs; judged by the
    model alone, a queue guaranteed 6 `nvidia.com/gpu` was never entitled (nobody is
    guaranteed `accelerator/nvidia-a100-80gb`), and its guarantee was never given back.
    Its GPU guarantee is what entitles it, and what every victim's queue keeps.
    """
    if not any(r.startswith(CHIP_RESOURCE_PREFIX) and r not in g.amounts for r in relevant):
        return list(relevant)
    devices = [
        r
        for r in charge
        if charge[r] > 0
        and r in g.amounts
        and r not in relevant
        and "/" in r
        and not r.startswith(CHIP_RESOURCE_PREFIX)
    ]
    return [*relevant, *sorted(devices)]


def _on_each(pool: Sequence[Admission], clusters: Sequence[str]) -> list[list[Admission]]:
    """Per cluster of `clusters`, in their order, the admissions of `pool` placed there."""
    on: dict[str, list[Admission]] = {cluster: [] for cluster in clusters}
    for a in pool:
        for cluster in a.placement:
            if cluster in on:
                on[cluster].append(a)
    return [on[cluster] for cluster in clusters]


def _reclaim_room(
    name: str,
    *,
    queues: Mapping[str, Queue],
    usage: Usage,
    capacity: Mapping[str, int],
    charge: ResourceList,
    g: _Guarantees,
    clusters: Collection[str] | None,
) -> tuple[dict[str, int], bool]:
    """The resources reclaim must free for `charge`, with the room that bounds them, and
    whether the job is short only on the clusters it can use (`clusters`) with room
    elsewhere in the fleet: then no fleet total bounds the victims, so only candidates in
    order are offered, and only the resources the queue (or an ancestor) is guaranteed
    count (reclaim returns what was promised)."""
    room = _short(name, queues=queues, usage=usage, capacity=capacity, charge=charge)
    if room or clusters is None:
        return room, False
    promised = {
        r: capacity[r]
        for r in charge
        if charge[r] > 0 and capacity.get(r, 0) > 0 and _promised(name, r, g)
    }
    return promised, True


def _short(
    name: str,
    *,
    queues: Mapping[str, Queue],
    usage: Usage,
    capacity: Mapping[str, int],
    charge: ResourceList,
) -> dict[str, int]:
    """The resources the federation cannot lend `charge` of to `name`, with what it may
    lend of each (`lending_problem`'s arithmetic)."""
    total_used = usage.total_amounts()
    room: dict[str, int] = {}
    for r in charge:
        if charge[r] <= 0 or capacity.get(r, 0) <= 0:
            continue
        lendable = capacity[r] - reserved_against(name, r, queues=queues, usage=usage)
        if total_used.get(r, 0) + charge[r] > lendable:
            room[r] = lendable
    return room


def _most_borrowed(
    pool: Sequence[Admission],
    relevant: Sequence[str],
    capacity: Mapping[str, int],
    clusters: Collection[str] | None,
) -> list[str]:
    """The clusters (of `clusters`) holding the most of `pool`'s work, as shares of the
    fleet's capacity, at most `_RECLAIM_CLUSTERS` of them."""
    held: dict[str, float] = {}
    shares: dict[int, float] = {}  # per charge object: a cycle shares a few dozen of them
    for a in pool:
        share = shares.get(id(a.charge))
        if share is None:
            share = shares[id(a.charge)] = sum(a.charge.amount(r) / capacity[r] for r in relevant)
        for cluster in a.placement:
            if clusters is None or cluster in clusters:
                held[cluster] = held.get(cluster, 0.0) + share
    return sorted(held, key=lambda c: (-held[c], c))[:_RECLAIM_CLUSTERS]


def _promised(name: str, resource: str, g: _Guarantees) -> bool:
    """Whether queue `name` or one of its ancestors is guaranteed some of `resource`."""
    node: str | None = name
    while node is not None:
        if g.amounts.get(resource, {}).get(node, 0) > 0:
            return True
        node = g.parent.get(node)
    return False


def _queue_priority(queues: Mapping[str, Queue], name: str) -> int:
    """A queue's priority; 0 for one without a Queue object (the implicit default queue)."""
    queue = queues.get(name)
    return queue.spec.priority if queue is not None else 0


def _keeps_guarantees(
    victims: Sequence[Admission],
    *,
    name: str,
    relevant: Sequence[str],
    g: _Guarantees,
    usage: Usage,
    charge: ResourceList,
) -> bool:
    """Whether evicting `victims` for `charge` of queue `name` leaves each of their queues,
    and each ancestor of those, holding at least its guarantee of the `relevant` resources
    (`_Floors`)."""
    floors = _Floors(name=name, relevant=relevant, g=g, usage=usage, charge=charge)
    return all(floors.take(victim) for victim in victims)


class _Floors:
    """Victims taken one at a time while each queue they leave, and each ancestor of it,
    still holds its guarantee of the `relevant` resources.

    An ancestor that also holds `name` gets `charge` back, so reclaim inside its subtree
    does not count as taking its guarantee. What is freed only grows, so a set passes
    exactly when each victim passed as it was taken: checking one more victim costs its
    queue's depth, not the whole set again (a reclaim offers thousands of candidates)."""

    def __init__(
        self,
        *,
        name: str,
        relevant: Sequence[str],
        g: _Guarantees,
        usage: Usage,
        charge: ResourceList,
    ) -> None:
        self.name = name
        self.relevant = relevant
        self.g = g
        self.usage = usage
        self.charge = charge
        self.freed: dict[tuple[str, str], int] = {}
        self._floor: dict[tuple[str, str], int | None] = {}

    def _most(self, node: str, r: str) -> int | None:
        """How much of `r` may be freed under `node` (None: no guarantee to keep)."""
        key = (node, r)
        if key not in self._floor:
            promised = self.g.amounts.get(r, {}).get(node, 0)
            if promised <= 0:
                self._floor[key] = None
            else:
                members = self.g.members.get(node, (node,))
                back = self.charge.amount(r) if self.name in members else 0
                self._floor[key] = _held(node, r, self.g, self.usage) + back - promised
        return self._floor[key]

    def take(self, victim: Admission) -> bool:
        """Take `victim` when the guarantees still hold with it; whether it was taken."""
        after: list[tuple[tuple[str, str], int]] = []
        node: str | None = victim.queue  # `g.parent` holds no loops: the walk ends
        while node is not None:
            for r in self.relevant:
                total = self.freed.get((node, r), 0) + victim.charge.amount(r)
                most = self._most(node, r)
                if most is not None and total > 0 and total > most:
                    return False
                after.append(((node, r), total))
            node = self.g.parent.get(node)
        self.freed.update(after)
        return True
