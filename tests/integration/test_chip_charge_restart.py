"""A job written for `nvidia.com/gpu` that runs on Ascend holds its queue's Ascend chips,
before and after a restart, and leaves its NVIDIA capability to NVIDIA work.

Real pieces: etcd, simulated members probed over HTTP by the cluster monitor, the
AcceleratorProfiles of the examples, two scheduling loops one after the other on the same
registry (the second reads what the first admitted back from its Bindings). It used to
charge 16 `nvidia.com/gpu` for the Ascend job: a 1-GPU A100 job was then refused at the
queue's NVIDIA capability, and the queue view showed no Ascend chip in use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest

from federation import clock
from federation.monitor.monitor import ClusterMonitor
from federation.registry import embedded
from federation.scheduler import queue_view
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.queue import Queue
from policies.models.workload import Workload
from tests.integration.test_propagation_support import MEMBER, Federation, started_federation
from tests.integration.test_scheduler_loop import MONITOR
from tests.integration.test_scheduler_restart import placed
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration

GPU, NPU = "nvidia.com/gpu", "huawei.com/Ascend910"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def gpu_job(name: str, *, pods: int, gpus: int, chips: str) -> Workload:
    """A Job of `pods` pods written for NVIDIA, accepting `chips`, in queue ml-research."""
    requests = {"cpu": "4", "memory": "16Gi", GPU: str(gpus)}
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": "ml",
                "annotations": {"fedctl.io/queue": "ml-research", "fedctl.io/chips": chips},
            },
            "spec": {
                "parallelism": pods,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "trainer",
                                "image": "registry.example.com/ml/train:1",
                                "resources": {"requests": requests, "limits": {GPU: str(gpus)}},
                            }
                        ],
                    }
                },
            },
        }
    )


def loop_publishing(fed: Federation, published: queue_view.Published) -> SchedulerLoop:
    return SchedulerLoop(
        fed.store,
        settings=SchedulerSettings(),
        clock=clock.real,
        debounce=0.05,
        queue_view=published,
    )


def used(published: queue_view.Published) -> Mapping[str, int] | None:
    latest = published.latest()
    return latest[0].tally.used.get("ml-research") if latest is not None else None


async def test_an_ascend_placement_holds_ascend_chips_across_a_restart(fed: Federation) -> None:
    await fed.put(
        Queue.model_validate(
            {
                "metadata": {"name": "ml-research"},
                "spec": {"capability": {"cpu": "256", "memory": "2Ti", GPU: "16", NPU: "16"}},
            }
        )
    )
    ft = gpu_job("ft", pods=2, gpus=8, chips="ascend-910b,nvidia-a100-80gb")
    await fed.put(ft)
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    async with background(monitor.run()):
        first = queue_view.Published()
        async with background(loop_publishing(fed, first).run()):
            await placed(fed, ft, {"cn-north-ascend": 2})
            await wait_for(
                lambda: (used(first) or {}).get(NPU) == 16_000,
                timeout=15,
                message="16 Ascend chips charged to ml-research",
            )
            assert (used(first) or {}).get(GPU, 0) == 0
        # Stopped: a fresh loop reads the Ascend job's charge back from its Binding.
        small = gpu_job("small", pods=1, gpus=1, chips="nvidia-a100-80gb")
        await fed.put(small)
        second = queue_view.Published()
        async with background(loop_publishing(fed, second).run()):
            await placed(fed, small, {"us-east-a100": 1})
            await wait_for(
                lambda: (used(second) or {}).get(GPU) == 1_000,
                timeout=15,
                message="the A100 job's one GPU charged",
            )
            assert (used(second) or {}).get(NPU) == 16_000
