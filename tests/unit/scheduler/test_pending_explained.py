"""A Pending Binding says how each cluster's filters judged the workload.

A workload placed nowhere is when its owner asks which member failed which filter
("which two lack the API?"); its Binding carried only the reason's counts, with an empty
explanation and `filteredSummary`, so `fedctl describe workload` read "Explanation:
<none>". The verdicts are worked out only for a pending decision: an admitted one's
path is the scheduler's hot path, and a job waiting cycle after cycle for the same
reason keeps those it has.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.scheduler import cycle, explain
from federation.settings import SchedulerSettings
from tests.unit.scheduler.fleet import (
    DYNAMIC_WEIGHT,
    NOW,
    cluster,
    flavor,
    job,
    queue,
    run,
    workload,
)

ONLY_NEAR = {"clusterAffinity": {"clusterNames": ["down", "small-a", "small-b"]}}


def fleet() -> list[Any]:
    return [
        cluster("down", ready=False),
        cluster("far"),
        cluster("small-a", flavor(cpu="16")),
        cluster("small-b", flavor(cpu="16")),
    ]


def test_a_workload_placed_nowhere_names_each_clusters_filter_nearest_first() -> None:
    big = job(workload("big", cpu="64"), placement=ONLY_NEAR)
    result = run(fleet(), [big])
    (binding,) = result.bindings
    assert binding.status.phase == "Pending"
    assert binding.spec.filtered_summary == {"affinity": 1, "health": 1, "capacity": 2}
    said = [(v.cluster, v.verdict, v.plugin) for v in binding.spec.explanation]
    assert said == [
        ("small-a", "unschedulable", "capacity"),
        ("small-b", "unschedulable", "capacity"),
        ("far", "unschedulable", "affinity"),
        ("down", "unschedulable", "health"),
    ]
    assert all(v.reasons for v in binding.spec.explanation)


def test_a_workload_its_queue_holds_names_the_quota_filter_on_each_cluster() -> None:
    first = job(workload("first", cpu="4", queue="q"), seq=0)
    second = job(workload("second", cpu="4", queue="q"), seq=1)
    result = run(fleet(), [first, second], queues=[queue("q", capability={"cpu": "4"})])
    binding = {b.metadata.name: b for b in result.bindings}["second"]
    assert binding.status.phase == "Pending"
    assert binding.spec.filtered_summary == {"health": 1, "quota": 3}
    held = [v for v in binding.spec.explanation if v.plugin == "quota"]
    assert [v.cluster for v in held] == ["far", "small-a", "small-b"]
    assert held[0].reasons == ["queue q at capability for cpu: 4/4 (needs 4)"]


def test_clusters_that_pass_every_filter_are_listed_scored_first() -> None:
    """Too many replicas for the room of every eligible cluster together: each passed
    the filters, and the Binding lists them scored (none selected) before the one the
    health filter turned down."""
    wide = workload("wide", cpu="8", replicas=20, kind="Deployment")
    result = run(fleet(), [job(wide, placement={"replicaScheduling": DYNAMIC_WEIGHT})])
    (binding,) = result.bindings
    assert binding.status.phase == "Pending"
    said = [(v.cluster, v.verdict) for v in binding.spec.explanation]
    assert said == [("far", "ok"), ("small-a", "ok"), ("small-b", "ok"), ("down", "unschedulable")]
    assert all(v.score is not None and not v.selected for v in binding.spec.explanation[:3])
    assert binding.spec.filtered_summary == {"health": 1}


def test_a_large_fleet_keeps_the_binding_small() -> None:
    many = [cluster(f"c{i:02}", flavor(cpu="16")) for i in range(explain.PENDING_LISTED + 5)]
    result = run(many, [job(workload("big", cpu="64"))])
    (binding,) = result.bindings
    assert len(binding.spec.explanation) == explain.PENDING_LISTED
    assert binding.spec.filtered_summary == {"capacity": len(many)}


def counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The jobs `explain.pending` is asked about, in order."""
    calls: list[str] = []
    real = explain.pending

    def counted(placer: Any, request: Any, state: Any) -> Any:
        calls.append(request.job.ref.name)
        return real(placer, request, state)

    monkeypatch.setattr(explain, "pending", counted)
    return calls


def test_identical_jobs_share_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting(monkeypatch)
    jobs = [job(workload(f"big-{i}", cpu="64"), seq=i) for i in (1, 2)]
    result = run(fleet(), jobs)
    by_name = {b.metadata.name: b for b in result.bindings}
    assert calls == ["big-1"]
    assert by_name["big-2"].spec.explanation == by_name["big-1"].spec.explanation != []


def test_admitted_jobs_are_never_explained_as_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting(monkeypatch)
    result = run(fleet(), [job(workload(f"fits-{i}", cpu="1"), seq=i) for i in range(5)])
    assert len(result.admitted) == 5 and calls == []


def test_a_job_waiting_for_the_same_reason_keeps_its_verdicts_without_a_new_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clusters = fleet()
    big = job(workload("big", cpu="64"), placement=ONLY_NEAR)
    first = run(clusters, [big])
    calls: list[object] = []
    monkeypatch.setattr(explain, "pending", lambda *args: calls.append(args))
    again = cycle.Scheduler(SchedulerSettings()).run_cycle(
        snap.build(clusters, bindings=first.bindings), first.pending, Usage(), NOW
    )
    assert again.bindings == [] and calls == []  # nothing new to write, nothing worked out


def test_identical_jobs_of_two_queues_each_keep_their_own_queue_s_verdicts() -> None:
    queues = [queue(q, capability={"cpu": "4"}) for q in ("qa", "qb")]
    jobs = [
        job(workload(f"{name}-{q}", cpu="4", queue=q), seq=seq)
        for seq, (name, q) in enumerate(
            (n, q) for n in ("first", "second", "third") for q in ("qa", "qb")
        )
    ]
    result = run(fleet(), jobs, queues=queues)
    for binding in result.bindings:
        if binding.status.phase != "Pending":
            continue
        q = binding.metadata.name.rpartition("-")[2]
        held = [v for v in binding.spec.explanation if v.plugin == "quota"]
        assert held and all(f"queue {q} " in v.reasons[0] for v in held), binding
