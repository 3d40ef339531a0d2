"""The scheduling loop's change detection: cache -> pending / admitted / finished / stale,
which watch events wake a cycle, the eviction exclusion, and the loop over a memory store."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, cast

import pytest

from federation import clock
from federation.cache import snapshot as snap
from federation.registry import arrival, codec, keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.scheduler import bound_usage, fingerprint, reconcile
from federation.scheduler import loop as loop_mod
from federation.settings import SchedulerSettings
from policies.models.accelerator import ChipDevices
from policies.models.base import ObjectMeta
from policies.models.binding import (
    Binding,
    BindingSpec,
    BindingStatus,
    EvictionTask,
    TargetCluster,
    WorkloadReference,
)
from policies.models.cluster import (
    HEALTH_TAINTS,
    NOT_READY_TAINT,
    RECOVERING_TAINT,
    Cluster,
    ClusterStatus,
    Taint,
)
from policies.models.propagation import PropagationPolicy
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import NOW, cluster, flavor, job, queue, run, workload
from tests.waiting import wait_for

SETTINGS = SchedulerSettings()


def binding(
    w: Workload,
    clusters: dict[str, int],
    *,
    phase: str = "Scheduled",
    reason: str = "",
    evicting: tuple[str, ...] = (),
    purge_mode: str = "Gracefully",
    producer: str = "",
) -> Binding:
    return Binding(
        metadata=ObjectMeta(name=w.metadata.name, namespace=w.namespace),
        spec=BindingSpec(
            workload=WorkloadReference(
                api_version=w.api_version, kind=w.kind, namespace=w.namespace, name=w.metadata.name
            ),
            queue=w.queue or "default",
            clusters=[TargetCluster(name=n, replicas=r, chip="amd64") for n, r in clusters.items()],
            eviction_tasks=[
                EvictionTask(
                    cluster=c,
                    reason="Evicted from " + c,
                    creation_time=NOW,
                    purge_mode=purge_mode,  # type: ignore[arg-type]
                    producer=producer,  # type: ignore[arg-type]
                )
                for c in evicting
            ],
        ),
        status=BindingStatus(phase=phase, reason=reason),  # type: ignore[arg-type]
    )


def key(w: Workload) -> str:
    return str(reconcile.ref_of(w))


def sort(
    w: Workload,
    *,
    bound: Binding | None = None,
    phase: str | None = None,
    admitted_as: str | None = None,
    clusters: tuple[str, ...] = ("a", "b"),
    ready: tuple[str, ...] = ("a", "b"),
    policies: tuple[Any, ...] = (),
) -> reconcile.Work:
    return reconcile.reconcile(
        workloads={key(w): reconcile.Entry(w, 7)},
        bindings={key(w): bound} if bound is not None else {},
        phases={key(w): phase},
        policies=list(policies),
        clusters=clusters,
        fingerprints={key(w): admitted_as} if admitted_as is not None else {},
        settings=SETTINGS,
        ready=ready,
    )


JOB = workload("train", cpu="2", replicas=2, queue="qa")
SCALED = workload("train", cpu="2", replicas=3, queue="qa")
FP = fingerprint.fingerprint(job(JOB))


@pytest.mark.parametrize(
    ("bound", "phase", "admitted_as", "clusters", "expected"),
    [
        pytest.param(None, None, None, ("a", "b"), "pending", id="new workload waits"),
        pytest.param(
            binding(JOB, {"a": 2}), None, None, ("a", "b"), "admitted", id="bound at start: adopted"
        ),
        pytest.param(binding(JOB, {"a": 2}), None, FP, ("a", "b"), "admitted", id="unchanged"),
        pytest.param(
            binding(JOB, {"a": 2}),
            "Running",
            FP,
            ("a", "b"),
            "admitted",
            id="running still counts",
        ),
        pytest.param(
            binding(JOB, {"a": 2}), "Succeeded", FP, ("a", "b"), "finished", id="succeeded frees"
        ),
        pytest.param(binding(JOB, {"a": 2}), "Failed", FP, ("a", "b"), "finished", id="failed"),
        pytest.param(
            binding(JOB, {"a": 2}), None, "older", ("a", "b"), "pending", id="spec changed: again"
        ),
        pytest.param(
            binding(JOB, {"b": 2}, phase="Pending", reason="Evicted from a: NotReady"),
            None,
            FP,
            ("a", "b"),
            "pending",
            id="evicted: re-placed",
        ),
        pytest.param(binding(JOB, {"c": 2}), None, FP, ("a", "b"), "pending", id="cluster deleted"),
        pytest.param(
            binding(JOB, {}, phase="Pending", reason="queue qa at capability"),
            None,
            None,
            ("a", "b"),
            "pending",
            id="still waiting",
        ),
    ],
)
def test_each_workload_is_pending_admitted_or_finished(
    bound: Binding | None, phase: str | None, admitted_as: str | None, clusters: Any, expected: str
) -> None:
    work = sort(JOB, bound=bound, phase=phase, admitted_as=admitted_as, clusters=clusters)
    got = {
        "pending": [j.ref.name for j in work.pending],
        "admitted": [a.ref.name for a in work.admitted],
        "finished": work.finished,
    }
    assert sum(map(len, got.values())) == 1
    assert got[expected], got


def test_usage_rebuilt_from_a_binding_charges_its_queue_like_the_cycle_did() -> None:
    work = sort(JOB, bound=binding(JOB, {"a": 1, "b": 1}))
    (admitted,) = work.admitted
    assert admitted.queue == "qa"
    assert admitted.charge.amount("cpu") == 4000
    assert admitted.placement == {"a": 1, "b": 1}
    assert admitted.seq == arrival.sequence(7, None)  # FIFO: its creation revision first
    assert work.fingerprints == {key(JOB): FP}


def test_a_replica_change_makes_a_new_fingerprint_and_a_new_placement() -> None:
    assert fingerprint.fingerprint(job(SCALED)) != FP
    work = sort(SCALED, bound=binding(JOB, {"a": 2}), admitted_as=FP)
    assert [j.ref.name for j in work.pending] == ["train"]


def test_a_job_that_finished_while_its_change_waited_reads_scheduled_where_it_ran() -> None:
    """Scaled past its queue's capability, the job kept running at the size it was
    admitted with and finished: its Binding no longer says it waits to be placed."""
    waiting = binding(
        JOB,
        {"a": 2},
        phase="Pending",
        reason="queue qa capability for cpu is 4, this workload needs 6: it can never be"
        " admitted (raise the limit or shrink the request) (still running on a)",
    )
    work = sort(SCALED, bound=waiting, phase="Succeeded", admitted_as=FP)
    assert work.finished == [key(SCALED)] and not work.pending
    (amended,) = work.amends
    assert amended.status.phase == "Scheduled"
    assert amended.status.reason.startswith("Succeeded on a at the size it was admitted")
    assert amended.spec == waiting.spec  # where it ran, at the size it ran
    settled = sort(SCALED, bound=amended, phase="Succeeded", admitted_as=FP)
    assert not settled.amends  # written once


WEB = workload("web", kind="Deployment", replicas=4)
DUPLICATED = PropagationPolicy.model_validate(
    {
        "metadata": {"name": "web", "namespace": "team"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
        },
    }
)


def test_a_divided_service_is_re_divided_when_the_ready_clusters_change() -> None:
    web, policy = WEB, DUPLICATED
    bound = binding(web, {"a": 4})
    first = sort(web, bound=bound, ready=("a",), policies=(policy,))
    mark = first.fingerprints[key(web)]
    same = sort(web, bound=bound, ready=("a",), admitted_as=mark, policies=(policy,))
    assert [a.ref.name for a in same.admitted] == ["web"]
    joined = sort(web, bound=bound, ready=("a", "b"), admitted_as=mark, policies=(policy,))
    assert [j.ref.name for j in joined.pending] == ["web"]
    # A batch gang is never moved because another cluster turned Ready.
    gang = sort(JOB, bound=binding(JOB, {"a": 2}), admitted_as=FP, ready=("a", "b", "c"))
    assert [a.ref.name for a in gang.admitted] == ["train"]


def test_only_services_on_every_cluster_are_placed_again_when_a_ready_member_s_taint_changes() -> (
    None
):
    """A Duplicated service (or one scaled to zero) gets a copy on a member that loses any
    taint. A divided one would be placed just as it is (Steady division), so a cordon does
    not send every divided service through a cycle; but a member losing failover's health
    taint is one coming back, and it gets its share."""
    cordon = Taint(key="cluster.fedctl.io/cordoned", effect="NoSchedule")
    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    divided = {
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Aggregated",
        }
    }
    paused = workload("web", kind="Deployment", replicas=0)
    after = fingerprint.placeable(snap.build([cluster("a"), cluster("b")]).clusters)

    def changed(w: Workload, placement: dict[str, Any], taint: Taint) -> bool:
        before = fingerprint.placeable(
            snap.build([cluster("a", taints=[taint]), cluster("b")]).clusters
        )
        request = job(w, placement=placement)
        marks = {fingerprint.fingerprint(request, ready=ready) for ready in (before, after)}
        return len(marks) == 2

    assert changed(WEB, duplicated, cordon)
    assert not changed(WEB, divided, cordon)
    assert changed(paused, divided, cordon)
    for key in sorted(HEALTH_TAINTS):
        health = Taint(key=key, effect="NoSchedule", time_added=NOW)
        assert changed(WEB, duplicated, health), key
        assert changed(WEB, divided, health), key
    # The same user key with any other prefix is a cordon too.
    lookalike = Taint(key="example.com/not-ready", effect="NoSchedule")
    assert not changed(WEB, divided, lookalike)


def test_a_service_is_placed_again_when_a_cluster_moves_in_or_out_of_its_affinity() -> None:
    """As Karmada schedules again the bindings a cluster's label or spec change concerns: a
    member relabelled into a service's affinity gets its share, one relabelled out (or
    moved to another region) loses it. A change to a cluster outside the affinity, or to
    any cluster for a batch job, moves nothing."""
    web = {"tier": "web"}
    within = {"clusterAffinity": {"labelSelector": {"matchLabels": web}}}

    def mark(w: Workload, placement: dict[str, Any], *clusters: Cluster) -> str:
        ready = fingerprint.placeable(snap.build(list(clusters)).clusters)
        return fingerprint.fingerprint(job(w, placement=placement), ready=ready)

    a, b = cluster("a", labels=web), cluster("b")
    now = mark(WEB, within, a, b)
    assert mark(WEB, within, a, cluster("b", labels=web)) != now  # b moves in
    assert mark(WEB, within, cluster("a"), b) != now  # a moves out
    assert mark(WEB, within, cluster("a", labels=web, region="eu"), b) != now
    assert mark(WEB, within, a, cluster("b", labels={"tier": "batch"})) == now
    assert mark(WEB, within, a, cluster("b", region="eu")) == now
    assert mark(JOB, within, a, cluster("b", labels=web)) == mark(JOB, within, a, b)
    # Ordered groups: a cluster entering any group concerns the service.
    groups = {
        "clusterAffinities": [
            {"affinityName": "first", "clusterNames": ["a"]},
            {"affinityName": "then", "labelSelector": {"matchLabels": web}},
        ]
    }
    assert mark(WEB, groups, a, cluster("b", labels=web)) != mark(WEB, groups, a, b)
    # A placement by names alone is concerned by a cluster entering or leaving, not by its
    # labels, and its fingerprint is the one stored before clusters' labels were read.
    named = {"clusterAffinity": {"clusterNames": ["a", "b"]}}
    assert mark(WEB, named, a, cluster("b", labels=web, region="eu")) == mark(WEB, named, a, b)
    assert mark(WEB, named, a, b) == fingerprint.fingerprint(
        job(WEB, placement=named), ready=["a", "b"]
    )
    assert mark(WEB, named, a, b, cluster("c")) == mark(WEB, named, a, b)
    prefixed = {"clusterAffinity": {"clusterNames": ["a", "a-b"]}}
    assert mark(WEB, prefixed, a, cluster("a-b")) == fingerprint.fingerprint(
        job(WEB, placement=prefixed), ready=["a", "a-b"]
    )


def test_a_service_is_placed_again_when_a_member_starts_serving_its_kind() -> None:
    """A member whose APIs lack Deployments (a CRD not installed yet) is filtered out; once
    it serves them, the service is placed again and gets its copy there. Other APIs
    changing, or a member reporting none (taken to serve everything), move nothing."""
    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    without = [("v1", "ConfigMap")]
    served = [*without, ("apps/v1", "Deployment")]

    def mark(*clusters: Cluster) -> str:
        ready = fingerprint.placeable(snap.build(list(clusters)).clusters)
        return fingerprint.fingerprint(job(WEB, placement=duplicated), ready=ready)

    a = cluster("a", apis=served)
    now = mark(a, cluster("b", apis=served))
    assert mark(a, cluster("b", apis=without)) != now
    assert mark(a, cluster("b", apis=[*served, ("batch/v1", "Job")])) == now
    assert mark(a, cluster("b")) == now
    assert now == fingerprint.fingerprint(job(WEB, placement=duplicated), ready=["a", "b"])


def nodeless(member: Cluster) -> Cluster:
    """`member` with every node NotReady or cordoned: Ready, but no node flavor counts."""
    assert member.status is not None
    return member.model_copy(update={"status": member.status.model_copy(update={"flavors": []})})


def test_a_service_is_placed_again_when_a_member_s_nodes_for_it_come_back() -> None:
    """The chip filter leaves out a member with no node the pods may use (all NotReady, or
    none of the arch or chip they need) although it is Ready and untainted; once such nodes
    are back, the service is placed again and gets its share there. Nodes it could not use
    coming or going move nothing, and where every member hosts it the digest is the one
    made before the nodes were read."""
    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    amd, arm = flavor(), flavor(arch="arm64")
    gpu = flavor(chip="nvidia-a100-80gb", devices=8)

    def mark(*clusters: Cluster, fedctl: dict[str, Any] | None = None) -> str:
        ready = fingerprint.placeable(snap.build(list(clusters)).clusters)
        return fingerprint.fingerprint(job(WEB, placement=duplicated, fedctl=fedctl), ready=ready)

    a = cluster("a", amd)
    now = mark(a, cluster("b", amd))
    assert mark(a, nodeless(cluster("b", amd))) != now
    assert mark(a, cluster("b", amd, gpu)) == now  # CPU pods never go to GPU nodes
    assert mark(a, cluster("b", gpu)) == mark(a, nodeless(cluster("b")))
    assert mark(a, cluster("b", arm)) == now  # no arch asked: Arm hosts it as well
    amd_only = {"arches": ["amd64"]}
    assert mark(a, cluster("b", arm), fedctl=amd_only) != mark(
        a, cluster("b", amd), fedctl=amd_only
    )
    assert now == fingerprint.fingerprint(job(WEB, placement=duplicated), ready=["a", "b"])


def test_api_digests_past_the_limit_still_read_back_for_the_latest_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for two API sets, a pass over three still reads each of its own back: b,
    which lacks Deployments, is not taken for a member serving every kind."""
    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    base = [("v1", "ConfigMap")]
    fleet = [
        cluster("a", apis=[*base, ("apps/v1", "Deployment")]),
        cluster("b", apis=base),
        cluster("c", apis=[*base, ("apps/v1", "Deployment"), ("batch/v1", "Job")]),
    ]
    request = job(WEB, placement=duplicated)
    roomy = fingerprint.fingerprint(
        request, ready=fingerprint.placeable(snap.build(fleet).clusters)
    )
    monkeypatch.setattr(fingerprint, "_LIMIT", 2)
    monkeypatch.setattr(fingerprint, "_digests", {})
    monkeypatch.setattr(fingerprint, "_served", {})
    ready = fingerprint.placeable(snap.build(fleet).clusters)
    assert fingerprint.fingerprint(request, ready=ready) == roomy
    assert roomy == fingerprint.fingerprint(request, ready=["a", "c"])


def test_prepared_entries_stand_only_while_what_they_were_read_from_stands() -> None:
    web, policy = WEB, DUPLICATED
    prepared = reconcile.Prepared()
    marks: dict[str, str] = {}

    def both(w: Workload, policies: tuple[Any, ...], ready: tuple[str, ...]) -> reconcile.Work:
        args: dict[str, Any] = {
            "workloads": {key(w): reconcile.Entry(w, 7)},
            "bindings": {key(w): binding(w, {"a": 4})},
            "phases": {},
            "policies": list(policies),
            "clusters": ("a", "b"),
            "fingerprints": marks,
            "settings": SETTINGS,
            "ready": ready,
        }
        kept = reconcile.reconcile(**args, prepared=prepared)
        fresh = reconcile.reconcile(**args)
        for work in (kept, fresh):
            assert {"pending": [j.ref.name for j in work.pending], "marks": work.marks} == {
                "pending": [j.ref.name for j in fresh.pending],
                "marks": fresh.marks,
            }
        return kept

    def entry() -> Any:
        return prepared.jobs[key(web)][2]

    assert [a.ref.name for a in both(web, (), ("a",)).admitted] == ["web"]
    first = entry()
    both(web, (), ("a",))
    assert entry() is first  # nothing changed: read once
    copy = web.model_copy()
    both(copy, (), ("a",))
    assert entry() is not first  # a new stored version is read again
    marks[key(web)] = both(copy, (policy,), ("a",)).marks[key(web)]
    assert entry().placement is not None and first.placement is None  # the policy's
    assert [a.ref.name for a in both(copy, (policy,), ("a",)).admitted] == ["web"]
    # A cluster turning Ready re-divides the service, as without the memo.
    assert [j.ref.name for j in both(copy, (policy,), ("a", "b")).pending] == ["web"]


def test_a_kept_admission_falls_when_its_cluster_leaves_the_fleet() -> None:
    prepared, memo = reconcile.Prepared(), {}  # type: ignore[var-annotated]
    bound = binding(JOB, {"a": 2})

    def sort_kept(clusters: tuple[str, ...]) -> reconcile.Work:
        return reconcile.reconcile(
            workloads={key(JOB): reconcile.Entry(JOB, 7)},
            bindings={key(JOB): bound},
            phases={},
            policies=[],
            clusters=clusters,
            fingerprints={key(JOB): FP},
            settings=SETTINGS,
            memo=memo,
            prepared=prepared,
        )

    first = sort_kept(("a", "b"))
    assert [a.ref.name for a in first.admitted] == ["train"] and memo
    kept = sort_kept(("a", "b"))
    assert kept.admitted[0] is first.admitted[0]  # taken from the memo, not read again
    assert [j.ref.name for j in sort_kept(("b",)).pending] == ["train"]


def test_only_status_writes_that_change_what_a_cycle_reads_start_one() -> None:
    base = cluster("a", flavor(nodes=2)).status
    assert base is not None
    later = NOW + dt.timedelta(seconds=30)
    heartbeat = base.model_copy(update={"last_heartbeat": later, "kubernetes_version": "v1.31"})
    assert not loop_mod._status_changed(base, heartbeat)
    fuller = cluster("a", flavor(nodes=2, cpu="4")).status
    down = cluster("a", flavor(nodes=2), ready=False).status
    tainted = base.model_copy(update={"taints": [Taint(key="k", effect="NoSchedule")]})
    apis = cluster("a", flavor(nodes=2), apis=[("batch/v1", "Job")]).status
    for changed in (fuller, down, tainted, apis, None):
        assert loop_mod._status_changed(base, changed)
    assert loop_mod._status_changed(None, base)


def test_a_binding_whose_workload_is_gone_is_stale() -> None:
    gone = workload("gone")
    work = reconcile.reconcile(
        workloads={},
        bindings={key(gone): binding(gone, {"a": 1})},
        phases={},
        policies=[],
        clusters=("a",),
        fingerprints={},
        settings=SETTINGS,
    )
    assert work.stale == [keys.binding_key(reconcile.ref_of(gone))]
    assert not work.pending and not work.admitted


def _status(phase: str | None) -> WorkloadStatus:
    return WorkloadStatus(
        workload=WorkloadReference(api_version="batch/v1", kind="Job", namespace="t", name="j"),
        phase=phase,
    )


@pytest.mark.parametrize(
    ("old", "new", "wakes"),
    [
        pytest.param(None, binding(JOB, {"a": 2}), False, id="our own Scheduled write"),
        pytest.param(
            binding(JOB, {"a": 2}),
            binding(JOB, {"b": 2}, phase="Pending", reason="Evicted from a: NotReady"),
            True,
            id="failover evicted",
        ),
        pytest.param(binding(JOB, {"a": 2}), None, True, id="Binding deleted"),
        pytest.param(None, binding(JOB, {}, phase="Pending", reason="no room"), False, id="ours"),
        pytest.param(
            binding(JOB, {}, phase="Pending", reason="preempted by x", evicting=("a",)),
            binding(JOB, {}, phase="Pending", reason="preempted by x"),
            True,
            id="a victim's eviction task ended: it may go back",
        ),
        pytest.param(
            binding(JOB, {}, phase="Pending", reason="preempted by x"),
            binding(JOB, {}, phase="Pending", reason="no room"),
            False,
            id="our own reason for a victim",
        ),
    ],
)
def test_which_binding_events_wake_a_cycle(
    old: Binding | None, new: Binding | None, wakes: bool
) -> None:
    assert loop_mod._binding_changed(old, new) is wakes


@pytest.mark.parametrize(
    ("old", "new", "wakes"),
    [
        pytest.param(None, _status("Running"), False, id="started"),
        pytest.param(_status("Running"), _status("Succeeded"), True, id="succeeded"),
        pytest.param(_status("Running"), _status("Failed"), True, id="failed"),
        pytest.param(_status("Succeeded"), _status("Succeeded"), False, id="repeated status"),
        pytest.param(_status("Succeeded"), None, True, id="status gone"),
    ],
)
def test_which_status_events_wake_a_cycle_at_once(
    old: WorkloadStatus | None, new: WorkloadStatus | None, wakes: bool
) -> None:
    assert loop_mod._finished_changed(old, new) is wakes


_DOWN = Taint(key="cluster.fedctl.io/unreachable", effect="NoExecute", time_added=NOW)


@pytest.mark.parametrize(
    ("mode", "producer", "taints", "placed"),
    [
        pytest.param("Gracefully", "", [_DOWN], {"b": 2}, id="graceful, still evicting: barred"),
        pytest.param("Directly", "", [_DOWN], {"b": 2}, id="directly, still evicting: barred"),
        pytest.param(
            "Directly", "", [], None, id="directly, recovered: a job waits until copy gone"
        ),
        pytest.param("Gracefully", "", [], {"a": 2}, id="graceful, recovered: back onto its copy"),
        pytest.param(
            "Gracefully",
            "ApplicationFailover",
            [],
            {"b": 2},
            id="left by application failover: barred while the task lasts",
        ),
    ],
)
def test_an_evicted_workload_goes_back_only_where_its_copy_may_be_adopted(
    mode: str, producer: str, taints: list[Taint], placed: dict[str, int] | None
) -> None:
    """A Directly task bars its cluster until failover ends it (its copy is gone then); a
    graceful one only while a NoExecute taint there still evicts the workload, so a member
    that recovers before the workload found room elsewhere gets it back, copy and all. A
    member the workload failed on stays barred for as long as its task lasts. A batch job
    (None) whose member recovered before its Directly-evicted copy was gone runs nowhere
    until it is: started on b at once, it ran on a and b together."""
    clusters = [cluster("a", cpu_price="0.01", taints=taints), cluster("b", cpu_price="0.09")]
    evicted = binding(
        JOB,
        {},
        phase="Pending",
        reason="Evicted from a",
        evicting=("a",),
        purge_mode=mode,
        producer=producer,
    )
    snapshot = snap.build(clusters, bindings=[evicted], queues=[queue("qa")])
    result = run(clusters, [job(JOB)], snapshot=snapshot)
    if placed is None:
        assert not result.admitted
        (written,) = result.bindings
        assert written.status.reason.endswith("2 waiting for an evicted copy to be removed")
        return
    assert {a.ref.name: dict(a.placement) for a in result.admitted} == {"train": placed}
    (written,) = result.bindings
    barred = placed == {"b": 2}
    # Under a taint the workload does not tolerate, the taint says why it is kept off.
    said = {"taints": 1} if taints else {"eviction": 1}
    assert written.spec.filtered_summary == (said if barred else {})
    # Without the eviction task (and the taint) the cheaper cluster wins.
    fresh = run([cluster("a", cpu_price="0.01"), clusters[1]], [job(JOB)], queues=[queue("qa")])
    assert {a.ref.name: dict(a.placement) for a in fresh.admitted} == {"train": {"a": 2}}


# -- the loop over a memory store


@contextlib.asynccontextmanager
async def running(loop: loop_mod.SchedulerLoop) -> AsyncIterator[None]:
    task = asyncio.create_task(loop.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _joined(
    *members: Cluster,
) -> tuple[MemoryStore, codec.TypedStore[Any], codec.TypedStore[ClusterStatus]]:
    """A memory store with `members` joined: each Cluster, and the status its monitor
    wrote; with the object and status stores over it."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    for member in members:
        assert member.status is not None
        await objs.put(keys.cluster_key(member.name), member.model_copy(update={"status": None}))
        await statuses.put(keys.cluster_status_key(member.name), member.status)
    return store, objs, statuses


async def _phases(store: MemoryStore) -> dict[str, str]:
    listed = await codec.TypedStore(store, codec.Codec(Binding)).list(keys.prefix("bindings"))
    return {i.obj.metadata.name: i.obj.status.phase for i in listed.items}


async def test_a_finished_job_frees_its_share_and_a_deleted_one_loses_its_binding() -> None:
    store, objs, _ = await _joined(cluster("a"))
    qa = queue("qa", capability={"cpu": "4"})
    await objs.put(objects.key_for(qa), qa)
    first, second = workload("first", cpu="4", queue="qa"), workload("second", cpu="4", queue="qa")
    for w in (first, second):
        await objs.put(objects.key_for(w), w)
    loop = loop_mod.SchedulerLoop(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    async with running(loop):
        await wait_for(
            lambda: _equal(_phases(store), {"first": "Scheduled", "second": "Pending"}),
            message="first admitted, second waiting",
        )
        statuses = codec.TypedStore(store, codec.Codec(WorkloadStatus))
        done = _status("Succeeded").model_copy(
            update={"workload": binding(first, {}).spec.workload}
        )
        await statuses.put(keys.workload_status_key(reconcile.ref_of(first)), done)
        await wait_for(
            lambda: _equal(_phases(store), {"first": "Scheduled", "second": "Scheduled"}),
            message="second admitted once first finished",
        )
        await objs.delete(objects.key_for(second))
        await wait_for(
            lambda: _equal(_phases(store), {"first": "Scheduled"}), message="Binding deleted"
        )
    assert loop.last is not None and not loop.last.admitted


async def _binding_status(store: MemoryStore, name: str) -> tuple[str, str, dict[str, int]]:
    """The phase, reason and placement of `name`'s Binding (all empty: none yet)."""
    listed = await codec.TypedStore(store, codec.Codec(Binding)).list(keys.prefix("bindings"))
    for b in (i.obj for i in listed.items if i.obj.metadata.name == name):
        return b.status.phase, b.status.reason, b.placement()
    return "", "", {}


async def test_a_job_scaled_past_its_queue_keeps_its_size_and_reads_scheduled_once_done() -> None:
    """Scaled from 2 to 3 pods past its queue's capability of 4 CPUs, the job keeps its 2
    where they run; once it finished, its Binding said it could never be admitted for good."""
    store, objs, _ = await _joined(cluster("a"))
    qa = queue("qa", capability={"cpu": "4"})
    await objs.put(objects.key_for(qa), qa)
    await objs.put(objects.key_for(JOB), JOB)
    loop = loop_mod.SchedulerLoop(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    async with running(loop):
        await wait_for(
            lambda: _equal(_binding_status(store, "train"), ("Scheduled", "", {"a": 2})),
            message="train admitted at 2 pods",
        )
        await objs.put(objects.key_for(SCALED), SCALED)

        async def waiting() -> bool:
            phase, reason, where = await _binding_status(store, "train")
            return phase == "Pending" and "(still running on a)" in reason and where == {"a": 2}

        await wait_for(waiting, message="3 pods never fit the queue: it keeps its 2 on a")
        statuses = codec.TypedStore(store, codec.Codec(WorkloadStatus))
        done = _status("Succeeded").model_copy(update={"workload": binding(JOB, {}).spec.workload})
        await statuses.put(keys.workload_status_key(reconcile.ref_of(JOB)), done)
        await wait_for(
            lambda: _equal(
                _binding_status(store, "train"),
                (
                    "Scheduled",
                    "Succeeded on a at the size it was admitted with; later changes never ran",
                    {"a": 2},
                ),
            ),
            message="finished: Scheduled where it ran",
        )


class _FinishingMidCycle(loop_mod.SchedulerLoop):
    """Runs `meanwhile` once, after a cycle that evicts something has decided and before
    it writes: what a status arriving while a cycle runs in its thread looks like."""

    meanwhile: Callable[[], Awaitable[None]] | None = None

    async def _decide(self) -> Any:
        decided = await super()._decide()
        if decided[0].evicted and self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            await meanwhile()
        return decided


async def test_a_job_that_finishes_while_a_cycle_preempts_it_keeps_its_binding() -> None:
    """low (priority 0) holds qa's whole capability; high (priority 10) arrives and the
    cycle picks low as its victim, and low's Succeeded status arrives before the write.
    Before, low's Binding went Pending ("preempted"), the propagator dropped its Work and
    the finished status with it, and low ran again; now the eviction is dropped, low stays
    finished where it ran, and high, which fits in the share low freed, is admitted."""
    store, objs, _ = await _joined(cluster("a"))
    statuses = codec.TypedStore(store, codec.Codec(WorkloadStatus))
    qa = queue("qa", capability={"cpu": "4"})
    await objs.put(objects.key_for(qa), qa)
    low = workload("low", cpu="4", queue="qa")
    high = workload("high", cpu="4", queue="qa", priority=10)
    await objs.put(objects.key_for(low), low)
    loop = _FinishingMidCycle(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    done = _status("Succeeded").model_copy(update={"workload": binding(low, {}).spec.workload})

    async def low_finishes() -> None:
        key = keys.workload_status_key(reconcile.ref_of(low))
        await statuses.put(key, done)
        await wait_for(lambda: key in loop.results.items, message="the loop reads it")

    loop.meanwhile = low_finishes
    async with running(loop):
        await wait_for(lambda: _equal(_phases(store), {"low": "Scheduled"}), message="low runs")
        await objs.put(objects.key_for(high), high)
        await wait_for(
            lambda: _equal(_phases(store), {"low": "Scheduled", "high": "Scheduled"}),
            message="high admitted, low left finished where it ran",
        )
    assert loop.meanwhile is None, "the cycle picked low as a victim"
    stored = await codec.TypedStore(store, codec.Codec(Binding)).list(keys.prefix("bindings"))
    assert {i.obj.metadata.name: i.obj.placement() for i in stored.items} == {
        "low": {"a": 1},
        "high": {"a": 1},
    }


class _Sampled(_FinishingMidCycle):
    """Also keeps the Bindings' placements and phases after every write of its own."""

    samples: list[dict[str, tuple[str, dict[str, int]]]]

    async def _write(self, *args: Any) -> None:
        await super()._write(*args)
        listed = await codec.TypedStore(self.store, codec.Codec(Binding)).list(
            keys.prefix("bindings")
        )
        self.samples.append(
            {i.obj.metadata.name: (i.obj.status.phase, i.obj.placement()) for i in listed.items}
        )


async def test_a_preemptor_waits_when_its_victim_was_moved_before_its_eviction_landed() -> None:
    """low (one 4-CPU replica) holds qa's whole capability on a; high (priority 10) arrives
    and the cycle evicts low for it, while fail-back moves low to b (another writer). The
    eviction, decided on low's placement on a, is dropped as superseded. Before, high's
    admission was written anyway and qa held 8 CPU of 4; now it is held back, and the next
    cycle evicts low from b and admits high then, with qa never over its capability."""
    store, objs, _ = await _joined(cluster("a"), cluster("b"))
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    qa = queue("qa", capability={"cpu": "4"})
    await objs.put(objects.key_for(qa), qa)
    low = workload("low", kind="Deployment", cpu="4", queue="qa")
    high = workload("high", kind="Deployment", cpu="4", queue="qa", priority=10)
    await objs.put(objects.key_for(low), low)
    loop = _Sampled(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    loop.samples = []
    key = keys.binding_key(reconcile.ref_of(low))
    moves: list[str] = []

    async def fail_back() -> None:
        def move(current: Binding | None) -> Binding:
            assert current is not None
            (there,) = current.placement()
            moves.append(there)
            away = binding(low, {"b" if there == "a" else "a": 1})
            return current.model_copy(update={"spec": away.spec})

        moved = await bindings.mutate(key, move)
        assert moved is not None
        await wait_for(
            lambda: loop.bindings.items[key].revision == moved.revision, message="the loop sees"
        )

    async with running(loop):
        await wait_for(lambda: _equal(_phases(store), {"low": "Scheduled"}), message="low runs")
        loop.meanwhile = fail_back
        await objs.put(objects.key_for(high), high)
        await wait_for(
            lambda: _equal(_phases(store), {"low": "Pending", "high": "Scheduled"}),
            message="high admitted once low is evicted from where it was moved",
        )
    assert moves, "the cycle picked low as a victim"
    over = [s for s in loop.samples if sum(p == "Scheduled" for p, _ in s.values()) > 1]
    assert not over, f"qa held both at once: {over}"
    stored = await bindings.get(key)
    assert stored is not None and {t.cluster for t in stored.obj.spec.eviction_tasks} == {
        "b" if moves[0] == "a" else "a"
    }


async def _equal(probe: Any, expected: Any) -> bool:
    return bool(await probe == expected)


async def _placements(store: MemoryStore) -> dict[str, dict[str, int]]:
    listed = await codec.TypedStore(store, codec.Codec(Binding)).list(keys.prefix("bindings"))
    return {i.obj.metadata.name: i.obj.placement() for i in listed.items}


async def _placed_as_a_taint_lifts(
    policy: PropagationPolicy, taint: Taint, before: dict[str, int], after: dict[str, int]
) -> None:
    """web placed by `policy` while the Ready member a carries `taint` (failover writes it
    on the status), then once it is gone."""
    a = cluster("a")
    assert a.status is not None
    a = a.model_copy(update={"status": a.status.model_copy(update={"taints": [taint]})})
    store, objs, statuses = await _joined(a, cluster("b"))
    await objs.put(objects.key_for(policy), policy)
    await objs.put(objects.key_for(WEB), WEB)
    loop = loop_mod.SchedulerLoop(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    async with running(loop):
        await wait_for(
            lambda: _equal(_placements(store), {"web": before}), message=f"web on {before}"
        )
        stored = await statuses.get(keys.cluster_status_key("a"))
        assert stored is not None
        untainted = stored.obj.model_copy(update={"taints": []})
        await statuses.update(keys.cluster_status_key("a"), untainted, revision=stored.revision)
        await wait_for(
            lambda: _equal(_placements(store), {"web": after}),
            message=f"web on {after} once a's taint is gone",
        )


async def test_a_duplicated_service_gets_its_copy_on_a_member_once_its_taint_is_gone() -> None:
    """a is Ready but tainted (as a member that came back is, until its stale copies are
    purged) when web is placed. With the Ready clusters unchanged when the taint went,
    web stayed on b alone; Karmada places a Duplicated binding again on any change."""
    recovering = Taint(key=RECOVERING_TAINT, effect="NoSchedule", time_added=NOW)
    await _placed_as_a_taint_lifts(DUPLICATED, recovering, {"b": 4}, {"a": 4, "b": 4})


STATIC = PropagationPolicy.model_validate(
    {
        "metadata": {"name": "web", "namespace": "team"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {
                        "staticWeightList": [
                            {"targetCluster": {"clusterNames": ["a"]}, "weight": 1},
                            {"targetCluster": {"clusterNames": ["b"]}, "weight": 1},
                        ]
                    },
                }
            },
        },
    }
)


async def test_a_divided_service_gets_its_share_on_a_joining_member_once_its_taint_is_gone() -> (
    None
):
    """a has just joined: the monitor has written Ready, failover has not yet lifted its
    `not-ready` taint, and web (two equal static weights) is divided then, all on b. With
    the Ready clusters unchanged when the taint went, web stayed all on b."""
    joining = Taint(key=NOT_READY_TAINT, effect="NoSchedule")
    await _placed_as_a_taint_lifts(STATIC, joining, {"b": 4}, {"a": 2, "b": 2})


async def test_a_divided_service_gets_its_share_on_a_member_once_its_nodes_are_back() -> None:
    """All of a's nodes are NotReady (a itself stays Ready, untainted) when web (two equal
    static weights) is divided: the chip filter leaves a out, so all goes to b. Before, a's
    nodes coming back changed nothing web's placement had read, and it stayed all on b."""
    store, objs, statuses = await _joined(nodeless(cluster("a")), cluster("b"))
    await objs.put(objects.key_for(STATIC), STATIC)
    await objs.put(objects.key_for(WEB), WEB)
    loop = loop_mod.SchedulerLoop(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    async with running(loop):
        await wait_for(lambda: _equal(_placements(store), {"web": {"b": 4}}), message="web on b")
        stored = await statuses.get(keys.cluster_status_key("a"))
        back = cluster("a").status
        assert stored is not None and back is not None
        await statuses.update(keys.cluster_status_key("a"), back, revision=stored.revision)
        await wait_for(
            lambda: _equal(_placements(store), {"web": {"a": 2, "b": 2}}),
            message="web divided over a and b once a's nodes are back",
        )


async def test_a_service_follows_its_label_affinity_as_members_are_relabelled() -> None:
    """web goes to every cluster labelled tier=web. b is labelled: it gets a copy; a loses
    the label: its copy goes. Before, web stayed where it was first placed."""
    web = {"tier": "web"}
    store, objs, _ = await _joined(cluster("a", labels=web), cluster("b"), cluster("c", labels=web))
    spec = DUPLICATED.spec.model_dump(by_alias=True, exclude_none=True)
    spec["placement"]["clusterAffinity"] = {"labelSelector": {"matchLabels": web}}
    policy = DUPLICATED.model_copy(update={"spec": type(DUPLICATED.spec).model_validate(spec)})
    await objs.put(objects.key_for(policy), policy)
    await objs.put(objects.key_for(WEB), WEB)

    async def relabel(name: str, labels: dict[str, str]) -> None:
        stored = await objs.get(keys.cluster_key(name))
        assert stored is not None
        meta = stored.obj.metadata.model_copy(update={"labels": labels})
        await objs.update(
            keys.cluster_key(name),
            stored.obj.model_copy(update={"metadata": meta}),
            revision=stored.revision,
        )

    loop = loop_mod.SchedulerLoop(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    async with running(loop):
        for step, want in (
            (None, {"a": 4, "c": 4}),
            (("b", web), {"a": 4, "b": 4, "c": 4}),
            (("a", {}), {"b": 4, "c": 4}),
        ):
            if step is not None:
                await relabel(*step)
            await wait_for(
                lambda want=want: _equal(_placements(store), {"web": want}),  # type: ignore[misc]
                message=f"web on {want}",
            )


def test_the_memo_reuses_an_unchanged_bindings_charge_and_forgets_the_rest() -> None:
    bound = binding(JOB, {"a": 2})
    memo: dict[str, Any] = {}

    def once(b: Binding) -> reconcile.Work:
        return reconcile.reconcile(
            workloads={key(JOB): reconcile.Entry(JOB, 7)},
            bindings={key(JOB): b},
            phases={},
            policies=[],
            clusters=("a",),
            fingerprints={},
            settings=SETTINGS,
            memo=memo,
        )

    first, second = once(bound), once(bound)
    assert first.admitted[0] is second.admitted[0]
    moved = once(binding(JOB, {"a": 1}))
    assert moved.admitted[0].charge.amount("cpu") == 2000
    once(binding(JOB, {}, phase="Pending", reason="Evicted from a"))
    assert memo == {}


def test_admissions_of_the_same_shape_share_their_pod_and_charge_and_equal_one_read_alone() -> None:
    gpu = workload("gpu", cpu="2", gpus=1, replicas=2, queue="qa")
    twins = [workload(f"w{i}", cpu="2", gpus=1, replicas=2, queue="qa") for i in range(3)]
    bound = {key(w): binding(w, {"a": 1, "b": 1}) for w in (gpu, *twins)}
    work = reconcile.reconcile(
        workloads={key(w): reconcile.Entry(w, 7) for w in (gpu, *twins)},
        bindings=bound,
        phases={},
        policies=[],
        clusters=("a", "b"),
        fingerprints={},
        settings=SETTINGS,
        device_resources=("nvidia.com/gpu",),
    )
    assert len(work.admitted) == 4
    assert len({id(a.pod) for a in work.admitted}) == 1
    assert len({id(a.charge) for a in work.admitted}) == 1
    alone = bound_usage.admission_of(
        job(gpu, seq=7),
        bound[key(gpu)],
        device_resources=("nvidia.com/gpu",),
        chip_devices=ChipDevices(),
    )
    first = work.admitted[0]
    assert (first.charge, first.pod, first.chips, first.placement) == (
        alone.charge,
        alone.pod,
        alone.chips,
        alone.placement,
    )
    assert first.chips == {"a": "amd64", "b": "amd64"}
    assert first.charge.amount("accelerator/amd64") == 2000  # milli-units


async def test_a_leader_freezes_what_it_loaded_and_unfreezes_when_it_stops() -> None:
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    w = workload("one", cpu="1")
    await objs.put(objects.key_for(w), w)
    loop = loop_mod.SchedulerLoop(store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    assert gc.get_freeze_count() == 0
    async with running(loop):
        await asyncio.wait_for(loop.ready.wait(), timeout=10)
        assert gc.get_freeze_count() > 0
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0


async def test_workloads_beyond_a_stuck_batch_get_a_reason_not_silence() -> None:
    """A cycle considers a batch of the pending workloads in queue order. While the front
    of a queue at its capability cannot move, every cycle takes that same front, and the
    tail never had a Binding at all: indistinguishable from lost work. Now a cycle that
    admits nothing gives each workload it did not reach a Pending Binding that says so."""
    store, objs, _ = await _joined(cluster("a"))
    qa = queue("qa", capability={"cpu": "2"})
    await objs.put(objects.key_for(qa), qa)
    # Each asks for different memory: identical jobs would be refused at a fraction of the
    # batch each (`cycle._REPEAT_COST`), and all reached.
    jobs = [workload(f"job-{i}", cpu="2", memory=f"{i + 1}Gi", queue="qa") for i in range(6)]
    for w in jobs:
        await objs.put(objects.key_for(w), w)
    settings = SchedulerSettings(cycle_batch=2, cycle_batch_max=2)
    loop = loop_mod.SchedulerLoop(store, settings=settings, clock=clock.real, debounce=0.01)

    async def reasons() -> dict[str, str]:
        listed = await codec.TypedStore(store, codec.Codec(Binding)).list(keys.prefix("bindings"))
        return {
            i.obj.metadata.name: "Scheduled"
            if i.obj.status.phase == "Scheduled"
            else i.obj.status.reason
            for i in listed.items
        }

    async with running(loop):
        got = await wait_for(
            lambda: _all_bound(reasons(), len(jobs)), message="a Binding for every workload"
        )
        assert got["job-0"] == "Scheduled"
        assert got["job-1"].startswith("queue qa at capability for cpu")
        assert got["job-2"].startswith("queue qa at capability for cpu")
        for name in ("job-3", "job-4", "job-5"):
            assert got[name].startswith("Queued behind earlier workloads: not considered yet")
        await objs.delete(objects.key_for(jobs[0]))  # the front moves: the next one is admitted
        got = await wait_for(
            lambda: _all_bound(reasons(), len(jobs) - 1, scheduled="job-1"),
            message="job-1 admitted once job-0 is gone",
        )
        assert got["job-2"].startswith("queue qa at capability for cpu")


async def _all_bound(
    probe: Any, count: int, *, scheduled: str | None = None
) -> dict[str, str] | None:
    got: dict[str, str] = await probe
    if len(got) != count or (scheduled is not None and got.get(scheduled) != "Scheduled"):
        return None
    return got


def _pinned(*names: str) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": "train", "namespace": "team"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "batch/v1", "kind": "Job"}],
                "placement": {"clusterAffinity": {"clusterNames": list(names)}},
            },
        }
    )


class _FinishingAtWrite:
    """A store that writes `status` at `key` just before the first transaction touching
    `binding_key` commits: a member's report that the job finished, landing after the
    cycle read the statuses and in the milliseconds before its write."""

    def __init__(self, store: MemoryStore, binding_key: str, key: str, status: bytes) -> None:
        self.store, self.binding_key, self.key, self.status = store, binding_key, key, status
        self.armed = self.landed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def commit(self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()) -> Any:
        if self.armed and not self.landed and any(op.key == self.binding_key for op in ops):
            self.landed = True
            await self.store.commit([st.Put(self.key, self.status)])
        return await self.store.commit(ops, guards=guards)


async def test_a_job_moved_as_it_finishes_is_not_moved() -> None:
    """train runs on a; its policy is edited to pin it to b, and its Succeeded status
    lands after the cycle read the statuses but before the move is written. The move was
    written: the propagator applied the Job on b, where it ran again. Now the write holds
    only while the status is the one the decision read; the next cycle reads train
    finished and leaves it where it ran."""
    store, objs, _ = await _joined(cluster("a"), cluster("b"))
    train = workload("train", cpu="1")
    ref = reconcile.ref_of(train)
    await objs.put(objects.key_for(_pinned("a")), _pinned("a"))
    await objs.put(objects.key_for(train), train)
    done = _status("Succeeded").model_copy(update={"workload": binding(train, {}).spec.workload})
    status_key = keys.workload_status_key(ref)
    finishing = _FinishingAtWrite(
        store, keys.binding_key(ref), status_key, codec.Codec(WorkloadStatus).encode(done)
    )
    loop = loop_mod.SchedulerLoop(
        cast(st.Store, finishing), settings=SETTINGS, clock=clock.real, debounce=0.01
    )
    async with running(loop):
        await wait_for(lambda: _equal(_placements(store), {"train": {"a": 1}}), message="on a")
        cycles, finishing.armed = loop.cycles, True
        await objs.put(objects.key_for(_pinned("b")), _pinned("b"))
        await wait_for(lambda: finishing.landed, message="the cycle moves train")
        await wait_for(lambda: loop.cycles > cycles, message="the cycle writes")
        assert await _placements(store) == {"train": {"a": 1}}
        # Dropped, the move is decided again: from the finished status, which keeps it.
        await wait_for(lambda: loop.cycles > cycles + 1, message="the move decided again")
        assert status_key in loop.results.items
    assert await _placements(store) == {"train": {"a": 1}}
