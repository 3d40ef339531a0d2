"""A running Job whose parallelism is raised past its member's room stays on that member:
its copy there is updated, not deleted, so the completions it counted are kept, and the
pods that do not fit wait Pending there, as Kubernetes runs a Job's raised parallelism.

Real pieces: etcd, the simulated members (reached over HTTP), the monitor, the scheduling
loop and the propagator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.monitor.monitor import ClusterMonitor
from federation.registry import embedded
from policies.models.binding import Binding
from policies.models.workload import Workload
from tests.integration.test_propagation_support import MEMBER, NAMES, Federation, started_federation
from tests.integration.test_scheduler_loop import MONITOR, bindings, scheduler_loop
from tests.unit.scheduler import fleet
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def _sweep(parallelism: int) -> Workload:
    """A Job of 12-core pods, 20 s of simulated time each: a CPU member (two 16-core
    nodes) runs two of them at once, so a third waits there for a node to free."""
    pod = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "work",
                "image": "registry.example.com/batch/work:1",
                "resources": {"requests": {"cpu": "12", "memory": "1Gi"}},
            }
        ],
    }
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "sweep", "namespace": "batch"},
            "spec": {
                "parallelism": parallelism,
                "completions": 60,
                "template": {
                    "metadata": {"annotations": {"sim.fedctl.io/duration": "20s"}},
                    "spec": pod,
                },
            },
        }
    )


async def _copy(fed: Federation, cluster: str) -> dict[str, Any] | None:
    return await fed.member_object(cluster, "batch/v1", "Job", "batch", "sweep")


async def test_a_raise_past_the_members_room_keeps_the_job_and_its_completions_there(
    fed: Federation,
) -> None:
    await fed.put(_sweep(2))
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    fed.start()
    async with background(monitor.run(), scheduler_loop(fed).run()):

        async def scheduled() -> Binding | None:
            found = (await bindings(fed)).get("sweep")
            return found if found is not None and found.status.phase == "Scheduled" else None

        first = await wait_for(scheduled, timeout=15, message="sweep placed")
        (host,) = first.placement()

        async def done(at_least: int) -> dict[str, Any] | None:
            copy = await _copy(fed, host)
            counted = ((copy or {}).get("status") or {}).get("succeeded") or 0
            return copy if counted >= at_least else None

        before = await wait_for(lambda: done(2), timeout=20, message="completions on the host")

        await fed.put(fleet.respec(_sweep(2), parallelism=3))

        async def raised() -> Binding | None:
            found = await scheduled()
            return found if found is not None and found.placement() == {host: 3} else None

        kept = await wait_for(raised, timeout=15, message="the raise placed on the host")
        assert kept.status.reason == (
            f"parallelism 3 kept on {host}, whose room held 2 of its pods when placed: the"
            " other 1 waits Pending there until room frees (a running job is never moved"
            " for a size change)"
        )

        async def updated() -> dict[str, Any] | None:
            copy = await _copy(fed, host)
            return copy if copy and copy["spec"].get("parallelism") == 3 else None

        after = await wait_for(updated, timeout=15, message="the host's copy raised to 3")
        assert after["metadata"]["uid"] == before["metadata"]["uid"]  # the same Job, not anew
        assert after["status"]["succeeded"] >= before["status"]["succeeded"]
        assert [c for c in NAMES if c != host and await _copy(fed, c)] == []
