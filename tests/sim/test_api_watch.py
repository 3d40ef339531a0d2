"""Contract: list+watch, bookmarks, 410 after compaction, timeouts and chunked lists."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import ClientSession
from kubernetes_asyncio import watch
from kubernetes_asyncio.client.exceptions import ApiException

from clusters.sim.resources import by_kind
from tests.sim.conftest import SimServer

CONFIGMAPS = by_kind("v1", "ConfigMap")


async def _read_lines(
    url: str, params: dict[str, str], *, until: str | None = None, deadline: float = 5.0
) -> list[dict[str, Any]]:
    """Read watch lines until the stream ends or an event of type `until` arrives."""
    events: list[dict[str, Any]] = []
    async with (
        asyncio.timeout(deadline),
        ClientSession() as http,
        http.get(url, params=params) as resp,
    ):
        assert resp.status == 200
        async for line in resp.content:
            if not line.strip():
                continue
            events.append(json.loads(line))
            if until is not None and events[-1]["type"] == until:
                break
    return events


async def test_watch_from_a_lists_version_sees_changes_in_order(sim_server: SimServer) -> None:
    core = sim_server.core
    await core.create_namespaced_config_map("default", {"metadata": {"name": "before"}})
    listed = await core.list_namespaced_config_map("default")
    seen: list[tuple[str, str, int]] = []
    stream = watch.Watch()

    async def consume() -> None:
        async for event in stream.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=10,
        ):
            obj = event["object"]
            seen.append((event["type"], obj.metadata.name, int(obj.metadata.resource_version)))
            if event["type"] == "DELETED":
                stream.stop()

    task = asyncio.create_task(consume())
    await core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    await core.patch_namespaced_config_map("cm", "default", {"data": {"a": "1"}})
    await core.delete_namespaced_config_map("cm", "default")
    async with asyncio.timeout(5):
        await task
    await stream.close()
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "cm"), ("MODIFIED", "cm"), ("DELETED", "cm")]
    versions = [rv for *_, rv in seen]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3


async def test_a_watch_from_before_compaction_gets_410(sim_server: SimServer) -> None:
    core = sim_server.core
    listed = await core.list_namespaced_config_map("default")
    await core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    sim_server.store.compact()
    stream = watch.Watch()
    with pytest.raises(ApiException) as err:
        async with asyncio.timeout(5):
            async for _ in stream.stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=listed.metadata.resource_version,
                timeout_seconds=5,
            ):
                pass
    await stream.close()
    assert err.value.status == 410


async def test_compaction_ends_open_watches_with_an_expired_error(sim_server: SimServer) -> None:
    url = f"{sim_server.url}/api/v1/namespaces/default/configmaps"
    rv = str(sim_server.store.resource_version)
    reader = asyncio.create_task(
        _read_lines(url, {"watch": "True", "resourceVersion": rv}, until="ERROR")
    )
    async with asyncio.timeout(5):
        while not sim_server.store.watching(CONFIGMAPS):
            await asyncio.sleep(0.01)
    sim_server.store.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
    sim_server.store.compact()
    events = await reader
    assert [e["type"] for e in events] == ["ADDED", "ERROR"]
    assert events[1]["object"]["code"] == 410
    assert events[1]["object"]["reason"] == "Expired"
    assert events[1]["object"]["message"].startswith("too old resource version:")


async def test_bookmarks_arrive_only_when_asked_for(sim_server: SimServer) -> None:
    url = f"{sim_server.url}/api/v1/configmaps"
    rv = str(sim_server.store.resource_version)
    with_marks = await _read_lines(
        url,
        {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "True"},
        until="BOOKMARK",
    )
    assert with_marks[-1]["type"] == "BOOKMARK"
    assert with_marks[-1]["object"]["metadata"]["resourceVersion"] == rv
    without = await _read_lines(
        url, {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
    )
    assert without == []


async def test_watch_ends_at_timeout_seconds(sim_server: SimServer) -> None:
    url = f"{sim_server.url}/api/v1/namespaces/default/configmaps"
    events = await _read_lines(url, {"watch": "1", "timeoutSeconds": "1"}, deadline=5.0)
    assert events == []


async def test_a_watch_without_version_replays_current_objects(sim_server: SimServer) -> None:
    url = f"{sim_server.url}/api/v1/namespaces"
    events = await _read_lines(url, {"watch": "TRUE", "timeoutSeconds": "1"})
    assert {e["object"]["metadata"]["name"] for e in events} >= {"default", "kube-system"}
    assert {e["type"] for e in events} == {"ADDED"}


async def test_a_change_that_leaves_the_selection_is_seen_as_deleted(
    sim_server: SimServer,
) -> None:
    store = sim_server.store
    store.create(
        CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default", "labels": {"t": "x"}}}
    )
    w = store.watch(
        CONFIGMAPS, "default", resource_version=str(store.resource_version), label_selector="t=x"
    )
    current = store.get(CONFIGMAPS, "default", "a")
    current["metadata"]["labels"] = {"t": "y"}
    store.update(CONFIGMAPS, current)
    current = store.get(CONFIGMAPS, "default", "a")
    current["metadata"]["labels"] = {"t": "x"}
    store.update(CONFIGMAPS, current)
    w.close()
    assert [t async for t, _ in w] == ["DELETED", "ADDED"]


async def test_lists_are_chunked_with_limit_and_continue(sim_server: SimServer) -> None:
    for i in range(5):
        sim_server.store.create(
            CONFIGMAPS, {"metadata": {"name": f"cm-{i}", "namespace": "default"}}
        )
    names: list[str] = []
    token = ""
    pages = 0
    async with ClientSession() as http:
        while True:
            params = {"limit": "2", **({"continue": token} if token else {})}
            resp = await http.get(f"{sim_server.url}/api/v1/configmaps", params=params)
            body = await resp.json()
            pages += 1
            names += [i["metadata"]["name"] for i in body["items"]]
            token = body["metadata"].get("continue", "")
            if not token:
                break
            assert body["metadata"]["remainingItemCount"] == 5 - len(names)
    assert names == [f"cm-{i}" for i in range(5)]
    assert pages == 3


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param({"labelSelector": "tier in (gold,silver)"}, ["a", "b"], id="label set"),
        pytest.param({"labelSelector": "tier!=gold"}, ["b", "c"], id="label inequality"),
        pytest.param({"labelSelector": "!tier"}, ["c"], id="label absent"),
        pytest.param({"fieldSelector": "metadata.name=b"}, ["b"], id="field equality"),
        pytest.param(
            {"fieldSelector": "metadata.name!=a,metadata.namespace=default"},
            ["b", "c"],
            id="field conjunction",
        ),
    ],
)
async def test_list_selectors(
    sim_server: SimServer, selector: dict[str, str], expected: list[str]
) -> None:
    for name, labels in (("a", {"tier": "gold"}), ("b", {"tier": "silver"}), ("c", {})):
        sim_server.store.create(
            CONFIGMAPS, {"metadata": {"name": name, "namespace": "default", "labels": labels}}
        )
    async with ClientSession() as http:
        resp = await http.get(
            f"{sim_server.url}/api/v1/namespaces/default/configmaps", params=selector
        )
        body = await resp.json()
    assert [i["metadata"]["name"] for i in body["items"]] == expected


async def test_the_python_client_follows_bookmarks(sim_server: SimServer) -> None:
    core = sim_server.core
    listed = await core.list_namespaced_config_map("default")
    stream = watch.Watch()
    await core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    types: list[str] = []
    async with asyncio.timeout(5):
        async for event in stream.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=listed.metadata.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=10,
        ):
            types.append(event["type"])
            if event["type"] == "BOOKMARK":
                stream.stop()
    await stream.close()
    assert types == ["ADDED", "BOOKMARK"]
    assert stream.resource_version == str(sim_server.store.resource_version)
