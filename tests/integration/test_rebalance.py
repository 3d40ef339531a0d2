"""Fail-back end to end: a workload fails over to its fallback group, its member comes back,
and `fedctl rebalance` moves it home gracefully - the new copy first, the old one deleted
only once the new one is ready - while a batch Job is left where it runs.

Real pieces: etcd, simulated members over HTTP, the cluster monitor, the scheduling loop,
the propagator and the failover controller; `fedctl rebalance` runs as the command does,
against the same etcd.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation import clock
from federation.cli import main
from federation.failover.controller import FailoverController
from federation.monitor.monitor import ClusterMonitor
from federation.registry import codec, embedded, keys
from federation.registry import store as st
from federation.runtime import whatif
from federation.scheduler import plan
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.cluster import ClusterStatus
from policies.models.propagation import FedctlPropagationPolicy, PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_failover import FAILOVER, MONITOR, untainted
from tests.integration.test_failover_scale import Sampler, job
from tests.integration.test_propagation_support import (
    MEMBER,
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import stop, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOME, FALLBACK = "us-east-cpu", "ap-southeast-cpu"


def home_first(namespace: str, kind: tuple[str, str]) -> PropagationPolicy:
    """Ordered fallback groups: HOME while it can hold the work, FALLBACK otherwise."""
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "home-first", "namespace": namespace},
            "spec": {
                "resourceSelectors": [{"apiVersion": kind[0], "kind": kind[1]}],
                "placement": {
                    "clusterAffinities": [
                        {"affinityName": "home", "clusterNames": [HOME]},
                        {"affinityName": "fallback", "clusterNames": [FALLBACK]},
                    ]
                },
            },
        }
    )


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def placement(fed: Federation, w: Workload) -> dict[str, int]:
    stored = await fed.bindings.get(keys.binding_key(ref_of(w)))
    return stored.obj.placement() if stored is not None else {}


async def binding(fed: Federation, w: Workload) -> Binding | None:
    stored = await fed.bindings.get(keys.binding_key(ref_of(w)))
    return stored.obj if stored is not None else None


async def ready_on(fed: Federation, w: Workload, cluster: str) -> bool:
    status = await fed.status(w)
    return status is not None and any(
        c.cluster == cluster and (c.health == "Healthy" or c.running > 0) for c in status.clusters
    )


async def member_ready(fed: Federation, name: str) -> bool:
    kv = await fed.store.get(keys.cluster_status_key(name))
    return kv is not None and codec.Codec(ClusterStatus).decode(kv.key, kv.value).ready()


async def fedctl(fed: Federation, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    """Run `fedctl --etcd URL ARGS -o json`; (exit code, parsed stdout)."""
    url = fed.store.endpoint
    code = await asyncio.to_thread(main.main, ["--etcd", url, *args, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


@contextlib.asynccontextmanager
async def running(fed: Federation, *, automatic: bool = False) -> AsyncIterator[Sampler]:
    """Monitor, scheduler, propagator and failover (with automatic fail-back wired in as the
    controller wires it, when `automatic`), and a double-run sampler; both members Ready."""
    monitor = ClusterMonitor(fed.store, settings=MONITOR, member_settings=MEMBER)
    failover = FailoverController(
        fed.store,
        settings=FAILOVER,
        member_settings=MEMBER,
        claim=plan.claim,
        failback=whatif.failback(fed.store) if automatic else None,
    )
    scheduler = SchedulerLoop(
        fed.store, settings=SchedulerSettings(), clock=clock.real, debounce=0.05
    )
    sampler = Sampler(fed)
    fed.start()
    coros = (monitor.run(), failover.run(), scheduler.run(), sampler.run())
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        # Workloads come once both members are known Ready, so they start at home.
        await wait_for(lambda: member_ready(fed, HOME), timeout=10, message="home ready")
        await wait_for(lambda: member_ready(fed, FALLBACK), timeout=10, message="fallback ready")
        yield sampler
    finally:
        await stop(tasks)


async def fail_over_and_back(fed: Federation, workloads: list[Workload]) -> None:
    """Start at home, lose home (everything moves to the fallback), get home back."""
    for w in workloads:
        await fed.put(w)
    for w in workloads:
        await wait_for(lambda w=w: ready_on(fed, w, HOME), timeout=20, message="home")
    await fed.admin(HOME, "fault", {"mode": "down"})
    for w in workloads:
        await wait_for(lambda w=w: ready_on(fed, w, FALLBACK), timeout=20, message="moved")
    await fed.admin(HOME, "heal", {})
    await wait_for(lambda: untainted(fed, HOME), timeout=20, message="home back")


async def comes_home_gracefully(fed: Federation, shop: Workload) -> None:
    """The old copy is deleted only after the new one is ready, and the task then ends."""
    gaps: list[str] = []

    async def home_and_old_copy_gone() -> bool:
        on_home = await ready_on(fed, shop, HOME)
        old = await fed.member_object(FALLBACK, "apps/v1", "Deployment", "web", "shop")
        if old is None and not on_home:
            gaps.append("the old copy went before the new one was ready")
        b = await binding(fed, shop)
        return on_home and old is None and b is not None and not b.spec.eviction_tasks

    await wait_for(home_and_old_copy_gone, timeout=20, message="home, old copy gone")
    assert gaps == []


async def test_rebalance_moves_a_failed_over_workload_home_gracefully(
    fed: Federation, capsys: pytest.CaptureFixture[str]
) -> None:
    shop = deployment("shop", 2)
    train = job("train", tolerant=False)
    await fed.put(home_first("web", ("apps/v1", "Deployment")))
    await fed.put(home_first("batch", ("batch/v1", "Job")))
    async with running(fed) as sampler:
        await fail_over_and_back(fed, [shop, train])
        assert await placement(fed, shop) == {FALLBACK: 2}  # nothing moves back by itself
        healed_doubles = len(sampler.double)

        code, dry = await fedctl(fed, capsys, "rebalance", "--all", "--dry-run")
        assert code == 0
        verdicts = {v["workload"]: v for v in dry}
        assert verdicts[str(ref_of(shop))]["result"] == "would move"
        assert verdicts[str(ref_of(shop))]["why"] == "affinity group fallback -> home"
        assert verdicts[str(ref_of(shop))]["from"].startswith(f"{FALLBACK}:2")
        assert verdicts[str(ref_of(shop))]["to"].startswith(f"{HOME}:2")
        assert verdicts[str(ref_of(train))]["result"] == "stays"
        assert verdicts[str(ref_of(train))]["why"] == "batch job: moving would restart it"
        assert await placement(fed, shop) == {FALLBACK: 2}  # a dry run writes nothing

        code, done = await fedctl(fed, capsys, "rebalance", "--workload", "web/shop")
        assert code == 0
        assert [(v["workload"], v["result"]) for v in done] == [(str(ref_of(shop)), "moved")]
        moving = await binding(fed, shop)
        assert moving is not None and moving.placement() == {HOME: 2}
        assert [(t.cluster, t.purge_mode) for t in moving.spec.eviction_tasks] == [
            (FALLBACK, "Gracefully")
        ]
        await comes_home_gracefully(fed, shop)
        assert await placement(fed, train) == {FALLBACK: 1}
    # The Job never ran in two members once its member was back (and the rebalance left it).
    assert sampler.double[healed_doubles:] == []
    hosts = [m for m in (HOME, FALLBACK) if "train" in await fed.ours(m, "batch/v1", "Job")]
    assert hosts == [FALLBACK]


async def test_failback_automatic_brings_work_home_once_the_member_recovers(
    fed: Federation,
) -> None:
    shop = deployment("shop", 2)
    policy = home_first("web", ("apps/v1", "Deployment")).model_dump(by_alias=True)
    automatic = FedctlPropagationPolicy.model_validate(
        {
            **policy,
            "apiVersion": "fedctl.io/v1alpha1",
            "spec": {**policy["spec"], "fedctl": {"failback": "Automatic"}},
        }
    )
    await fed.put(automatic)
    async with running(fed, automatic=True):
        await fail_over_and_back(fed, [shop])
        await comes_home_gracefully(fed, shop)
    home = await binding(fed, shop)
    assert home is not None and home.placement() == {HOME: 2}
    assert home.status.reason == "Rebalanced: affinity group fallback -> home"


async def test_rebalance_decides_again_when_the_binding_changes_under_it(
    fed: Federation, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controller rewrites Bindings routinely: a move that loses the compare-and-swap
    is read and decided again, not reported as a failure."""
    shop = deployment("shop", 2)
    await fed.put(home_first("web", ("apps/v1", "Deployment")))
    real_load = whatif.load
    loads: list[int] = []

    async def load_then_touch(store: Any) -> whatif.Live:
        live = await real_load(store)
        loads.append(1)
        if len(loads) == 1:  # a write lands between the first decision and its write
            key = keys.binding_key(ref_of(shop))
            kv = await store.get(key)
            assert kv is not None
            await store.commit([st.Put(key, kv.value)])
        return live

    async with running(fed):
        await fail_over_and_back(fed, [shop])
        monkeypatch.setattr(whatif, "load", load_then_touch)
        code, done = await fedctl(fed, capsys, "rebalance", "--workload", "web/shop")
        assert len(loads) == 2
        assert code == 0 and [(v["workload"], v["result"]) for v in done] == [
            (str(ref_of(shop)), "moved")
        ]
        await comes_home_gracefully(fed, shop)
