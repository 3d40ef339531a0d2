"""Closing a member connector ends the watch streams open on it, over HTTP to a simulated
member: whoever reads a watch or a follow sees it end at once, never a stream that just goes
quiet until its idle timeout while the reader believes it still runs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from clusters import member
from clusters.kube import connector
from clusters.kube.connector import KubeConnector
from clusters.sim import profile
from clusters.sim.fleet import SimFleet
from federation.settings import MemberSettings
from policies.models.cluster import Connection
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

PROFILE = {
    "clusters": [
        {
            "name": "edge",
            "region": "us-east",
            "nodePools": [{"name": "cpu", "count": 1, "cpu": "8", "memory": "32Gi"}],
        }
    ]
}
QUIET = MemberSettings(
    request_timeout=1.0,
    retry_attempts=3,
    retry_initial=0.02,
    retry_max=0.2,
    retry_deadline=3.0,
    watch_timeout=120.0,
)
"""A watch the member would keep open for two minutes: only `close()` can end it sooner."""
PROMPT = 2.0


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[tuple[SimFleet, Path]]:
    sim = SimFleet(profile.parse(PROFILE), speed=20)
    kubeconfig = tmp_path / "fleet.kubeconfig"
    await sim.start(kubeconfig_path=kubeconfig)
    try:
        yield sim, kubeconfig
    finally:
        await sim.stop()


@pytest.fixture
async def conn(fleet: tuple[SimFleet, Path]) -> AsyncIterator[KubeConnector]:
    _, kubeconfig = fleet
    opened = await connector.connect(
        "edge", Connection(kubeconfig_path=str(kubeconfig), context="edge"), settings=QUIET
    )
    try:
        yield opened
    finally:
        await opened.close()  # a second close is harmless


def configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
    }


async def drain(events: AsyncIterator[Any], into: list[Any]) -> str:
    async for event in events:
        into.append(event)
    return "ended"


@contextlib.asynccontextmanager
async def reading(events: AsyncIterator[Any], into: list[Any]) -> AsyncIterator[asyncio.Task[str]]:
    task = asyncio.create_task(drain(events, into))
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_close_ends_an_open_watch_and_follow_promptly(conn: KubeConnector) -> None:
    listed = await conn.list("v1", "ConfigMap", namespace="default")
    watched: list[member.WatchEvent] = []
    followed: list[member.Relisted | member.Changed] = []
    watch = conn.watch("v1", "ConfigMap", resource_version=listed.resource_version,
                       namespace="default")  # fmt: skip
    async with (
        reading(watch, watched) as watching,
        reading(conn.follow("v1", "ConfigMap", namespace="default"), followed) as following,
    ):
        await wait_for(lambda: followed, message="follow's first list")
        await conn.apply(configmap("one"))
        await wait_for(lambda: [e for e in watched if e.type == "ADDED"], message="watch open")
        await wait_for(
            lambda: [e for e in followed if isinstance(e, member.Changed)],
            message="follow watching after its list",
        )

        await conn.close()

        await wait_for(lambda: watching.done() and following.done(), timeout=PROMPT,
                       message="both streams to end after close()")  # fmt: skip
        assert watching.result() == "ended", "the watch ends as a stream the server ends"
        assert following.result() == "ended", "follow does not list again on a closed connector"


async def test_a_watch_started_after_close_ends_at_once(conn: KubeConnector) -> None:
    listed = await conn.list("v1", "ConfigMap", namespace="default")
    await conn.close()
    got: list[Any] = []
    async with asyncio.timeout(PROMPT):
        await drain(conn.watch("v1", "ConfigMap", resource_version=listed.resource_version), got)
        await drain(conn.follow("v1", "ConfigMap"), got)
    assert got == []


async def test_a_call_on_a_closed_connector_is_a_member_error_at_once(conn: KubeConnector) -> None:
    """Not aiohttp's bare RuntimeError ("Session is closed"), which no caller of a member
    expects, and not after retrying for the whole retry deadline."""
    await conn.close()
    async with asyncio.timeout(PROMPT):
        with pytest.raises(member.MemberUnavailable, match="was closed") as caught:
            await conn.list("v1", "ConfigMap", namespace="default")
    assert caught.value.reason == "ConnectionClosed"
