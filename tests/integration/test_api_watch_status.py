"""Watches of clusters and FederatedResourceQuotas carry `status`, as their list and GET
do, and a status change (the monitor marking a member NotReady) is a MODIFIED event of
the object: an informer-style client (list, then watch) learns that a member is down.
Before, the events had no status, and a cluster going NotReady sent nothing.

The API is the real one over an in-memory registry; the status is written where the
monitor and the quota controller write it."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from federation.registry import codec, keys
from federation.registry.memory import MemoryStore
from federation.resources import ResourceList
from policies.models.cluster import ClusterStatus, Condition
from policies.models.work import QuotaStatus
from tests.integration.test_api_security import CLUSTER, MEMBER_SECRET
from tests.serving import api_server
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
FRQ = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "FederatedResourceQuota",
       "metadata": {"name": "team", "namespace": "ml"},
       "spec": {"overall": {"cpu": "10"}}}  # fmt: skip


def ready(value: str) -> ClusterStatus:
    return ClusterStatus(
        conditions=[Condition(type="Ready", status=value, last_transition_time=NOW)]  # type: ignore[arg-type]
    )


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, MemoryStore, aiohttp.ClientSession]]:
    store = MemoryStore()
    async with api_server(store) as url, aiohttp.ClientSession() as session:
        yield url, store, session
    await store.close()


@contextlib.asynccontextmanager
async def watching(session: aiohttp.ClientSession, url: str) -> AsyncIterator[list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []

    async def follow() -> None:
        async with session.get(url) as resp:
            async for line in resp.content:
                events.append(json.loads(line))

    task = asyncio.create_task(follow())
    try:
        await wait_for(lambda: any(e["type"] == "BOOKMARK" for e in events), message="bookmark")
        yield events
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def condition(event: dict[str, Any]) -> str | None:
    conditions = event["object"].get("status", {}).get("conditions", [])
    return conditions[0]["status"] if conditions else None


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/clusters?watch=true", id="per-kind watch"),
        pytest.param("/watch?resources=clusters", id="multiplexed"),
    ],
)
async def test_a_cluster_going_not_ready_is_a_modified_event_with_its_status(
    served: tuple[str, MemoryStore, aiohttp.ClientSession], path: str
) -> None:
    url, store, session = served
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    async with session.post(f"{url}{API}/clusters", json=CLUSTER) as resp:
        assert resp.status == 201
    await statuses.put(keys.cluster_status_key("eu-test"), ready("True"))
    async with watching(session, url + API + path) as events:
        await statuses.put(keys.cluster_status_key("eu-test"), ready("False"))
        await wait_for(lambda: len(events) >= 3, message="the status change")
    added, _, modified = events[:3]
    assert (added["type"], condition(added)) == ("ADDED", "True"), "list and watch differ"
    assert (modified["type"], condition(modified)) == ("MODIFIED", "False")
    assert modified["object"]["metadata"]["name"] == "eu-test"
    assert MEMBER_SECRET not in json.dumps(events), "a kubeconfig leaked"
    async with session.get(f"{url}{API}/clusters/eu-test") as resp:
        got = await resp.json()
    assert modified["object"] == got, "a watch event is not what GET shows"


async def test_a_quotas_status_change_is_a_modified_event(
    served: tuple[str, MemoryStore, aiohttp.ClientSession],
) -> None:
    url, store, session = served
    async with session.post(f"{url}{API}/namespaces/ml/federatedresourcequotas", json=FRQ) as r:
        assert r.status == 201, await r.text()
    async with watching(
        session, f"{url}{API}/namespaces/ml/federatedresourcequotas?watch=true"
    ) as events:
        used = QuotaStatus(overall_used=ResourceList.from_wire({"cpu": "3"}))
        key = keys.policy_status_key("FederatedResourceQuota", "ml", "team")
        await codec.TypedStore(store, codec.Codec(QuotaStatus)).put(key, used)
        await wait_for(lambda: len(events) >= 3, message="the status change")
    assert events[2]["type"] == "MODIFIED"
    assert events[2]["object"]["status"]["overallUsed"] == {"cpu": "3"}
