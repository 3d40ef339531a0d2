"""A member that recovers keeps the copies it ran through its absence wherever the
placement wants them there again, instead of losing them and starting them anew:

- a workload with nowhere else to go is placed back, running copy and all, instead of
  waiting out the graceful timeout;
- a service whose new placement covered for the member is placed back on it with its
  copy there kept (deleted and applied again, it left a capacity dip while the members
  that had covered for it shrank);
- a batch job evicted Directly that found no room elsewhere keeps its copy there (killed
  and started again, it lost all its work although it never ran twice), and one whose
  copy finished while the member was away is finished, never run there again.

Real pieces: etcd, a `fedctl controller` process (monitor, scheduler, propagator and
failover, with the default graceful timeout of 600 s), simulated members faulted through
their `/_sim` fault API.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from clusters.sim import resources
from federation.registry import codec, embedded, keys
from policies.models.base import KubeObject
from policies.models.binding import Binding
from policies.models.cluster import ClusterStatus
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_ha import Controllers, batch_job, controllers, cpu_queue, submit
from tests.integration.test_propagation_support import (
    NAMES,
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import background, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOME, OTHER = NAMES[0], NAMES[2]
WEB = deployment("web", 2)
HALVED = deployment("halved", 4)
JOB = batch_job("train", "q", duration="1h")
BRIEF = batch_job("brief", "q", duration="10m")  # 12 s at the fleet's speed
SWEEP = batch_job("sweep", "q", duration="1h")


def policy(
    name: str, namespace: str, kind: tuple[str, str], clusters: list[str], scheduling: Any
) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "resourceSelectors": [{"apiVersion": kind[0], "kind": kind[1]}],
                "placement": {
                    "clusterAffinity": {"clusterNames": clusters},
                    "replicaScheduling": scheduling,
                },
            },
        }
    )


def only_home() -> PropagationPolicy:
    return policy(
        "web",
        "web",
        ("apps/v1", "Deployment"),
        [HOME],
        {"replicaSchedulingType": "Duplicated"},
    )


def halves() -> PropagationPolicy:
    """Static weights 1:1: the member that comes back gets its half again."""
    weights = [{"targetCluster": {"clusterNames": [c]}, "weight": 1} for c in (HOME, OTHER)]
    return policy(
        "halved",
        "web",
        ("apps/v1", "Deployment"),
        [HOME, OTHER],
        {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": weights},
        },
    )


@contextlib.asynccontextmanager
async def serving(
    etcd: embedded.EmbeddedEtcd, tmp_path: Path, objects: list[KubeObject]
) -> AsyncIterator[Controllers]:
    """A `fedctl controller` (graceful timeout 600 s) that was given `objects`."""
    async with (
        controllers(etcd.url, tmp_path, 1, FEDCTL_FAILOVER__GRACEFUL_TIMEOUT="600") as group,
        aiohttp.ClientSession() as session,
    ):
        await submit(session, group.replicas[0].url, objects)
        yield group


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def binding(fed: Federation) -> Binding | None:
    return await binding_of(fed, WEB)


async def copy(fed: Federation) -> dict[str, Any] | None:
    return await fed.member_object(HOME, "apps/v1", "Deployment", "web", "web")


async def test_a_member_back_before_the_graceful_timeout_keeps_its_running_copy(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    async with serving(own_etcd, tmp_path, [only_home(), WEB]):

        async def placed() -> bool:
            b = await binding(fed)
            return b is not None and b.placement() == {HOME: 2} and not b.spec.eviction_tasks

        await wait_for(placed, timeout=30, message=f"web placed on {HOME}")
        first = await wait_for(lambda: copy(fed), timeout=30, message=f"web running on {HOME}")

        await fed.admin(HOME, "fault", {"mode": "down"})

        async def evicted() -> Binding | None:
            b = await binding(fed)
            return b if b is not None and b.spec.eviction_tasks else None

        left = await wait_for(evicted, timeout=30, message=f"web evicted from {HOME}")
        assert left.placement() == {} and left.status.phase == "Pending"
        assert [(t.cluster, t.purge_mode) for t in left.spec.eviction_tasks] == [
            (HOME, "Gracefully")
        ]

        await fed.admin(HOME, "heal", {})

        async def back() -> Binding | None:
            b = await binding(fed)
            home = b is not None and b.placement() == {HOME: 2} and not b.spec.eviction_tasks
            return b if home else None

        # Kept barred, the workload would wait for the 600 s graceful timeout, lose the
        # copy it still runs on HOME, and start again there.
        returned = await wait_for(back, timeout=60, message=f"web placed back on {HOME}")
        assert returned.status.phase == "Scheduled"
        again = await copy(fed)
        assert again is not None, f"the copy on {HOME} was deleted"
        assert again["metadata"]["uid"] == first["metadata"]["uid"], "adopted, not recreated"


async def binding_of(fed: Federation, workload: Workload) -> Binding | None:
    stored = await fed.bindings.get(keys.binding_key(ref_of(workload)))
    return stored.obj if stored is not None else None


async def placed(fed: Federation, workload: Workload, placement: dict[str, int]) -> bool:
    b = await binding_of(fed, workload)
    return (
        b is not None
        and b.status.phase == "Scheduled"
        and b.placement() == placement
        and not b.spec.eviction_tasks
    )


async def test_a_service_placed_back_on_a_returning_member_keeps_its_running_copy(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    async with serving(own_etcd, tmp_path, [halves(), HALVED]):
        await wait_for(
            lambda: placed(fed, HALVED, {HOME: 2, OTHER: 2}), timeout=30, message="web halved"
        )

        async def running() -> dict[str, Any] | None:
            return await fed.member_object(HOME, "apps/v1", "Deployment", "web", "halved")

        first = await wait_for(running, timeout=30, message=f"web running on {HOME}")

        await fed.admin(HOME, "fault", {"mode": "down"})

        async def covered() -> bool:
            b = await binding_of(fed, HALVED)
            status = await fed.status(HALVED)
            rows = {r.cluster: r for r in status.clusters} if status is not None else {}
            other = rows.get(OTHER)
            return (
                b is not None
                and b.placement() == {OTHER: 4}
                and other is not None
                and other.up
                and status is not None
                and status.ready_replicas == 4
            )

        # The new placement is whole while the member is still away: that is when the old
        # copy's task ended, and its deletion waited for the member to answer again.
        await wait_for(covered, timeout=60, message=f"web 4/4 ready on {OTHER}")

        await fed.admin(HOME, "heal", {})
        await wait_for(
            lambda: placed(fed, HALVED, {HOME: 2, OTHER: 2}),
            timeout=60,
            message=f"web halved again, back on {HOME}",
        )
        again = await running()
        assert again is not None, f"the copy on {HOME} was deleted"
        assert again["metadata"]["uid"] == first["metadata"]["uid"], "kept, not recreated"


async def test_a_job_with_nowhere_else_to_go_keeps_its_running_copy_on_return(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    await fed.put(cpu_queue("q", 8))
    home_only = policy("train", "batch", ("batch/v1", "Job"), [HOME], None)
    async with serving(own_etcd, tmp_path, [home_only, JOB]):
        await wait_for(lambda: placed(fed, JOB, {HOME: 1}), timeout=30, message="job placed")

        async def running() -> dict[str, Any] | None:
            return await fed.member_object(HOME, "batch/v1", "Job", "batch", "train")

        first = await wait_for(running, timeout=30, message=f"job running on {HOME}")

        await fed.admin(HOME, "fault", {"mode": "down"})

        left = await wait_for(
            lambda: nowhere(fed, JOB), timeout=60, message=f"job evicted from {HOME}"
        )
        assert [(t.cluster, t.purge_mode) for t in left.spec.eviction_tasks] == [(HOME, "Directly")]

        await fed.admin(HOME, "heal", {})
        await wait_for(
            lambda: placed(fed, JOB, {HOME: 1}), timeout=60, message=f"job back on {HOME}"
        )
        again = await running()
        assert again is not None, f"the job's copy on {HOME} was deleted"
        assert again["metadata"]["uid"] == first["metadata"]["uid"], "kept, not started again"


async def test_a_job_that_finished_while_its_member_was_away_is_never_run_again(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    """Its copy ran to the end while its member did not answer: on the member's return the
    workload reads Succeeded, as the member says, and the finished copy is neither deleted
    nor applied again (a 600 s chaos run saw such a job Succeeded, then Running)."""
    await fed.put(cpu_queue("q", 8))
    home_only = policy("brief", "batch", ("batch/v1", "Job"), [HOME], None)
    phases: list[str | None] = []

    async def phase() -> str | None:
        """The workload's phase now, noted where it changed."""
        status = await fed.status(BRIEF)
        now = status.phase if status is not None else None
        if not phases or phases[-1] != now:
            phases.append(now)
        return now

    async def sample() -> None:
        while True:
            await phase()
            await asyncio.sleep(0.05)

    def on_member() -> dict[str, Any] | None:
        return job_on(fed, HOME, "brief")

    async with (
        serving(own_etcd, tmp_path, [home_only, BRIEF]),
        background(sample()),
    ):
        await wait_for(lambda: placed(fed, BRIEF, {HOME: 1}), timeout=30, message="job placed")
        first = await wait_for(on_member, timeout=30, message=f"job running on {HOME}")

        await fed.admin(HOME, "fault", {"mode": "down"})

        left = await wait_for(
            lambda: nowhere(fed, BRIEF), timeout=30, message=f"job evicted from {HOME}"
        )
        assert [(t.cluster, t.purge_mode) for t in left.spec.eviction_tasks] == [(HOME, "Directly")]

        def done() -> bool:
            job = on_member()
            return job is not None and int((job.get("status") or {}).get("succeeded") or 0) > 0

        await wait_for(done, timeout=30, message=f"the job finished on {HOME} while it was away")
        await fed.admin(HOME, "heal", {})

        async def settled() -> Binding | None:
            b = await binding_of(fed, BRIEF)
            finished = await phase() == "Succeeded"
            back = await recovered(fed, HOME)
            bound = b is not None and b.status.phase == "Scheduled" and not b.spec.eviction_tasks
            return b if finished and back and bound else None

        end = await wait_for(settled, timeout=60, message=f"the job Succeeded, {HOME} recovered")
        assert end.placement() == {HOME: 1}, "it ran there"
        after = phases[phases.index("Succeeded") :]
        assert after == ["Succeeded"], f"finished, then {after[1:]}: run again"
        again = on_member()
        assert again is not None, f"the finished copy on {HOME} was deleted"
        assert again["metadata"]["uid"] == first["metadata"]["uid"], "kept, not started again"
        assert int((again.get("status") or {}).get("active") or 0) == 0


async def test_a_job_placed_elsewhere_since_its_eviction_does_not_get_its_old_copy_back(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    """Evicted from HOME, the job ran on OTHER, then was evicted from OTHER too before HOME
    returned: HOME's copy is no longer the job's. Given back (a 600 s chaos run saw it),
    it ran beside the copy OTHER still had, and a job that had finished on OTHER started
    again on HOME. HOME's return deletes it, as any stale copy."""
    await fed.put(cpu_queue("q", 8))
    both = policy("sweep", "batch", ("batch/v1", "Job"), [HOME, OTHER], None)
    await fed.admin(OTHER, "fault", {"mode": "down"})  # the job starts on HOME
    async with serving(own_etcd, tmp_path, [both, SWEEP]):
        await wait_for(lambda: placed(fed, SWEEP, {HOME: 1}), timeout=30, message="on HOME")
        first = await wait_for(
            lambda: job_on(fed, HOME, "sweep"), timeout=30, message=f"job running on {HOME}"
        )
        await fed.admin(OTHER, "heal", {})
        await wait_for(lambda: recovered(fed, OTHER), timeout=30, message=f"{OTHER} back")

        await fed.admin(HOME, "fault", {"mode": "down"})

        async def on_other() -> bool:
            b = await binding_of(fed, SWEEP)
            return b is not None and b.status.phase == "Scheduled" and b.placement() == {OTHER: 1}

        await wait_for(on_other, timeout=30, message=f"job moved to {OTHER}")
        await wait_for(
            lambda: job_on(fed, OTHER, "sweep"), timeout=30, message=f"job running on {OTHER}"
        )
        await fed.admin(OTHER, "fault", {"mode": "down"})
        left = await wait_for(
            lambda: nowhere(fed, SWEEP, tasks=2), timeout=30, message=f"job evicted from {OTHER}"
        )
        assert {t.cluster for t in left.spec.eviction_tasks} == {HOME, OTHER}

        await fed.admin(HOME, "heal", {})
        await wait_for(lambda: recovered(fed, HOME), timeout=60, message=f"{HOME} back")
        again = job_on(fed, HOME, "sweep")
        assert again is None or again["metadata"]["uid"] != first["metadata"]["uid"], (
            f"{HOME}'s copy from before the move was given back"
        )
        b = await binding_of(fed, SWEEP)
        assert b is not None and not b.status.reason.startswith("Kept on")


def job_on(fed: Federation, cluster: str, name: str) -> dict[str, Any] | None:
    """The member's own Job `batch/<name>`, read in the simulator (whether its API answers
    or not)."""
    jobs = resources.by_kind("batch/v1", "Job")
    assert jobs is not None
    return fed.fleet[cluster].store.try_get(jobs, "batch", name)


async def nowhere(fed: Federation, workload: Workload, *, tasks: int = 1) -> Binding | None:
    """`workload`'s Binding once it is Pending on no member with `tasks` eviction tasks."""
    b = await binding_of(fed, workload)
    evicted = (
        b is not None
        and b.status.phase == "Pending"
        and not b.spec.clusters
        and len(b.spec.eviction_tasks) == tasks
    )
    return b if evicted else None


async def recovered(fed: Federation, cluster: str) -> bool:
    """`cluster` is Ready and failover has lifted its taints (returning copies settled)."""
    stored = await codec.TypedStore(fed.store, codec.Codec(ClusterStatus)).get(
        keys.cluster_status_key(cluster)
    )
    return stored is not None and stored.obj.ready() and not stored.obj.taints
