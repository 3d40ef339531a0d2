"""What no cycle may do, through the scheduling loop's round trip: workloads and their
Bindings sorted by `reconcile` into pending and admitted, a cycle, its Bindings stored and
read back next time, while members run what the Bindings name (some pods late), services
are scaled and resized, jobs finish, workloads are deleted, a namespace's propagation policy is
edited or deleted, and in some runs a member goes down and failover evicts its copies.
Every cycle: the copies the Bindings name fit the members, no queue or namespace goes
past its limit, nothing is placed on a member that is down, and every workload is either
bound or waiting.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from federation.cache import snapshot as snap
from federation.failover import eviction
from federation.queue.pending import PendingStore
from federation.quota.accounting import Usage
from federation.registry import keys
from federation.resources import ResourceList
from federation.scheduler import cycle, fingerprint, reconcile
from federation.scheduler.binder import binding_ref
from federation.scheduler.loop import _amended, _mark_claims, _mark_fingerprints
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.cluster import Condition, Taint
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import GPU, NOW, workload
from tests.unit.scheduler.test_invariants import (
    A100,
    DIVIDED,
    H100,
    NAMESPACES,
    QUEUES,
    SHAPES,
    _check_limits,
    _check_victims,
    _fleet,
    _Member,
    _queues,
    _quotas,
)


def _policy(namespace: str, kind: str) -> PropagationPolicy:
    """Every Deployment of a namespace, replicated as `kind` says."""
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": "services", "namespace": namespace},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": {"replicaScheduling": DIVIDED[kind]},
            },
        }
    )


def _new(rng: random.Random, number: int) -> Workload:
    spec = dict(SHAPES[rng.randrange(len(SHAPES))])
    roll = rng.random()
    if roll < 0.3:  # more services, so policies have work to divide
        spec = {"cpu": rng.choice(["1", "2"]), "replicas": rng.randint(1, 4)}
        spec["kind"] = "Deployment"
    elif roll < 0.4:  # a GPU service that takes either chip
        spec = {"cpu": "2", "gpus": 1, "replicas": rng.randint(1, 3), "chips": f"{H100},{A100}"}
        spec["kind"] = "Deployment"
    return workload(
        f"w{number}",
        namespace=rng.choice(NAMESPACES),
        queue=rng.choice(QUEUES),
        priority=rng.randint(0, 3),
        **spec,  # type: ignore[arg-type]
    )


def _scaled(w: Workload, replicas: int, cpu: str | None = None) -> Workload:
    """`w` with `replicas`, and each pod asking for `cpu` when given (a resize)."""
    wire = w.model_dump(by_alias=True, mode="json", exclude_none=True)
    spec = {**wire["spec"], "replicas": replicas}
    if cpu is not None:
        (container,) = spec["template"]["spec"]["containers"]
        container["resources"]["requests"]["cpu"] = cpu
    return Workload.model_validate({**wire, "spec": spec})


def _annotated(w: Workload, rng: random.Random) -> Workload:
    """`w` moved to another queue or given another priority."""
    notes = dict(w.metadata.annotations)
    if rng.random() < 0.5:
        notes["fedctl.io/queue"] = rng.choice(QUEUES)
    else:
        notes["fedctl.io/priority"] = str(rng.randint(0, 4))
    wire = w.model_dump(by_alias=True, mode="json", exclude_none=True)
    return Workload.model_validate({**wire, "metadata": {**wire["metadata"], "annotations": notes}})


def _copies(bindings: dict[str, Binding]) -> list[tuple[str, str, str | None, ResourceList, int]]:
    """(workload, cluster, chip, pod, replicas) for every copy a Binding names: what the
    propagator keeps on the members, Scheduled or waiting to be placed again."""
    return [
        (key, t.name, t.chip, ResourceList.from_wire(b.spec.pod_requests), t.replicas)
        for key, b in bindings.items()
        for t in b.spec.clusters
        if t.replicas > 0
    ]


def _check_copies_fit(
    copies: list[tuple[str, str, str | None, ResourceList, int]], fleet: snap.Snapshot
) -> None:
    """Device pods within their chip's flavors, CPU pods pinned to an arch within its CPU
    flavors, every CPU pod of a member within its CPU flavors."""
    by_chip: dict[tuple[str, str | None], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    cpu: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for _, name, chip, pod, replicas in copies:
        device = pod.amount(GPU) > 0
        for resource, amount in pod.items():
            if device or chip is not None:
                by_chip[(name, chip)][resource] += amount * replicas
            if not device:
                cpu[name][resource] += amount * replicas
    for (name, chip), used in by_chip.items():
        room = [
            f.free
            for f in fleet.cluster(name).flavors
            if f.accelerator_model == chip or (f.accelerator_model is None and f.arch == chip)
        ]
        for resource, amount in used.items():
            assert amount <= sum(r.amount(resource) for r in room), f"{name} {chip} {resource}"
    for name, used in cpu.items():
        room = [f.free for f in fleet.cluster(name).flavors if f.accelerator_model is None]
        for resource, amount in used.items():
            assert amount <= sum(r.amount(resource) for r in room), f"{name} over {resource}"


class _World:
    """The registry's workloads, phases and Bindings, the loop's remembered fingerprints
    and claims, and the members running what the Bindings name."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.fleet = _fleet(rng)
        self.members = {c.metadata.name: _Member(c, rng, others=False) for c in self.fleet}
        self.queues, self.quotas = _queues(rng), _quotas(rng, list(self.members))
        self.kinds = {ns: rng.choice([None, *DIVIDED]) for ns in NAMESPACES}
        self.scheduler = cycle.Scheduler(SchedulerSettings())
        self.workloads: dict[str, reconcile.Entry] = {}
        self.bindings: dict[str, Binding] = {}
        self.phases: dict[str, str | None] = {}
        self.fingerprints: dict[str, str] = {}
        self.claims: dict[str, str] = {}
        self.made = 0
        self.down: str | None = None

    def change(self, number: int) -> None:
        """Arrivals, scaling, finished and deleted work, a namespace's policy edited or
        deleted."""
        rng = self.rng
        for _ in range(rng.randint(4, 10) if number < 4 else 0):
            self.made += 1
            w = _new(rng, self.made)
            self.workloads[str(reconcile.ref_of(w))] = reconcile.Entry(w, self.made)
        for key, entry in list(self.workloads.items()):
            w, roll = entry.workload, rng.random()
            if number and w.kind == "Deployment" and roll < 0.15:
                cpu = rng.choice(["1", "2", "3"]) if rng.random() < 0.3 else None
                scaled = _scaled(w, rng.randint(1, 5), cpu)
                self.workloads[key] = reconcile.Entry(scaled, entry.created)
            elif number and 0.88 < roll <= 0.93:
                edited = _annotated(w, rng)
                self.workloads[key] = reconcile.Entry(edited, entry.created)
            elif number and key in self.bindings and roll > 0.93:
                if w.kind == "Job":
                    self.phases[key] = "Succeeded"
                else:
                    del self.workloads[key]
        if number == 3:
            self.kinds[rng.choice(NAMESPACES)] = rng.choice([None, *DIVIDED])
        if number == 2 and len(self.members) > 2 and rng.random() < 0.5:
            self._fail(rng.choice(list(self.members)))

    def _fail(self, name: str) -> None:
        """A member goes down: it reports NotReady, is tainted NoExecute, its pods are
        gone and failover evicts every copy its Bindings name there."""
        self.down = name
        m = self.members[name]
        for ref in list(m.ours):
            m.stop(ref)
        taint = Taint(key="cluster.fedctl.io/not-ready", effect="NoExecute", time_added=NOW)
        ready = Condition(type="Ready", status="False", last_transition_time=NOW)
        status = m.spec.status.model_copy(update={"conditions": [ready]})
        spec = m.spec.spec.model_copy(update={"taints": [taint]})
        m.spec = m.spec.model_copy(update={"spec": spec, "status": status})
        for key, b in list(self.bindings.items()):
            if any(t.name == name for t in b.spec.clusters):
                self.bindings[key] = eviction.evict(
                    b, name, now=NOW, reason="cluster not ready", purge_mode="Directly"
                )

    def policies(self) -> list[PropagationPolicy]:
        return [_policy(ns, kind) for ns, kind in self.kinds.items() if kind is not None]

    def run_members(self) -> None:
        """The members run what the Bindings name, some of it late."""
        copies = [c for c in _copies(self.bindings) if not self.phases.get(c[0])]
        named = {(key, name) for key, name, *_ in copies}
        for name, m in self.members.items():
            for ref in [r for r in m.ours if (r, name) not in named]:
                m.stop(ref)
        for key, name, chip, pod, replicas in copies:
            if self.rng.random() < 0.4 or name == self.down:
                continue
            m = self.members[name]
            if m.running(key) > replicas or any(p != pod for *_, p in m.ours.get(key, [])):
                m.stop(key)  # scaled down, or resized: the pods are replaced
            m.run(key, pod, chip, replicas - m.running(key))

    def cycle(self) -> cycle.CycleResult:
        """One pass of the loop: reconcile, decide, remember, write."""
        snapshot = snap.build(
            [m.report() for m in self.members.values()],
            queues=self.queues,
            quotas=self.quotas,
            bindings=self.bindings,
        )
        work = reconcile.reconcile(
            workloads=self.workloads,
            bindings=self.bindings,
            phases=self.phases,
            policies=self.policies(),
            clusters=list(self.members),
            fingerprints=self.fingerprints,
            claims=self.claims,
            ready=fingerprint.placeable(snapshot.clusters),
            settings=SchedulerSettings(),
            device_resources=snapshot.device_resources,
        )
        usage = Usage([*work.admitted, *work.waiting])
        result = self.scheduler.run_cycle(snapshot, PendingStore(work.pending), usage, NOW)
        self.fingerprints, self.claims = dict(work.fingerprints), dict(work.held)
        for a in result.admitted:
            self.fingerprints[str(a.ref)] = work.marks[str(a.ref)]
        _check_victims(result)
        for victim, _ in result.evicted:
            self.fingerprints.pop(str(victim.ref), None)
        _mark_fingerprints(result.bindings, self.fingerprints)
        _mark_claims(result.bindings, work.claims)
        amends = {str(binding_ref(b)): b for b in work.amends}
        result.bindings.extend(_amended(amends, result.bindings))
        gone = set(work.stale)
        self.bindings = {
            key: b
            for key, b in self.bindings.items()
            if keys.binding_key(binding_ref(b)) not in gone
        }
        for b in result.bindings:
            self.bindings[str(binding_ref(b))] = b
        return result


@pytest.mark.parametrize("seed", range(120))
def test_no_round_trip_through_the_registry_overfills_loses_or_breaks_limits(seed: int) -> None:
    world = _World(random.Random(seed))
    clean = snap.build(world.fleet)
    for number in range(6):
        world.change(number)
        world.run_members()
        result = world.cycle()
        live = {k for k in world.workloads if not world.phases.get(k)}
        bound = {k for k, b in world.bindings.items() if b.status.phase == "Scheduled"}
        waiting = {str(j.ref) for j in result.pending.jobs()}
        assert live <= bound | waiting, f"lost: {sorted(live - bound - waiting)}"
        running = [c for c in _copies(world.bindings) if c[0] in live]
        assert all(c[1] != world.down for c in running), "placed on a member that is down"
        _check_copies_fit(running, clean)
        _check_limits(result.usage.admissions(), world.queues, world.quotas)
