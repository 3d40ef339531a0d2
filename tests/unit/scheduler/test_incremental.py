"""The incremental single-cluster path decides exactly as filtering and scoring from scratch.

Each case runs one cycle twice over the same fleet and queue - once as the controller does,
once with the incremental path switched off - and requires the same admissions, the same
Bindings (targets, chips, costs, explanation and reasons) and the same pending jobs. The
fleets are small and over-subscribed so that clusters fill up, flavors run out, the cheapest
feasible cluster disappears (moving every cost score) and jobs are left pending.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from federation.cache import snapshot as snap
from federation.queue import fairshare
from federation.queue.pending import PendingJob, PendingStore
from federation.quota.accounting import Usage
from federation.resources import ResourceList
from federation.scheduler import cycle, incremental
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from tests.unit.scheduler import fleet

A100, H100 = "nvidia-a100-80gb", "nvidia-h100-80gb"


def _fleet(rng: random.Random) -> list[object]:
    clusters = []
    for i in range(12):
        kind = i % 3
        flavors = [fleet.flavor(cpu=str(rng.choice([4, 8, 16])), nodes=rng.randint(1, 3))]
        flavors.append(fleet.flavor(arch="arm64", cpu="8", nodes=rng.randint(1, 2)))
        prices: dict[str, str] = {}
        if kind:
            chip = A100 if kind == 1 else H100
            flavors.append(
                fleet.flavor(
                    chip=chip, cpu="32", memory="256Gi", devices=8, nodes=rng.randint(1, 2)
                )
            )
            prices[chip] = str(rng.choice([2, 3, 4]))
            if i % 4 == 0:  # both chips: a gang's pods share one, whichever holds them all
                other = H100 if chip == A100 else A100
                flavors.append(
                    fleet.flavor(chip=other, cpu="32", memory="256Gi", devices=4, nodes=1)
                )
                prices[other] = str(rng.choice([2, 3, 4]))
        clusters.append(
            fleet.cluster(
                f"c{i:02d}",
                *flavors,
                region=["us-east", "eu-west"][i % 2],
                cpu_price=str(rng.choice(["0.03", "0.04", "0.05"])),
                gpu_prices=prices,
            )
        )
    return clusters


def _jobs(rng: random.Random, count: int) -> list[PendingJob]:
    shapes = [
        {"kind": "Deployment", "cpu": "1", "replicas": 3},
        {"kind": "Deployment", "cpu": "2", "replicas": 2, "chips": "arm64"},
        {"kind": "Job", "cpu": "500m", "replicas": 1},
        {"kind": "Job", "cpu": "4", "gpus": 2, "chips": A100, "duration": "2h"},
        {"kind": "Job", "cpu": "8", "gpus": 4, "chips": f"{H100},{A100}", "duration": "5h"},
        {"kind": "Job", "cpu": "4", "gpus": 8, "chips": H100},
        {"kind": "Job", "cpu": "2", "gpus": 1, "replicas": 3, "chips": f"{H100},{A100}"},
    ]
    jobs = []
    for i in range(count):
        shape = dict(rng.choice(shapes))
        w = fleet.workload(
            f"j{i:04d}",
            queue=rng.choice(["a", "b"]),
            priority=rng.randint(0, 2),
            **shape,  # type: ignore[arg-type]
        )
        jobs.append(fleet.job(w, seq=i + 1))
    return jobs


def _cycle(
    clusters: list[object],
    jobs: list[PendingJob],
    *,
    fast: bool,
    queues: list[object] | None = None,
    quotas: list[object] = (),  # type: ignore[assignment]
) -> cycle.CycleResult:
    if queues is None:  # the two queues `_jobs` submits to, without limits
        queues = [fleet.queue("a"), fleet.queue("b")]
    snapshot = snap.build(clusters, queues=queues, quotas=quotas)  # type: ignore[arg-type]
    scheduler = cycle.Scheduler(SchedulerSettings(cycle_batch=10_000))
    scheduler.placer.incremental.enabled = fast
    pending = PendingStore()
    for j in jobs:
        pending.add(j)
    return scheduler.run_cycle(snapshot, pending, Usage(), fleet.NOW)


def _dump(result: cycle.CycleResult) -> list[object]:
    return [b.model_dump(mode="json") for b in result.bindings]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_same_bindings_as_scoring_from_scratch_while_the_fleet_fills_up(seed: int) -> None:
    rng = random.Random(seed)
    clusters = _fleet(rng)
    jobs = _jobs(rng, 160)
    slow = _cycle(clusters, jobs, fast=False)
    fast = _cycle(clusters, jobs, fast=True)
    assert [str(a.ref) for a in fast.admitted] == [str(a.ref) for a in slow.admitted]
    assert 0 < len(fast.admitted) < len(jobs), "the case must fill the fleet"
    assert _dump(fast) == _dump(slow)
    assert fast.reasons == slow.reasons
    assert sorted(str(j.ref) for j in fast.pending.jobs()) == sorted(
        str(j.ref) for j in slow.pending.jobs()
    )
    assert fast.timings.calls.get("incremental", 0) > 0


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_pods_spilling_over_flavors_take_the_nodes_the_general_path_takes(seed: int) -> None:
    """Where the chosen flavor holds fewer than the replicas, the rest go to the others,
    most room first: from the counts the incremental decision saw (`taken.Hint`), the very
    flavors counting them afresh gives."""
    rng = random.Random(seed)
    clusters = [
        fleet.cluster(
            f"c{i}",
            fleet.flavor(cpu=str(rng.choice([4, 8])), nodes=rng.randint(1, 2)),
            fleet.flavor(cpu="6", nodes=1),
            fleet.flavor(arch="arm64", cpu="8", nodes=rng.randint(1, 2)),
            cpu_price=str(rng.choice(["0.03", "0.04"])),
        )
        for i in range(4)
    ]
    jobs = [
        fleet.job(fleet.workload(f"j{i:03d}", kind="Deployment", cpu="1", replicas=3), seq=i + 1)
        for i in range(40)
    ]
    slow = _cycle(clusters, jobs, fast=False)
    fast = _cycle(clusters, jobs, fast=True)
    assert [a.flavors for a in fast.admitted] == [a.flavors for a in slow.admitted]
    assert fast.timings.calls.get("incremental-decided", 0) > 0
    spilled = [a for a in fast.admitted if len({c for c, _, _ in a.flavors}) < len(a.flavors)]
    assert spilled, "the case must place some job's pods on two flavors of one cluster"


LIMITS = {
    "cpu capability": ([fleet.queue("a", capability={"cpu": "40"}), fleet.queue("b")], []),
    "per-chip capability": (
        [
            fleet.queue("a", capability={"accelerator/nvidia-h100-80gb": "8"}),
            fleet.queue("b", capability={"cpu": "400", "accelerator/nvidia-a100-80gb": "16"}),
        ],
        [],
    ),
    "namespace quota": ([fleet.queue("a"), fleet.queue("b")], [fleet.frq("team", cpu="90")]),
    "parent capability": (
        [
            fleet.queue("org", capability={"nvidia.com/gpu": "12", "cpu": "60"}),
            fleet.queue("a", parent="org"),
            fleet.queue("b", parent="org", capability={"nvidia.com/gpu": "10"}),
        ],
        [],
    ),
    "both": (
        [fleet.queue("a", capability={"nvidia.com/gpu": "12"}), fleet.queue("b")],
        [fleet.frq("team", **{"nvidia.com/gpu": "40"})],
    ),
}


@pytest.mark.parametrize("limits", LIMITS.values(), ids=LIMITS.keys())
@pytest.mark.parametrize("seed", [5, 6])
def test_queue_capability_and_quota_decide_as_the_general_path(
    limits: tuple[list[object], list[object]], seed: int
) -> None:
    """While a limit leaves every chip open the incremental path decides; once it refuses
    one, the general path does (the filtered clusters move the cost bounds)."""
    queues, quotas = limits
    rng = random.Random(seed)
    clusters = _fleet(rng)
    jobs = _jobs(rng, 120)
    slow = _cycle(clusters, jobs, fast=False, queues=queues, quotas=quotas)
    fast = _cycle(clusters, jobs, fast=True, queues=queues, quotas=quotas)
    assert [str(a.ref) for a in fast.admitted] == [str(a.ref) for a in slow.admitted]
    assert _dump(fast) == _dump(slow)
    assert fast.reasons == slow.reasons
    assert any("capability" in r or "FederatedResourceQuota" in r for r in fast.reasons.values())
    assert fast.timings.calls.get("incremental-decided", 0) > 0


def test_runners_up_are_named_best_score_first_then_by_name() -> None:
    total = [50, 70, 70, 10, 70]
    order = incremental.top_order(np.array(total, dtype=np.int64), 4)
    assert order.tolist() == [1, 2, 4, 0]


def test_share_key_orders_like_the_exact_fraction() -> None:
    capacity = {"cpu": 3_000, "memory": 7 * 1024**3}
    rng = random.Random(9)
    for _ in range(300):
        used = [
            {"cpu": rng.randint(0, 3_000), "memory": rng.randint(0, 7 * 1024**3)} for _ in range(2)
        ]
        weights = [rng.randint(1, 4) for _ in range(2)]
        keys = [fairshare.ShareKey(u, capacity, w) for u, w in zip(used, weights, strict=True)]
        exact = [
            fairshare.share(ResourceList(u), capacity, weight=w)
            for u, w in zip(used, weights, strict=True)
        ]
        assert (keys[0] < keys[1]) == (exact[0] < exact[1])
        assert (keys[0] == keys[1]) == (exact[0] == exact[1])
    same = [
        fairshare.ShareKey({"cpu": 1_000}, capacity, 1),
        fairshare.ShareKey({"cpu": 2_000}, capacity, 2),
    ]
    assert same[0] == same[1] and not same[0] < same[1]


def test_bindings_built_in_the_cycle_are_what_validation_would_build() -> None:
    rng = random.Random(6)
    result = _cycle(_fleet(rng), _jobs(rng, 60), fast=True)
    phases = {b.status.phase for b in result.bindings}
    assert phases == {"Scheduled", "Pending"}
    for built in result.bindings:
        assert Binding.model_validate(built.model_dump(mode="json")) == built


def test_a_copy_of_a_built_binding_with_changes_leaves_the_others_as_they_were() -> None:
    """Bindings built in the cycle share one set of fields set per model class: a copy
    that updates a field must not reach the others through it."""
    rng = random.Random(6)
    first, second = _cycle(_fleet(rng), _jobs(rng, 4), fast=True).bindings[:2]
    every = set(type(first.spec).model_fields)
    changed = first.spec.model_copy(update={"queue": "elsewhere"})
    assert changed.queue == "elsewhere"
    assert first.spec.queue != "elsewhere"
    assert second.spec.model_fields_set == every == first.spec.model_fields_set
    assert Binding.model_validate(first.model_dump(mode="json")) == first
