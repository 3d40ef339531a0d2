"""What a person sees when a drill or its member does not exist: a Kubernetes-style 404 that
names the thing they asked for and where to list the real ones, never a registry key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from federation.api import drills as drills_api
from federation.api import status
from federation.failover import faults
from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from policies.models.cluster import Cluster
from tests.waiting import wait_for

DRILLS = drills_api.DRILLS_PATH


@pytest.fixture
async def store() -> AsyncIterator[MemoryStore]:
    mem = MemoryStore()
    yield mem
    await mem.close()


@pytest.fixture
async def drilling(
    store: MemoryStore,
) -> AsyncIterator[tuple[TestClient[Any, Any], drills_api.DrillsApi]]:
    api = drills_api.DrillsApi(store, poll=0.02)
    app = web.Application(middlewares=[status.error_middleware])
    app.add_routes(api.routes())
    app.cleanup_ctx.append(api.alone)
    async with TestClient(TestServer(app)) as client:
        yield client, api


@pytest.mark.parametrize(
    ("request_", "message", "listing"),
    [
        pytest.param(
            ("GET", f"{DRILLS}/20250101T000000Z-x", None),
            'drill "20250101T000000Z-x" not found', "fedctl drill list", id="an unknown drill",
        ),
        pytest.param(
            ("GET", f"{DRILLS}/20250101T000000Z-x?format=markdown", None),
            'drill "20250101T000000Z-x" not found', "fedctl drill list",
            id="an unknown drill asked for as Markdown",
        ),
        pytest.param(
            ("POST", DRILLS, {"cluster": "nowhere"}),
            'cluster "nowhere" not found', "fedctl cluster list", id="a drill on an unknown member",
        ),
    ],
)  # fmt: skip
async def test_a_missing_name_is_a_404_status_that_names_it(
    drilling: tuple[TestClient[Any, Any], drills_api.DrillsApi],
    request_: tuple[str, str, Any],
    message: str,
    listing: str,
) -> None:
    client, _ = drilling
    method, path, body = request_
    resp = await client.request(method, path, json=body)
    doc = await resp.json()
    assert resp.status == 404
    assert doc["kind"] == "Status" and doc["reason"] == "NotFound" and doc["code"] == 404
    assert doc["message"].startswith(message), doc["message"]
    assert listing in doc["message"], "says how to list the real ones"
    assert f"{keys.ROOT}/" not in doc["message"], "no registry key"
    assert doc["details"]["name"] in message


async def test_a_member_removed_mid_drill_is_named_in_the_report(
    store: MemoryStore, drilling: tuple[TestClient[Any, Any], drills_api.DrillsApi]
) -> None:
    client, api = drilling
    member = Cluster.model_validate({"metadata": {"name": "west"}, "spec": {"region": "r"}})
    clusters = codec.TypedStore(store, objects.ObjectCodec())
    await clusters.put(keys.cluster_key("west"), member)
    resp = await client.post(
        DRILLS, json={"cluster": "west", "fault": "taint", "duration": "2s", "settle": "0s"}
    )
    assert resp.status == 202, await resp.text()
    drill_id = (await resp.json())["id"]

    async def tainted() -> bool:
        got = await clusters.get(keys.cluster_key("west"))
        return (
            got is not None
            and isinstance(got.obj, Cluster)
            and any(t.key == faults.DRILL_TAINT for t in got.obj.spec.taints)
        )

    await wait_for(tainted, message="the drill taint on west")
    await store.commit([st.Delete(keys.cluster_key("west"))])  # healing will find it gone
    await wait_for(lambda: api.runner.running is None, message="the drill to end")

    resp = await client.get(f"{DRILLS}/{drill_id}")
    doc = await resp.json()
    assert resp.status == 200 and doc["phase"] == "Failed", doc
    assert doc["error"].startswith('cluster "west" not found'), doc["error"]
    assert f"{keys.ROOT}/" not in doc["error"], "no registry key"
