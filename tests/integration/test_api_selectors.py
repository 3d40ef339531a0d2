"""List and watch parameters of every kind on the real API over etcd: `labelSelector`
and `fieldSelector` choose, on lists and watches alike (per-kind and multiplexed), and
what is not supported (`continue`, an unknown field) is a 400 naming the parameter, where
every object used to come back. `limit` is ignored, as Kubernetes' API conventions let a
server that does not page: the whole list, with no continue token."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest

from tests.integration import test_api_input
from tests.integration.test_api import Api
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
client = test_api_input.client
"""The API over the session's etcd, wiped before and after (a fixture)."""


def queue(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": name, "labels": labels}, "spec": {"weight": 1}}  # fmt: skip


def config(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
            "metadata": {"name": name, "namespace": namespace, "labels": labels}}  # fmt: skip


async def names(client: Api, path: str) -> list[str] | Any:
    code, doc = await client.call("GET", API + path)
    assert code == 200, doc
    return sorted(i["metadata"]["name"] for i in doc["items"])


async def test_lists_of_every_kind_are_chosen_by_label_and_field(client: Api) -> None:
    docs = [queue("qa", team="qa"), queue("ml", team="ml"), queue("free"),
            config("ci-1", "ci", idx="1"), config("ci-3", "ci", idx="3"),
            config("web-3", "web", idx="3")]  # fmt: skip
    code, _ = await client.call("POST", f"{API}/apply", {"kind": "List", "items": docs})
    assert code == 200
    assert await names(client, "/queues?labelSelector=team%3Dqa") == ["qa"]
    assert await names(client, "/queues?labelSelector=!team") == ["free"]
    assert await names(client, "/queues?labelSelector=team+notin+(qa)") == ["free", "ml"]
    assert await names(client, "/namespaces/ci/workloads?labelSelector=idx%3D3") == ["ci-3"]
    assert await names(client, "/workloads?labelSelector=idx%3D3") == ["ci-3", "web-3"]
    by_name = "/namespaces/ci/workloads?fieldSelector=metadata.name%3Dci-1"
    assert await names(client, by_name) == ["ci-1"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param("continue=abc", "continue: Invalid value", id="continue"),
        pytest.param("limit=5x", "limit: Invalid value", id="limit not a count"),
        pytest.param("fieldSelector=spec.weight%3D1", "fieldSelector: 'spec.weight'", id="field"),
        pytest.param("labelSelector=a%3D(b", "labelSelector: Invalid value", id="bad selector"),
    ],
)
async def test_what_is_not_supported_is_a_400_naming_the_parameter(
    client: Api, query: str, message: str
) -> None:
    code, doc = await client.call("GET", f"{API}/queues?{query}")
    assert code == 400 and doc["kind"] == "Status", doc
    assert doc["message"].startswith(message), doc


async def test_a_list_with_a_limit_is_returned_whole_without_a_continue_token(
    client: Api,
) -> None:
    """kubectl and client-go's pager send `limit=500` on every list, and were refused with
    a 400; a pager reads a list with no `continue` as the last page."""
    docs = [queue(f"q{i}", team="qa") for i in range(3)]
    code, _ = await client.call("POST", f"{API}/apply", {"kind": "List", "items": docs})
    assert code == 200
    code, doc = await client.call("GET", f"{API}/queues?limit=2&labelSelector=team%3Dqa")
    assert code == 200, doc
    assert sorted(i["metadata"]["name"] for i in doc["items"]) == ["q0", "q1", "q2"]
    assert "continue" not in doc["metadata"] and doc["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/queues?watch=true&labelSelector=team%3Dqa", id="per-kind watch"),
        pytest.param("/watch?resources=queues&labelSelector=team%3Dqa", id="multiplexed"),
    ],
)
async def test_a_watch_sends_only_what_matches_and_deleted_when_it_stops(
    client: Api, path: str
) -> None:
    await client.call("POST", f"{API}/apply", queue("qa", team="qa"))
    await client.call("POST", f"{API}/apply", queue("ml", team="ml"))
    events: list[dict[str, Any]] = []

    async def follow() -> None:
        async with client.session.get(client.base + API + path) as resp:
            async for line in resp.content:
                events.append(json.loads(line))

    task = asyncio.create_task(follow())
    try:
        await wait_for(lambda: any(e["type"] == "BOOKMARK" for e in events), message="bookmark")
        await client.call("POST", f"{API}/apply", queue("ml", team="ml", tier="2"))
        await client.call("POST", f"{API}/apply", queue("qa", team="gone"))
        await wait_for(lambda: len(events) >= 3, message="the DELETED of qa")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    seen = [(e["type"], e["object"]["metadata"].get("name")) for e in events]
    assert seen == [("ADDED", "qa"), ("BOOKMARK", None), ("DELETED", "qa")]
