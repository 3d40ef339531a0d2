"""A Job suspended while it runs gives back its queue's room and leaves its member; resumed,
it waits for room in its queue like any other job.

Real pieces: etcd, the simulated members (reached over HTTP), the monitor, the scheduling
loop and the propagator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.monitor.monitor import ClusterMonitor
from federation.registry import embedded
from policies.models.binding import Binding
from tests.integration.test_propagation_support import MEMBER, NAMES, Federation, started_federation
from tests.integration.test_scheduler_loop import MONITOR, bindings, job, queue, scheduler_loop
from tests.unit.scheduler import fleet
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration

SUSPENDED = "suspended (spec.suspend: true)"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def copies(fed: Federation, name: str) -> list[str]:
    return [c for c in NAMES if await fed.member_object(c, "batch/v1", "Job", "batch", name)]


async def test_a_suspended_job_frees_its_queue_and_resumes_through_it(fed: Federation) -> None:
    await fed.put(queue("qa", 2))
    jwait = job("jwait", "qa", parallelism=2, duration=None)
    await fed.put(jwait)
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    fed.start()
    async with background(monitor.run(), scheduler_loop(fed).run()):

        async def phase(name: str, wanted: str, reason: str = "") -> Binding | None:
            found = (await bindings(fed)).get(name)
            ok = found is not None and found.status.phase == wanted
            return found if ok and found.status.reason.startswith(reason) else None

        await wait_for(lambda: phase("jwait", "Scheduled"), timeout=15, message="jwait admitted")
        await wait_for(lambda: copies(fed, "jwait"), timeout=15, message="jwait on a member")

        await fed.put(fleet.respec(jwait, suspend=True))
        held = await wait_for(
            lambda: phase("jwait", "Pending", SUSPENDED), timeout=15, message="jwait suspended"
        )
        assert held.spec.clusters == []

        async def gone() -> bool:
            return await copies(fed, "jwait") == []

        await wait_for(gone, timeout=15, message="the suspended copy removed from its member")

        await fed.put(job("jblocked", "qa", parallelism=2, duration=None))
        await wait_for(lambda: phase("jblocked", "Scheduled"), timeout=15, message="jblocked in")

        await fed.put(fleet.respec(jwait, suspend=False))
        await wait_for(
            lambda: phase("jwait", "Pending", "queue qa at capability for cpu"),
            timeout=15,
            message="the resumed jwait waiting for its queue's room",
        )
        assert await copies(fed, "jwait") == []
