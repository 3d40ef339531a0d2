"""The scheduling loop end to end: real etcd, simulated members, monitor and propagator.

The loop reads the registry and writes Bindings; the propagator turns them into member
objects; the members run (and finish) the jobs; the finished statuses free queue capacity
for the jobs waiting behind them. The queue capability is checked continuously from the
stored Bindings, the only record of what was admitted.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from federation import clock
from federation.api import app as api_app
from federation.cache import snapshot as snap
from federation.cli import main
from federation.failover.controller import FailoverController
from federation.monitor.monitor import ClusterMonitor
from federation.queue.pending import PendingStore
from federation.quota.accounting import Usage
from federation.registry import codec, embedded, keys, objects
from federation.registry.memory import MemoryStore
from federation.registry.store import Store
from federation.scheduler import cycle
from federation.scheduler import plan as planning
from federation.scheduler.loop import SchedulerLoop
from federation.settings import FailoverSettings, MonitorSettings, SchedulerSettings
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.propagation import PropagationPolicy
from policies.models.queue import Queue
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    MEMBER,
    NAMES,
    Federation,
    load,
    started_federation,
)
from tests.serving import serving
from tests.unit.scheduler import fleet
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration

MONITOR = MonitorSettings(
    probe_period=0.25,
    probe_timeout=0.5,
    failure_threshold=1.0,
    success_threshold=0,
    heartbeat=60.0,
    workers=2,
    watch_backoff_max=0.5,
)
CPU_MEMBERS = ("us-east-cpu", "eu-west-arm", "ap-southeast-cpu")
SHARES = {"us-east-cpu": 6, "eu-west-arm": 3, "ap-southeast-cpu": 3}


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def scheduler_loop(fed: Federation) -> SchedulerLoop:
    return SchedulerLoop(fed.store, settings=SchedulerSettings(), clock=clock.real, debounce=0.05)


async def bindings(fed: Federation) -> dict[str, Binding]:
    listed = await fed.bindings.list(keys.prefix("bindings"))
    return {item.obj.metadata.name: item.obj for item in listed.items}


def job(
    name: str,
    queue: str,
    *,
    priority: int = 0,
    duration: str | None = "10s",
    parallelism: int = 1,
) -> Workload:
    """A batch Job of `parallelism` one-core pods that each run `duration` of simulated time
    (None: until deleted)."""
    pod_annotations = {"sim.fedctl.io/duration": duration} if duration else {}
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": "batch",
                "annotations": {"fedctl.io/queue": queue, "fedctl.io/priority": str(priority)},
            },
            "spec": {
                "parallelism": parallelism,
                "template": {
                    "metadata": {"annotations": pod_annotations},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "work",
                                "image": "registry.example.com/batch/work:1",
                                "resources": {"requests": {"cpu": "1", "memory": "64Mi"}},
                            }
                        ],
                    },
                },
            },
        }
    )


def queue(name: str, cpu: int) -> Queue:
    return Queue.model_validate(
        {"metadata": {"name": name}, "spec": {"capability": {"cpu": str(cpu), "memory": "1Ti"}}}
    )


async def test_examples_are_bound_with_explanations_and_the_web_tier_lands_6_3_3(
    fed: Federation,
) -> None:
    for obj in [*load("queues.yaml"), *load("web.yaml")]:
        await fed.put(obj)
    (web,) = load("web.yaml", kinds=("Deployment",))
    assert isinstance(web, Workload)
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    # Re-dividing as members turn Ready hands replicas over gracefully: failover ends each
    # handover once the new placement is ready, so the members converge on 6:3:3.
    failover = FailoverController(
        fed.store, settings=FailoverSettings(), member_settings=MEMBER, claim=planning.claim
    )
    fed.start()
    async with background(monitor.run(), scheduler_loop(fed).run(), failover.run()):

        async def scheduled() -> Binding | None:
            found = (await bindings(fed)).get("storefront")
            if found is None or found.status.phase != "Scheduled":
                return None
            return found if found.placement() == SHARES else None

        # Members turn Ready one by one; the service is re-divided as each one joins.
        bound = await wait_for(scheduled, timeout=15, message="storefront Scheduled 6:3:3")
        assert {v.cluster for v in bound.spec.explanation} >= set(CPU_MEMBERS)
        assert {v.cluster for v in bound.spec.explanation if v.selected} == set(CPU_MEMBERS)

        # An earlier division (made before every member was Ready) may already have 12 ready
        # replicas, so wait for the rows themselves: the members converge on the final 6:3:3.
        async def landed() -> Any:
            status = await fed.status(web)
            if status is None or status.ready_replicas != 12:
                return None
            rows = {row.cluster: row.ready_replicas for row in status.clusters}
            return rows if rows == SHARES else None

        await wait_for(landed, timeout=20, message="12 ready replicas in the members, 6:3:3")


class CapabilityWatch:
    """Polls Bindings then statuses; records the worst running CPU per queue seen."""

    def __init__(self, fed: Federation, jobs: Iterable[Workload]) -> None:
        self.fed = fed
        self.jobs = {j.metadata.name: j for j in jobs}
        self.peak: dict[str, int] = {}
        self.first_scheduled: dict[str, Any] = {}
        """Name -> when the cycle that admitted it ran (its Binding's lastScheduledTime):
        the Bindings of one cycle are written in concurrent transactions, so their etcd
        revisions do not follow the order of decisions inside a cycle."""
        self.polls = 0

    async def run(self) -> None:
        while True:
            listed = await self.fed.bindings.list(keys.prefix("bindings"))
            statuses = await self.fed.statuses.list(keys.prefix("workloadstatus"))
            done = {
                s.obj.workload.name
                for s in statuses.items
                if s.obj.phase in ("Succeeded", "Failed")
            }
            running: dict[str, int] = {}
            for item in listed.items:
                b = item.obj
                if b.status.phase != "Scheduled":
                    continue
                self.first_scheduled.setdefault(b.metadata.name, b.status.last_scheduled_time)
                if b.metadata.name not in done:
                    running[b.spec.queue] = running.get(b.spec.queue, 0) + 1
            for name, count in running.items():
                self.peak[name] = max(self.peak.get(name, 0), count)
            self.polls += 1
            await asyncio.sleep(0.03)


async def test_200_jobs_over_two_queues_admitted_in_order_within_capability(
    fed: Federation,
) -> None:
    await fed.put(queue("qa", 12))
    await fed.put(queue("qb", 6))
    jobs = [
        job(f"job-{i:03d}", "qa" if i % 2 == 0 else "qb", priority=10 if i % 5 == 0 else 0)
        for i in range(200)
    ]
    for j in jobs:
        await fed.put(j)
    watch = CapabilityWatch(fed, jobs)
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    fed.start()
    loop = scheduler_loop(fed)
    async with background(monitor.run(), loop.run(), watch.run()):

        async def pending_with_reasons() -> bool:
            found = await bindings(fed)
            waiting = [b for b in found.values() if b.status.phase == "Pending"]
            return (
                len(found) == 200
                and all("at capability for cpu" in b.status.reason for b in waiting)
                and len(waiting) >= 150
            )

        await wait_for(pending_with_reasons, timeout=15, message="the rest Pending with reasons")

        async def all_finished() -> bool:
            statuses = await fed.statuses.list(keys.prefix("workloadstatus"))
            return sum(s.obj.phase == "Succeeded" for s in statuses.items) == 200

        await wait_for(all_finished, timeout=45, interval=0.2, message="200 jobs Succeeded")
    assert watch.polls > 10
    assert watch.peak == {"qa": 12, "qb": 6}
    for name in ("qa", "qb"):
        mine = [j for j in jobs if j.queue == name]
        order = sorted(mine, key=lambda j: (-(j.priority or 0), j.metadata.name))
        admitted_at = [watch.first_scheduled[j.metadata.name] for j in order]
        assert admitted_at == sorted(admitted_at), f"{name}: admitted out of priority/FIFO order"
        assert len(set(admitted_at)) > 3  # jobs waited for capacity: several cycles admitted


async def test_a_restarted_loop_admits_nothing_twice(fed: Federation) -> None:
    await fed.put(queue("qa", 4))
    jobs = [job(f"long-{i:02d}", "qa", duration="1h") for i in range(12)]
    for j in jobs:
        await fed.put(j)
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)

    async def split() -> tuple[int, int]:
        found = await bindings(fed)
        phases = [b.status.phase for b in found.values()]
        return phases.count("Scheduled"), phases.count("Pending")

    async with background(monitor.run()):
        first = scheduler_loop(fed)
        async with background(first.run()):
            await wait_for(lambda: _is(split(), (4, 8)), timeout=15, message="4 admitted, 8 wait")
        second = scheduler_loop(fed)
        async with background(second.run()):
            await wait_for(lambda: second.cycles >= 1, timeout=10, message="a cycle after restart")
            await fed.put(job("late", "qa", duration="1h"))
            await wait_for(
                lambda: _is(split(), (4, 9)), timeout=10, message="still 4 admitted after restart"
            )
        assert second.last is not None and not second.last.admitted


async def _is(probe: Any, expected: Any) -> bool:
    return bool(await probe == expected)


async def registry_with_member() -> tuple[MemoryStore, Cluster]:
    """A registry holding cluster a (2 nodes of 16 cores) and its status, all of it free."""
    store = MemoryStore()
    return store, await with_member(store)


async def with_member(store: Store) -> Cluster:
    """Cluster a (2 nodes of 16 cores) and its status, all of it free, put in `store`."""
    member = fleet.cluster("a")
    assert member.status is not None
    await codec.TypedStore(store, objects.ObjectCodec()).put(
        keys.cluster_key("a"), member.model_copy(update={"status": None})
    )
    await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
        keys.cluster_status_key("a"), member.status
    )
    return member


async def test_plan_live_plans_files_against_the_controllers_registry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = await registry_with_member()
    small, huge = fleet.workload("small", cpu="2"), fleet.workload("huge", cpu="999")
    for w in (small, huge):
        (tmp_path / f"{w.metadata.name}.yaml").write_text(json.dumps(w.to_wire()))
    async with serving(api_app.build_app(store)) as server:
        code = await asyncio.to_thread(
            main.main, ["plan", "-f", str(tmp_path / "small.yaml"), "--live", "--server", server]
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert "place 1 replica(s) on a" in out
        code = await asyncio.to_thread(
            main.main,
            ["plan", "-f", str(tmp_path), "--live", "--server", server, "-o", "json"],
        )
        plans = {p["workload"]: p for p in json.loads(capsys.readouterr().out)}
        assert code == 3
        assert plans["team/Job.batch/small"]["placement"] == {"a": 1}
        assert "cpu" in plans["team/Job.batch/huge"]["reason"]
        assert not plans["team/Job.batch/huge"]["placement"]


async def test_plan_live_counts_what_admitted_workloads_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cluster a: 2 nodes of 16 cores, and its status reads all 32 free. `held` (2 pods of
    10 cores, queue qa, capability 24 cores) is admitted there: its Scheduled Binding is
    stored, its pod not running yet. A live plan must see the 12 cores left and the queue's
    20/24, and plan `held` itself as if it were not there."""
    store, member = await registry_with_member()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    qa = fleet.queue("qa", capability={"cpu": "24"})
    await objs.put(objects.key_for(qa), qa)
    held = fleet.workload("held", cpu="10", replicas=2, queue="qa")
    await objs.put(objects.key_for(held), held)
    # The Binding the controller writes for it, from the scheduler's own cycle.
    scheduler = cycle.Scheduler()
    snapshot = snap.build([member], queues=[qa])
    pending = PendingStore()
    pending.add(planning.job_for(held, None, settings=scheduler.settings))
    decided = scheduler.run_cycle(snapshot, pending, Usage(), fleet.NOW)
    (binding,) = decided.bindings
    assert binding.status.phase == "Scheduled"
    await codec.TypedStore(store, codec.Codec(Binding)).put(
        keys.binding_key(objects.workload_ref(held)), binding
    )
    files = {
        "next": fleet.workload("next", cpu="16"),  # fits 32 free cores, not the 12 left
        "small": fleet.workload("small", cpu="8", queue="qa"),  # fits, but 20 + 8 > 24
        "held": held,
    }
    for name, w in files.items():
        (tmp_path / f"{name}.yaml").write_text(json.dumps(w.to_wire()))
    async with serving(api_app.build_app(store)) as server:
        code = await asyncio.to_thread(
            main.main, ["plan", "-f", str(tmp_path), "--live", "--server", server, "-o", "json"]
        )
        plans = {p["workload"]: p for p in json.loads(capsys.readouterr().out)}
        assert code == 3
        assert not plans["team/Job.batch/next"]["placement"]
        assert "best is a with" in plans["team/Job.batch/next"]["reason"], plans
        assert not plans["team/Job.batch/small"]["placement"]
        assert "queue qa" in plans["team/Job.batch/small"]["reason"], plans
        assert plans["team/Job.batch/held"]["placement"] == {"a": 2}
        code = await asyncio.to_thread(
            main.main, ["plan", "-f", str(tmp_path / "held.yaml"), "--live", "--server", server]
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert "counting what 1 admitted workload(s) hold" in out

        # `small` waits in qa; a plan of qa's capability raised says so, then what it
        # would do (the text showed only the after, as if nothing waited now).
        await objs.put(objects.key_for(files["small"]), files["small"])
        raised = fleet.queue("qa", capability={"cpu": "40"})
        (tmp_path / "qa.yaml").write_text(json.dumps(raised.to_wire()))
        code = await asyncio.to_thread(
            main.main, ["plan", "-f", str(tmp_path / "qa.yaml"), "--live", "--server", server]
        )
        lines = capsys.readouterr().out.splitlines()
        assert code == 0, lines
        assert lines[2:4] == [
            "now:              waits: queue qa at capability for cpu: 20/24 (needs 8; 4 more"
            " must be freed)",
            "with these files: placed on a:1",
        ]

        # `held`'s "before" is where its Binding runs it, at the cost recorded there (as
        # placed, 1.2345 here), not a fresh plan of it: planned afresh, a service at its
        # queue's budget read "pending" while it ran.
        recorded = binding.spec.clusters[0].model_copy(update={"hourly_cost": Decimal("1.2345")})
        await codec.TypedStore(store, codec.Codec(Binding)).put(
            keys.binding_key(objects.workload_ref(held)),
            binding.model_copy(
                update={"spec": binding.spec.model_copy(update={"clusters": [recorded]})}
            ),
        )
        answer = await asyncio.to_thread(
            _post, server + "/apis/fedctl.io/v1alpha1/plan", (tmp_path / "held.yaml").read_text()
        )
        (entry,) = answer["plans"]
        assert entry["before"]["placement"] == {"a": 2}
        assert entry["before"]["costs"] == {"a": "1.2345"}


async def test_plan_live_plans_a_placed_workload_from_where_it_runs() -> None:
    """web runs 2 replicas on a; its policy is edited to let it use the cheaper b too and
    to run 3. The controller keeps what stands (Aggregated, previous hosts first: a:3);
    plan --live, which planned it as if it ran nowhere, said b:3."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    members = [fleet.cluster("a"), fleet.cluster("b", cpu_price="0.01")]
    for member in members:
        assert member.status is not None
        await objs.put(keys.cluster_key(member.name), member.model_copy(update={"status": None}))
        await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
            keys.cluster_status_key(member.name), member.status
        )

    def policy(names: list[str]) -> Any:
        return PropagationPolicy.model_validate(
            {
                "metadata": {"name": "web", "namespace": "team"},
                "spec": {
                    "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                    "placement": {
                        "clusterAffinity": {"clusterNames": names},
                        "replicaScheduling": {
                            "replicaSchedulingType": "Divided",
                            "replicaDivisionPreference": "Aggregated",
                        },
                    },
                },
            }
        )

    web = fleet.workload("web", kind="Deployment", replicas=2)
    await objs.put(objects.key_for(web), web)
    await objs.put(objects.key_for(policy(["a"])), policy(["a"]))
    scheduler = cycle.Scheduler()
    pending = PendingStore()
    pending.add(planning.job_for(web, policy(["a"]), settings=scheduler.settings))
    decided = scheduler.run_cycle(snap.build(members), pending, Usage(), fleet.NOW)
    (binding,) = decided.bindings
    assert binding.placement() == {"a": 2}
    await codec.TypedStore(store, codec.Codec(Binding)).put(
        keys.binding_key(objects.workload_ref(web)), binding
    )
    wire = web.to_wire()
    wire["spec"]["replicas"] = 3
    edited = json.dumps(wire) + "\n---\n" + json.dumps(policy(["a", "b"]).to_wire())
    async with serving(api_app.build_app(store)) as server:
        answer = await asyncio.to_thread(_post, server + "/apis/fedctl.io/v1alpha1/plan", edited)
    (entry,) = [p["after"] for p in answer["plans"] if p["key"] == objects.key_for(web)]
    assert entry["placement"] == {"a": 3}, entry


def sized(name: str, cpu: str) -> Workload:
    """A long-running job (one pod of `cpu` cores) in the `qa` queue."""
    wire = job(name, "qa", duration="1h").to_wire()
    (container,) = wire["spec"]["template"]["spec"]["containers"]
    container["resources"]["requests"]["cpu"] = cpu
    return Workload.model_validate(wire)


async def free_cores(fed: Federation, name: str) -> int:
    typed = codec.TypedStore(fed.store, codec.Codec(ClusterStatus))
    stored = await typed.get(keys.cluster_status_key(name))
    assert stored is not None
    return sum(f.free.amount("cpu") for f in stored.obj.flavors) // 1000


async def test_work_bound_before_the_status_shows_it_is_not_placed_twice(
    fed: Federation,
) -> None:
    """us-east-cpu has 2 nodes of 16 cores. Two 12-core jobs are bound there; the status
    does not show them (nothing propagates them yet), so it still reads 32 free cores.
    A third 12-core job in a later cycle must wait instead of landing on the same room;
    once the pods run and the status shows them, they are not counted twice."""
    from policies.models.propagation import PropagationPolicy

    pinned = PropagationPolicy.model_validate(
        {
            "metadata": {"name": "pinned", "namespace": "batch"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "batch/v1", "kind": "Job"}],
                "placement": {"clusterAffinity": {"clusterNames": ["us-east-cpu"]}},
            },
        }
    )
    for obj in (queue("qa", 100), pinned, sized("first", "12"), sized("second", "12")):
        await fed.put(obj)
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    loop = scheduler_loop(fed)

    def phase_of(name: str, phase: str, reason: str = "") -> Any:
        async def probe() -> Binding | None:
            found = (await bindings(fed)).get(name)
            if found is None or found.status.phase != phase or reason not in found.status.reason:
                return None
            return found

        return probe

    async with background(monitor.run(), loop.run()):
        for name in ("first", "second"):
            bound = await wait_for(phase_of(name, "Scheduled"), timeout=15, message=name)
            assert bound.placement() == {"us-east-cpu": 1}
        assert await free_cores(fed, "us-east-cpu") == 32  # the status does not show them
        await fed.put(sized("third", "12"))  # so it is decided in a later cycle
        waiting = await wait_for(
            phase_of("third", "Pending", "free cpu"), timeout=10, message="third waits"
        )
        assert "best is us-east-cpu with 8" in waiting.status.reason
        assert await free_cores(fed, "us-east-cpu") == 32

        fed.start()  # the pods reach the member and the status catches up

        async def shown() -> bool:
            return await free_cores(fed, "us-east-cpu") == 8

        await wait_for(shown, timeout=15, message="the status shows both pods")
        await fed.put(sized("small", "3"))
        small = await wait_for(phase_of("small", "Scheduled"), timeout=10, message="small fits")
        assert small.placement() == {"us-east-cpu": 1}
        still = (await bindings(fed))["third"]
        assert still.status.phase == "Pending"


async def test_a_job_deleted_and_created_again_under_its_name_runs_again(fed: Federation) -> None:
    """`kubectl replace --force` on a Job that finished: the new object (a new uid) lands
    before the old one's Binding and copy are gone. Before, the new Job reused the old
    Binding, its copy was applied over the finished one on the member (a Job's template
    cannot change) and its status read Succeeded at once: it never ran. Now its Binding's
    earlier object loses its copy, the new one is admitted afresh (in a queue of one
    core, which the earlier copy must not keep it out of) and runs."""
    await fed.put(queue("qa", 1))
    first = _with_uid(job("again", "qa", duration="300ms"), "uid-first")
    await fed.put(first)
    fed.start()
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)

    async def status() -> tuple[str | None, str | None] | None:
        found = await fed.status(first)
        return (found.workload.uid, found.phase) if found is not None else None

    async def member_copy() -> dict[str, Any] | None:
        for name in CPU_MEMBERS:
            obj = await fed.member_object(name, "batch/v1", "Job", "batch", "again")
            if obj is not None:
                return obj
        return None

    async with background(monitor.run(), scheduler_loop(fed).run()):
        await wait_for(
            lambda: _is(status(), ("uid-first", "Succeeded")), timeout=20, message="first run"
        )
        ran = await member_copy()
        assert ran is not None
        await fed.put(_with_uid(job("again", "qa", duration="300ms"), "uid-second"))
        await wait_for(
            lambda: _is(status(), ("uid-second", "Succeeded")), timeout=20, message="second run"
        )
        again = await member_copy()
        assert again is not None and again["metadata"]["uid"] != ran["metadata"]["uid"]
        bound = (await bindings(fed))["again"]
        assert (bound.status.phase, bound.spec.workload.uid) == ("Scheduled", "uid-second")


def _with_uid(workload: Workload, uid: str) -> Workload:
    return workload.model_copy(
        update={"metadata": workload.metadata.model_copy(update={"uid": uid})}
    )


async def test_plan_live_says_what_it_would_preempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`low` holds all of queue qa's 10 cores; `urgent` (priority 100) would preempt it, as
    the controller does at once: the plan says where it goes and whom it evicts first."""
    store, member = await registry_with_member()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    qa = fleet.queue("qa", capability={"cpu": "10"})
    await objs.put(objects.key_for(qa), qa)
    low = fleet.workload("low", cpu="10", queue="qa", priority=0)
    await objs.put(objects.key_for(low), low)
    scheduler = cycle.Scheduler()
    pending = PendingStore()
    pending.add(planning.job_for(low, None, settings=scheduler.settings))
    decided = scheduler.run_cycle(snap.build([member], queues=[qa]), pending, Usage(), fleet.NOW)
    (binding,) = decided.bindings
    await codec.TypedStore(store, codec.Codec(Binding)).put(
        keys.binding_key(objects.workload_ref(low)), binding
    )
    urgent = fleet.workload("urgent", cpu="10", queue="qa", priority=100)
    (tmp_path / "urgent.yaml").write_text(json.dumps(urgent.to_wire()))
    async with serving(api_app.build_app(store)) as server:
        code = await asyncio.to_thread(
            main.main, ["plan", "-f", str(tmp_path / "urgent.yaml"), "--live", "--server", server]
        )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "first evicts team/Job.batch/low: preempted by team/Job.batch/urgent" in out
    assert "place 1 replica(s) on a" in out


def _post(url: str, text: str) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=text.encode(), headers={"Content-Type": "application/yaml"}, method="POST"
    )
    with urllib.request.urlopen(request) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
    return answer


def service(name: str, queue_name: str, replicas: int) -> Workload:
    """A Deployment of `replicas` one-core pods in `queue_name`."""
    pod = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "0"}}}]}
    return Workload.model_validate(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": "batch",
                "annotations": {"fedctl.io/queue": queue_name},
            },
            "spec": {"replicas": replicas, "template": {"spec": pod}},
        }
    )


async def test_a_queue_over_its_budget_lets_its_service_scale_down(fed: Federation) -> None:
    """A service admitted at 3 cores (3/h) beside another at 1/h, under a budget lowered to
    1.5/h, was kept at 3 and its Binding left Pending when scaled down to 1 (1 + 1 > 1.5):
    the smaller placement is admitted."""
    for name in NAMES:  # a core costs 1 an hour everywhere
        joined = (await fed.objects.get(keys.cluster_key(name))).obj
        assert isinstance(joined, Cluster)
        priced = {"prices": {"onDemand": {"cpu": "1", "memory": "0"}}}
        await fed.put(Cluster.model_validate({**joined.to_wire(), "spec": {
            **joined.to_wire()["spec"], **priced}}))  # fmt: skip
    budgeted = {"metadata": {"name": "qa"}, "spec": {"maxHourlyCost": "10"}}
    await fed.put(Queue.model_validate(budgeted))
    await fed.put(service("web", "qa", 3))
    await fed.put(service("db", "qa", 1))
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)

    async def phase(name: str) -> str | None:
        found = (await bindings(fed)).get(name)
        return None if found is None else found.status.phase

    async def costing(total: int) -> Binding | None:
        found = (await bindings(fed)).get("web")
        scheduled = found is not None and found.status.phase == "Scheduled"
        if scheduled and found is not None and found.spec.hourly_cost == total:
            return found
        return None

    async with background(monitor.run(), scheduler_loop(fed).run()):
        await wait_for(lambda: costing(3), timeout=15, message="web admitted at 3/h")
        await wait_for(lambda: _is(phase("db"), "Scheduled"), timeout=15, message="db admitted")
        budgeted["spec"] = {"maxHourlyCost": "1.5"}
        await fed.put(Queue.model_validate(budgeted))
        await fed.put(service("web", "qa", 1))
        bound = await wait_for(lambda: costing(1), timeout=15, message="web scaled to 1/h")
        assert sum(bound.placement().values()) == 1
