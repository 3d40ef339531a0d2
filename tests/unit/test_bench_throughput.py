"""bench/scheduler.py part 1 at a small size: the throughput part still runs the cycle it
times. It wraps the admitter's `settle` to time each decision, and a new keyword on
`settle` broke every benchmark run (a TypeError) with no test failing."""

from __future__ import annotations

import random

import pytest

from bench import scheduler as bench_scheduler
from federation.scheduler import admission
from federation.scheduler import placement as pl


def test_the_throughput_part_times_every_decision_of_a_small_fleet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The part wraps these two methods for good; set here, they are put back afterwards.
    monkeypatch.setattr(pl.Placer, "place", pl.Placer.place)
    monkeypatch.setattr(admission.Admitter, "settle", admission.Admitter.settle)
    rng = random.Random(7)
    clusters = bench_scheduler.make_fleet(12, rng)
    templates = bench_scheduler.make_templates(rng)
    jobs = bench_scheduler.make_jobs(300, templates, rng, bench_scheduler.QUEUE_NAMES)
    part, result, _ = bench_scheduler.throughput(clusters, jobs)
    assert part["decisions"] == result.decisions > 0
    assert part["admitted"] + part["pending"] == len(jobs)
    assert 0 < part["latency_us_p50"] <= part["latency_us_p99"]
