"""bench/loop.py at a tiny scale: the scheduling-loop benchmark still runs end to end.

The benchmark is how changes to the loop, reconcile and accounting are measured; this keeps
it working (real etcd of its own, a real SchedulerLoop) as those change, and checks that
what it reports is complete: every figure measured, the whole burst bound.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench import loop as bench_loop

pytestmark = pytest.mark.integration

TIMINGS = (
    "queue_status_from_loop_s",
    "queue_status_from_registry_s",
    "load_s",
    "first_cycle_s",
    "idle_cycle_s",
    "submit_to_bound_s",
    "burst_1000_s",
    "burst_first_bound_s",
    "status_write_cycle_s",
    "status_write_to_idle_s",
)


def positive(value: Any) -> bool:
    return isinstance(value, int | float) and value > 0


async def test_the_loop_bench_measures_everything_and_binds_the_whole_burst() -> None:
    report = await bench_loop.run(
        [
            "--clusters",
            "5",
            "--admitted",
            "200",
            "--burst",
            "300",
            "--repeats",
            "2",
            "--backlog",
            "1500",
        ]
    )

    assert report["admitted"] == 200
    assert report["setup"]["admit_cycle_s"] > 0
    for key in TIMINGS:
        if key.startswith("status_write") and report["status_write_cycles_triggered"] == 0:
            continue  # a loop that skips heartbeat-only writes costs no cycle: reported as 0
        summary = report[key]
        assert positive(summary["p50"]), key
        assert positive(summary["max"]), key
        assert len(summary["runs"]) == (4 if key == "idle_cycle_s" else 2), key
        assert all(positive(v) for v in summary["runs"]), key
    # A fresh loop adopts what is bound and re-places nothing; an idle cycle decides nothing.
    assert report["replaced_on_load"] == 0
    assert report["idle_cycle_decisions"] == 0
    assert report["burst"] == 300
    assert report["burst_bound_min"] == 300
    assert report["backlog_bound"] == 1500
    assert 0 <= report["backlog_event_loop_lag_p99_s"] <= report["backlog_event_loop_lag_max_s"]
    assert positive(report["backlog_all_bound_s"]) and positive(report["backlog_jobs_per_s"])
    # 1,500 waiting: more than one cycle's batch of 1,000, fewer than ten cycles.
    assert 2 <= report["backlog_cycles"] < 10
    assert report["admitted_at_end"] == 200 + 2 + 2 * 300 + 1500
    assert all(positive(n) for n in report["burst_cycles"])
    assert positive(report["loop_cycles"])
    assert positive(report["peak_rss_mib"])
    assert positive(report["rss_after_load_mib"])
