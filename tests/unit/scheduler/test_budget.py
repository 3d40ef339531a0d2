"""Queue budgets (`spec.maxHourlyCost`): admission stops where a queue's (or an
ancestor's) admitted work would cost more an hour than its budget; nothing is evicted for
it, work of unknown cost waits under a budget, and work placed in earlier cycles counts
at the cost its Binding records."""

from __future__ import annotations

from decimal import Decimal

import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.scheduler import bound_usage, cycle
from federation.settings import SchedulerSettings
from policies.models.accelerator import ChipDevices
from policies.models.binding import TargetCluster
from policies.models.frq import FederatedResourceQuota
from tests.unit.scheduler.fleet import (
    bound,
    cluster,
    flavor,
    job,
    placed,
    queue,
    respec,
    run,
    workload,
)

# One pod of 1 core and 1 GiB on cluster a: 0.05 + 0.005 = 0.055 an hour.
POD = Decimal("0.055")


def jobs(n: int, queue_name: str, *, prefix: str = "j", **kw: str) -> list:  # type: ignore[type-arg]
    return [job(workload(f"{prefix}{i}", queue=queue_name, **kw), seq=i + 1) for i in range(n)]


def test_a_queue_admits_until_its_budget_and_says_why_the_next_waits() -> None:
    result = run([cluster("a")], jobs(5, "team"), queues=[queue("team", maxHourlyCost="0.2")])
    assert sorted(placed(result)) == ["j0", "j1", "j2"]  # 3 x 0.055 = 0.165 of 0.2
    assert result.reasons["team/Job.batch/j3"] == (
        "queue team at its hourly budget: 0.1650 of 0.2000 USD/h spent, this placement needs"
        " 0.0550, and no placement it fits in costs 0.0350 or less"
    )
    assert not result.evicted
    assert sum((a.cost for a in result.admitted), Decimal(0)) == 3 * POD


def test_a_parent_budget_caps_its_whole_subtree() -> None:
    queues = [
        queue("org", maxHourlyCost="0.12"),
        queue("red", parent="org"),
        queue("blue", parent="org"),
    ]
    result = run(
        [cluster("a")], jobs(2, "red", prefix="r") + jobs(2, "blue", prefix="b"), queues=queues
    )
    assert len(result.admitted) == 2  # 2 x 0.055 = 0.11 of 0.12
    waiting = [r for n, r in result.reasons.items() if "budget" in r]
    assert waiting and all(r.startswith("queue org (parent of ") for r in waiting)


def test_a_placement_above_the_budget_alone_is_told_so() -> None:
    result = run(
        [cluster("a")],
        [job(workload("big", queue="team", cpu="8"))],
        queues=[queue("team", maxHourlyCost="0.2")],
    )
    assert not result.admitted
    assert result.reasons["team/Job.batch/big"] == (
        "queue team has a budget of 0.2000 USD/h and this placement alone costs 0.4050: it is"
        " not admitted at that budget, and no placement it fits in costs 0.2000 or less"
    )


def test_work_of_unknown_cost_waits_under_a_budget_and_runs_without_one() -> None:
    gpus = cluster("g", flavor(chip="nvidia-a100-80gb", devices=8))  # no price for the GPUs
    gpu_job = [job(workload("train", queue="team", gpus=1, chips="nvidia-a100-80gb"))]
    held = run([gpus], gpu_job, queues=[queue("team", maxHourlyCost="100")])
    assert not held.admitted
    assert "what this placement costs is not known" in held.reasons["team/Job.batch/train"]
    free = run([gpus], gpu_job, queues=[queue("team")])
    assert placed(free) == {"train": {"g": 1}}


def test_work_placed_earlier_counts_at_the_cost_its_binding_records() -> None:
    earlier = bound("team", "old")
    earlier = earlier.model_copy(
        update={
            "spec": earlier.spec.model_copy(
                update={
                    "queue": "team",
                    "clusters": [TargetCluster(name="a", replicas=1, hourly_cost=Decimal("0.10"))],
                }
            )
        }
    )
    old = job(workload("old", queue="team"))
    running = bound_usage.admission_of(
        old, earlier, device_resources=(), chip_devices=ChipDevices()
    )
    assert running.cost == Decimal("0.10")
    result = run(
        [cluster("a")],
        jobs(2, "team"),
        queues=[queue("team", maxHourlyCost="0.2")],
        usage=Usage([running]),
    )
    assert sorted(placed(result)) == ["j0"]  # 0.10 + 0.055; a second would pass 0.2
    assert result.reasons["team/Job.batch/j1"].startswith(
        "queue team at its hourly budget: 0.1550 of 0.2000"
    )


# Scores blind to cost: they tie, and the tie goes to the first name, the dearer a.
BLIND = SchedulerSettings(score_weights={"cost": 0, "binpack": 1, "locality": 2, "affinity": 1})
DEAR = cluster("a", flavor(cpu="4", nodes=2), cpu_price="0.10")  # a pod: 0.105 an hour
CHEAP = cluster("b", flavor(cpu="16", nodes=4), cpu_price="0.02")  # a pod: 0.025 an hour


def test_a_placement_past_the_budget_is_placed_again_where_the_rest_of_it_pays() -> None:
    result = run(
        [DEAR, CHEAP], jobs(4, "team"), queues=[queue("team", maxHourlyCost="0.2")], settings=BLIND
    )
    # j0 on a (0.105); j1 on a would pass 0.2, so it and the rest go to b (3 x 0.025).
    assert placed(result) == {"j0": {"a": 1}, "j1": {"b": 1}, "j2": {"b": 1}, "j3": {"b": 1}}
    spent = sum((a.cost for a in result.admitted), Decimal(0))
    assert spent == Decimal("0.105") + 3 * Decimal("0.025")
    binding = next(b for b in result.bindings if b.metadata.name == "j1")
    assert binding.spec.filtered_summary == {"capacity/cost/quota": 1}
    (chosen,) = binding.spec.explanation
    assert chosen.reasons == [
        "placed within the 0.0950 USD/h left in queue team's budget: the scores' first choice"
        " cost more"
    ]


def test_without_a_budget_the_scores_choice_stands() -> None:
    result = run([DEAR, CHEAP], jobs(2, "team"), queues=[queue("team")], settings=BLIND)
    assert placed(result) == {"j0": {"a": 1}, "j1": {"a": 1}}


def test_the_tightest_budget_over_the_queue_bounds_the_retry() -> None:
    queues = [queue("org", maxHourlyCost="0.13"), queue("team", parent="org", maxHourlyCost="1")]
    result = run([DEAR, CHEAP], jobs(3, "team"), queues=queues, settings=BLIND)
    # j0 on a (0.105 of org's 0.13); j1 in the 0.025 org leaves, on b; j2 finds nothing.
    assert placed(result) == {"j0": {"a": 1}, "j1": {"b": 1}}
    assert result.reasons["team/Job.batch/j2"] == (
        "queue org (parent of team) at its hourly budget: 0.1300 of 0.1300 USD/h spent, this"
        " placement needs 0.1050"
    )


def shared(namespace: str, *, overall: str, on_a: str) -> FederatedResourceQuota:
    """A quota with a static share of cluster a: over it, preemption makes room there."""
    return FederatedResourceQuota.model_validate(
        {
            "metadata": {"name": "quota", "namespace": namespace},
            "spec": {
                "overall": {"cpu": overall},
                "staticAssignments": [{"clusterName": "a", "hard": {"cpu": on_a}}],
            },
        }
    )


def test_a_job_its_budget_holds_back_evicts_no_one_even_when_a_quota_also_blocks_it() -> None:
    """Preemption would make room for the quota, and, evicting the queue's own work, for
    the budget too: a budget is never made room for, so nothing is evicted."""
    first = run([cluster("a")], jobs(3, "team"), queues=[queue("team", maxHourlyCost="1")])
    assert len(first.admitted) == 3  # 0.165 an hour
    high = job(workload("high", queue="team", priority=100), seq=10)
    result = run(
        [cluster("a")],
        [high],
        queues=[queue("team", maxHourlyCost="0.1")],  # lowered below what it spends
        quotas=[shared("team", overall="4", on_a="3")],  # and its share of a is full
        usage=first.usage,
    )
    assert not result.evicted
    assert not result.admitted
    assert result.reasons["team/Job.batch/high"] == (
        "namespace team may use 3 cpu on a (FederatedResourceQuota staticAssignments), 3 in"
        " use; 1 more pod(s) would exceed it; and queue team has spent its hourly budget:"
        " 0.1650 of 0.1000 USD/h"
    )


def test_room_made_for_a_quota_does_not_count_the_victims_spend_as_budget_freed() -> None:
    """The budget passes for a cheap placement, but a full quota sends the job to make
    room; the placement after eviction must fit the budget as spent before it."""
    first = run([cluster("a")], jobs(3, "team"), queues=[queue("team", maxHourlyCost="0.2")])
    assert len(first.admitted) == 3  # 0.165 of 0.2: 0.035 left
    big = job(workload("big", queue="team", cpu="2", priority=100), seq=10)  # 0.11 an hour
    result = run(
        [cluster("a")],
        [big],
        queues=[queue("team", maxHourlyCost="0.2")],
        quotas=[shared("team", overall="5", on_a="4")],
        usage=first.usage,
    )
    assert not result.evicted
    assert not result.admitted


def test_a_plan_shows_the_placement_within_the_budget_as_the_cycle_admits_it() -> None:
    """The plan (`fedctl plan`, the editor) showed the scores' first choice, which the
    budget refuses, and its cost, where the cycle places the job on the cheaper cluster."""
    first = run([DEAR, CHEAP], jobs(1, "team"), queues=[queue("team", maxHourlyCost="0.2")],
                settings=BLIND)  # fmt: skip
    assert placed(first) == {"j0": {"a": 1}}  # 0.105 of 0.2: 0.095 left
    snapshot = snap.build([DEAR, CHEAP], queues=[queue("team", maxHourlyCost="0.2")])
    planned = cycle.Scheduler(BLIND).plan(
        job(workload("next", queue="team"), seq=5), snapshot, first.usage
    )
    assert planned.placement == {"b": 1}
    assert planned.costs == {"b": Decimal("0.025")}
    verdicts = {v.cluster: v for v in planned.verdicts}
    assert verdicts["a"].reasons == [
        "costs 0.1050/h, more than the 0.0950 USD/h left in queue team's budget"
    ]
    assert verdicts["b"].selected


def test_a_retry_bounded_by_an_ancestors_budget_says_whose_it_is() -> None:
    """The reason named the child's spend and then the parent's remainder, unattributed:
    0.0600 left in `team` read as the 0.0450 the retry was bounded by."""
    queues = [queue("org", maxHourlyCost="0.2"), queue("team", parent="org", maxHourlyCost="0.1")]
    other = jobs(2, "rest", prefix="o")
    queues.append(queue("rest", parent="org"))
    result = run([cluster("a")], other + jobs(2, "team", prefix="t"), queues=queues)
    # o0, o1 and t0 admitted: org spends 0.165 of 0.2 (0.035 left), team 0.055 of 0.1.
    assert sorted(placed(result)) == ["o0", "o1", "t0"]
    assert result.reasons["team/Job.batch/t1"] == (
        "queue team at its hourly budget: 0.0550 of 0.1000 USD/h spent, this placement needs"
        " 0.0550, and no placement it fits in costs 0.0350 or less (what queue org's budget"
        " leaves)"
    )


def _over_budget_then(replicas: int, *, queues: list) -> cycle.CycleResult:  # type: ignore[type-arg]
    """`web` (a Deployment of 2 pods, 0.11 an hour) and 2 one-pod jobs admitted in queue
    `team` (0.22 in all); then the budget is lowered to 0.1 and `web` edited to `replicas`:
    the cycle places it again without its running copies' charge, as the loop does."""
    web = workload("web", kind="Deployment", replicas=2, queue="team")
    first = run([cluster("a")], [job(web), *jobs(2, "team")], queues=[queue("team")])
    assert len(first.admitted) == 3
    usage = first.usage.copy()
    own = usage.get(job(web).ref)
    assert own is not None and own.cost == 2 * POD
    snapshot = snap.build([cluster("a")], queues=queues, bindings=first.bindings)
    edited = job(respec(web, replicas=replicas), seq=9)
    return run([cluster("a")], [edited], usage=usage, snapshot=snapshot)


@pytest.mark.parametrize(
    "replicas",
    [
        pytest.param(0, id="scaled to zero"),
        pytest.param(1, id="scaled down"),
        pytest.param(2, id="edited at the same cost"),
    ],
)
@pytest.mark.parametrize(
    "queues",
    [
        pytest.param([queue("team", maxHourlyCost="0.1")], id="its own budget"),
        pytest.param(
            [queue("org", maxHourlyCost="0.1"), queue("team", parent="org")], id="a parent's"
        ),
    ],
)
def test_a_queue_over_its_budget_lets_a_workload_cost_no_more_than_it_does(
    replicas: int,
    queues: list,  # type: ignore[type-arg]
) -> None:
    """Refused, the scale-down left the larger, dearer copies running (Pending) until the
    budget was raised: a change that adds nothing to the spend takes nothing past it."""
    result = _over_budget_then(replicas, queues=queues)
    assert placed(result) == {"web": {"a": replicas}}
    assert result.admitted[0].cost == replicas * POD
    assert not result.reasons


def test_a_queue_over_its_budget_still_refuses_a_scale_up() -> None:
    """Only what a change adds is judged: 0.055 more on the 0.22 spent passes 0.2."""
    result = _over_budget_then(3, queues=[queue("team", maxHourlyCost="0.2")])
    assert not result.admitted
    assert result.reasons["team/Deployment.apps/web"].startswith(
        "queue team at its hourly budget: 0.1100 of 0.2000 USD/h spent, this placement needs 0.1650"
    )
