"""A running Job whose Binding is lost from the registry (deleted by hand, or a damaged
registry) stays where its copies run: placed again, it is placed on the member its Works
and copies show, not moved to another member and started from scratch.

Why a test of its own: the copy's pods fill its member, and a placement made afresh
counted them against the very job they belong to, so the member read as full and the
job was moved (its copy deleted, its work lost) to a member that placed it anew.

Real pieces: etcd, the simulated members (reached over HTTP), the monitor, the scheduling
loop and the propagator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.monitor.monitor import ClusterMonitor
from federation.registry import embedded, keys
from federation.registry import store as st
from policies.models.binding import Binding
from policies.models.workload import Workload
from tests.integration.test_propagation_support import MEMBER, NAMES, Federation, started_federation
from tests.integration.test_scheduler_loop import MONITOR, bindings, scheduler_loop
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration

REF = keys.WorkloadRef("batch", "Job.batch", "train")


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def _train() -> Workload:
    """Two 12-core pods that run for a long while: each takes one of a CPU member's two
    16-core nodes, so once they run their member has no room for the job as a new one."""
    pod = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "work",
                "image": "registry.example.com/batch/train:1",
                "resources": {"requests": {"cpu": "12", "memory": "1Gi"}},
            }
        ],
    }
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "batch"},
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "template": {
                    "metadata": {"annotations": {"sim.fedctl.io/duration": "4h"}},
                    "spec": pod,
                },
            },
        }
    )


async def _copy(fed: Federation, cluster: str) -> dict[str, Any] | None:
    return await fed.member_object(cluster, "batch/v1", "Job", "batch", "train")


async def test_a_job_whose_binding_is_lost_is_placed_again_where_its_copy_runs(
    fed: Federation,
) -> None:
    await fed.put(_train())
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    fed.start()
    async with background(monitor.run(), scheduler_loop(fed).run()):

        async def scheduled() -> Binding | None:
            found = (await bindings(fed)).get("train")
            return found if found is not None and found.status.phase == "Scheduled" else None

        first = await wait_for(scheduled, timeout=30, message="train placed")
        (host,) = first.placement()

        async def running() -> dict[str, Any] | None:
            copy = await _copy(fed, host)
            return copy if ((copy or {}).get("status") or {}).get("active") == 2 else None

        before = await wait_for(running, timeout=20, message="both pods running on the host")

        gone = await fed.store.current_revision()
        assert await st.delete(fed.store, keys.binding_key(REF))

        async def placed_again() -> Binding | None:
            stored = await fed.bindings.get(keys.binding_key(REF))
            if stored is None or stored.obj.status.phase != "Scheduled":
                return None
            return stored.obj if stored.create_revision > gone else None

        again = await wait_for(placed_again, timeout=30, message="train placed again")
        assert again.placement() == {host: 2}
        after = await wait_for(running, timeout=30, message="the host's copy still running")
        assert after["metadata"]["uid"] == before["metadata"]["uid"]  # the same Job, not anew
        assert [c for c in NAMES if c != host and await _copy(fed, c)] == []
