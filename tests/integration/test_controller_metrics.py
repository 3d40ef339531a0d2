"""`fedctl controller` as a user runs it: its `/metrics` and events after a preemption.

Real pieces: etcd, the simulated members over HTTP, and `run_controller` in this process
with every component it starts (election, monitor, scheduler, propagator, failover, the
API). What was reported: `fedctl_leader 0.0` on the leading controller, no
`fedctl_evictions_total` sample after a preemption, a defined queue without work missing
from `/metrics`, and `fedctl get events` saying only `Removed … removed from CLUSTER` of
the victim, whose `preempted by …` reason the next cycle overwrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from federation.cli import controller_cmd
from federation.registry import embedded, keys
from policies.models.binding import Binding
from tests.integration.test_ha import CONTROLLER_ENV, cpu_queue
from tests.integration.test_propagation_support import Federation, ref_of, started_federation
from tests.integration.test_scheduler_loop import job
from tests.serving import fedctl
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


@contextlib.asynccontextmanager
async def controller(
    fed: Federation, etcd_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[str]:
    """`fedctl controller` on a free port until the block ends; yields its URL."""
    for name, value in CONTROLLER_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KUBECONFIG", str(fed.kubeconfig))  # restored after: the run sets it
    port = embedded.free_port()
    stop, ready = asyncio.Event(), asyncio.Event()
    run = asyncio.create_task(
        controller_cmd.run_controller(
            etcd=etcd_url,
            listen=f"127.0.0.1:{port}",
            kubeconfig=str(fed.kubeconfig),
            stop=stop,
            ready=ready,
        )
    )
    try:
        await wait_for(lambda: ready.is_set() or run.done(), timeout=30, message="the API")
        assert not run.done(), run.exception()
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        async with asyncio.timeout(30):
            await run


async def scrape(session: aiohttp.ClientSession, url: str) -> Samples:
    async with session.get(url + "/metrics") as resp:
        assert resp.status == 200
        text = await resp.text()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def binding_of(fed: Federation, name: str) -> Binding | None:
    stored = await fed.bindings.get(keys.binding_key(keys.WorkloadRef("batch", "Job.batch", name)))
    return stored.obj if stored is not None else None


async def test_the_leader_s_metrics_and_a_preemption_s_trace(
    fed: Federation,
    own_etcd: embedded.EmbeddedEtcd,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await fed.put(cpu_queue("qa", 2))
    await fed.put(cpu_queue("idle", 4))
    low = job("low", "qa", parallelism=2, duration=None)
    high = job("high", "qa", priority=500, parallelism=2, duration=None)
    async with (
        controller(fed, own_etcd.url, monkeypatch) as url,
        aiohttp.ClientSession() as session,
    ):

        async def leading() -> Samples | None:
            got = await scrape(session, url)
            return got if got.get(("fedctl_leader", ())) == 1.0 else None

        await wait_for(leading, timeout=30, message="fedctl_leader 1 on the leader")
        await wait_for(
            lambda: _queue(session, url, "idle", (0.0, 0.0)),
            timeout=30,
            message="the defined, idle queue as zeros",
        )

        await fed.put(low)

        async def placed(name: str) -> dict[str, int] | None:
            b = await binding_of(fed, name)
            return b.placement() if b is not None and b.status.phase == "Scheduled" else None

        where = await wait_for(lambda: placed("low"), timeout=30, message="low admitted")
        await fed.put(high)
        await wait_for(lambda: placed("high"), timeout=30, message="high admitted")
        victim = await binding_of(fed, "low")
        assert victim is not None and victim.status.phase == "Pending"

        async def preempted() -> list[dict[str, object]]:
            capsys.readouterr()
            assert await fedctl(url, "get", "events", "low", "-n", "batch", "-o", "json") == 0
            out = capsys.readouterr().out.strip()
            items = json.loads(out) if out else []
            items = items if isinstance(items, list) else [items]
            return [e for e in items if e["reason"] == "Preempted"]

        (told,) = await wait_for(preempted, timeout=30, message="low's Preempted event")
        assert told["type"] == "Normal" and told["source"] == "scheduler"
        assert f"preempted by {ref_of(high)} (priority 500, queue qa)" in str(told["message"])

        got = await scrape(session, url)
        for cluster, replicas in where.items():
            labels = (("cluster", cluster), ("reason", "preempted"))
            assert got[("fedctl_evictions_total", labels)] == replicas
        assert got[("fedctl_queue_admitted_workloads", (("queue", "qa"),))] == 1.0
        # The loops' own series: the event loop's lag is sampled from the start, and each
        # cycle of the leading scheduler is timed; a blocked loop had shown only as lost
        # leadership.
        assert got[("fedctl_event_loop_lag_seconds_count", ())] > 0
        assert got[("fedctl_scheduler_cycle_seconds_count", ())] > 0
        assert ("fedctl_scheduler_pending_workloads", ()) in got
        assert any(name == "fedctl_cluster_last_heartbeat_timestamp_seconds" for name, _ in got)

        # The next cycles give low the reason it waits now; its event stays.
        async def waits_for_room() -> bool:
            b = await binding_of(fed, "low")
            return b is not None and not b.status.reason.startswith("preempted by")

        await wait_for(waits_for_room, timeout=30, message="low's reason replaced")
        assert len(await preempted()) == 1
        capsys.readouterr()
        assert await fedctl(url, "describe", "workload", "batch/low") == 0
        described = capsys.readouterr().out
        assert "Preempted" in described and str(ref_of(high)) in described


async def _queue(
    session: aiohttp.ClientSession, url: str, queue: str, expected: tuple[float, float]
) -> bool:
    got = await scrape(session, url)
    labels = (("queue", queue),)
    seen = (
        got.get(("fedctl_queue_admitted_workloads", labels)),
        got.get(("fedctl_queue_pending_workloads", labels)),
    )
    return seen == expected
