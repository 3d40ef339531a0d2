"""A Job's federation status keeps Kubernetes' job fields, read from real member copies.

The federation object's status had only fedctl's health, phase and counts, so a pipeline
reading `.status.succeeded` or waiting for condition Complete or Failed had nothing to
read; and the simulated members ignored `activeDeadlineSeconds`, so a deadline's failure
could not be seen at all. Here a Job past its deadline and a Job that completes run on a
simulated member, and their statuses carry the times and the finishing condition.

Real pieces: etcd, the simulated members (reached over HTTP) and the propagator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.registry import embedded
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload
from tests.integration.test_propagation_support import Federation, started_federation
from tests.integration.test_scheduler_loop import job
from tests.unit.scheduler import fleet
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def test_a_job_s_status_says_how_it_ended_as_kubernetes_does(fed: Federation) -> None:
    late = fleet.respec(job("late", "default", duration="60s"), activeDeadlineSeconds=1)
    quick = job("quick", "default", duration="200ms")
    for workload in (late, quick):
        await fed.put(workload)
        await fed.bind(workload, {"us-east-cpu": (1, None)})
    fed.start()

    async def ended(workload: Workload, phase: str) -> WorkloadStatus | None:
        status = await fed.status(workload)
        return status if status is not None and status.phase == phase else None

    failed: WorkloadStatus = await wait_for(
        lambda: ended(late, "Failed"), timeout=20, message="late failed"
    )
    [condition] = failed.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "Failed",
        "True",
        "DeadlineExceeded",
    )
    assert failed.start_time is not None and failed.completion_time is None
    assert failed.running == 0

    done: WorkloadStatus = await wait_for(
        lambda: ended(quick, "Succeeded"), timeout=20, message="quick done"
    )
    [condition] = done.conditions
    assert (condition.type, condition.status) == ("Complete", "True")
    assert done.succeeded == 1
    assert done.start_time is not None and done.completion_time is not None
    assert done.start_time <= done.completion_time
