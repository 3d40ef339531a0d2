"""What no cycle may ever do, over random fleets, queues, quotas and jobs: place pods
beyond a node flavor's room, charge a queue past its capability or hourly budget or a
namespace past its quota, lose a job, or admit a job ahead of an identical one its queue
ranks first.

Each seed runs three cycles against one snapshot whose status never catches up (as when
members report slowly): the first admits, the second brings higher-priority work that
preempts and reclaims, the third sees some jobs finish and the victims come back. A
second test places services under random Karmada policies (divided, aggregated,
duplicated, static weights, affinity, spread) on fleets with a tainted and a down member,
and checks each placement keeps to its policy. A third runs five cycles against members
that run what was admitted on nodes of their own choosing and report it, some pods at
once, some late, with others' pods beside them on some members.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from decimal import Decimal

import pytest

from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob, PendingStore
from federation.quota.accounting import Admission, Usage
from federation.resources import ResourceList
from federation.scheduler import cycle
from federation.settings import SchedulerSettings
from policies.models.cluster import Cluster, Taint
from policies.models.frq import FederatedResourceQuota
from policies.models.queue import Queue
from tests.unit.scheduler.fleet import (
    DYNAMIC_WEIGHT,
    GPU,
    NOW,
    cluster,
    flavor,
    frq,
    job,
    queue,
    workload,
)

A100, H100 = "nvidia-a100-80gb", "nvidia-h100-80gb"
QUEUES = ("ml", "web", "batch")
NAMESPACES = ("team-a", "team-b")


def _fleet(rng: random.Random) -> list[Cluster]:
    fleet = []
    for i in range(rng.randint(2, 5)):
        arch = "arm64" if rng.random() < 0.3 else "amd64"
        flavors = [flavor(arch=arch, cpu=str(rng.choice([8, 16])), nodes=rng.randint(1, 3))]
        if arch == "amd64" and rng.random() < 0.3:  # a cluster of both arches
            flavors.append(flavor(arch="arm64", cpu="32", nodes=rng.randint(1, 2)))
        if rng.random() < 0.5:
            flavors.append(
                flavor(chip=A100, devices=rng.choice([4, 8]), cpu="64", nodes=rng.randint(1, 2))
            )
        if rng.random() < 0.3:
            flavors.append(flavor(chip=H100, devices=8, cpu="96", nodes=1))
        fleet.append(
            cluster(
                f"c{i}",
                *flavors,
                region=rng.choice(["us", "eu"]),
                cpu_price=str(rng.choice(["0.04", "0.05", "0.06"])),
                gpu_prices={A100: rng.choice(["2", "3"]), H100: rng.choice(["4", "5"])},
            )
        )
    return fleet


def _queues(rng: random.Random) -> list[Queue]:
    """The three queues, sometimes strict FIFO, sometimes ml and web under a capped parent."""
    out = []
    nested = rng.random() < 0.3
    for name in QUEUES:
        spec: dict[str, object] = {"weight": rng.randint(1, 3)}
        if rng.random() < 0.7:
            spec["capability"] = {"cpu": str(rng.randint(10, 40))}
            if rng.random() < 0.5:
                spec["capability"][f"accelerator/{A100}"] = str(rng.randint(2, 8))  # type: ignore[index]
        if rng.random() < 0.6 and not (nested and name != "batch"):
            spec["guarantee"] = {"cpu": str(rng.randint(2, 10))}
        if rng.random() < 0.2:
            spec["dequeueStrategy"] = "StrictFIFO"
        if nested and name != "batch":
            spec["parent"] = "dept"
        out.append(queue(name, **spec))
    if nested:
        out.append(queue("dept", capability={"cpu": str(rng.randint(10, 30))}))
    return out


def _with_budgets(queues: list[Queue], rng: random.Random) -> list[Queue]:
    """Some queues (a parent too) given an hourly budget, from their own random stream so
    that the fleets, queues and jobs of each seed stay what they were without budgets."""
    out = []
    for q in queues:
        spec = q.spec
        if rng.random() < 0.4:
            budget = Decimal(rng.choice(["0.3", "0.8", "2", "6"]))
            spec = spec.model_copy(update={"max_hourly_cost": budget})
        out.append(q.model_copy(update={"spec": spec}))
    return out


def _quotas(rng: random.Random, clusters: list[str]) -> list[FederatedResourceQuota]:
    out = []
    for ns in NAMESPACES:
        if rng.random() < 0.5:
            continue
        quota = frq(ns, cpu=str(rng.randint(8, 40)))
        if rng.random() < 0.4:  # a static share on one member
            share = {"clusterName": rng.choice(clusters), "hard": {"cpu": str(rng.randint(2, 8))}}
            spec = quota.spec.model_dump(by_alias=True, mode="json")
            spec["staticAssignments"] = [share]
            quota = FederatedResourceQuota.model_validate(
                {"metadata": {"name": "quota", "namespace": ns}, "spec": spec}
            )
        out.append(quota)
    return out


# A few shapes, so identical twins (same shape, queue and namespace) are common.
SHAPES = [
    {"cpu": "1", "replicas": 1},
    {"cpu": "2", "replicas": 2},
    {"cpu": "4", "replicas": 1},
    {"cpu": "2", "gpus": 2, "replicas": 1, "chips": A100},
    {"cpu": "1", "replicas": 3, "kind": "Deployment"},
    {"cpu": "2", "gpus": 1, "replicas": 1, "chips": f"{H100},{A100}"},
    {"cpu": "1", "replicas": 2, "chips": "arm64"},
    {"cpu": "1", "gpus": 1, "replicas": 3, "chips": f"{H100},{A100}"},
]


def _jobs(rng: random.Random, count: int, first: int, *, priorities: range) -> list[PendingJob]:
    out = []
    for i in range(first, first + count):
        shape = rng.randrange(len(SHAPES))
        q, ns = rng.choice(QUEUES), rng.choice(NAMESPACES)
        spec = dict(SHAPES[shape])
        w = workload(
            f"j{i}-s{shape}",
            namespace=ns,
            queue=q,
            priority=rng.choice(priorities),
            **spec,  # type: ignore[arg-type]
        )
        out.append(job(w, seq=i))
    return out


def _check(
    result: cycle.CycleResult,
    snapshot: snap.Snapshot,
    *,
    jobs: dict[str, PendingJob],
    queues: list[Queue],
    quotas: list[FederatedResourceQuota],
    before: set[str],
) -> None:
    admitted = result.usage.admissions()
    refs = [str(a.ref) for a in admitted]
    waiting = {str(j.ref) for j in result.pending.jobs()}
    assert len(refs) == len(set(refs)), "a job admitted twice"
    assert not set(refs) & waiting, "a job both admitted and pending"
    assert set(refs) | waiting == set(jobs), "a job lost"
    _check_room(admitted, snapshot)
    _check_limits(admitted, queues, quotas)
    new = [jobs[str(a.ref)] for a in admitted if str(a.ref) not in before]
    # A victim of this cycle was running until evicted: work admitted before that is no
    # one passing it. The cycle's Bindings are in the order it first wrote them (for a
    # victim that ran before the cycle, its eviction); one admitted in the cycle too ran
    # alongside whatever was admitted after it.
    order = {b.spec.workload.name: i for i, b in enumerate(result.bindings)}
    victims = {str(v.ref) for v, _ in result.evicted}
    order.update({v.ref.name: len(order) for v, _ in result.evicted if str(v.ref) not in before})
    pairs = [
        (ahead, other)
        for ahead in result.pending.jobs()
        for other in new
        if other.queue == ahead.queue
        and (ahead.priority, -ahead.seq) > (other.priority, -other.seq)
        and (str(ahead.ref) not in victims or order[other.ref.name] > order[ahead.ref.name])
    ]
    _check_order(pairs)
    strict = {q.name for q in queues if q.spec.dequeue_strategy == "StrictFIFO"}
    for ahead, other in pairs:  # a strict queue admits nothing behind a job that waits
        assert ahead.queue not in strict, (
            f"strict FIFO: {other.ref} admitted behind {ahead.ref} ({ahead.reason})"
        )


def _check_reclaim(
    result: cycle.CycleResult, queues: list[Queue], held: dict[str, ResourceList]
) -> None:
    """Reclaim takes only what a queue borrows: one that lost work to reclaim alone (no
    preemption inside it) still holds its guarantee, or all it held when under it."""
    reclaimed = {v.queue for v, why in result.evicted if why.startswith("reclaimed by")}
    preempted = {v.queue for v, why in result.evicted if why.startswith("preempted by")}
    for q in queues:
        if q.name not in reclaimed or q.name in preempted or q.spec.guarantee is None:
            continue
        now = result.usage.queue_used(q.name)
        for resource, guaranteed in q.spec.guarantee.items():
            floor = min(guaranteed, held[q.name].amount(resource))
            assert now.amount(resource) >= floor, f"reclaim took {q.name} below its guarantee"


def _check_victims(result: cycle.CycleResult) -> None:
    """Each eviction let its preemptor in (admitted this cycle); a preemption took only
    lower-priority work of the preemptor's own queue, a reclaim only another queue's."""
    admitted = {str(a.ref): a for a in result.admitted}
    for victim, why in result.evicted:
        preempted = re.fullmatch(r"preempted by (\S+) \(priority (-?\d+), queue (\S+)\)", why)
        reclaimed = re.fullmatch(r"reclaimed by queue (\S+) for (\S+)", why)
        assert preempted or reclaimed, f"{victim.ref} evicted: {why}"
        by = admitted.get(preempted[1] if preempted else reclaimed[2])  # type: ignore[index]
        assert by is not None, f"{victim.ref} evicted for a job not admitted: {why}"
        if preempted:
            assert by.queue == victim.queue, f"{victim.ref} preempted across queues: {why}"
            assert victim.priority < by.priority, f"{victim.ref} not below its preemptor: {why}"
        else:
            assert by.queue != victim.queue, f"{victim.ref} reclaimed by its own queue: {why}"


def _check_room(admitted: list[Admission], snapshot: snap.Snapshot) -> None:
    """The pods each admission took fit (static weights ignore capacity, as in Karmada:
    leave those out), on flavors carrying the chip or arch the workload asks for (a CPU
    pod never takes an accelerator node). Device pods are tied to the flavors they took.
    CPU pods are tied only to the arch their Binding pins them to, if any: a member's own
    scheduler puts them on any node of it, so they must fit that arch's flavors together,
    and all of them the cluster's CPU flavors together."""
    taken: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    pinned: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    loose: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for a in admitted:
        assert sum(p for _, _, p in a.flavors) == sum(a.placement.values()), str(a.ref)
        asked = a.job.workload.chips if isinstance(a.job, PendingJob) else ()
        for name, index, pods in a.flavors:
            one = snapshot.cluster(name).flavors[index]
            for resource, amount in a.pod.items():
                assert amount <= one.allocatable.amount(resource), f"{a.ref} fits no node"
            if a.pod.amount(GPU):
                assert one.accelerator_model == a.chips.get(name), f"{a.ref}: {one}"
                assert not asked or one.accelerator_model in asked, f"{a.ref}: {one}"
                for resource, amount in a.pod.items():
                    taken[(name, index)][resource] += amount * pods
                continue
            assert one.accelerator_model is None, f"{a.ref} on accelerator nodes"
            assert not asked or one.arch in asked, f"{a.ref}: {one.arch}"
            arch = a.chips.get(name)
            assert arch is None or one.arch == arch, f"{a.ref} pinned to {arch} took {one.arch}"
            for resource, amount in a.pod.items():
                if arch is not None:
                    pinned[(name, arch)][resource] += amount * pods
                loose[name][resource] += amount * pods
    for (name, index), used in taken.items():
        free = snapshot.cluster(name).flavors[index].free
        for resource, amount in used.items():
            assert amount <= free.amount(resource), f"{name} flavor {index} over {resource}"
    for (name, arch), used in pinned.items():
        cpu = [f for f in snapshot.cluster(name).flavors if f.accelerator_model is None]
        room = [f.free for f in cpu if f.arch == arch]
        for resource, amount in used.items():
            here = sum(f.amount(resource) for f in room)
            assert amount <= here, f"{name} {arch} over {resource}"
    for name, used in loose.items():
        room = [f.free for f in snapshot.cluster(name).flavors if f.accelerator_model is None]
        for resource, amount in used.items():
            assert amount <= sum(f.amount(resource) for f in room), f"{name} over {resource}"


def _check_limits(
    admitted: list[Admission], queues: list[Queue], quotas: list[FederatedResourceQuota]
) -> None:
    """No queue past its capability, no namespace past its quota."""
    by_queue: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_ns: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for a in admitted:
        for resource, amount in a.charge.items():
            by_queue[a.queue][resource] += amount
            by_ns[a.namespace][resource] += amount
    for q in queues:
        children = [c.name for c in queues if c.spec.parent == q.name]
        for child in children:  # a parent's capability caps its subtree
            for resource, amount in by_queue[child].items():
                by_queue[q.name][resource] += amount
        capability = q.spec.capability or ResourceList()
        for resource, amount in by_queue[q.name].items():
            if resource in capability:
                assert amount <= capability.amount(resource), f"queue {q.name} over {resource}"
    for quota in quotas:
        ns, overall = quota.metadata.namespace, quota.spec.overall
        for resource, amount in by_ns[ns].items():
            if resource in overall:
                assert amount <= overall.amount(resource), f"{ns} over {resource}"
    _check_shares(admitted, quotas)
    _check_budgets(admitted, queues)


def _check_budgets(admitted: list[Admission], queues: list[Queue]) -> None:
    """No queue's admitted work (a parent's: its subtree's) costs more than its budget."""
    spent: dict[str, Decimal] = defaultdict(Decimal)
    for a in admitted:
        assert a.cost is not None, f"{a.ref} admitted at an unknown cost"
        spent[a.queue] += a.cost
    for q in queues:
        if q.spec.max_hourly_cost is None:
            continue
        members = {q.name} | {c.name for c in queues if c.spec.parent == q.name}
        total = sum((spent[m] for m in members), Decimal(0))
        assert total <= q.spec.max_hourly_cost, f"queue {q.name} spends {total}"


def _check_shares(admitted: list[Admission], quotas: list[FederatedResourceQuota]) -> None:
    """A namespace's static share on a member holds all its pods there."""
    for quota in quotas:
        for share in quota.spec.static_assignments:
            here: dict[str, int] = defaultdict(int)
            for a in admitted:
                replicas = a.placement.get(share.cluster_name, 0)
                if a.namespace == quota.metadata.namespace and replicas:
                    for resource, amount in a.pod.items():
                        here[resource] += amount * replicas
            for resource, hard in share.hard.items():
                assert here[resource] <= hard, f"{quota.metadata.namespace} share over {resource}"


def _check_order(pairs: list[tuple[PendingJob, PendingJob]]) -> None:
    """A job admitted this cycle never passes an identical twin its queue ranks first."""
    for ahead, other in pairs:
        if (
            other.ref.name.rpartition("-")[2] == ahead.ref.name.rpartition("-")[2]
            and other.ref.namespace == ahead.ref.namespace
        ):
            raise AssertionError(
                f"{other.ref} (priority {other.priority}) admitted ahead of {ahead.ref}"
                f" (priority {ahead.priority}), waiting with: {ahead.reason}"
            )


@pytest.mark.parametrize("seed", range(250))
def test_no_cycle_breaks_room_limits_order_or_loses_a_job(seed: int) -> None:
    rng = random.Random(seed)
    fleet = _fleet(rng)
    queues, quotas = _queues(rng), _quotas(rng, [c.metadata.name for c in fleet])
    queues = _with_budgets(queues, random.Random(-1 - seed))
    snapshot = snap.build(fleet, queues=queues, quotas=quotas)
    scheduler = cycle.Scheduler(SchedulerSettings())
    usage, pending = Usage(), PendingStore()
    jobs: dict[str, PendingJob] = {}
    rounds = [
        _jobs(rng, rng.randint(10, 30), 1, priorities=range(0, 2)),
        _jobs(rng, rng.randint(5, 15), 100, priorities=range(1, 4)),
        [],
    ]
    for number, arriving in enumerate(rounds):
        if number == 2:  # some finish: their usage is released, waiting jobs take it
            for a in usage.admissions():
                if rng.random() < 0.4:
                    usage.release(a.ref)
                    del jobs[str(a.ref)]
        for j in arriving:
            jobs[str(j.ref)] = j
            pending.add(j)
        before = {str(a.ref) for a in usage.admissions()}
        held = {q.name: usage.queue_used(q.name) for q in queues}
        result = scheduler.run_cycle(snapshot, pending, usage, NOW)
        _check(result, snapshot, jobs=jobs, queues=queues, quotas=quotas, before=before)
        _check_reclaim(result, queues, held)
        _check_victims(result)
        usage, pending = result.usage, result.pending


# -- placement rules, over policies that divide, duplicate, pin and spread

DIVIDED = {
    "dynamic": DYNAMIC_WEIGHT,
    "aggregated": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Aggregated",
    },
    "duplicated": {"replicaSchedulingType": "Duplicated"},
}


def replica_scheduling(rng: random.Random, names: list[str]) -> tuple[str, dict[str, object]]:
    """A random replica scheduling: its key in `DIVIDED`, or "static" (weights 1-3 on some
    of `names`), and the policy's `replicaScheduling`."""
    kind = rng.choice([*DIVIDED, "static"])
    if kind != "static":
        return kind, DIVIDED[kind]
    chosen = rng.sample(names, rng.randint(1, len(names)))
    return kind, {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": [n]}, "weight": rng.randint(1, 3)}
                for n in chosen
            ]
        },
    }


def _policy(rng: random.Random, names: list[str]) -> tuple[dict[str, object] | None, str]:
    """A random Karmada placement and how it spreads replicas ("single": one cluster;
    "static": divided by static weights, which spread constraints do not bound)."""
    if rng.random() < 0.25:
        return None, "single"
    kind, scheduling = replica_scheduling(rng, names)
    placement: dict[str, object] = {"replicaScheduling": scheduling}
    if rng.random() < 0.4:
        allowed = rng.sample(names, rng.randint(1, len(names)))
        placement["clusterAffinity"] = {"clusterNames": sorted(allowed)}
    if rng.random() < 0.3:
        low = rng.randint(1, 2)
        placement["spreadConstraints"] = [
            {"spreadByField": "cluster", "minGroups": low, "maxGroups": low + rng.randint(0, 1)}
        ]
    return placement, {"duplicated": "duplicated", "static": "static"}.get(kind, "divided")


def _check_rules(
    result: cycle.CycleResult, jobs: dict[str, tuple[PendingJob, str]], unusable: set[str]
) -> None:
    for a in result.admitted:
        pending, spread = jobs[str(a.ref)]
        where, replicas = dict(a.placement), pending.workload.replicas
        assert where and all(n > 0 for n in where.values()), f"{a.ref}: {where}"
        assert not set(where) & unusable, f"{a.ref} placed on a tainted or down cluster"
        if spread == "single":
            assert len(where) == 1 and sum(where.values()) == replicas, f"{a.ref}: {where}"
        elif spread == "duplicated":
            assert set(where.values()) == {replicas}, f"{a.ref}: {where}"
        else:
            assert sum(where.values()) == replicas, f"{a.ref}: {where}"
        placement = pending.placement
        if placement is None:
            continue
        affinity = placement.cluster_affinity
        if affinity is not None and affinity.cluster_names:
            assert set(where) <= set(affinity.cluster_names), f"{a.ref}: {where}"
        for constraint in placement.spread_constraints:
            if constraint.spread_by_field == "cluster" and spread != "static":
                assert len(where) <= constraint.max_groups, f"{a.ref}: {where}"
                if spread == "duplicated":  # divided, a cluster given 0 replicas drops out
                    assert len(where) >= constraint.min_groups, f"{a.ref}: {where}"


@pytest.mark.parametrize("seed", range(250))
def test_no_cycle_breaks_placement_rules(seed: int) -> None:
    rng = random.Random(seed)
    fleet = [
        *_fleet(rng),
        cluster("tainted", flavor(nodes=4), taints=[Taint(key="k", effect="NoSchedule")]),
        cluster("down", flavor(nodes=4), ready=False),
    ]
    names = [c.metadata.name for c in fleet]
    queues = _queues(rng)
    snapshot = snap.build(fleet, queues=queues, quotas=_quotas(rng, names))
    scheduler = cycle.Scheduler(SchedulerSettings())
    usage, pending = Usage(), PendingStore()
    jobs: dict[str, tuple[PendingJob, str]] = {}
    for number in range(2):
        for i in range(rng.randint(5, 20)):
            placement, spread = _policy(rng, names)
            w = workload(
                f"s{number}-{i}",
                kind="Deployment",
                namespace=rng.choice(NAMESPACES),
                queue=rng.choice(QUEUES),
                priority=rng.randint(0, 3),
                cpu=rng.choice(["1", "2"]),
                replicas=rng.randint(1, 6),
            )
            j = job(w, placement=placement, seq=100 * number + i + 1)
            jobs[str(j.ref)] = (j, spread)
            pending.add(j)
        result = scheduler.run_cycle(snapshot, pending, usage, NOW)
        _check_rules(result, jobs, {"tainted", "down"})
        statics = {key for key, (_, spread) in jobs.items() if spread == "static"}
        _check_room([a for a in result.usage.admissions() if str(a.ref) not in statics], snapshot)
        usage, pending = result.usage, result.pending


# -- a status that catches up: members run the pods and report them, some late


class _Member:
    """A member's nodes and the pods it runs: our pods placed by its own scheduler (the
    most free node among those the pod may use), others' pods already there when
    `others`. Reports per-flavor free and emptiest node as the monitor does."""

    def __init__(self, spec: Cluster, rng: random.Random, *, others: bool) -> None:
        self.spec = spec
        self.flavors = list(spec.status.flavors)
        self.nodes = [[f.allocatable for _ in range(f.node_count)] for f in self.flavors]
        self.ours: dict[str, list[tuple[int, int, ResourceList]]] = {}
        """ref -> where each of its pods runs here (flavor, node, requests)."""
        for index, f in enumerate(self.flavors):  # others' pods, the same every cycle
            if others and f.accelerator_model is None and rng.random() < 0.5:
                node = rng.randrange(f.node_count)
                foreign = ResourceList.from_wire({"cpu": str(rng.randint(1, 6)), "pods": "1"})
                self.nodes[index][node] = (self.nodes[index][node] - foreign).nonnegative()

    def report(self) -> Cluster:
        flavors = []
        for f, nodes in zip(self.flavors, self.nodes, strict=True):
            free = ResourceList()
            for node in nodes:
                free = free + node
            emptiest = max(nodes, key=lambda n: (n.amount(GPU), n.amount("cpu")))
            flavors.append(f.model_copy(update={"free": free, "largest_free": emptiest}))
        status = self.spec.status.model_copy(update={"flavors": flavors})
        return self.spec.model_copy(update={"status": status})

    def run(self, ref: str, pod: ResourceList, chip: str | None, pods: int) -> None:
        """Start up to `pods` more pods of `ref` here (those that fit): a device pod on its
        chip's nodes, a CPU pod on CPU nodes (of `chip`, an arch, when it is pinned)."""
        mine = self.ours.setdefault(ref, [])
        device = pod.amount(GPU) > 0
        usable = [
            index
            for index, f in enumerate(self.flavors)
            if (f.accelerator_model == chip if device else f.accelerator_model is None)
            and (device or chip in (None, f.arch))
        ]
        for _ in range(pods):
            best: tuple[int, int] | None = None
            for index in usable:
                for node, free in enumerate(self.nodes[index]):
                    if pod.fits_within(free) and (
                        best is None
                        or free.amount("cpu") > self.nodes[best[0]][best[1]].amount("cpu")
                    ):
                        best = (index, node)
            if best is None:
                return  # Pending here: the member has no node for it
            self.nodes[best[0]][best[1]] = self.nodes[best[0]][best[1]] - pod
            mine.append((*best, pod))

    def stop(self, ref: str) -> None:
        for index, node, pod in self.ours.pop(ref, []):
            self.nodes[index][node] = self.nodes[index][node] + pod

    def running(self, ref: str) -> int:
        return len(self.ours.get(ref, []))


@pytest.mark.parametrize("seed", range(150))
def test_no_cycle_overfills_a_member_whose_status_catches_up(seed: int) -> None:
    """Members run what was admitted, some at once, some a few pods at a time, some not
    before the next cycle, on nodes of their own choosing. Every cycle, everything
    admitted must fit the members' room.

    With others' pods on the members too, a status that shows only part of ours cannot
    say which usage is ours: pods of ours not shown yet may be taken for others' usage
    that looks like them, so the bound is then the nodes' whole room (held work never
    goes beyond allocatable less what it holds)."""
    rng = random.Random(seed)
    others = seed % 2 == 1
    fleet = _fleet(rng)
    members = {c.metadata.name: _Member(c, rng, others=others) for c in fleet}
    names = list(members)
    queues, quotas = _queues(rng), _quotas(rng, names)
    base = snap.build(fleet, queues=queues, quotas=quotas)
    scheduler = cycle.Scheduler(SchedulerSettings())
    usage, pending = Usage(), PendingStore()
    jobs: dict[str, PendingJob] = {}
    for number in range(5):
        if number >= 2:  # some finish
            for a in usage.admissions():
                if rng.random() < 0.2:
                    usage.release(a.ref)
                    del jobs[str(a.ref)]
        if number < 4:
            first = 100 * number + 1
            for j in _jobs(rng, rng.randint(5, 15), first, priorities=range(number, number + 2)):
                jobs[str(j.ref)] = j
                pending.add(j)
        admitted = {str(a.ref): a for a in usage.admissions()}
        for m in members.values():  # gone: finished or evicted
            for ref in [r for r in m.ours if r not in admitted]:
                m.stop(ref)
        for a in admitted.values():  # the members catch up, some of the way
            for name, replicas in a.placement.items():
                lag = rng.random()
                if lag < 0.4:
                    continue
                m, ref = members[name], str(a.ref)
                want = replicas if lag > 0.7 else rng.randint(0, replicas)
                m.run(ref, a.pod, a.chips.get(name), want - m.running(ref))
        snapshot = snap.build([m.report() for m in members.values()], queues=queues, quotas=quotas)
        before = set(admitted)
        held = {q.name: usage.queue_used(q.name) for q in queues}
        result = scheduler.run_cycle(snapshot, pending, usage, NOW)
        _check(result, base, jobs=jobs, queues=queues, quotas=quotas, before=before)
        _check_reclaim(result, queues, held)
        _check_victims(result)
        usage, pending = result.usage, result.pending
