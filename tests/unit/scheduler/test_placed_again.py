"""A running workload placed again (scaled, resized, its policy edited) stays where it runs
when it still fits there, and when the scheduler does move a running service, the copies
it shrinks or leaves run until the replicas that replace them are ready."""

from __future__ import annotations

from typing import Any

import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.scheduler import cycle
from policies.models.binding import Binding
from policies.models.cluster import Taint
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import (
    NOW,
    cluster,
    evicted,
    flavor,
    job,
    placed,
    run,
    workload,
)


def _service(replicas: int, *, cpu: str = "1") -> Workload:
    return workload("shop", kind="Deployment", cpu=cpu, replicas=replicas)


def _first(home_price: str, *, home_cpu: str = "16", cpu: str = "1") -> tuple[Binding, Usage]:
    """The service placed with 2 replicas on `home`, the cheaper member then."""
    fleet = [
        cluster("home", flavor(cpu=home_cpu, nodes=1), cpu_price=home_price),
        cluster("other", flavor(cpu="16"), cpu_price="0.05"),
    ]
    first = run(fleet, [job(_service(2, cpu=cpu))])
    assert placed(first) == {"shop": {"home": 2}}
    (binding,) = first.bindings
    return binding, first.usage


@pytest.mark.parametrize(
    ("home_cpu", "expected"),
    [
        pytest.param("16", {"home": 3}, id="still fits where it runs: stays, dearest or not"),
        pytest.param("5", {"other": 3}, id="no longer fits there: moves whole"),
    ],
)
def test_a_scaled_single_cluster_service_stays_where_it_runs_while_it_fits(
    home_cpu: str, expected: dict[str, int]
) -> None:
    binding, usage = _first("0.01", home_cpu=home_cpu, cpu="2")
    fleet = [  # home's price rose: by score alone (cost 3 x 100 > locality 2 x 100) it loses
        cluster("home", flavor(cpu=home_cpu, nodes=1), cpu_price="0.50"),
        cluster("other", flavor(cpu="16"), cpu_price="0.05"),
    ]
    snapshot = snap.build(fleet, bindings=[binding])
    result = run(fleet, [job(_service(3, cpu="2"))], usage=usage, snapshot=snapshot)
    assert placed(result) == {"shop": expected}
    (again,) = result.bindings
    assert [v.cluster for v in again.spec.explanation if v.selected] == list(expected)


def test_a_service_the_scheduler_moves_keeps_its_old_copy_until_the_new_one_is_ready() -> None:
    binding, usage = _first("0.01", home_cpu="5", cpu="2")
    fleet = [
        cluster("home", flavor(cpu="5", nodes=1), cpu_price="0.01"),
        cluster("other", flavor(cpu="16"), cpu_price="0.05"),
    ]
    snapshot = snap.build(fleet, bindings=[binding])
    result = run(fleet, [job(_service(3, cpu="2"))], usage=usage, snapshot=snapshot)
    (moved,) = result.bindings
    assert moved.placement() == {"other": 3}
    (task,) = moved.spec.eviction_tasks
    assert (task.cluster, task.replicas, task.purge_mode) == ("home", 2, "Gracefully")
    assert task.creation_time == NOW
    assert task.reason == "Rescheduled: home:2 -> other:3"


def test_a_scaled_down_service_sheds_replicas_at_once() -> None:
    binding, usage = _first("0.01")
    fleet = [
        cluster("home", flavor(cpu="16"), cpu_price="0.01"),
        cluster("other", flavor(cpu="16"), cpu_price="0.05"),
    ]
    snapshot = snap.build(fleet, bindings=[binding])
    result = run(fleet, [job(_service(1))], usage=usage, snapshot=snapshot)
    (smaller,) = result.bindings
    assert smaller.placement() == {"home": 1}
    assert smaller.spec.eviction_tasks == []


_DOWN = Taint(key="cluster.fedctl.io/unreachable", effect="NoExecute", time_added=NOW)


def _raised(
    *, home_cpu: str = "5", failed_over: bool = False, placement: dict[str, Any] | None = None
) -> cycle.CycleResult:
    """A Job of 2 two-CPU pods placed on `home` (5 CPU: room for 2), its parallelism then
    raised to 3 while `other`, cheaper now, has room for all of them. `failed_over`: home
    went down meanwhile, and failover evicted the Job from it; `placement`: the policy
    placing it then."""
    home = flavor(cpu=home_cpu, nodes=1)
    fleet = [cluster("home", home), cluster("other", flavor(cpu="16"))]
    first = run(fleet, [job(workload("train", cpu="2", replicas=2))])
    assert placed(first) == {"train": {"home": 2}}
    (binding,) = first.bindings
    usage = first.usage
    if failed_over:
        binding = evicted(binding, "cluster home is unreachable")
        usage = Usage()
    fleet = [
        cluster("home", home, taints=[_DOWN] if failed_over else None),
        cluster("other", flavor(cpu="16"), cpu_price="0.01"),
    ]
    snapshot = snap.build(fleet, bindings=[binding])
    bigger = job(workload("train", cpu="2", replicas=3), placement=placement)
    return run(fleet, [bigger], usage=usage, snapshot=snapshot)


def test_a_running_job_raised_past_its_members_room_stays_there_and_says_so() -> None:
    result = _raised()
    assert placed(result) == {"train": {"home": 3}}  # never restarted on `other`
    (kept,) = result.bindings
    assert kept.status.phase == "Scheduled"
    assert kept.placement() == {"home": 3}
    assert kept.spec.eviction_tasks == []
    assert kept.status.reason == (
        "parallelism 3 kept on home, whose room held 2 of its pods when placed: the other 1"
        " waits Pending there until room frees (a running job is never moved for a size"
        " change)"
    )
    (admission,) = result.admitted
    assert admission.charge.to_wire()["cpu"] == "6"  # the whole size asked for


def test_a_running_job_raised_within_its_members_room_stays_with_nothing_to_say() -> None:
    (kept,) = _raised(home_cpu="7").bindings
    assert (kept.placement(), kept.status.reason) == ({"home": 3}, "")


@pytest.mark.parametrize(
    ("failed_over", "placement"),
    [
        pytest.param(True, None, id="failover evicted it from its member"),
        pytest.param(
            False,
            {"clusterAffinity": {"clusterNames": ["other"]}},
            id="its policy no longer takes its member in",
        ),
    ],
)
def test_a_running_job_still_moves_when_it_may_not_stay_and_runs_in_one_place(
    failed_over: bool, placement: dict[str, Any] | None
) -> None:
    result = _raised(failed_over=failed_over, placement=placement)
    (moved,) = result.bindings
    assert moved.placement() == {"other": 3}
    assert moved.status.reason == ""
    # Never handed over gracefully: kept while its new copy starts, it would run twice.
    assert all(t.purge_mode != "Gracefully" for t in moved.spec.eviction_tasks)
