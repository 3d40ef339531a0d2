"""A FederatedResourceQuota's `staticAssignments` hold placement to each member's share.

The propagator writes each share as a ResourceQuota into its member, which refuses pods
beyond it: a job placed past the share would wait there for pods it can never create while
other members have room. So the scheduler counts the share like capacity."""

from __future__ import annotations

from federation.quota.accounting import Usage
from federation.scheduler import cycle
from policies.models.frq import FederatedResourceQuota
from tests.unit.scheduler.fleet import cluster, job, placed, run, workload


def shared(**assignments: dict[str, str]) -> FederatedResourceQuota:
    return FederatedResourceQuota.model_validate(
        {
            "metadata": {"name": "quota", "namespace": "team"},
            "spec": {
                "overall": {"cpu": "100", "pods": "100"},
                "staticAssignments": [
                    {"clusterName": name, "hard": hard} for name, hard in assignments.items()
                ],
            },
        }
    )


# The cheap member is preferred whenever it has room and share.
FLEET = [cluster("cheap", cpu_price="0.01"), cluster("dear", cpu_price="0.09")]


def test_a_gang_goes_where_its_namespace_s_share_still_holds_it() -> None:
    jobs = [job(workload(f"j{i}", replicas=3, cpu="1"), seq=i) for i in range(2)]
    result = run(FLEET, jobs, quotas=[shared(cheap={"cpu": "4"})])
    assert placed(result) == {"j0": {"cheap": 3}, "j1": {"dear": 3}}, "1 CPU left on cheap"


def test_the_share_counts_pods_too() -> None:
    jobs = [job(workload(f"j{i}", cpu="100m"), seq=i) for i in range(3)]
    result = run(FLEET, jobs, quotas=[shared(cheap={"pods": "2"})])
    assert placed(result) == {"j0": {"cheap": 1}, "j1": {"cheap": 1}, "j2": {"dear": 1}}


def test_division_gives_a_member_no_more_replicas_than_its_share_holds() -> None:
    web = job(
        workload("web", kind="Deployment", replicas=6, cpu="1"),
        placement={
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Aggregated",
            }
        },
    )
    assert placed(run(FLEET, [web])) == {"web": {"cheap": 6}}, "without shares: one member"
    result = run(FLEET, [web], quotas=[shared(cheap={"cpu": "4"}, dear={"cpu": "3"})])
    split = placed(result)["web"]
    assert sum(split.values()) == 6 and split["cheap"] <= 4 and split["dear"] <= 3, split


def test_work_already_admitted_there_counts_against_the_share() -> None:
    earlier = run(FLEET, [job(workload("old", replicas=3, cpu="1"))])
    assert placed(earlier) == {"old": {"cheap": 3}}
    usage = Usage(earlier.admitted)
    result = run(
        FLEET,
        [job(workload("new", replicas=2, cpu="1"))],
        usage=usage,
        quotas=[shared(cheap={"cpu": "4"})],
    )
    assert placed(result) == {"new": {"dear": 2}}


def test_a_job_no_share_can_hold_waits_with_the_share_as_its_reason() -> None:
    big = job(workload("big", replicas=3, cpu="1"))
    result = run(FLEET, [big], quotas=[shared(cheap={"cpu": "2"}, dear={"cpu": "2"})])
    assert placed(result) == {}
    reason = result.reasons[str(big.ref)]
    assert "namespace team may use 2 cpu on" in reason
    assert "staticAssignments" in reason and "3 more pod(s) would exceed it" in reason


def test_other_namespaces_and_unassigned_members_are_not_held() -> None:
    jobs = [
        job(workload("mine", replicas=3, cpu="1")),
        job(workload("theirs", replicas=3, cpu="1", namespace="elsewhere"), seq=1),
    ]
    result: cycle.CycleResult = run(FLEET, jobs, quotas=[shared(dear={"cpu": "1"})])
    assert placed(result) == {"mine": {"cheap": 3}, "theirs": {"cheap": 3}}
