"""Suspending and resuming a batch/v1 Job, as the Job controller does it.

Suspending used to wipe the Job's status to `{}` for good while its pods ran on to
completion uncounted; a federation then read the Job as Pending forever.
"""

from __future__ import annotations

from typing import Any

from tests.sim.behaviour_support import JOB, POD, ManualCluster, job_body
from tests.sim.test_behaviour_workloads import CPU


def _active_pods(sim: ManualCluster) -> list[dict[str, Any]]:
    items, _ = sim.store.list(POD, "default", label_selector="job-name=j")
    return [p for p in items if p["status"].get("phase") in ("Pending", "Running")]


def _suspended(job: dict[str, Any]) -> dict[str, Any]:
    [cond] = [c for c in job["status"].get("conditions", ()) if c["type"] == "Suspended"]
    return {k: cond[k] for k in ("status", "reason", "message")}


def _set_suspend(sim: ManualCluster, value: bool) -> None:
    job = sim.get(JOB, "j")
    job["spec"]["suspend"] = value
    sim.store.update(JOB, job)


async def test_suspending_deletes_active_pods_and_keeps_counting() -> None:
    async with ManualCluster(CPU) as sim:
        sim.store.create(JOB, job_body("j", completions=3, parallelism=1, duration="10s"))
        await sim.advance(15)  # the first pod has succeeded, the second runs
        started = sim.get(JOB, "j")["status"]["startTime"]
        assert len(_active_pods(sim)) == 1
        _set_suspend(sim, True)
        await sim.advance(30)
        job = sim.get(JOB, "j")
        assert _active_pods(sim) == []
        assert {k: job["status"][k] for k in ("active", "succeeded", "failed")} == {
            "active": 0,
            "succeeded": 1,
            "failed": 0,
        }
        assert job["status"]["startTime"] == started
        assert _suspended(job) == {
            "status": "True",
            "reason": "JobSuspended",
            "message": "Job suspended",
        }
        assert [e["message"] for e in sim.events("Suspended")] == ["Job suspended"]


async def test_a_resumed_job_restarts_its_clock_and_completes() -> None:
    async with ManualCluster(CPU) as sim:
        sim.store.create(JOB, job_body("j", completions=2, parallelism=2, duration="10s"))
        await sim.advance(3)
        _set_suspend(sim, True)
        await sim.advance(20)
        before = sim.get(JOB, "j")["status"]["startTime"]
        _set_suspend(sim, False)
        await sim.settle()
        job = sim.get(JOB, "j")
        assert job["status"]["startTime"] > before
        assert _suspended(job) == {
            "status": "False",
            "reason": "JobResumed",
            "message": "Job resumed",
        }
        await sim.advance(30)
        job = sim.get(JOB, "j")
        assert job["status"]["succeeded"] == 2
        assert any(c["type"] == "Complete" for c in job["status"]["conditions"])


async def test_a_job_created_suspended_starts_no_pods_and_has_no_start_time() -> None:
    async with ManualCluster(CPU) as sim:
        body = job_body("j")
        body["spec"]["suspend"] = True
        sim.store.create(JOB, body)
        await sim.advance(10)
        job = sim.get(JOB, "j")
        assert _active_pods(sim) == []
        assert "startTime" not in job["status"]
        assert job["status"]["active"] == 0
        assert _suspended(job)["reason"] == "JobSuspended"
