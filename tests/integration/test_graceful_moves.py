"""Moves of a running service are make-before-break, also for the members that keep part of
it: a member whose share shrinks runs its old count until the replicas moved elsewhere are
ready, then is scaled down to its share.

Real pieces: etcd, simulated members over HTTP, the cluster monitor, the propagator and the
failover controller (and, for the scheduler's own moves, the scheduling loop). Pods take a
few seconds to start (`sim.fedctl.io/startup`), so the window in which a member scaled
down too early would leave the workload short is wide enough to be seen from the members
themselves, which are sampled throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation import clock
from federation.failover import rebalance
from federation.failover.controller import FailoverController
from federation.monitor.monitor import ClusterMonitor
from federation.registry import embedded, keys
from federation.scheduler import plan
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_failover import FAILOVER, MONITOR
from tests.integration.test_propagation_support import (
    MEMBER,
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import stop, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOME, OTHER = "us-east-cpu", "ap-southeast-cpu"
STARTUP = "100s"
"""Simulated pod start-up: two seconds at the fleet's speed."""


def slow_deployment(name: str, replicas: int) -> Workload:
    """A Deployment whose pods take `STARTUP` to become ready."""
    wire = deployment(name, replicas).to_wire()
    wire["spec"]["template"]["metadata"]["annotations"] = {"sim.fedctl.io/startup": STARTUP}
    return Workload.model_validate(wire)


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


class Capacity:
    """Samples the members the workload runs on: ready replicas in each, and every moment
    when fewer were ready together than the workload asks for, after it first had them all
    (a member scaled down before the replicas moved elsewhere were ready)."""

    def __init__(self, fed: Federation, w: Workload, members: tuple[str, ...]) -> None:
        self.fed, self.w, self.members = fed, w, members
        self.whole = False
        self.short: list[dict[str, tuple[int, int]]] = []
        self.surged = False
        """Seen running more than asked for: the old share kept while the new one starts."""

    async def _counts(self, cluster: str) -> tuple[int, int]:
        name = self.w.metadata.name
        obj = await self.fed.member_object(cluster, "apps/v1", "Deployment", "web", name)
        if obj is None:
            return 0, 0
        status = obj.get("status") or {}
        return int(obj["spec"].get("replicas") or 0), int(status.get("readyReplicas") or 0)

    async def run(self) -> None:
        wanted = self.w.replicas
        while True:
            counts = dict(
                zip(
                    self.members,
                    await asyncio.gather(*(self._counts(m) for m in self.members)),
                    strict=True,
                )
            )
            ready = sum(r for _, r in counts.values())
            if self.whole and ready < wanted:
                self.short.append(counts)
            self.whole = self.whole or ready >= wanted
            self.surged = self.surged or sum(s for s, _ in counts.values()) > wanted
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def controllers(fed: Federation, *, scheduler: bool) -> AsyncIterator[None]:
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    failover = FailoverController(
        fed.store, settings=FAILOVER, member_settings=MEMBER, claim=plan.claim
    )
    coros = [monitor.run(), failover.run()]
    if scheduler:
        loop = SchedulerLoop(
            fed.store, settings=SchedulerSettings(), clock=clock.real, debounce=0.05
        )
        coros.append(loop.run())
    fed.start()
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        yield
    finally:
        await stop(tasks)


async def placed(fed: Federation, w: Workload) -> tuple[dict[str, int], int]:
    """The Binding's placement and how many eviction tasks it carries."""
    stored = await fed.bindings.get(keys.binding_key(ref_of(w)))
    if stored is None:
        return {}, 0
    return stored.obj.placement(), len(stored.obj.spec.eviction_tasks)


async def scaled_to(fed: Federation, w: Workload, want: dict[str, int]) -> bool:
    """Every member runs exactly its share, all ready, and no eviction task is left."""
    name = w.metadata.name
    for cluster in (HOME, OTHER):
        obj = await fed.member_object(cluster, "apps/v1", "Deployment", "web", name)
        share = want.get(cluster, 0)
        if share == 0:
            if obj is not None:
                return False
            continue
        if obj is None or obj["spec"].get("replicas") != share:
            return False
        if (obj.get("status") or {}).get("readyReplicas") != share:
            return False
    return await placed(fed, w) == (want, 0)


async def test_rebalance_keeps_a_shrinking_members_replicas_until_the_moved_ones_are_ready(
    fed: Federation,
) -> None:
    shop = slow_deployment("shop", 4)
    await fed.put(shop)
    await fed.bind(shop, {HOME: (4, None)})
    sampler = Capacity(fed, shop, (HOME, OTHER))
    async with controllers(fed, scheduler=False):
        await wait_for(lambda: scaled_to(fed, shop, {HOME: 4}), timeout=20, message="at home")
        watching = asyncio.create_task(sampler.run())
        try:
            key = keys.binding_key(ref_of(shop))
            stored = await fed.bindings.get(key)
            assert stored is not None
            verdict = rebalance.decide(
                rebalance.Candidate(
                    key=key,
                    revision=stored.revision,
                    binding=stored.obj,
                    current=rebalance.Option(placement={HOME: 4}),
                    preferred=rebalance.Option(placement={HOME: 2, OTHER: 2}),
                    static_weights=True,
                )
            )
            done = await rebalance.apply(fed.bindings, [verdict], now=clock.real.now())
            assert done.moved == [str(ref_of(shop))]
            want = {HOME: 2, OTHER: 2}
            await wait_for(lambda: scaled_to(fed, shop, want), timeout=20, message="split")
        finally:
            await stop([watching])
    assert sampler.short == []
    assert sampler.surged  # the move started the new replicas before the old ones went


def weighted(home: int, other: int) -> PropagationPolicy:
    """Shop divided between HOME and OTHER by static weights (0: none there)."""
    weights = [
        {"targetCluster": {"clusterNames": [name]}, "weight": weight}
        for name, weight in ((HOME, home), (OTHER, other))
        if weight
    ]
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "shop", "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": {
                    "clusterAffinity": {"clusterNames": [HOME, OTHER]},
                    "replicaScheduling": {
                        "replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"staticWeightList": weights},
                    },
                },
            },
        }
    )


async def test_the_scheduler_moving_replicas_hands_them_over_gracefully(fed: Federation) -> None:
    """Weights edited from all-at-home to an even split, then to all elsewhere: each step
    starts the replicas on the gaining member before the other one sheds any."""
    shop = slow_deployment("shop", 4)
    await fed.put(weighted(1, 0))
    await fed.put(shop)
    sampler = Capacity(fed, shop, (HOME, OTHER))
    async with controllers(fed, scheduler=True):
        await wait_for(lambda: scaled_to(fed, shop, {HOME: 4}), timeout=20, message="at home")
        watching = asyncio.create_task(sampler.run())
        try:
            await fed.put(weighted(1, 1))
            await wait_for(
                lambda: scaled_to(fed, shop, {HOME: 2, OTHER: 2}), timeout=20, message="split"
            )
            await fed.put(weighted(0, 1))
            await wait_for(lambda: scaled_to(fed, shop, {OTHER: 4}), timeout=20, message="moved")
        finally:
            await stop([watching])
    assert sampler.short == []
    assert sampler.surged
