"""A Directly eviction task ends once its copy is gone: a preempted or reclaimed job may
come back to the cluster it was evicted from as soon as nothing of it is left there, not
after the graceful timeout; failover's own evictions keep the cluster barred while its
NoExecute taint would evict the workload again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from federation.clock import FakeClock
from federation.failover import graceful
from federation.failover.controller import FailoverController
from federation.registry import codec, keys
from federation.registry.memory import MemoryStore
from federation.settings import FailoverSettings
from policies.models.binding import Binding, BindingStatus, EvictionTask
from policies.models.cluster import Cluster, ClusterStatus, Condition, Taint
from policies.models.work import ClusterWorkloadStatus, WorkloadStatus
from tests.unit.failover.builders import at, binding, task
from tests.waiting import wait_for

TIMEOUT = 600.0
VICTIM = keys.WorkloadRef("default", "Deployment.apps", "web")


@pytest.mark.parametrize(
    ("mode", "gone", "evicting", "expected"),
    [
        pytest.param(
            "Directly",
            {"a"},
            set(),
            (False, [], None),
            id="preempted: its copy is gone from a healthy cluster, the task ends at once",
        ),
        pytest.param(
            "Immediately",
            {"a"},
            set(),
            (False, [], None),
            id="the old spelling of Directly ends the same way",
        ),
        pytest.param(
            "Directly",
            set(),
            set(),
            (True, ["a"], 590.0),
            id="preempted: its copy is still there, the task stays and the copy is purged",
        ),
        pytest.param(
            "Directly",
            {"a"},
            {"a"},
            (True, ["a"], 590.0),
            id="failover: copy gone but a NoExecute taint would evict it again, the task stays",
        ),
        pytest.param(
            "Gracefully",
            {"a"},
            set(),
            (True, [], 590.0),
            id="gracefully: a copy reported gone ends nothing, the new placement must be ready",
        ),
        pytest.param(
            "Never",
            {"a"},
            set(),
            (True, [], 590.0),
            id="never: the copy is the user's, the task waits as for Gracefully",
        ),
    ],
)
def test_a_directly_task_ends_when_its_copy_is_gone(
    mode: str, gone: set[str], evicting: set[str], expected: tuple[bool, list[str], float | None]
) -> None:
    kept, purged, recheck = expected
    t = task("a", created=0, mode=mode)
    out = graceful.judge(
        [t], targets=[], ready={}, now=at(10), timeout=TIMEOUT, gone=gone, evicting=evicting
    )
    assert (out.keep == [t], out.drop == [t]) == (kept, not kept)
    assert out.purge == purged
    assert out.recheck_after == recheck


def _status(*clusters: str, revision: int) -> WorkloadStatus:
    return WorkloadStatus(
        workload=binding("web", clusters={}).spec.workload,
        binding_revision=revision,
        clusters=[ClusterWorkloadStatus(cluster=c, applied=True) for c in clusters],
    )


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(None, set(), id="no status: nothing is known to be gone"),
        pytest.param(
            _status(revision=6),
            set(),
            id="a status for an older Binding: a pass in flight may still put a copy there",
        ),
        pytest.param(
            _status("a", revision=7),
            set(),
            id="the Work on a is still there: its copy is not removed yet",
        ),
        pytest.param(_status(revision=7), {"a"}, id="a status for this Binding without a"),
        pytest.param(_status("b", revision=9), {"a"}, id="a status for a later Binding"),
    ],
)
def test_which_copies_are_known_gone(status: WorkloadStatus | None, expected: set[str]) -> None:
    tasks = [task("a", mode="Directly"), task("c", mode="Gracefully")]
    assert graceful.gone(tasks, status, revision=7) == expected


# -- the controller --------------------------------------------------------------------------


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock(at(0))
        self.store = MemoryStore(clock=self.clock)
        self.controller = FailoverController(
            self.store,
            settings=FailoverSettings(eviction_grace=30, graceful_timeout=TIMEOUT),
            clock=self.clock,
        )
        self.bindings = codec.TypedStore(self.store, codec.Codec(Binding))
        self.statuses = codec.TypedStore(self.store, codec.Codec(ClusterStatus))
        self.results = codec.TypedStore(self.store, codec.Codec(WorkloadStatus))

    async def join(self, name: str, *, taints: list[Taint] | None = None) -> None:
        cluster = Cluster.model_validate({"metadata": {"name": name}, "spec": {"region": "r"}})
        await codec.TypedStore(self.store, codec.Codec(Cluster)).create(
            keys.cluster_key(name), cluster
        )
        ready = Condition.model_validate(
            {"type": "Ready", "status": "True", "reason": "ClusterReady",
             "last_transition_time": self.clock.now()}
        )  # fmt: skip
        status = ClusterStatus(conditions=[ready], taints=taints or [])
        await self.statuses.create(keys.cluster_status_key(name), status)

    async def preempt(self, cluster: str) -> int:
        """What the scheduler writes for a victim: Pending, no targets, a Directly task for
        the cluster it ran on; returns the Binding's revision."""
        reason = "preempted by default/Deployment.apps/urgent (priority 9, queue default)"
        evicted = EvictionTask(
            cluster=cluster, reason=reason, creation_time=self.clock.now(), purge_mode="Directly"
        )
        victim = binding("web", clusters={}, tasks=[evicted]).model_copy(
            update={"status": BindingStatus(phase="Pending", reason=reason)}
        )
        stored = await self.bindings.put(keys.binding_key(VICTIM), victim)
        return stored.revision

    async def report(self, *clusters: str, revision: int) -> None:
        """The propagator's workload status: the clusters that still hold a Work."""
        await self.results.put(
            keys.workload_status_key(VICTIM), _status(*clusters, revision=revision)
        )

    async def tasks(self) -> list[str]:
        stored = await self.bindings.get(keys.binding_key(VICTIM))
        assert stored is not None
        return [t.cluster for t in stored.obj.spec.eviction_tasks]

    async def settle(self) -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        await wait_for(lambda: self.controller.queue.pending == 0, timeout=2, message="drained")
        for _ in range(20):
            await asyncio.sleep(0)


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    harness = Harness()
    worker = asyncio.create_task(harness.controller.run())
    try:
        yield harness
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker
        await harness.store.close()


async def test_a_victim_s_task_ends_when_the_propagator_reports_its_copy_removed(
    h: Harness,
) -> None:
    await h.join("a")
    revision = await h.preempt("a")
    await h.report("a", revision=revision)
    await h.settle()
    assert await h.tasks() == ["a"], "the copy is still on a: a would run it twice"

    await h.report(revision=revision)
    await h.settle()
    assert await h.tasks() == [], "no copy left on a: nothing to keep the victim off it"
    stored = await h.bindings.get(keys.binding_key(VICTIM))
    assert stored is not None and stored.obj.status.phase == "Pending"
    marks = [(m.what, m.cluster) for m in h.controller.timeline]
    assert ("task-ended", "a") in marks


async def test_a_status_from_before_the_eviction_proves_nothing(h: Harness) -> None:
    await h.join("a")
    revision = await h.preempt("a")
    await h.report(revision=revision - 1)
    await h.settle()
    assert await h.tasks() == ["a"]


async def test_a_cluster_whose_noexecute_taint_evicts_the_workload_stays_barred(
    h: Harness,
) -> None:
    """Failover's own Directly eviction (a batch job off a failing member): the copy is
    gone, but placing the job back would only see it evicted again."""
    await h.join("a", taints=[Taint(key="maintenance", effect="NoExecute", time_added=at(0))])
    revision = await h.preempt("a")
    await h.report(revision=revision)
    await h.settle()
    assert await h.tasks() == ["a"]
    await h.clock.advance(TIMEOUT + 1)
    await h.settle()
    assert await h.tasks() == [], "the graceful timeout still ends it"
