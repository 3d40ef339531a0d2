"""The failover controller on an in-memory registry and a fake clock: a member goes down,
its taints escalate, the workload is evicted, the old copy ends once the new one is
ready, and the member's stale copy is purged before its taints are lifted."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from clusters import member
from federation import errors
from federation.clock import FakeClock
from federation.failover import controller as controller_mod
from federation.failover import faults, taints
from federation.failover.controller import FailoverController, Terms
from federation.registry import codec, keys
from federation.registry.memory import MemoryStore
from federation.settings import FailoverSettings
from policies.models.binding import Binding, BindingStatus, TargetCluster
from policies.models.cluster import UNJOINING_TAINT, Cluster, ClusterStatus, Condition, Taint
from policies.models.common import Toleration
from policies.models.propagation import Placement
from policies.models.work import ClusterWorkloadStatus, WorkloadStatus
from tests.unit.failover.builders import Counted, binding, events_of, namespace_binding
from tests.waiting import wait_for

SETTINGS = FailoverSettings(eviction_grace=30, graceful_timeout=600)
WEB = keys.WorkloadRef("default", "Deployment.apps", "web")
API = keys.WorkloadRef("default", "Deployment.apps", "api")
GONE = keys.WorkloadRef("default", "Deployment.apps", "gone")


class FakeMember:
    """Lists the objects it holds; records deletes."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.deleted: list[str] = []
        self.closed = False

    async def list(self, api_version: str, kind: str, **_: Any) -> member.ObjectList:
        items = [o for o in self.objects if (o["apiVersion"], o["kind"]) == (api_version, kind)]
        return member.ObjectList(items, "1")

    async def delete(self, ref: member.ObjectRef) -> bool:
        self.deleted.append(ref.name)
        self.objects = [o for o in self.objects if o["metadata"]["name"] != ref.name]
        return True

    async def close(self) -> None:
        self.closed = True


def copy_of(ref: keys.WorkloadRef) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": ref.name,
            "namespace": ref.namespace,
            "labels": {"fedctl.io/managed-by": "fedctl"},
            "annotations": {"fedctl.io/workload-ref": str(ref)},
        },
    }


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.store = MemoryStore(clock=self.clock)
        self.member = FakeMember([copy_of(WEB), copy_of(API)])
        self.counted = Counted()
        self.controller = FailoverController(
            self.store,
            settings=SETTINGS,
            clock=self.clock,
            connect=self._connect,
            metrics=self.counted,
        )
        self.statuses = codec.TypedStore(self.store, codec.Codec(ClusterStatus))
        self.bindings = codec.TypedStore(self.store, codec.Codec(Binding))

    async def _connect(self, cluster: Cluster) -> Any:
        return self.member

    async def join(self, name: str, **spec: Any) -> None:
        cluster = Cluster.model_validate(
            {"metadata": {"name": name}, "spec": {"region": "r", **spec}}
        )
        await codec.TypedStore(self.store, codec.Codec(Cluster)).create(
            keys.cluster_key(name), cluster
        )
        await self.health(name, "True", "ClusterReady")

    async def health(self, name: str, ready: str, reason: str) -> None:
        cond = Condition.model_validate(
            {"type": "Ready", "status": ready, "reason": reason,
             "last_transition_time": self.clock.now()}
        )  # fmt: skip
        await self.statuses.mutate(
            keys.cluster_status_key(name),
            lambda cur: (cur or ClusterStatus()).model_copy(update={"conditions": [cond]}),
        )

    async def taints(self, name: str) -> list[tuple[str, str]]:
        stored = await self.statuses.get(keys.cluster_status_key(name))
        assert stored is not None
        return [(t.key, t.effect) for t in stored.obj.taints]

    async def binding(self, ref: keys.WorkloadRef) -> Binding:
        stored = await self.bindings.get(keys.binding_key(ref))
        assert stored is not None
        return stored.obj

    async def settle(self) -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        await wait_for(lambda: self.controller.queue.pending == 0, timeout=2, message="drained")
        for _ in range(20):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds)
        await self.settle()


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    harness = Harness()
    await harness.join("a")
    await harness.join("b")
    task = asyncio.create_task(harness.controller.run())
    try:
        yield harness
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await harness.store.close()


async def _evicted_by_an_outage(h: Harness) -> None:
    """web (2 on a) and api (1 on a, 1 on b), then `a` down past its grace: both evicted."""
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.bindings.create(keys.binding_key(API), binding("api", clusters={"a": 1, "b": 1}))
    await h.settle()
    await h.health("a", "False", "ConnectionRefused")
    await h.settle()
    await h.advance(30.1)
    assert (await h.binding(WEB)).placement() == {}


async def test_an_outage_s_taints_and_evictions_are_logged_at_warning(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """At the default level (WARNING) a member lost, its work moved, left no line; the
    workloads it evicted were nowhere in the log at any level."""
    caplog.set_level(logging.INFO, logger=controller_mod.__name__)
    await _evicted_by_an_outage(h)
    await h.advance(controller_mod._QUIET + 0.1)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    reason = "untolerated taint cluster.fedctl.io/unreachable:NoExecute"
    api = f"evicted default/Deployment.apps/api from a (1 replica): {reason}"
    web = f"evicted default/Deployment.apps/web from a (2 replicas): {reason}"
    summary = f"evicted 2 workloads (3 replicas) from a in 0.0s: {reason}"
    assert warned[:2] == [
        "cluster a: failover taints now cluster.fedctl.io/unreachable:NoSchedule",
        "cluster a: failover taints now cluster.fedctl.io/unreachable:NoExecute",
    ]
    # The first eviction of the burst at WARNING, the other at INFO, then the summary.
    assert warned[2:] in ([api, summary], [web, summary])
    info = {r.getMessage() for r in caplog.records if r.levelno == logging.INFO}
    assert {api, web} - set(warned) <= info


async def test_a_busy_member_lost_logs_one_summary_not_a_warning_per_workload(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """One member holding 40 workloads went: 40 WARNINGs, one per workload, buried the
    taint line. Now the burst opens with one workload's line and closes with a count,
    the rest at INFO; a later outage opens a new burst."""
    caplog.set_level(logging.INFO, logger=controller_mod.__name__)
    refs = [keys.WorkloadRef("default", "Deployment.apps", f"svc-{i:02d}") for i in range(40)]
    for ref in refs:
        await h.bindings.create(keys.binding_key(ref), binding(ref.name, clusters={"a": 1}))
    await h.settle()
    await h.health("a", "False", "ConnectionRefused")
    await h.settle()
    await h.advance(30.1)
    await h.advance(controller_mod._QUIET + 0.1)
    assert [(await h.binding(ref)).placement() for ref in refs] == [{}] * len(refs)
    evictions = [r for r in caplog.records if r.getMessage().startswith("evicted ")]
    warned = [r.getMessage() for r in evictions if r.levelno == logging.WARNING]
    assert len(evictions) == 41 and len(warned) == 2
    assert warned[0].startswith("evicted default/Deployment.apps/svc-")
    assert warned[1] == (
        "evicted 40 workloads (40 replicas) from a in 0.0s:"
        " untolerated taint cluster.fedctl.io/unreachable:NoExecute"
    )


async def test_a_member_not_probed_yet_has_its_taints_logged_at_info(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """A fleet of 144 joining logged 288 WARNINGs: the not-ready taint each new member
    carries until its first probe, and its lifting. A member judged down still warns."""
    caplog.set_level(logging.INFO, logger=controller_mod.__name__)
    await h.join("c")
    await h.health("c", "Unknown", "NotProbed")  # as a member just joined reads
    await h.settle()
    assert await h.taints("c") == [("cluster.fedctl.io/not-ready", "NoSchedule")]
    await h.health("c", "True", "ProbeSucceeded")
    await h.settle()
    assert await h.taints("c") == []
    await h.health("c", "False", "ConnectionRefused")
    await h.settle()
    said = [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.getMessage().startswith("cluster c: failover taints")
    ]
    assert said == [
        ("INFO", "cluster c: failover taints now cluster.fedctl.io/not-ready:NoSchedule"),
        ("INFO", "cluster c: failover taints now none"),
        ("WARNING", "cluster c: failover taints now cluster.fedctl.io/unreachable:NoSchedule"),
    ]


async def test_outage_evicts_replaces_ends_the_task_and_purges_on_return(h: Harness) -> None:
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.bindings.create(keys.binding_key(API), binding("api", clusters={"a": 1, "b": 1}))
    await h.settle()
    assert await h.taints("a") == []

    await h.health("a", "False", "ConnectionRefused")
    await h.settle()
    assert await h.taints("a") == [(taints.UNREACHABLE, "NoSchedule")]
    assert (await h.binding(WEB)).placement() == {"a": 2}, "NoSchedule moves nothing"

    await h.advance(29)
    assert (await h.binding(WEB)).placement() == {"a": 2}, "still within the grace"
    await h.advance(1.1)
    assert await h.taints("a") == [(taints.UNREACHABLE, "NoExecute")]
    web = await h.binding(WEB)
    assert web.placement() == {} and web.status.phase == "Pending"
    assert [(t.cluster, t.replicas, t.purge_mode) for t in web.spec.eviction_tasks] == [
        ("a", 2, "Gracefully")
    ]
    assert (await h.binding(API)).placement() == {"b": 1}

    # The scheduler re-places web on b; the old copy stays until b reports it healthy.
    placed = web.model_copy(
        update={
            "spec": web.spec.model_copy(update={"clusters": [TargetCluster(name="b", replicas=2)]}),
            "status": BindingStatus(phase="Scheduled"),
        }
    )
    stored = await h.bindings.get(keys.binding_key(WEB))
    assert stored is not None
    rewritten = await h.bindings.update(keys.binding_key(WEB), placed, revision=stored.revision)
    await h.settle()
    assert len((await h.binding(WEB)).spec.eviction_tasks) == 1
    statuses = codec.TypedStore(h.store, codec.Codec(WorkloadStatus))
    status = WorkloadStatus(
        workload=web.spec.workload,
        binding_revision=rewritten.revision - 1,
        clusters=[ClusterWorkloadStatus(cluster="b", health="Healthy")],
    )
    created = await statuses.create(keys.workload_status_key(WEB), status)
    await h.settle()
    assert len((await h.binding(WEB)).spec.eviction_tasks) == 1, (
        "readiness reported for the Binding before it was re-placed ends nothing"
    )
    current = status.model_copy(update={"binding_revision": rewritten.revision})
    await statuses.update(keys.workload_status_key(WEB), current, revision=created.revision)
    await h.settle()
    assert len((await h.binding(WEB)).spec.eviction_tasks) == 1, (
        "a is away: its copy cannot go now, and may be wanted there again on its return"
    )

    # a returns: the copies under graceful tasks stay through the purge; a stale copy, of a
    # workload placed nowhere on a, goes. Then web's task ends (no policy here places it
    # back on a returning member), and its copy there with it.
    h.member.objects.append(copy_of(GONE))
    await h.health("a", "True", "ClusterReady")
    await h.settle()
    assert h.member.deleted == ["gone"]
    assert h.member.closed
    assert await h.taints("a") == []
    assert (await h.binding(WEB)).spec.eviction_tasks == []
    marks = [(m.what, m.cluster, m.workload) for m in h.controller.timeline]
    assert ("evicted", "a", str(WEB)) in marks and ("purged", "a", "") in marks
    assert ("task-ended", "a", str(WEB)) in marks


async def test_a_fleet_all_down_at_once_evicts_nothing_until_a_member_is_ready_again(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """A replica that could not reach any member took the lease, judged every member down,
    and 30 s later evicted healthy work from all of them. With no member Ready the
    likeliest cause is the controller's own view (Kubernetes' full disruption): the
    members keep NoSchedule, one WARNING says why, and nothing moves. Once one is Ready
    again, the others still down get a whole grace from then before work leaves them."""
    caplog.set_level(logging.WARNING, logger=controller_mod.__name__)
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.bindings.create(keys.binding_key(API), binding("api", clusters={"a": 1, "b": 1}))
    await h.settle()
    await h.health("a", "False", "ConnectionRefused")
    await h.health("b", "False", "KubeconfigInvalid")
    await h.settle()

    await h.advance(30.1)
    await h.advance(60)

    assert await h.taints("a") == [(taints.UNREACHABLE, "NoSchedule")]
    assert await h.taints("b") == [(taints.NOT_READY, "NoSchedule")]
    assert (await h.binding(WEB)).placement() == {"a": 2}
    assert (await h.binding(API)).placement() == {"a": 1, "b": 1}
    said = [r.getMessage() for r in caplog.records if "none of the" in r.getMessage()]
    assert said == [
        "failover: none of the 2 members is Ready: the likeliest cause is this controller's"
        " own network or configuration, not the fleet; no member's work is evicted for its"
        " health until one is Ready again"
    ]

    await h.health("b", "True", "ClusterReady")
    await h.settle()
    await h.advance(29)
    assert (await h.binding(WEB)).placement() == {"a": 2}, "a whole grace from the recovery"
    await h.advance(1.1)
    assert await h.taints("a") == [(taints.UNREACHABLE, "NoExecute")]
    assert (await h.binding(WEB)).placement() == {}
    assert (await h.binding(API)).placement() == {"b": 1}


async def test_full_disruption_steps_back_a_noexecute_taint_already_evicting(h: Harness) -> None:
    """A member down past its grace evicts; when the rest of the fleet then looks down
    too, its taint steps back to NoSchedule and no further work leaves it."""
    await h.health("a", "False", "ConnectionRefused")
    await h.advance(30.1)
    assert await h.taints("a") == [(taints.UNREACHABLE, "NoExecute")]
    await h.health("b", "False", "ConnectionRefused")
    await h.settle()
    assert await h.taints("a") == [(taints.UNREACHABLE, "NoSchedule")]
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.advance(31)
    assert (await h.binding(WEB)).placement() == {"a": 2}


async def test_a_taint_eviction_is_told_on_the_workload_and_counted(h: Harness) -> None:
    """Before, a failover eviction showed only in the Binding's reason until the
    scheduler placed the workload again, and `fedctl_evictions_total` had no samples."""
    await _evicted_by_an_outage(h)
    (told,) = await events_of(h.store, WEB)
    assert (told.type, told.reason, told.cluster, told.source) == (
        "Warning",
        "Evicted",
        "a",
        "failover",
    )
    assert told.message == (
        f"evicted from a (2 replicas): untolerated taint {taints.UNREACHABLE}:NoExecute;"
        " being placed again; its copy there stays until the new placement is ready"
    )
    assert [e.cluster for e in await events_of(h.store, API)] == ["a"]
    assert sorted(h.counted.evictions) == [("a", "taint", 1), ("a", "taint", 2)]
    await h.advance(60)
    assert len(await events_of(h.store, WEB)) == 1, "told once, not on every pass"


async def test_a_toleration_with_seconds_delays_eviction_and_a_batch_job_goes_directly(
    h: Harness,
) -> None:
    tolerant = Terms(
        tolerations=(Toleration(key=taints.NOT_READY, operator="Exists", toleration_seconds=60),),
    )
    h.controller.terms = lambda b: (  # type: ignore[method-assign,assignment]
        tolerant if b.metadata.name == "web" else Terms(batch=True)
    )
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1}))
    await h.bindings.create(keys.binding_key(API), binding("api", clusters={"a": 1}))
    await h.health("a", "False", "ReadyzFailed")
    await h.advance(30.1)
    assert await h.taints("a") == [(taints.NOT_READY, "NoExecute")]
    api = await h.binding(API)
    assert [(t.cluster, t.purge_mode) for t in api.spec.eviction_tasks] == [("a", "Directly")]
    assert (await h.binding(WEB)).placement() == {"a": 1}, "tolerated for 60 s"
    await h.advance(59)
    assert (await h.binding(WEB)).placement() == {"a": 1}
    await h.advance(1.1)
    assert (await h.binding(WEB)).placement() == {}


async def test_a_fault_judging_one_binding_leaves_failover_running_for_the_others(
    h: Harness,
) -> None:
    """A toleration of int64 seconds, stored and valid, overflowed the date arithmetic:
    failover died, `fedctl up` stopped, and every later leader died on the same Binding.
    A fault in one Binding is now logged and tried again later; the rest move."""

    def terms(b: Binding) -> Terms:
        if b.metadata.name == "web":
            raise OverflowError("date value out of range")
        return Terms()

    h.controller.terms = terms  # type: ignore[method-assign]
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1}))
    await h.bindings.create(keys.binding_key(API), binding("api", clusters={"a": 1}))
    await h.health("a", "False", "ConnectionRefused")
    await h.settle()
    await h.advance(30.1)
    assert (await h.binding(API)).placement() == {}, "api evicted"
    assert (await h.binding(WEB)).placement() == {"a": 1}


async def test_a_drill_taint_past_its_end_is_lifted_one_without_an_end_is_kept(
    h: Harness,
) -> None:
    """A drill whose process died (its CLI killed, the leader running it lost) never
    healed: its member stayed drained for good. The taint carries its end now, and any
    leader lifts it once past that; a drill taint set by hand, without one, stays."""
    drill = faults.DRILL_TAINT
    end = int(h.clock.now().timestamp()) + 10
    for name, value in (("c", str(end)), ("d", ""), ("e", str(end - 100))):
        taint = {"key": drill, "value": value, "effect": "NoExecute"}
        await h.join(name, taints=[taint])
    clusters = codec.TypedStore(h.store, codec.Codec(Cluster))

    async def drilled() -> list[str]:
        listed = (await clusters.list(keys.prefix("clusters"))).items
        return sorted(i.obj.name for i in listed if any(t.key == drill for t in i.obj.spec.taints))

    await h.settle()
    assert await drilled() == ["c", "d"], "e was past its end"
    await h.advance(9)
    assert await drilled() == ["c", "d"]
    await h.advance(1.1)
    assert await drilled() == ["d"]


async def test_a_per_cluster_grace_and_recovery_before_it_moves_nothing(h: Harness) -> None:
    await h.join("c", evictionGraceSeconds=5)
    ref = keys.WorkloadRef("default", "Deployment.apps", "svc")
    await h.bindings.create(keys.binding_key(ref), binding("svc", clusters={"c": 1}))
    await h.health("c", "False", "ReadyzFailed")
    await h.advance(5.1)
    assert (await h.binding(ref)).placement() == {}, "c's own 5 s grace, not the global 30 s"

    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1}))
    await h.health("a", "False", "ReadyzFailed")
    await h.advance(10)
    await h.health("a", "True", "ClusterReady")
    await h.advance(30)
    assert await h.taints("a") == []
    assert (await h.binding(WEB)).placement() == {"a": 1}


async def test_a_fenced_controller_writes_nothing(h: Harness) -> None:
    def fenced() -> tuple[Any, ...]:
        raise errors.Fenced("deposed")

    h.controller._guards = fenced
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1}))
    await h.health("a", "False", "ReadyzFailed")
    await h.advance(31)
    assert await h.taints("a") == []
    assert (await h.binding(WEB)).placement() == {"a": 1}


async def test_a_finished_workload_stays_bound_to_its_dead_member(h: Harness) -> None:
    """A Job that already Succeeded there has nothing left to move: evicting it would only
    make the scheduler run it a second time elsewhere."""
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1}))
    await h.bindings.create(keys.binding_key(API), binding("api", clusters={"a": 1}))
    await _succeeded(h, WEB, on="a")
    await h.health("a", "False", "ConnectionRefused")
    await h.advance(31)
    assert await h.taints("a") == [(taints.UNREACHABLE, "NoExecute")]
    assert (await h.binding(API)).placement() == {}, "the running one moves"
    web = await h.binding(WEB)
    assert web.placement() == {"a": 1} and web.spec.eviction_tasks == []


@pytest.mark.parametrize(
    ("taint", "dropped"),
    [(UNJOINING_TAINT, True), ("maintenance", False)],
    ids=["unjoining: its copy is taken off", "another NoExecute taint: it stays"],
)
async def test_a_finished_job_leaves_a_member_being_unjoined_without_moving(
    h: Harness, taint: str, dropped: bool
) -> None:
    """`fedctl cluster unjoin` waits until no Binding names the member. A Job that had
    finished there was never moved (that would run it again), so its Binding named the
    member for good and unjoin waited out its timeout behind every Job ever completed
    there. Failover now drops that target alone, with no eviction task: the propagator
    takes the copy off and the scheduler, which never places a finished job, leaves it."""
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1, "b": 1}))
    await _succeeded(h, WEB, on="a")
    await h.settle()
    await _taint(h, "a", taint)
    web = await h.binding(WEB)
    assert web.placement() == ({"b": 1} if dropped else {"a": 1, "b": 1})
    assert web.spec.eviction_tasks == [] and web.status.phase == "Scheduled"


@pytest.mark.parametrize(
    ("taint", "kept"),
    [("maintenance", {"a": 1, "b": 1}), (UNJOINING_TAINT, {"b": 1})],
    ids=["a NoExecute taint: it stays", "unjoining: it leaves, not moved"],
)
async def test_a_namespace_is_never_evicted_by_a_taint(
    h: Harness, taint: str, kept: dict[str, int]
) -> None:
    """Deleting a namespace on a member deletes everything in it, the copies of workloads
    that tolerate the taint and stay among them: a taint drill on the demo deleted `web`
    there and created it again seconds later. Karmada sends namespaces to every member
    whatever its taints. A member being unjoined is left by its namespaces, as by all."""
    ref = keys.WorkloadRef(keys.CLUSTER_SCOPE, "Namespace", "team")
    await h.bindings.create(
        keys.binding_key(ref), namespace_binding("team", clusters={"a": 1, "b": 1})
    )
    await h.settle()
    await _taint(h, "a", taint)
    await h.advance(400)  # past any toleration or grace
    await h.settle()
    got = await h.binding(ref)
    assert got.placement() == kept and got.spec.eviction_tasks == []


async def test_an_unjoined_member_keeps_a_namespace_until_its_workloads_are_gone(
    h: Harness,
) -> None:
    """Deleting a namespace deletes all in it. Dropped at once from a member being
    unjoined, `default` took with it the copy of `web` that graceful eviction keeps there
    until its replacement is ready. The namespace leaves once no workload of it has a copy
    there, placed or being evicted."""
    ns = keys.WorkloadRef(keys.CLUSTER_SCOPE, "Namespace", "default")
    await h.bindings.create(
        keys.binding_key(ns), namespace_binding("default", clusters={"a": 1, "b": 1})
    )
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.settle()
    await _taint(h, "a", UNJOINING_TAINT)
    web = await h.binding(WEB)
    assert web.placement() == {} and [t.cluster for t in web.spec.eviction_tasks] == ["a"]
    assert (await h.binding(ns)).placement() == {"a": 1, "b": 1}, "web's copy is still there"

    await h.bindings.put(  # re-placed on b and ready: the task ends, the copy on a goes
        keys.binding_key(WEB), binding("web", clusters={"b": 2})
    )
    await h.settle()
    assert (await h.binding(ns)).placement() == {"b": 1}


async def test_an_unjoined_member_is_left_once_an_evicted_job_s_copy_is_gone(
    h: Harness,
) -> None:
    """A job evicted from a member being unjoined that no other member can take waits
    Pending, its Directly task kept while the member's taint evicts. The copy was gone,
    yet the task held the job's namespace on the member, and the unjoin, for good."""
    h.controller.terms = lambda b: Terms(batch=True)  # type: ignore[method-assign,assignment]
    ns = keys.WorkloadRef(keys.CLUSTER_SCOPE, "Namespace", "default")
    await h.bindings.create(
        keys.binding_key(ns), namespace_binding("default", clusters={"a": 1, "b": 1})
    )
    await h.bindings.create(keys.binding_key(API), binding("api", clusters={"a": 1}))
    await h.settle()
    await _taint(h, "a", UNJOINING_TAINT)
    api = await h.bindings.get(keys.binding_key(API))
    assert api is not None and [t.cluster for t in api.obj.spec.eviction_tasks] == ["a"]
    assert (await h.binding(ns)).placement() == {"a": 1, "b": 1}, "api's copy may be there"
    gone = WorkloadStatus(workload=api.obj.spec.workload, binding_revision=api.revision)
    await codec.TypedStore(h.store, codec.Codec(WorkloadStatus)).create(
        keys.workload_status_key(API), gone
    )
    await h.settle()
    assert (await h.binding(ns)).placement() == {"b": 1}


async def _succeeded(h: Harness, ref: keys.WorkloadRef, *, on: str) -> None:
    """The workload's status: a Job that Succeeded on `on`."""
    done = WorkloadStatus(
        workload=(await h.binding(ref)).spec.workload,
        phase="Succeeded",
        clusters=[ClusterWorkloadStatus(cluster=on, health="Completed")],
    )
    await codec.TypedStore(h.store, codec.Codec(WorkloadStatus)).create(
        keys.workload_status_key(ref), done
    )


async def _taint(h: Harness, cluster: str, key: str) -> None:
    """The user's NoExecute taint `key` on `cluster`, and the controller's reaction."""
    await codec.TypedStore(h.store, codec.Codec(Cluster)).mutate(
        keys.cluster_key(cluster),
        lambda cur: cur.model_copy(
            update={
                "spec": cur.spec.model_copy(update={"taints": [Taint(key=key, effect="NoExecute")]})
            }
        ),
    )
    await h.settle()


async def test_an_eviction_decided_on_a_stale_status_is_refused_and_decided_again() -> None:
    """A Job's member reports it done just as a NoExecute taint lands: the eviction read a
    status the watch had not brought yet. Written, it ran the finished job again elsewhere
    (seen in a chaos run); the write now holds only while that status stands."""
    h = Harness()  # not running: its mirrors are read here, as a lagging watch leaves them
    await h.join("a")
    await h.join("b")
    await h.bindings.create(keys.binding_key(API), binding("api", clusters={"a": 1}))
    await _taint(h, "a", "maintenance")
    controller = h.controller
    for mirror in controller._mirrors:
        await mirror.load()
    await _succeeded(h, API, on="a")  # written; the mirror has not seen it
    with pytest.raises(errors.Conflict) as lost:
        await controller.converge_binding(keys.binding_key(API))
    assert lost.value.key == keys.workload_status_key(API)
    assert (await h.binding(API)).placement() == {"a": 1}, "nothing written"
    await controller.workload_status.load()  # the watch catches up
    await controller.converge_binding(keys.binding_key(API))
    api = await h.binding(API)
    assert api.placement() == {"a": 1} and api.spec.eviction_tasks == [], "finished: stays"


async def test_a_users_noexecute_taint_evicts_without_waiting_for_a_status_write(
    h: Harness,
) -> None:
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.settle()
    await _taint(h, "a", "maintenance")
    assert (await h.binding(WEB)).placement() == {}


async def test_a_running_batch_job_s_new_copy_ends_the_old_copy_s_task(h: Harness) -> None:
    """A Job reports Progressing until it finishes: its pods running on the new cluster is
    what ends the eviction task, not the graceful timeout."""
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1}))
    await h.health("a", "False", "KubeletNotReady")  # answers: its old copy can go
    await h.advance(31)
    web = await h.binding(WEB)
    assert web.placement() == {} and len(web.spec.eviction_tasks) == 1
    placed = web.model_copy(
        update={
            "spec": web.spec.model_copy(update={"clusters": [TargetCluster(name="b", replicas=1)]}),
            "status": BindingStatus(phase="Scheduled"),
        }
    )
    stored = await h.bindings.get(keys.binding_key(WEB))
    assert stored is not None
    rewritten = await h.bindings.update(keys.binding_key(WEB), placed, revision=stored.revision)
    running = WorkloadStatus(
        workload=web.spec.workload,
        binding_revision=rewritten.revision,
        phase="Running",
        clusters=[ClusterWorkloadStatus(cluster="b", health="Progressing", running=1)],
    )
    await codec.TypedStore(h.store, codec.Codec(WorkloadStatus)).create(
        keys.workload_status_key(WEB), running
    )
    await h.settle()
    assert (await h.binding(WEB)).spec.eviction_tasks == []


NOWHERE = "0/2 clusters are available: 1 filtered by affinity, 1 filtered by taints"


async def _placed_nowhere(h: Harness, ref: keys.WorkloadRef) -> None:
    """What the scheduler writes when it finds no member for the evicted workload."""

    def pending(cur: Binding | None) -> Binding | None:
        assert cur is not None
        status = BindingStatus(phase="Pending", reason=NOWHERE)
        return cur.model_copy(update={"status": status})

    await h.bindings.mutate(keys.binding_key(ref), pending)
    await h.settle()


async def test_a_drained_service_with_nowhere_to_go_keeps_its_last_copy(h: Harness) -> None:
    """Unjoining the only member a service may use: its eviction must not say it was
    placed elsewhere, the scheduler finding nowhere is told plainly, and the graceful
    timeout does not take the running service to zero (a drain waits on a disruption
    budget the same way). Placed elsewhere at last, the new copy gets a whole timeout."""
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.settle()
    await _taint(h, "a", UNJOINING_TAINT)
    (evicted,) = await events_of(h.store, WEB)
    assert "placed again elsewhere" not in evicted.message
    assert evicted.message.endswith(
        "being placed again; its copy there stays until the new placement is ready"
    )

    await _placed_nowhere(h, WEB)
    (task,) = (await h.binding(WEB)).spec.eviction_tasks
    assert task.nowhere_since == h.clock.now()
    told = [e for e in await events_of(h.store, WEB) if e.reason == "NowhereToGo"]
    assert [(e.type, e.cluster) for e in told] == [("Warning", "a")]
    assert told[0].message == (
        f"evicted from a with nowhere else to go ({NOWHERE}); its copy there, the last,"
        " keeps running until it is placed elsewhere and ready there"
    )
    await h.advance(1800)  # three graceful timeouts (events live an hour)
    assert [t.cluster for t in (await h.binding(WEB)).spec.eviction_tasks] == ["a"]
    assert len(await events_of(h.store, WEB)) == 2, "told once"

    placed = binding("web", clusters={"b": 2}, tasks=[task]).model_copy(
        update={"status": BindingStatus(phase="Scheduled", last_scheduled_time=h.clock.now())}
    )
    await h.bindings.put(keys.binding_key(WEB), placed)
    await h.advance(599)
    assert [t.cluster for t in (await h.binding(WEB)).spec.eviction_tasks] == ["a"]
    await h.advance(1.1)
    assert (await h.binding(WEB)).spec.eviction_tasks == []


async def test_a_copy_with_nowhere_to_go_on_a_member_that_does_not_answer_ends_at_the_timeout(
    h: Harness,
) -> None:
    """Nothing there can be kept running for sure, and an unjoin of a dead member would
    wait on it for good: the timeout ends the task as before."""
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.settle()
    await _taint(h, "a", UNJOINING_TAINT)
    await _placed_nowhere(h, WEB)
    await h.health("a", "False", "ClusterNotReachable")
    await h.advance(601)
    assert (await h.binding(WEB)).spec.eviction_tasks == []


async def test_a_workload_placed_back_where_it_was_evicted_from_is_told_so(h: Harness) -> None:
    """Its member recovered before it found room elsewhere and the scheduler placed it
    back, its running copy kept: the Evicted event alone told the on-call engineer it
    moved, while the drill report said it stayed."""
    await h.bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 2}))
    await h.settle()
    await _taint(h, "a", "example.com/maint")
    (task,) = (await h.binding(WEB)).spec.eviction_tasks
    await codec.TypedStore(h.store, codec.Codec(Cluster)).mutate(
        keys.cluster_key("a"),
        lambda cur: cur.model_copy(update={"spec": cur.spec.model_copy(update={"taints": []})}),
    )
    back = binding("web", clusters={"a": 2}, tasks=[task])
    await h.bindings.put(keys.binding_key(WEB), back)  # taint lifted: placed back on a
    await h.settle()
    assert (await h.binding(WEB)).spec.eviction_tasks == []
    told = await events_of(h.store, WEB)
    assert [(e.type, e.reason, e.cluster) for e in told] == [
        ("Warning", "Evicted", "a"),
        ("Normal", "PlacedBack", "a"),
    ]
    assert told[1].message == (
        "placed back on a before it found room elsewhere: its copy there was kept, and the"
        " eviction ended"
    )


@pytest.mark.parametrize(
    ("scheduling", "groups", "expected"),
    [
        pytest.param({"replicaSchedulingType": "Duplicated"}, 1, True, id="duplicated"),
        pytest.param(
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"},
            1,
            True,
            id="static weights (equal): the member gets its share back",
        ),
        pytest.param(
            {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            },
            1,
            False,
            id="dynamic weights: Steady, stays where it is",
        ),
        pytest.param(
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
            1,
            False,
            id="aggregated: Steady, stays where it is",
        ),
        pytest.param(
            {"replicaSchedulingType": "Duplicated"},
            2,
            False,
            id="affinity groups: a return to an earlier group waits for a move",
        ),
    ],
)
def test_which_services_a_returning_member_gets_back(
    scheduling: dict[str, Any], groups: int, expected: bool
) -> None:
    """Only their copies on a member that comes back wait for the scheduler: another's
    task waited out the graceful timeout, its copy running on there and the workload
    counted as leaving, so `fedctl rebalance` would not move it."""
    affinities = [{"affinityName": f"g{i}", "clusterNames": ["a"]} for i in range(groups)]
    placement = {"replicaScheduling": scheduling}
    if groups > 1:
        placement["clusterAffinities"] = affinities
    model = Placement.model_validate(placement)
    assert controller_mod._returns(model) is expected
