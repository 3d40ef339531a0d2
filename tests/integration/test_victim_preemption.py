"""A preempted job's copy is removed, its eviction task ends, and it may start again on
the cluster it was evicted from, long before the graceful timeout.

Real pieces: etcd, the simulated members (reached over HTTP), the propagator and the
failover controller, with the default graceful timeout (600 s). The scheduler's part is
played here by writing what it writes: the victim's Binding turned Pending with a Directly
eviction task for the cluster it ran on, then, once room frees, Scheduled there again.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.failover.controller import FailoverController
from federation.registry import embedded, keys
from federation.settings import FailoverSettings
from policies.models.binding import Binding, BindingStatus, EvictionTask
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    MEMBER,
    NAMES,
    Federation,
    ref_of,
    started_federation,
)
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration

HOME = NAMES[0]
REASON = "preempted by batch/Job.batch/urgent (priority 9, queue qa)"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def long_job(name: str) -> Workload:
    """A batch Job of one one-core pod that runs until deleted."""
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "batch"},
            "spec": {
                "parallelism": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "work",
                                "image": "registry.example.com/batch/work:1",
                                "resources": {"requests": {"cpu": "1", "memory": "64Mi"}},
                            }
                        ],
                    },
                },
            },
        }
    )


async def copy_on(fed: Federation, cluster: str, job: Workload) -> dict[str, Any] | None:
    return await fed.member_object(
        cluster, "batch/v1", "Job", job.namespace or "", job.metadata.name
    )


async def preempt(fed: Federation, job: Workload, cluster: str) -> None:
    key = keys.binding_key(ref_of(job))
    stored = await fed.bindings.get(key)
    assert stored is not None
    task = EvictionTask(
        cluster=cluster,
        reason=REASON,
        creation_time=dt.datetime.now(dt.UTC),
        replicas=1,
        purge_mode="Directly",
    )
    spec = stored.obj.spec.model_copy(update={"clusters": [], "eviction_tasks": [task]})
    victim = stored.obj.model_copy(
        update={"spec": spec, "status": BindingStatus(phase="Pending", reason=REASON)}
    )
    await fed.bindings.update(key, victim, revision=stored.revision)


async def binding_of(fed: Federation, job: Workload) -> Binding:
    stored = await fed.bindings.get(keys.binding_key(ref_of(job)))
    assert stored is not None
    return stored.obj


async def test_a_preempted_job_may_start_again_where_it_ran_once_its_copy_is_gone(
    fed: Federation,
) -> None:
    low = long_job("low")
    await fed.put(low)
    await fed.bind(low, {HOME: (1, None)})
    failover = FailoverController(fed.store, settings=FailoverSettings(), member_settings=MEMBER)
    assert failover.settings.graceful_timeout >= 600
    fed.start()
    async with background(failover.run()):
        first = await wait_for(lambda: copy_on(fed, HOME, low), timeout=15, message="low runs")

        await preempt(fed, low, HOME)

        async def copy_gone() -> bool:
            return await copy_on(fed, HOME, low) is None

        await wait_for(copy_gone, timeout=15, message="the victim's copy removed from its member")

        async def task_ended() -> bool:
            return (await binding_of(fed, low)).spec.eviction_tasks == []

        await wait_for(task_ended, timeout=15, message="the eviction task ended by failover")
        ended = await binding_of(fed, low)
        assert ended.status.phase == "Pending" and ended.placement() == {}

        # Room freed: the scheduler places the victim back on the cluster it ran on.
        await fed.bind(low, {HOME: (1, None)})
        again = await wait_for(lambda: copy_on(fed, HOME, low), timeout=15, message="low again")
        assert again["metadata"]["uid"] != first["metadata"]["uid"], "a new copy, not the old"
        homes = [name for name in NAMES if await copy_on(fed, name, low) is not None]
        assert homes == [HOME]
