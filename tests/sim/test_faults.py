"""Every fault mode does to a client what it says, and state survives it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from clusters.sim.clock import ManualClock
from clusters.sim.cluster import SimCluster
from clusters.sim.controllers_base import Settings
from clusters.sim.faults import FaultManager
from tests.sim.behaviour_support import (
    api_client,
    cluster_profile,
    deployment_body,
    eventually,
    pool,
    running_cluster,
)

PROFILE = cluster_profile("f", pool("cpu", count=3, cpu="8", memory="32Gi"))


@pytest.fixture
async def member() -> AsyncIterator[SimCluster]:
    async with running_cluster(PROFILE, settings=Settings(toleration_seconds=30)) as m:
        yield m


async def admin(member: SimCluster, verb: str, body: dict[str, Any] | None = None) -> Any:
    """Drive faults the only way they are driven: HTTP to the member's admin port."""
    async with aiohttp.ClientSession() as session:
        if verb == "state":
            async with session.get(f"{member.admin_url}/state") as resp:
                return await resp.json()
        async with session.post(f"{member.admin_url}/{verb}", json=body or {}) as resp:
            assert resp.status == 200, await resp.text()
            return await resp.json()


async def raw_get(url: str, *, timeout: float = 2.0) -> tuple[int, dict[str, str], str]:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s,
        s.get(url) as resp,
    ):
        return resp.status, dict(resp.headers), await resp.text()


async def test_down_refuses_connections_and_state_survives(member: SimCluster) -> None:
    async with api_client(member.url) as api:
        core = client.CoreV1Api(api)
        await core.create_namespaced_config_map(
            "default", {"metadata": {"name": "keep"}, "data": {"a": "1"}}
        )
        before = await core.read_namespaced_config_map("keep", "default")
        await admin(member, "fault", {"mode": "down"})
        with pytest.raises(aiohttp.ClientConnectorError):
            await core.read_namespaced_config_map("keep", "default")
        state = await admin(member, "state")
        assert state["listening"] is False
        assert [f["mode"] for f in state["faults"]] == ["down"]
        await admin(member, "heal")
        after = await core.read_namespaced_config_map("keep", "default")
        assert after.metadata.resource_version == before.metadata.resource_version
        assert after.metadata.uid == before.metadata.uid
        created = await core.create_namespaced_config_map("default", {"metadata": {"name": "n"}})
        assert int(created.metadata.resource_version) > int(before.metadata.resource_version)


async def test_down_with_for_heals_itself(member: SimCluster) -> None:
    await admin(member, "fault", {"mode": "down", "for": 0.3})
    with pytest.raises(aiohttp.ClientConnectorError):
        await raw_get(f"{member.url}/version")

    async def back() -> bool:
        try:
            return (await raw_get(f"{member.url}/version"))[0] == 200
        except aiohttp.ClientConnectorError:
            return False

    assert await eventually(back, timeout=3)
    assert (await admin(member, "state"))["faults"] == []


async def test_blackhole_accepts_but_never_answers(member: SimCluster) -> None:
    await admin(member, "fault", {"mode": "blackhole"})
    async with api_client(member.url) as api:
        with pytest.raises(asyncio.TimeoutError):
            await client.CoreV1Api(api).list_node(_request_timeout=0.3)
        await admin(member, "heal")
        nodes = await client.CoreV1Api(api).list_node(_request_timeout=2)
        assert len(nodes.items) == 3


async def test_errors_fail_a_fraction_with_retry_after(member: SimCluster) -> None:
    await admin(member, "fault", {"mode": "errors", "rate": 0.5, "retryAfter": 2})
    codes = []
    for _ in range(60):
        status, headers, body = await raw_get(f"{member.url}/api/v1/namespaces")
        codes.append(status)
        if status in (429, 503):
            assert headers["Retry-After"] == "2"
        if status != 200:
            assert json.loads(body)["kind"] == "Status"
    assert {200, 500, 503, 429} <= set(codes)
    assert 10 < sum(1 for c in codes if c != 200) < 50
    assert (await raw_get(f"{member.admin_url}/state"))[0] == 200  # admin is never failed


async def test_throttling_reaches_the_python_client_as_429(member: SimCluster) -> None:
    await admin(member, "fault", {"mode": "errors", "rate": 1.0, "codes": [429]})
    async with api_client(member.url) as api:
        with pytest.raises(ApiException) as caught:
            await client.CoreV1Api(api).list_node()
    assert caught.value.status == 429
    assert caught.value.headers["Retry-After"] == "1"
    assert json.loads(caught.value.body)["reason"] == "TooManyRequests"


async def test_slow_adds_latency(member: SimCluster) -> None:
    await admin(member, "fault", {"mode": "slow", "latency": 0.25, "jitter": 0.05})
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert (await raw_get(f"{member.url}/version"))[0] == 200
    assert loop.time() - started >= 0.25
    async with api_client(member.url) as api:
        with pytest.raises(asyncio.TimeoutError):
            await client.CoreV1Api(api).list_node(_request_timeout=0.1)


async def test_compact_expires_open_watches_with_410(member: SimCluster) -> None:
    async with api_client(member.url) as api:
        core = client.CoreV1Api(api)
        listed = await core.list_namespaced_config_map("default")
        seen: list[str] = []

        async def consume() -> None:
            async with watch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=listed.metadata.resource_version,
                timeout_seconds=10,
            ) as stream:
                async for event in stream:
                    seen.append(event["type"])

        task = asyncio.create_task(consume())
        await core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
        await eventually(lambda: seen == ["ADDED"])
        await admin(member, "fault", {"mode": "compact"})
        with pytest.raises(ApiException) as caught:
            await asyncio.wait_for(task, 5)
        assert caught.value.status == 410
        assert (await admin(member, "state"))["faults"] == []  # compaction is instantaneous


async def test_watch_drop_cuts_open_watches(member: SimCluster) -> None:
    url = f"{member.url}/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=30"
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        assert resp.status == 200
        await admin(member, "fault", {"mode": "watch-drop"})
        rest = await asyncio.wait_for(resp.content.read(), 3)  # returns at end of stream
    assert b"ERROR" not in rest


async def test_flapping_alternates_refused_and_served(member: SimCluster) -> None:
    await admin(member, "fault", {"mode": "flapping", "period": 0.1, "for": 1.5})
    outcomes: set[str] = set()

    async def both() -> bool:
        try:
            await raw_get(f"{member.url}/version", timeout=0.5)
            outcomes.add("up")
        except aiohttp.ClientConnectorError:
            outcomes.add("down")
        return outcomes == {"up", "down"}

    assert await eventually(both, timeout=3)


class RecordingListener:
    """A listener that only records whether the port is up: the fault timeline, no sockets."""

    def __init__(self) -> None:
        self.listening = True
        self.drops = 0

    async def go_down(self) -> None:
        self.listening = False

    async def go_blackhole(self) -> None:
        self.listening = False

    async def go_up(self) -> None:
        self.listening = True

    def drop_watches(self) -> None:
        self.drops += 1

    def compact(self) -> None:
        pass

    def set_nodes_ready(self, count: int, *, ready: bool, pool: str | None) -> list[str]:
        return []

    def state(self) -> dict[str, Any]:
        return {"listening": self.listening}


@pytest.mark.parametrize(
    ("mode", "params"),
    [
        pytest.param("flapping", {"period": 20}, id="flapping heals at for, not at the next flip"),
        pytest.param("watch-drop", {"interval": 20}, id="watch-drop ends at for, not a drop later"),
    ],
)
async def test_a_periodic_fault_heals_when_its_for_runs_out(
    mode: str, params: dict[str, Any]
) -> None:
    """`--for 130s` with a 20 s period ends at 130 s, not at the flip after it (140 s)."""
    clock = ManualClock()
    listener = RecordingListener()
    manager = FaultManager(listener, clock=clock)
    await manager.inject(mode, {**params, "for": 130})
    await clock.advance(129.9)
    assert mode in manager.active
    await clock.advance(0.1)
    assert mode not in manager.active
    assert listener.listening
    await manager.close()


async def test_node_notready_taints_nodes_and_evicts_after_the_toleration(
    member: SimCluster,
) -> None:
    async with api_client(member.url) as api:
        apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
        await apps.create_namespaced_deployment("default", deployment_body("web", 3))

        async def available() -> bool:
            dep = await apps.read_namespaced_deployment("web", "default")
            return dep.status.available_replicas == 3

        await eventually(available)
        pods = await core.list_namespaced_pod("default")
        victim_node = pods.items[0].spec.node_name
        reply = await admin(member, "fault", {"mode": "node-notready", "count": 1})
        [fault] = reply["faults"]
        [sick] = fault["affected"]
        node = await core.read_node(sick)
        ready = next(c for c in node.status.conditions if c.type == "Ready")
        assert ready.status == "False"
        assert {(t.key, t.effect) for t in node.spec.taints} == {
            ("node.kubernetes.io/not-ready", "NoSchedule"),
            ("node.kubernetes.io/not-ready", "NoExecute"),
        }

        async def evicted() -> bool:
            listed = await core.list_namespaced_pod("default")
            nodes = {p.spec.node_name for p in listed.items}
            return (
                sick not in nodes
                and len(listed.items) == 3
                and all(p.status.phase == "Running" for p in listed.items)
            )

        await eventually(evicted, timeout=10)  # 30 s toleration at 100x speed
        events = await core.list_namespaced_event("default")
        assert "TaintManagerEviction" in {e.reason for e in events.items}
        assert victim_node  # pods were placed before the fault
        await admin(member, "heal")
        node = await core.read_node(sick)
        assert not node.spec.taints
        assert next(c for c in node.status.conditions if c.type == "Ready").status == "True"


async def test_unknown_mode_is_a_400(member: SimCluster) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{member.admin_url}/fault", json={"mode": "meteor"}) as resp,
    ):
        assert resp.status == 400
        assert "unknown fault mode" in (await resp.json())["error"]
