"""Edits made while no scheduling loop runs: a fresh loop (a restarted controller, or a new
leader) places the edited workloads again and leaves the unchanged ones alone.

Real pieces: etcd, simulated members probed over HTTP by the cluster monitor, two scheduling
loops one after the other on the same registry. What the fresh loop knows of the old one is
only what the old one stored: the Bindings, each with the fingerprint it was admitted under.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.monitor.monitor import ClusterMonitor
from federation.registry import codec, embedded, keys
from federation.scheduler import binder
from policies.models.binding import Binding
from policies.models.propagation import PropagationPolicy
from policies.models.queue import Queue
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    MEMBER,
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.integration.test_scheduler_loop import MONITOR, job, scheduler_loop
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def pinned(name: str, cluster: str) -> PropagationPolicy:
    """Places the Deployment `name` on `cluster` alone."""
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": name, "namespace": "web"},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
                ],
                "placement": {
                    "clusterAffinity": {"clusterNames": [cluster]},
                    "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
                },
            },
        }
    )


def with_queue(w: Workload) -> Workload:
    meta = w.metadata.model_copy(update={"annotations": {"fedctl.io/queue": "qa"}})
    return w.model_copy(update={"metadata": meta})


async def stored(fed: Federation, w: Workload) -> codec.Stored[Binding] | None:
    return await fed.bindings.get(keys.binding_key(ref_of(w)))


async def placed(fed: Federation, w: Workload, expected: dict[str, int]) -> codec.Stored[Binding]:
    """The Binding of `w` once it is Scheduled exactly on `expected` (or the test fails)."""

    async def probe() -> codec.Stored[Binding] | None:
        got = await stored(fed, w)
        ok = got is not None and got.obj.status.phase == "Scheduled"
        return got if ok and got is not None and got.obj.placement() == expected else None

    return await wait_for(probe, timeout=15, message=f"{w.metadata.name} Scheduled on {expected}")


async def test_edits_made_while_stopped_are_placed_again_and_the_rest_left_alone(
    fed: Federation,
) -> None:
    await fed.put(
        Queue.model_validate(
            {"metadata": {"name": "qa"}, "spec": {"capability": {"cpu": "64", "memory": "1Ti"}}}
        )
    )
    web = with_queue(deployment("shop", 2))
    await fed.put(web)
    await fed.put(pinned("shop", "us-east-cpu"))
    grows, steady = job("grows", "qa", duration=None), job("steady", "qa", duration=None)
    for w in (grows, steady):
        await fed.put(w)
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    async with background(monitor.run()):
        first = scheduler_loop(fed)
        async with background(first.run()):
            await placed(fed, web, {"us-east-cpu": 2})
            await wait_for(
                lambda: _scheduled(fed, grows, steady), timeout=15, message="both jobs Scheduled"
            )
        # Stopped: nothing leads. The policy moves the service; a job asks for more pods.
        await fed.put(pinned("shop", "eu-west-arm"))
        await fed.put(job("grows", "qa", duration=None, parallelism=3))
        before = await stored(fed, steady)
        assert before is not None
        assert before.obj.metadata.annotations.get(binder.FINGERPRINT)

        second = scheduler_loop(fed)
        async with background(second.run()):
            moved = await placed(fed, web, {"eu-west-arm": 2})
            await wait_for(
                lambda: _replicas(fed, grows, 3), timeout=15, message="grows placed with 3 pods"
            )
            assert second.cycles >= 1
        after = await stored(fed, steady)
    assert after is not None
    assert after.revision == before.revision, "an unchanged workload was written again"
    assert moved.obj.metadata.annotations.get(binder.FINGERPRINT)


async def _scheduled(fed: Federation, *ws: Workload) -> bool:
    for w in ws:
        got = await stored(fed, w)
        if got is None or got.obj.status.phase != "Scheduled":
            return False
    return True


async def _replicas(fed: Federation, w: Workload, replicas: int) -> bool:
    got = await stored(fed, w)
    return (
        got is not None
        and got.obj.status.phase == "Scheduled"
        and sum(got.obj.placement().values()) == replicas
    )
