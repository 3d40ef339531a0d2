"""bench/scheduler.py part 3 at a small size: the quality figures still come out, and the two
ILP references keep the relations that make them references.

The priority-order ILP is what the 98 % quality goal is read against; a slip in its tiers or
floors would show a flattering or damning ratio with nothing else failing. What is checked
here holds for every instance: an optimum over all feasible sets is at least any one of
them, whichever set it is compared with. The instances are small but contested (not every
job fits), or there would be nothing to compare.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from bench import scheduler as bench_scheduler

WEIGHTINGS = ("default_weights", "cost_only")
# HiGHS stops a MIP once within this relative gap; a cost "optimum" may be that much high.
MIP_GAP = 1e-3


@pytest.fixture(
    scope="module",
    params=[
        pytest.param((4, 200, 7), id="4 clusters, 200 jobs: we trail the optimum in a low tier"),
        pytest.param((4, 150, 1), id="4 clusters, 150 jobs: we match the optimum tier by tier"),
    ],
)
def report(request: pytest.FixtureRequest) -> dict[str, Any]:
    clusters, jobs, seed = request.param
    out: dict[str, Any] = bench_scheduler.quality(
        random.Random(seed), clusters=clusters, jobs=jobs, priority_cost=True
    )
    return out


def tiers(counts: dict[str, int]) -> list[int]:
    """Admissions per priority, highest first."""
    return [counts[t] for t in sorted(counts, key=int, reverse=True)]


def dominates(upper: list[int], lower: list[int]) -> bool:
    """Lexicographic order: from the top tier, the first count that differs is larger."""
    return upper >= lower


def test_the_instance_is_contested_and_every_solve_is_optimal(report: dict[str, Any]) -> None:
    assert report["admitted_optimal"] < report["jobs"], "nothing contested, nothing compared"
    assert report["ilp_optimal"]
    priority = report["priority_order_ilp"]
    assert priority["all_optimal"], priority["solves"]
    assert [s["priority"] for s in priority["solves"]] == [3, 2, 1, 0, "cost"]


def test_tier_counts_add_up_to_the_totals(report: dict[str, Any]) -> None:
    priority = report["priority_order_ilp"]
    assert sum(priority["admitted_by_priority"].values()) == priority["admitted"]
    assert sum(priority["plain_ilp_admitted_by_priority"].values()) == report["admitted_optimal"]
    for label in WEIGHTINGS:
        ours = priority[label]
        assert ours["admitted"] == report[label]["admitted"], label
        assert sum(ours["admitted_by_priority"].values()) == ours["admitted"], label


def test_the_plain_ilp_admits_at_least_as_many_as_anyone(report: dict[str, Any]) -> None:
    """Its admission set is the largest over all feasible sets, the tiered one included."""
    assert report["admitted_optimal"] >= report["priority_order_ilp"]["admitted"]
    for label in WEIGHTINGS:
        assert report["admitted_optimal"] >= report[label]["admitted"], label


def test_the_priority_order_ilp_dominates_every_feasible_set_tier_by_tier(
    report: dict[str, Any],
) -> None:
    priority = report["priority_order_ilp"]
    best = tiers(priority["admitted_by_priority"])
    assert dominates(best, tiers(priority["plain_ilp_admitted_by_priority"]))
    for label in WEIGHTINGS:
        # Our admissions are a feasible set of the same model (its cost ILP found a
        # placement for exactly them), so the tiered optimum cannot be behind them.
        assert report[label]["cost_optimal_same_jobs"] is not None, label
        assert dominates(best, tiers(priority[label]["admitted_by_priority"])), label


def test_ratios_are_ours_over_each_reference(report: dict[str, Any]) -> None:
    priority = report["priority_order_ilp"]
    for label in WEIGHTINGS:
        ours = report[label]["admitted"]
        assert 0 < report[label]["admissions_ratio"] <= 1.0, label
        # Not bounded by 1 in general: fewer high-priority admissions can leave room for
        # more low ones. Equal tiers mean an equal total.
        ratio = priority[label]["admissions_ratio_priority_order"]
        assert ratio == round(ours / priority["admitted"], 4), label
        assert ratio > 0, label
        if priority[label]["admitted_by_priority"] == priority["admitted_by_priority"]:
            assert ratio == 1.0, label


def test_the_least_cost_stage_is_no_dearer_than_our_set_when_tiers_match(
    report: dict[str, Any],
) -> None:
    """With our tier counts equal to the optimum's, our set is feasible for the cost stage."""
    priority = report["priority_order_ilp"]
    assert priority["cost"] is not None
    for label in WEIGHTINGS:
        if priority[label]["admitted_by_priority"] == priority["admitted_by_priority"]:
            same_jobs = report[label]["cost_optimal_same_jobs"]
            assert priority["cost"] <= same_jobs * (1 + MIP_GAP), label
