"""Query parameters a client gives are honoured or refused with a 400 naming them, never
silently ignored: a script that lists `?labelSelector=app=x` from a view that ignores it,
then deletes what came back, deletes everything; a watch told `timeoutSeconds=2` that
stays open hangs a client waiting for it to end.

The controller is the real API over an in-memory registry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from federation.registry.memory import MemoryStore
from tests.serving import api_server

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
STATUS = "/apis/status.fedctl.io/v1alpha1"
QUEUE = {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": "ml"},
         "spec": {"weight": 1}}  # fmt: skip


@pytest.fixture
async def server() -> AsyncIterator[str]:
    store = MemoryStore()
    async with api_server(store) as url, aiohttp.ClientSession() as session:
        async with session.post(f"{url}{API}/queues", json=QUEUE) as resp:
            assert resp.status == 201, await resp.text()
        yield url
    await store.close()


async def get(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        text = await resp.text()
        return resp.status, json.loads(text) if text.startswith("{") else text


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(f"{STATUS}/workloads?labelSelector=app%3Dstorefront", id="workloads, -l"),
        pytest.param(f"{STATUS}/workloads?fieldSelector=spec.x%3D1", id="workloads, fields"),
        pytest.param(f"{STATUS}/workloads?limit=1&continue=x", id="workloads, continue"),
        pytest.param(f"{STATUS}/workloads?watch=true", id="workloads, watch"),
        pytest.param(f"{STATUS}/queues?labelSelector=x%3Dy", id="queues, -l"),
        pytest.param(f"{STATUS}/costs?by=queue&resourceVersion=5", id="costs, resourceVersion"),
        pytest.param(
            f"{STATUS}/namespaces/web/workloads/Deployment.apps/x?watch=1", id="a workload, watch"
        ),
    ],
)
async def test_a_view_refuses_the_list_parameters_it_does_not_take(server: str, path: str) -> None:
    """The status views returned every item for a selector, a malformed one included."""
    code, body = await get(server + path)
    name = path.partition("?")[2].rpartition("&")[2].partition("=")[0]  # the last one
    assert code == 400, body
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(f"{name}: not supported by "), body


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(f"{API}/queues?limit=500", id="a kind"),
        pytest.param(f"{STATUS}/queues?limit=500", id="the queue view"),
        pytest.param(f"{STATUS}/costs?by=queue&limit=500", id="the cost view"),
    ],
)
async def test_a_limit_is_ignored_as_by_a_server_that_does_not_page(server: str, path: str) -> None:
    """kubectl sends `limit=500` on every list and was refused; Kubernetes lets a server
    that does not page ignore it and return the whole list, with no continue token."""
    code, body = await get(server + path)
    assert code == 200, body
    assert "continue" not in body.get("metadata", {}), body


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        pytest.param("resourceVersion=abc", 400, 'resourceVersion: Invalid value: "abc"',
                     id="not a revision"),
        pytest.param("resourceVersion=999999", 504, "Too large resource version: 999999",
                     id="ahead of the registry"),
        pytest.param("resourceVersionMatch=Exact&resourceVersion=1", 400,
                     "resourceVersionMatch: not supported: Exact", id="Exact"),
        pytest.param("resourceVersionMatch=Newest&resourceVersion=1", 400,
                     'resourceVersionMatch: Unsupported value: "Newest"', id="unknown match"),
        pytest.param("resourceVersionMatch=NotOlderThan", 400,
                     "resourceVersionMatch: Forbidden: only with a resourceVersion",
                     id="a match without a resourceVersion"),
        pytest.param("timeoutSeconds=soon", 400, 'timeoutSeconds: Invalid value: "soon"',
                     id="a timeout that is no number"),
    ],
)  # fmt: skip
async def test_a_list_judges_its_resource_version_as_kubernetes_does(
    server: str, query: str, code: int, message: str
) -> None:
    """`?resourceVersion=abc` and `?resourceVersion=999999` returned the current list."""
    status, body = await get(f"{server}{API}/queues?{query}")
    assert status == code, body
    assert body["message"].startswith(message), body


@pytest.mark.parametrize(
    "query",
    [
        "",
        "resourceVersion=0",
        "resourceVersion=1",
        "resourceVersionMatch=NotOlderThan&resourceVersion=1",
    ],
)
async def test_a_list_not_older_than_the_revision_given_is_the_current_one(
    server: str, query: str
) -> None:
    status, body = await get(f"{server}{API}/queues?{query}")
    assert status == 200, body
    assert [i["metadata"]["name"] for i in body["items"]] == ["ml"]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(f"{API}/queues?watch=true&timeoutSeconds=1", id="per-kind watch"),
        pytest.param(f"{API}/watch?resources=queues&timeoutSeconds=1", id="multiplexed"),
    ],
)
async def test_a_watch_ends_at_its_timeout_seconds(server: str, path: str) -> None:
    """`queues?watch=true&timeoutSeconds=2` was still open after 8 s: Kubernetes ends the
    stream then, and clients (`watch.stream(timeout_seconds=...)`) wait for that."""
    async with aiohttp.ClientSession() as session, session.get(server + path) as resp:
        body = await asyncio.wait_for(resp.content.read(), timeout=10)
    events = [json.loads(line) for line in body.splitlines()]
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"], events
