"""A preempted job returns to the cluster it was evicted from once its copy there is gone.

The scheduler (its cycle, pure) evicts the victim with a Directly task for the cluster it
ran on; the cluster stays out of the victim's reach while the task stands, and says why;
failover ends the task when the propagator reports the copy removed; the next cycle puts
the victim back there when room frees, even though the graceful timeout is far off.
"""

from __future__ import annotations

import pytest

from federation.cache import snapshot as snap
from federation.failover import graceful
from federation.queue.pending import PendingJob, PendingStore
from federation.quota.accounting import Usage
from federation.scheduler import cycle
from federation.scheduler import framework as fw
from federation.scheduler.plugins import eviction
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.cluster import Cluster, Taint
from policies.models.work import WorkloadStatus
from tests.unit.scheduler.fleet import NOW, cluster, flavor, job, placed, queue, workload

LOW = job(workload("low", cpu="6", queue="q", priority=0), seq=1)
HIGH = job(workload("high", cpu="6", queue="q", priority=9), seq=2)


class Fleet:
    """One cluster with room for one of the two jobs; Bindings kept as the registry would."""

    def __init__(self) -> None:
        self.clusters: list[Cluster] = [cluster("c", flavor(nodes=1, cpu="8"))]
        self.queues = [queue("q")]
        self.scheduler = cycle.Scheduler(SchedulerSettings())
        self.pending = PendingStore()
        self.usage = Usage()
        self.bindings: dict[str, Binding] = {}

    def snapshot(self) -> snap.Snapshot:
        return snap.build(self.clusters, queues=self.queues, bindings=list(self.bindings.values()))

    def step(self) -> cycle.CycleResult:
        result = self.scheduler.run_cycle(self.snapshot(), self.pending, self.usage, NOW)
        for decided in result.bindings:
            self.bindings[decided.metadata.name] = _kept_tasks(
                self.bindings.get(decided.metadata.name), decided
            )
        self.pending, self.usage = result.pending, result.usage
        return result

    def finish(self, name: str) -> None:
        ref = next(j.ref for j in (LOW, HIGH) if j.ref.name == name)
        self.usage = cycle.release(self.usage, [ref])
        self.pending.remove(ref)
        self.bindings.pop(name, None)

    def end_tasks(self, name: str, *, gone: set[str]) -> None:
        """Failover's judgement on the victim's Binding, with the propagator's report."""
        b = self.bindings[name]
        status = WorkloadStatus(workload=b.spec.workload, binding_revision=1, clusters=[])
        known = graceful.gone(b.spec.eviction_tasks, status, revision=1) & gone
        outcome = graceful.judge(
            b.spec.eviction_tasks, targets=[], ready={}, now=NOW, timeout=600.0, gone=known
        )
        spec = b.spec.model_copy(update={"eviction_tasks": outcome.keep})
        self.bindings[name] = b.model_copy(update={"spec": spec})


def _kept_tasks(stored: Binding | None, decided: Binding) -> Binding:
    """As the binder writes it: the tasks failover owns stay when a new decision has none."""
    if stored is None or not stored.spec.eviction_tasks or decided.spec.eviction_tasks:
        return decided
    spec = decided.spec.model_copy(update={"eviction_tasks": stored.spec.eviction_tasks})
    return decided.model_copy(update={"spec": spec})


@pytest.fixture
def fleet() -> Fleet:
    f = Fleet()
    f.pending.add(LOW)
    assert placed(f.step()) == {"low": {"c": 1}}
    f.pending.add(HIGH)
    preempting = f.step()
    assert placed(preempting) == {"high": {"c": 1}}
    assert [v.ref.name for v, _ in preempting.evicted] == ["low"]
    victim = f.bindings["low"]
    assert [(t.cluster, t.purge_mode) for t in victim.spec.eviction_tasks] == [("c", "Directly")]
    return f


def test_while_its_copy_is_there_the_cluster_says_what_the_victim_waits_for(
    fleet: Fleet,
) -> None:
    snapshot = fleet.snapshot()
    request = fleet.scheduler.request(fleet.pending.get(LOW.ref) or LOW, snapshot)
    state = fw.CycleState(snapshot, fleet.usage, fleet.scheduler.settings)
    verdict = eviction.Eviction().filter(request, snapshot.clusters[0], state)
    assert not verdict.ok
    assert verdict.reasons == ("waiting for its evicted copy to be removed from c",)
    assert not any("taint" in reason for reason in verdict.reasons)


def test_once_its_copy_is_gone_the_victim_goes_back_where_it_ran(fleet: Fleet) -> None:
    fleet.end_tasks("low", gone={"c"})
    assert fleet.bindings["low"].spec.eviction_tasks == []
    fleet.finish("high")
    assert placed(fleet.step()) == {"low": {"c": 1}}


def test_while_its_copy_is_there_it_does_not_go_back(fleet: Fleet) -> None:
    fleet.end_tasks("low", gone=set())
    fleet.finish("high")
    result = fleet.step()
    assert placed(result) == {}


def test_the_pending_reason_never_blames_taints_for_the_eviction_bar(fleet: Fleet) -> None:
    fleet.finish("high")
    reason = fleet.step().reasons[str(LOW.ref)]
    assert "taint" not in reason
    assert reason == "0/1 clusters are available: 1 waiting for an evicted copy to be removed"


FILL = job(workload("fill", cpu="6", queue="q", priority=5), seq=3)
SERVICE = job(workload("web", kind="Deployment", cpu="6", queue="q", priority=0), seq=1)


def _two_members(victim: PendingJob) -> Fleet:
    """c and d with room for one job each: `victim` on c, fill on d, then high preempts
    the victim on c; fill finishes, so d has room the victim could take."""
    f = Fleet()
    f.clusters = [cluster("c", flavor(nodes=1, cpu="8")), cluster("d", flavor(nodes=1, cpu="8"))]
    f.pending.add(victim)
    assert placed(f.step()) == {victim.ref.name: {"c": 1}}
    f.pending.add(FILL)
    assert placed(f.step()) == {"fill": {"d": 1}}
    f.pending.add(HIGH)
    preempting = f.step()
    assert placed(preempting) == {"high": {"c": 1}}
    assert [v.ref.name for v, _ in preempting.evicted] == [victim.ref.name]
    f.usage = cycle.release(f.usage, [FILL.ref])
    f.bindings.pop("fill")
    return f


def test_a_preempted_job_runs_nowhere_until_its_copy_is_gone() -> None:
    """Placed on d at once, the job ran on c and d together while its copy on c was being
    deleted (seconds on a slow member). It waits, saying why, until failover ends the
    task, then takes d."""
    fleet = _two_members(LOW)
    waiting = fleet.step()
    assert placed(waiting) == {}
    assert waiting.reasons[str(LOW.ref)].endswith("2 waiting for an evicted copy to be removed")
    snapshot = fleet.snapshot()
    request = fleet.scheduler.request(fleet.pending.get(LOW.ref) or LOW, snapshot)
    state = fw.CycleState(snapshot, fleet.usage, fleet.scheduler.settings)
    verdicts = [eviction.Eviction().filter(request, c, state) for c in snapshot.clusters]
    assert [v.reasons for v in verdicts] == [("waiting for its evicted copy to be removed",)] * 2
    fleet.end_tasks("low", gone={"c"})
    assert placed(fleet.step()) == {"low": {"d": 1}}


def test_a_preempted_service_takes_other_members_at_once() -> None:
    """Replicas of a service may overlap while its copy goes: only c, where it is leaving,
    waits for the copy."""
    fleet = _two_members(SERVICE)
    assert placed(fleet.step()) == {"web": {"d": 1}}


def test_a_job_evicted_from_a_tainted_member_does_not_wait_for_it() -> None:
    """A member whose NoExecute taint evicts the job may be unreachable: nothing there can
    be confirmed gone, so the job goes elsewhere at once (failover's semantics)."""
    fleet = _two_members(LOW)
    c = fleet.clusters[0]
    spec = c.spec.model_copy(
        update={"taints": [Taint(key="example.com/maintenance", effect="NoExecute")]}
    )
    fleet.clusters[0] = c.model_copy(update={"spec": spec})
    assert placed(fleet.step()) == {"low": {"d": 1}}
