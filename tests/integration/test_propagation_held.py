"""A copy kept for its member's return is read there again before failover judges it.

A batch job evicted Directly from a member that stopped answering, with nowhere else to go,
keeps its copy there until failover, seeing the member back, gives that copy back as it
is (or purges it). What the workload status said of the copy was its last report before
the outage: a job that finished meanwhile read Running, was given back as running, and
ran a second time. The propagator reads such a copy afresh once the member answers, and
marks its row `stale` until it has. Real etcd and simulated members; Bindings and member
statuses written as failover and the monitor would.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from clusters.sim import resources
from federation.registry import codec, embedded, keys
from policies.models.binding import Binding, BindingStatus, EvictionTask
from policies.models.cluster import UNREACHABLE_TAINT, ClusterStatus, Condition, Taint
from policies.models.work import ClusterWorkloadStatus
from tests.integration.test_ha import batch_job
from tests.integration.test_propagation_support import (
    NAMES,
    Federation,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOME = NAMES[0]
_BRIEF = batch_job("brief", "q", duration="10m")  # 12 s at the fleet's speed
BRIEF = _BRIEF.model_copy(  # as the API stores it: the uid tells this object's end apart
    update={"metadata": _BRIEF.metadata.model_copy(update={"uid": "b41ef-0001"})}
)


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def job_on_home(fed: Federation, cluster: str = HOME) -> dict[str, Any] | None:
    """The member's own Job, read in the simulator (whether its API answers or not)."""
    jobs = resources.by_kind("batch/v1", "Job")
    assert jobs is not None
    return fed.fleet[cluster].store.try_get(jobs, "batch", "brief")


async def member(fed: Federation, *, ready: bool) -> None:
    """HOME's status as the monitor and failover leave it while HOME is away: unreachable,
    then answering again with the taint failover has not lifted yet."""
    now = dt.datetime.now(dt.UTC)
    status = ClusterStatus(
        conditions=[
            Condition(type="Ready", status="True" if ready else "False", last_transition_time=now)
        ],
        taints=[Taint(key=UNREACHABLE_TAINT, effect="NoExecute", time_added=now)],
    )
    await codec.TypedStore(fed.store, codec.Codec(ClusterStatus)).put(
        keys.cluster_status_key(HOME), status
    )


async def evicted(fed: Federation) -> None:
    """BRIEF's Binding as failover leaves it: evicted Directly from HOME, placed nowhere."""
    key = keys.binding_key(ref_of(BRIEF))
    stored = await fed.bindings.get(key)
    assert stored is not None
    task = EvictionTask(
        cluster=HOME,
        reason="untolerated taint",
        creation_time=dt.datetime.now(dt.UTC),
        replicas=1,
        purge_mode="Directly",
    )
    spec = stored.obj.spec.model_copy(update={"clusters": [], "eviction_tasks": [task]})
    left: Binding = stored.obj.model_copy(
        update={"spec": spec, "status": BindingStatus(phase="Pending", reason="no room")}
    )
    assert left.waits_on(HOME) is not None
    await fed.bindings.put(key, left)


async def finished_while_away(fed: Federation) -> dict[str, Any]:
    """BRIEF placed on HOME, evicted Directly with nowhere else to go when HOME went down,
    finished there meanwhile; HOME answers again. Returns HOME's Job as first created."""
    await fed.put(BRIEF)
    await fed.bind(BRIEF, {HOME: (1, None)})
    fed.start()
    first = await wait_for(lambda: job_on_home(fed), timeout=15, message=f"job on {HOME}")

    await fed.admin(HOME, "fault", {"mode": "down"})
    await member(fed, ready=False)
    await evicted(fed)

    def done() -> bool:
        job = job_on_home(fed)
        return job is not None and int((job.get("status") or {}).get("succeeded") or 0) > 0

    await wait_for(done, timeout=30, message=f"the job finished on {HOME} while it was away")
    await fed.admin(HOME, "heal", {})
    await member(fed, ready=True)
    return first


async def read(fed: Federation) -> ClusterWorkloadStatus | None:
    """HOME's row in BRIEF's status, once it reads the copy finished."""
    status = await fed.status(BRIEF)
    rows = {r.cluster: r for r in status.clusters} if status is not None else {}
    row = rows.get(HOME)
    return row if row is not None and row.phase == "Succeeded" else None


async def test_a_copy_that_finished_while_its_member_was_away_reads_finished_on_return(
    fed: Federation,
) -> None:
    first = await finished_while_away(fed)

    row = await wait_for(lambda: read(fed), timeout=30, message=f"the copy on {HOME} read finished")
    assert not row.stale and row.leaving
    status = await fed.status(BRIEF)
    assert status is not None and status.phase == "Succeeded", "the workload is finished"
    again = job_on_home(fed)
    assert again is not None and again["metadata"]["uid"] == first["metadata"]["uid"]
    assert await fed.works.get(keys.work_key(HOME, ref_of(BRIEF))) is not None, (
        "kept for failover to give back"
    )
