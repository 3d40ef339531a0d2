"""A FederatedResourceQuota's `staticAssignments` hold placement to each member's share.

The propagator writes each share as a ResourceQuota into its member, which refuses pods
beyond it: a job placed past the share would wait there for pods it can never create while
other members have room. So the scheduler counts the share like capacity."""

from __future__ import annotations

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.scheduler import bound_usage, cycle
from policies.models.accelerator import ChipDevices
from policies.models.frq import FederatedResourceQuota
from tests.unit.scheduler.fleet import cluster, flavor, job, placed, run, workload


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


AGGREGATED = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Aggregated",
    }
}
SMALL_DEAR = [cluster("cheap", cpu_price="0.01"), cluster("dear", flavor(cpu="2", nodes=1))]


def test_static_weights_past_a_share_wait_with_the_share_as_their_reason() -> None:
    """Static weights ignore capacity, as in Karmada; they do not get past the member's
    ResourceQuota either, so the job waits rather than leave pods the member refuses."""
    weighted = {
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
        }
    }
    web = job(workload("web", kind="Deployment", replicas=8, cpu="1"), placement=weighted)
    assert placed(run(FLEET, [web])) == {"web": {"cheap": 4, "dear": 4}}
    result = run(FLEET, [web], quotas=[shared(cheap={"cpu": "2"})])
    assert placed(result) == {}
    reason = result.reasons[str(web.ref)]
    assert "4 replica(s) on cheap exceed namespace team's static share" in reason, reason


def test_a_steady_scale_up_adds_no_replicas_past_the_share() -> None:
    quotas = [shared(cheap={"cpu": "4"})]
    web = job(workload("web", kind="Deployment", replicas=4), placement=AGGREGATED)
    first = run(SMALL_DEAR, [web], quotas=quotas)
    assert placed(first) == {"web": {"cheap": 4}}
    bigger = job(workload("web", kind="Deployment", replicas=6), placement=AGGREGATED)
    snapshot = snap.build(SMALL_DEAR, quotas=quotas, bindings=first.bindings)

    again = run(SMALL_DEAR, [bigger], snapshot=snapshot)

    assert placed(again) == {"web": {"cheap": 4, "dear": 2}}  # kept 4, added 2 on top before


def test_a_workload_placed_again_keeps_its_share_from_jobs_placed_before_it() -> None:
    """web runs 4 pods on cheap (its namespace's whole share there) and is placed again
    after an edit. An earlier job in the same cycle must not take that share: web keeps
    its 4 there, and the member's ResourceQuota would refuse the other job's pods."""
    quotas = [shared(cheap={"cpu": "4"})]
    web = job(workload("web", kind="Deployment", replicas=4), placement=AGGREGATED, seq=5)
    first = run(SMALL_DEAR, [web], quotas=quotas)
    assert placed(first) == {"web": {"cheap": 4}}
    (stored,) = first.bindings
    running = bound_usage.admission_of(web, stored, device_resources=(), chip_devices=ChipDevices())
    other = job(workload("other", replicas=2), seq=1)
    snapshot = snap.build(SMALL_DEAR, quotas=quotas, bindings=[stored])

    again = run(SMALL_DEAR, [other, web], snapshot=snapshot, usage=Usage([running]))

    assert placed(again) == {"other": {"dear": 2}, "web": {"cheap": 4}}


def test_a_scale_down_under_a_share_lowered_since_still_applies() -> None:
    """web runs 4 pods on cheap; the share there is lowered to 2 CPU and web scaled to 3.
    Fewer pods than it runs are never refused: refused, it kept all 4."""
    only_cheap = {**AGGREGATED, "clusterAffinity": {"clusterNames": ["cheap"]}}
    web = job(workload("web", kind="Deployment", replicas=4), placement=only_cheap)
    first = run(FLEET, [web])
    assert placed(first) == {"web": {"cheap": 4}}
    quotas = [shared(cheap={"cpu": "2"})]
    fewer = job(workload("web", kind="Deployment", replicas=3), placement=only_cheap)
    snapshot = snap.build(FLEET, quotas=quotas, bindings=first.bindings)

    again = run(FLEET, [fewer], quotas=quotas, snapshot=snapshot)

    assert placed(again) == {"web": {"cheap": 3}}


def test_copies_whose_pods_were_not_recorded_are_checked_against_the_share() -> None:
    """A Binding written before it recorded its pods (`podRequests`) cannot say whether
    its copies are as large as the pods now asked for: 4 pods grown from 1 to 2 CPU were
    kept on cheap as "no growth", 8 CPU on a 4-CPU share the member's quota refuses."""
    only_cheap = {**AGGREGATED, "clusterAffinity": {"clusterNames": ["cheap"]}}
    quotas = [shared(cheap={"cpu": "4"})]
    web = job(workload("web", kind="Deployment", replicas=4, cpu="1"), placement=only_cheap)
    (stored,) = run(FLEET, [web], quotas=quotas).bindings
    unrecorded = stored.model_copy(
        update={"spec": stored.spec.model_copy(update={"pod_requests": {}})}
    )
    bigger = job(workload("web", kind="Deployment", replicas=4, cpu="2"), placement=only_cheap)
    snapshot = snap.build(FLEET, quotas=quotas, bindings=[unrecorded])

    again = run(FLEET, [bigger], quotas=quotas, snapshot=snapshot)

    assert placed(again) == {}
    assert "static share" in again.reasons[str(bigger.ref)]


ONLY_CHEAP = {"clusterAffinity": {"clusterNames": ["cheap"]}}


def test_a_job_only_a_share_keeps_out_preempts_lower_priority_work_holding_it() -> None:
    quotas = [shared(cheap={"cpu": "4"})]
    low = job(workload("low", replicas=4, priority=0), placement=ONLY_CHEAP)
    first = run(FLEET, [low], quotas=quotas)
    assert placed(first) == {"low": {"cheap": 4}}
    high = job(workload("high", replicas=4, priority=100), placement=ONLY_CHEAP, seq=1)

    second = run(FLEET, [high], quotas=quotas, usage=Usage(first.admitted))

    assert placed(second) == {"high": {"cheap": 4}}
    assert [v.ref.name for v, _ in second.evicted] == ["low"]
    assert str(low.ref) in second.reasons and "preempted by" in second.reasons[str(low.ref)]


def test_work_of_another_namespace_is_not_preempted_for_a_share() -> None:
    """Shares are a namespace's own: another namespace's pods do not count against it, so
    evicting them would make no room."""
    quotas = [shared(cheap={"cpu": "4"})]
    theirs = workload("theirs", replicas=4, priority=0, namespace="other")
    first = run(FLEET, [job(theirs, placement=ONLY_CHEAP)], quotas=quotas)
    mine = job(workload("mine", replicas=5, priority=100), placement=ONLY_CHEAP, seq=1)

    second = run(FLEET, [mine], quotas=quotas, usage=Usage(first.admitted))

    assert placed(second) == {} and second.evicted == []
    assert "staticAssignments" in second.reasons[str(mine.ref)]
