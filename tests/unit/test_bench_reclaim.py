"""bench/scheduler.py part 5 at a small size: the reclaim scenario is what it says (the
lender borrows every core, the owner's jobs get in only by reclaim) and its figures add up."""

from __future__ import annotations

from bench import scheduler as bench_scheduler


def test_the_reclaim_scenario_reclaims_what_it_owes_and_no_more() -> None:
    report = bench_scheduler.reclaim(members=20, jobs=8)

    assert report["borrowed_jobs"] == 8 * 20  # the lender holds every core
    owed, got = report["owed_cores"], report["cores_reclaimed"]
    # Jobs of 2-3 cores: all the owed cores but fewer than a job asks.
    assert owed - 3 < got <= owed
    assert report["victims"] == got  # one-core victims, each freeing what a job took
    assert report["admitted_by_reclaim"] >= got // 3
