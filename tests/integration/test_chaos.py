"""Chaos, bounded: member faults, controller kills and an etcd restart while jobs arrive,
with the federation's invariants checked continuously by a sampler.

Real pieces: a private etcd (SIGKILLed and restarted once on the same data dir and port),
`fedctl controller` processes (SIGKILLed at random and started again), simulated members
faulted through their `/_sim` fault API. Randomness is seeded: the seed is printed and
FEDCTL_CHAOS_SEED replays a run; FEDCTL_CHAOS_SECONDS sets how long the chaos lasts (the
default keeps the test near 90 s; `make chaos` runs it for 15 minutes). Some jobs run two
pods (a gang), some carry a higher priority (they preempt at a full queue; the share is
FEDCTL_CHAOS_URGENT, 0.2 by default), and two services are placed before the chaos starts.

Invariants, sampled from the registry and the members every few hundred milliseconds:
  quota      the jobs Scheduled in their Bindings and not finished never exceed a queue's
             capability or a namespace's FederatedResourceQuota (Bindings first, statuses
             after, so a job finishing between the reads can only lower the count)
  noexecute  no unfinished job's Binding stays Scheduled on a cluster with a NoExecute taint
             it does not tolerate longer than the lease TTL (a leader may be dying) plus
             slack; time while most of the fleet looks unhealthy does not count, since
             eviction then slows down on purpose (finished jobs are never moved)
  lost       at the end every job the API accepted has a Binding: Scheduled, or Pending
             with a reason
  double     no batch Job is active in two members in one sample; members under a fault or
             still carrying failover taints (not yet recovered) are not sampled
  finished   a job once seen finished (Succeeded or Failed) is never seen unfinished, or
             without a status, again: it would run twice, and count against its queue again
  gang       a Scheduled two-pod job's Binding names one cluster with both pods
  replicas   a Scheduled service's Binding holds its replicas: the static-weight one all of
             them across its clusters, the duplicated one one copy on each
  converge   once everything is healed, each service is back where the whole fleet put it
             before the chaos (its Binding), and every member runs the copy it is bound to
             with the bound replicas (members that were down, blackholed or recovering get
             their share back; no member keeps a stale count)

A broken quota invariant is reported with the jobs it counted and their phases, so that a
failure seen once is explained by its own output. FEDCTL_CHAOS_ETCD_EVERY restarts etcd
every that many seconds instead of once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest

from federation import errors
from federation.registry import codec, embedded, keys
from federation.scheduler import reconcile
from federation.settings import FailoverSettings
from policies.models.binding import Binding
from policies.models.cluster import ClusterStatus
from policies.models.frq import FederatedResourceQuota
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_ha import (
    TTL,
    Controllers,
    batch_job,
    controllers,
    cpu_queue,
    leader_kv,
    submit,
)
from tests.integration.test_propagation_support import (
    NAMES,
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import background, wait_for

SECONDS = float(os.environ.get("FEDCTL_CHAOS_SECONDS", "45"))
ETCD_EVERY = float(os.environ.get("FEDCTL_CHAOS_ETCD_EVERY", "0")) or None
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(SECONDS + 240),  # set-up, settling and the final checks on top
    # Slow, blackholed and flapping members drop clients in the middle of a watch's
    # handshake; aiohttp then leaves a few sockets of this process to the collector, whose
    # ResourceWarning arrived as a test failure about one run in twenty, long after the
    # chaos. Every other test still fails on an unclosed socket; the invariants here are
    # what this test checks.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]
SEED = int(os.environ.get("FEDCTL_CHAOS_SEED", str(random.SystemRandom().randrange(1 << 32))))
QUEUES = {"qa": 6, "qb": 10}
"""Queue → CPU capability (every job asks for one CPU)."""
NAMESPACE_QUOTA = ("team", 3)
"""The namespace whose FederatedResourceQuota (overall CPU) is tighter than its queue."""
FAULTS = ("down", "blackhole", "slow", "errors", "flapping", "node-notready")
SLACK = 6.0
"""Seconds past the lease TTL a Binding may stay on a NoExecute cluster (eviction queue,
rate limiter, a successor loading its mirrors)."""


def frq(namespace: str, cpu: int) -> FederatedResourceQuota:
    return FederatedResourceQuota.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "FederatedResourceQuota",
            "metadata": {"name": namespace, "namespace": namespace},
            "spec": {"overall": {"cpu": str(cpu)}},
        }
    )


GANGS = 0.3
"""The share of jobs that run two pods at once (one CPU each): a gang, placed whole."""
URGENT = float(os.environ.get("FEDCTL_CHAOS_URGENT", "0.2"))
"""The share of jobs at priority 10 (the rest 0): arriving at a full queue, they preempt
(0 turns preemption off)."""
SERVICES = {"spread": 6, "everywhere": 1}
"""Deployments in namespace web (default queue) → replicas: `spread` divided by equal static
weights over the CPU members, `everywhere` duplicated to every member that can run it (CPU
pods never go to accelerator nodes: the CPU members too)."""
CPU_MEMBERS = ("us-east-cpu", "eu-west-arm", "ap-southeast-cpu")


def service_policy(name: str) -> PropagationPolicy:
    if name == "spread":
        weights = [{"targetCluster": {"clusterNames": [c]}, "weight": 1} for c in CPU_MEMBERS]
        scheduling: dict[str, object] = {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": weights},
        }
    else:
        scheduling = {"replicaSchedulingType": "Duplicated"}
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "web"},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
                ],
                "placement": {"replicaScheduling": scheduling},
            },
        }
    )


def chaos_job(rng: random.Random, n: int) -> Workload:
    queue = rng.choice(sorted(QUEUES))
    duration = f"{rng.randint(30, 240)}s"  # simulated; the fleet runs 50x faster than wall time
    job = batch_job(f"job-{n:04d}", queue, duration=duration, cpu="1")
    if queue == "qb" and rng.random() < 0.7:
        meta = job.metadata.model_copy(update={"namespace": NAMESPACE_QUOTA[0]})
        job = job.model_copy(update={"metadata": meta})
    gang, urgent = rng.random() < GANGS, rng.random() < URGENT
    if gang or urgent:
        wire = job.to_wire()
        if gang:
            wire["spec"].update(parallelism=2, completions=2)
        if urgent:
            wire["metadata"]["annotations"]["fedctl.io/priority"] = "10"
        job = Workload.model_validate(wire)
    return job


@dataclass
class Violation:
    at: float
    invariant: str
    evidence: str


@dataclass
class World:
    """What the chaos driver did, for the checker to take into account and to report."""

    started: float = field(default_factory=time.monotonic)
    faulted: dict[str, str] = field(default_factory=dict)
    accepted: dict[str, Workload] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    samples: int = 0
    member_samples: int = 0
    peak: dict[str, int] = field(default_factory=dict)
    noexecute: int = 0
    """NoExecute taint episodes seen (each one puts the toleration invariant to work)."""
    evicted: set[str] = field(default_factory=set)
    preempted: set[str] = field(default_factory=set)
    """Jobs seen preempted or reclaimed (the priority share at work)."""

    def note(self, what: str) -> None:
        line = f"{time.monotonic() - self.started:7.2f}s {what}"
        self.log.append(line)
        print(line, flush=True)

    def violate(self, invariant: str, subject: str, evidence: str) -> None:
        """Record a broken invariant (once per invariant and subject; it is noted each time)."""
        if (invariant, subject) in self.seen:
            return
        self.seen.add((invariant, subject))
        self.violations.append(Violation(time.monotonic() - self.started, invariant, evidence))
        self.note(f"VIOLATION {invariant}: {evidence}")


class Checker:
    """Samples the registry and the members; records every invariant it sees broken."""

    def __init__(self, fed: Federation, world: World, group: Controllers) -> None:
        self.fed, self.world, self.group = fed, world, group
        self.leader: str | None = None
        self.statuses = codec.TypedStore(fed.store, codec.Codec(ClusterStatus))
        self.exposure: dict[tuple[str, str], float] = {}
        """Seconds each NoExecute taint has stood while the fleet was mostly healthy."""
        self.last = time.monotonic()
        self.recovering: set[str] = set()
        self.doubled: dict[str, int] = {}
        self.finished: dict[str, str] = {}
        """Jobs seen finished: their phase, then."""
        self.services: dict[str, dict[str, int]] = {}
        """Each service's placement last sampled."""

    async def run(self) -> None:
        while True:
            try:
                await self.sample()
            except (errors.FedctlError, TimeoutError) as exc:
                self.world.note(f"checker: registry unreadable ({type(exc).__name__})")
            await asyncio.sleep(0.25)

    async def sample(self) -> None:
        async with asyncio.timeout(5):
            bindings = await self.fed.bindings.list(keys.prefix("bindings"))
            results = await self.fed.statuses.list(keys.prefix("workloadstatus"))
            clusters = await self.statuses.list(keys.prefix("clusterstatus"))
            kv = await leader_kv(self.fed.store)
        leader = kv.value.decode() if kv else None
        if leader != self.leader:
            replica = self.group.by_identity(leader)
            who = f"controller {replica.index}" if replica else "a dead process" if leader else ""
            self.world.note(f"checker: leader now {who or 'nobody'} ({leader})")
            self.leader = leader
        now = time.monotonic()
        self.world.samples += 1
        for replica in self.group.crashed():
            tail = self.group.tail(replica, lines=12).replace("\n", " | ")
            self.world.violate("crash", str(replica.index), f"controller {replica.index}: {tail}")
        phases = {
            f"{r.obj.workload.namespace}/{r.obj.workload.name}": r.obj.phase for r in results.items
        }
        finished = {job for job, phase in phases.items() if phase in reconcile.FINISHED}
        for job, phase in phases.items():
            if job in self.finished and job not in finished:
                was = self.finished[job]
                bound = {
                    f"{b.obj.spec.workload.namespace}/{b.obj.spec.workload.name}": b
                    for b in bindings.items
                }.get(job)
                seen = (
                    f"Binding {bound.obj.status.phase} on {bound.obj.placement()}"
                    f" rev {bound.revision}, reason {bound.obj.status.reason!r},"
                    f" evicted from {[t.cluster for t in bound.obj.spec.eviction_tasks]}"
                    if bound is not None
                    else "no Binding"
                )
                status = next(
                    r.obj.model_dump_json(exclude_none=True)[:600]
                    for r in results.items
                    if f"{r.obj.workload.namespace}/{r.obj.workload.name}" == job
                )
                self.world.violate(
                    "finished", job, f"{job} was {was}, now {phase} ({seen}): {status}"
                )
        for job in self.finished.keys() - phases.keys():  # no job is ever deleted here
            self.world.violate("finished", job, f"{job} was {self.finished[job]}, now no status")
        self.finished.update({job: phases[job] for job in finished})
        self._quota(bindings.items, finished, phases)
        self._replicas(bindings.items)
        self._gangs(bindings.items, finished)
        self._noexecute(bindings.items, clusters.items, finished, now)
        if self.world.samples % 2 == 0:  # members every other sample: they run the jobs too
            await self._double()

    def _quota(
        self,
        items: list[codec.Stored[Binding]],
        finished: set[str],
        phases: dict[str, str | None],
    ) -> None:
        per_queue: dict[str, int] = {}
        per_ns: dict[str, int] = {}
        counted: dict[str, list[str]] = {}
        for item in items:
            b = item.obj
            ns = b.spec.workload.namespace
            job = f"{ns}/{b.spec.workload.name}"
            if b.status.phase != "Scheduled" or job in finished or ns == "web":
                continue  # the services are in the default queue, without a capability
            cpus = sum(b.placement().values())
            per_queue[b.spec.queue] = per_queue.get(b.spec.queue, 0) + cpus
            per_ns[ns] = per_ns.get(ns, 0) + cpus
            seen = f"{job}@{','.join(b.placement())} rev {item.revision} ({phases.get(job)})"
            counted.setdefault(b.spec.queue, []).append(seen)
            counted.setdefault(f"ns/{ns}", []).append(seen)
        for name, used in per_queue.items():
            self.world.peak[name] = max(self.world.peak.get(name, 0), used)
            if used > QUEUES.get(name, 0):
                self.world.violate(
                    "quota",
                    f"queue {name}",
                    f"queue {name}: {used} CPU > {QUEUES.get(name)}: {counted[name]}",
                )
        ns, cap = NAMESPACE_QUOTA
        self.world.peak[f"ns/{ns}"] = max(self.world.peak.get(f"ns/{ns}", 0), per_ns.get(ns, 0))
        if per_ns.get(ns, 0) > cap:
            self.world.violate(
                "quota",
                f"ns {ns}",
                f"namespace {ns}: {per_ns[ns]} CPU > {cap}: {counted[f'ns/{ns}']}",
            )

    def _gangs(self, items: list[codec.Stored[Binding]], finished: set[str]) -> None:
        for item in items:
            b = item.obj
            job = f"{b.spec.workload.namespace}/{b.spec.workload.name}"
            if b.spec.workload.kind != "Job" or b.status.phase != "Scheduled" or job in finished:
                continue
            accepted = self.world.accepted.get(job)  # None for a moment after its submission
            if accepted is None:
                continue
            pods = int(accepted.spec.get("parallelism", 1))
            if list(b.placement().values()) != [pods]:
                self.world.violate("gang", job, f"{job} ({pods} pods) on {b.placement()}")

    def _replicas(self, items: list[codec.Stored[Binding]]) -> None:
        for item in items:
            b = item.obj
            name = b.spec.workload.name
            if b.spec.workload.namespace != "web" or b.status.phase != "Scheduled":
                continue
            placement = b.placement()
            if self.services.get(name) != placement:
                self.services[name] = placement
                self.world.note(f"checker: service {name} on {placement}")
            if name == "spread":
                held = sum(placement.values()) == SERVICES[name]
            else:
                held = bool(placement) and set(placement.values()) == {SERVICES[name]}
            if not held:
                self.world.violate(
                    "replicas", f"{name} rev {item.revision}", f"service {name}: {placement}"
                )

    def _noexecute(
        self,
        items: list[codec.Stored[Binding]],
        clusters: list[codec.Stored[ClusterStatus]],
        finished: set[str],
        now: float,
    ) -> None:
        current: set[tuple[str, str]] = set()
        self.recovering = set()
        ready = {i.key.rpartition("/")[2] for i in clusters if i.obj.ready()}
        healthy_fleet = 1 - len(ready) / len(NAMES) < FailoverSettings().unhealthy_threshold
        elapsed, self.last = min(now - self.last, 1.0), now
        for item in clusters:
            name = item.key.rpartition("/")[2]
            for taint in item.obj.taints:
                if taint.key.startswith("cluster.fedctl.io/"):
                    self.recovering.add(name)
                if taint.effect == "NoExecute":
                    current.add((name, taint.key))
                    if (name, taint.key) not in self.exposure:
                        self.exposure[(name, taint.key)] = 0.0
                        self.world.noexecute += 1
                        self.world.note(f"checker: {name} {taint.key}:NoExecute")
                    elif healthy_fleet:
                        self.exposure[(name, taint.key)] += elapsed
        self.exposure = {k: v for k, v in self.exposure.items() if k in current}
        allowance = TTL + SLACK
        for item in items:
            b = item.obj
            if b.spec.eviction_tasks:
                self.world.evicted.add(b.metadata.name)
            reasons = [b.status.reason, *(t.reason for t in b.spec.eviction_tasks)]
            if any(r.startswith(("preempted by", "reclaimed by")) for r in reasons):
                self.world.preempted.add(b.metadata.name)
            job = f"{b.spec.workload.namespace}/{b.spec.workload.name}"
            if b.status.phase != "Scheduled" or job in finished:
                continue  # no policy gives these jobs clusterTolerations: none tolerated
            for (name, key), exposed in self.exposure.items():
                if name in b.placement() and exposed > allowance:
                    self.world.violate(
                        "noexecute",
                        f"{b.metadata.name}@{name}",
                        f"{b.metadata.name} still Scheduled on {name} ({key}:NoExecute for"
                        f" {exposed:.1f}s of a mostly healthy fleet > {allowance:.0f}s)",
                    )

    async def _double(self) -> None:
        active: dict[str, list[str]] = {}
        for name in NAMES:
            if name in self.world.faulted or name in self.recovering:
                continue
            began = time.monotonic() - self.world.started
            try:
                async with asyncio.timeout(3):
                    jobs = await self.fed.ours(name, "batch/v1", "Job")
            except (errors.FedctlError, TimeoutError):
                continue
            read = f"{name} read {began:.2f}-{time.monotonic() - self.world.started:.2f}s"
            self.world.member_samples += 1
            for job_name, obj in jobs.items():
                if int((obj.get("status") or {}).get("active") or 0) > 0:
                    ns = obj["metadata"].get("namespace", "")
                    active.setdefault(f"{ns}/{job_name}", []).append(read)
        for job_name, where in active.items():
            if len(where) > 1:
                ns, _, name = job_name.partition("/")
                stored = await self.fed.bindings.get(
                    keys.binding_key(
                        keys.WorkloadRef(ns, keys.kind_segment("batch/v1", "Job"), name)
                    )
                )
                seen = (
                    f"Binding {stored.obj.status.phase} on {stored.obj.placement()}, reason"
                    f" {stored.obj.status.reason!r}, tasks {stored.obj.spec.eviction_tasks}"
                    if stored is not None
                    else "no Binding"
                )
                self.world.violate("double", job_name, f"{job_name} active in {where}: {seen}")


@dataclass
class Driver:
    """Does the damage: member faults, controller kills, one etcd restart; seeded."""

    fed: Federation
    etcd: embedded.EmbeddedEtcd
    group: Controllers
    world: World
    rng: random.Random
    etcd_restarted: bool = False
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def later(self, seconds: float, action: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await asyncio.sleep(seconds)
            await action()

        task = asyncio.create_task(run())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def fault(self) -> None:
        healthy = [n for n in NAMES if n not in self.world.faulted]
        if len(self.world.faulted) >= 2 or not healthy:
            return
        name, mode = self.rng.choice(healthy), self.rng.choice(FAULTS)
        body: dict[str, object] = {"mode": mode}
        if mode == "slow":
            body["latency"] = self.rng.choice([0.5, 1.5, 3.0])
        elif mode == "errors":
            body["rate"] = self.rng.choice([0.3, 0.7, 1.0])
        elif mode == "flapping":
            body["period"] = self.rng.choice([0.5, 1.0])
        elif mode == "node-notready":
            body["count"] = 2
        length = self.rng.uniform(2.0, 8.0)
        self.world.faulted[name] = mode
        self.world.note(f"fault {name} {mode} for {length:.1f}s")
        await self.fed.admin(name, "fault", body)

        async def heal() -> None:
            await self.fed.admin(name, "heal", {})
            self.world.faulted.pop(name, None)
            self.world.note(f"heal {name}")

        self.later(length, heal)

    async def kill_controller(self) -> None:
        alive = [r for r in self.group.replicas if r.alive]
        if len(alive) < len(self.group.replicas):
            return  # one down at a time: it comes back before the next kill
        kv = await leader_kv(self.fed.store)
        leader = self.group.by_identity(kv.value.decode()) if kv else None
        victim = leader if leader is not None and self.rng.random() < 0.7 else None
        victim = victim or self.rng.choice(alive)
        role = "leader" if victim is leader else "follower"
        self.group.kill(victim)
        self.world.note(f"SIGKILL controller {victim.index} ({role})")

        async def restart() -> None:
            self.group.start(victim.index)
            self.world.note(f"restart controller {victim.index}")

        self.later(self.rng.uniform(1.0, 4.0), restart)

    async def restart_etcd(self) -> None:
        self.etcd_restarted = True
        self.world.note("SIGKILL etcd")
        await asyncio.to_thread(self.etcd.stop, kill=True)
        await asyncio.sleep(self.rng.uniform(0.5, 2.0))  # the outage itself
        await asyncio.to_thread(self.etcd.start)
        self.world.note("etcd back")

    async def run(self, seconds: float) -> None:
        etcd_at = self.rng.uniform(0.3, 0.6) * seconds
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if time.monotonic() - self.world.started >= etcd_at:
                await self.restart_etcd()
                etcd_at = etcd_at + ETCD_EVERY if ETCD_EVERY else float("inf")
            roll = self.rng.random()
            if roll < 0.55:
                await self.fault()
            elif roll < 0.85:
                await self.kill_controller()
            await asyncio.sleep(self.rng.uniform(0.5, 2.5))
        if not self.etcd_restarted:
            await self.restart_etcd()

    async def settle(self) -> None:
        """Heal every member and bring every controller back."""
        for task in list(self.tasks):
            task.cancel()
        for name in NAMES:
            await self.fed.admin(name, "heal", {})
        self.world.faulted.clear()
        for replica in self.group.replicas:
            if not replica.alive:
                self.group.start(replica.index)
        await asyncio.gather(*(self.group.ready(r) for r in self.group.replicas))
        self.world.note("settled: members healed, controllers up")


async def service_state(fed: Federation) -> dict[str, object]:
    """Each service's Scheduled placement (None when not Scheduled), and the replicas of the
    copy each member runs (None: no copy; "?" when the member does not answer)."""
    state: dict[str, object] = {}
    for name in SERVICES:
        stored = await fed.bindings.get(keys.binding_key(ref_of(deployment(name, 1))))
        bound = stored is not None and stored.obj.status.phase == "Scheduled"
        state[name] = stored.obj.placement() if stored is not None and bound else None
        copies: dict[str, object] = {}
        for cluster in NAMES:
            try:
                async with asyncio.timeout(3):
                    obj = await fed.member_object(cluster, "apps/v1", "Deployment", "web", name)
            except (errors.FedctlError, TimeoutError):
                copies[cluster] = "?"
                continue
            copies[cluster] = obj["spec"]["replicas"] if obj is not None else None
        state[f"{name}@members"] = copies
    return state


def converged(state: dict[str, object], baseline: dict[str, dict[str, int]]) -> bool:
    """Every service bound where the whole fleet put it, every member running that."""
    for name, placement in baseline.items():
        members = {c: placement.get(c) for c in NAMES}
        if state[name] != placement or state[f"{name}@members"] != members:
            return False
    return True


async def submitter(group: Controllers, world: World, rng: random.Random) -> None:
    """Jobs through the API, a few at a time, to any live replica; a refused batch is retried
    (apply is idempotent), and only accepted jobs count."""
    n = 0
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while True:
            batch = [chaos_job(rng, n + i) for i in range(rng.randint(1, 4))]
            n += len(batch)
            while True:
                alive = [r for r in group.replicas if r.alive]
                if alive:
                    try:
                        await submit(session, rng.choice(alive).url, batch)
                        break
                    except (aiohttp.ClientError, TimeoutError, AssertionError):
                        pass
                await asyncio.sleep(0.2)
            for job in batch:
                world.accepted[f"{job.metadata.namespace}/{job.metadata.name}"] = job
            await asyncio.sleep(rng.uniform(0.1, 0.5))


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def test_chaos_keeps_quota_toleration_nothing_lost_and_no_double_run(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    print(f"\nchaos: seed {SEED} (FEDCTL_CHAOS_SEED), {SECONDS:g}s (FEDCTL_CHAOS_SECONDS)")
    rng = random.Random(SEED)
    for name, cpu in QUEUES.items():
        await fed.put(cpu_queue(name, cpu))
    await fed.put(frq(*NAMESPACE_QUOTA))
    for name, replicas in SERVICES.items():
        await fed.put(service_policy(name))
        await fed.put(deployment(name, replicas))
    world = World()
    async with controllers(own_etcd.url, tmp_path, 3) as group:
        state: dict[str, object] = {}

        async def placed_everywhere() -> bool:
            state.update(await service_state(fed))
            spread, everywhere = state["spread"], state["everywhere"]
            return (
                isinstance(spread, dict)
                and isinstance(everywhere, dict)
                and sorted(spread) == sorted(everywhere) == sorted(CPU_MEMBERS)
                and converged(state, {"spread": spread, "everywhere": everywhere})
            )

        try:
            await wait_for(placed_everywhere, timeout=60, interval=0.5, message="services")
        except AssertionError as exc:
            raise AssertionError(f"services not placed before the chaos: {state}") from exc
        baseline = {name: dict(state[name]) for name in SERVICES}  # type: ignore[call-overload]
        world.note(f"services before the chaos: {baseline}")
        checker = Checker(fed, world, group)
        driver = Driver(fed, own_etcd, group, world, rng)
        async with background(checker.run(), submitter(group, world, random.Random(SEED + 1))):
            await driver.run(SECONDS)
            await driver.settle()
            accepted = dict(world.accepted)

            async def nothing_lost() -> list[str]:
                listed = await fed.bindings.list(keys.prefix("bindings"))
                found = {
                    f"{b.obj.spec.workload.namespace}/{b.obj.spec.workload.name}": b.obj
                    for b in listed.items
                }
                missing = [
                    name
                    for name in accepted
                    if name not in found
                    or (found[name].status.phase == "Pending" and not found[name].status.reason)
                ]
                return missing

            async def none_lost() -> bool:
                return not await nothing_lost()

            with contextlib.suppress(AssertionError):
                await wait_for(
                    none_lost,
                    timeout=TTL + 20,
                    interval=0.5,
                    message="a Binding for every accepted job",
                )
            missing = await nothing_lost()
            if missing:
                world.violate("lost", "", f"{len(missing)} jobs without a Binding: {missing[:10]}")

            async def back() -> bool:
                state.update(await service_state(fed))
                return converged(state, baseline)

            try:
                await wait_for(back, timeout=TTL + 60, interval=0.5, message="services back")
                world.note("services back where they were, every member running its share")
            except AssertionError:
                listed = await checker.statuses.list(keys.prefix("clusterstatus"))
                members = {
                    i.key.rpartition("/")[2]: (
                        "Ready" if i.obj.ready() else "not Ready",
                        [t.key for t in i.obj.taints],
                        f"{sum(f.node_count for f in i.obj.flavors)} nodes",
                    )
                    for i in listed.items
                }
                world.violate("converge", "", f"services after the chaos: {state}; {members}")
            # A last stretch of sampling with everything healed (double runs after recovery).
            samples = world.samples
            await wait_for(lambda: world.samples >= samples + 8, timeout=30, message="samples")
    print(
        f"chaos: seed {SEED}: {len(world.accepted)} jobs accepted, {world.samples} registry"
        f" samples, {world.member_samples} member samples, peaks {world.peak},"
        f" {world.noexecute} NoExecute episodes, {len(world.evicted)} jobs evicted"
        f" ({len(world.preempted)} preempted)"
    )
    assert driver.etcd_restarted
    assert world.samples > 20 and world.member_samples > 20
    assert not world.violations, f"seed {SEED}: " + "; ".join(
        f"{v.at:.1f}s {v.invariant}: {v.evidence}" for v in world.violations[:20]
    )
