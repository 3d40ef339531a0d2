"""Watches from a `resourceVersion` the registry cannot serve, on a real etcd whose
history is really compacted: the stream is a clean 200 that ends with one ERROR event
carrying a Kubernetes `Status` (410 Expired, or 504 "Too large resource version"), as the
Kubernetes API server ends such a watch, so an informer lists again instead of
reconnecting from the same revision for ever. Never a BOOKMARK for a revision that
cannot be served, and never a second HTTP response inside the stream's body."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from federation.api import app as api_app
from federation.registry import embedded
from federation.registry.etcd import EtcdStore
from federation.registry.memory import MemoryStore
from tests.conftest import etcd_settings
from tests.serving import serving
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
QUEUE = {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": "ml"},
         "spec": {"weight": 1}}  # fmt: skip


@pytest.fixture
async def compacted(own_etcd: embedded.EmbeddedEtcd) -> AsyncIterator[tuple[str, int]]:
    """An API over an etcd whose history before its latest write is gone; yields the URL
    and a revision from before the compaction."""
    store = EtcdStore(etcd_settings(own_etcd.url))
    await store.connect()
    app = api_app.build_app(store)
    async with serving(app) as url, aiohttp.ClientSession() as session:
        async with session.post(f"{url}{API}/queues", json=QUEUE) as resp:
            assert resp.status == 201, await resp.text()
            first = int((await resp.json())["metadata"]["resourceVersion"])
        for weight in (2, 3):
            edited = {**QUEUE, "spec": {"weight": weight}}
            async with session.put(f"{url}{API}/queues/ml", json=edited) as resp:
                assert resp.status == 200, await resp.text()
        await store.compact(await store.current_revision())
        yield url, first
    await store.close()


async def streamed(url: str) -> tuple[int, list[dict[str, Any]]]:
    """The whole stream at `url`, read to its end (which must come): its status and events."""
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        body = await asyncio.wait_for(resp.content.read(), timeout=10)
        return resp.status, [json.loads(line) for line in body.splitlines()]


@pytest.mark.parametrize(
    ("path", "code", "reason", "message"),
    [
        pytest.param("/queues?watch=true&resourceVersion={rv}", 410, "Expired",
                     "too old resource version: ", id="compacted, per-kind watch"),
        pytest.param("/watch?resources=queues,clusters&resourceVersion={rv}", 410, "Expired",
                     "too old resource version: ", id="compacted, multiplexed watch"),
        pytest.param("/queues?watch=true&resourceVersion=99999", 504, "Timeout",
                     "Too large resource version: 99999, current: ", id="ahead, per-kind watch"),
        pytest.param("/watch?resources=queues&resourceVersion=99999", 504, "Timeout",
                     "Too large resource version: 99999, current: ", id="ahead, multiplexed"),
    ],
)  # fmt: skip
async def test_a_watch_the_registry_cannot_serve_ends_with_one_error_event(
    compacted: tuple[str, int], path: str, code: int, reason: str, message: str
) -> None:
    url, before = compacted
    http, events = await streamed(url + API + path.format(rv=before))
    assert http == 200
    assert [e["type"] for e in events] == ["ERROR"], events
    status = events[0]["object"]
    assert status["kind"] == "Status" and (status["code"], status["reason"]) == (code, reason)
    assert status["message"].startswith(message), status


class Unchecked(MemoryStore):
    """A registry compacted after the API checked the revision: its check passes, and the
    watch itself then finds the history gone."""

    async def check_history(self, revision: int) -> None:
        return None


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/queues?watch=true&resourceVersion={rv}", id="per-kind watch"),
        pytest.param("/watch?resources=queues,clusters&resourceVersion={rv}", id="multiplexed"),
    ],
)
async def test_compaction_found_once_the_stream_began_ends_it_with_410(path: str) -> None:
    store = Unchecked()
    async with serving(api_app.build_app(store)) as url:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{url}{API}/queues", json=QUEUE) as resp:
                assert resp.status == 201
            edited = {**QUEUE, "spec": {"weight": 2}}
            async with session.put(f"{url}{API}/queues/ml", json=edited) as resp:
                assert resp.status == 200
        await store.compact(await store.current_revision())
        code, events = await streamed(url + API + path.format(rv=1))
    await store.close()
    assert code == 200
    assert events[-1]["type"] == "ERROR", events
    assert (events[-1]["object"]["code"], events[-1]["object"]["reason"]) == (410, "Expired")


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/queues?watch=true&resourceVersion=0", id="per-kind watch"),
        pytest.param("/watch?resources=queues&resourceVersion=0", id="multiplexed"),
    ],
)
async def test_a_watch_from_revision_0_starts_at_the_present_and_follows(
    compacted: tuple[str, int], path: str
) -> None:
    """`resourceVersion=0` replayed every revision since the registry began (a queue
    deleted long ago as ADDED, MODIFIED, DELETED), and once history was compacted, which
    `fedctl up` does hourly, ended every such watch with 410. In Kubernetes "0" means
    "from any version": the objects as they are now, as ADDED, then their changes."""
    url, _ = compacted
    events: list[dict[str, Any]] = []

    async def follow(session: aiohttp.ClientSession) -> None:
        async with session.get(url + API + path) as resp:
            assert resp.status == 200
            async for line in resp.content:
                events.append(json.loads(line))

    async with aiohttp.ClientSession() as session:
        task = asyncio.create_task(follow(session))
        try:
            await wait_for(
                lambda: any(e["type"] == "BOOKMARK" for e in events), message="the bookmark"
            )
            edited = {**QUEUE, "spec": {"weight": 4}}
            async with session.put(f"{url}{API}/queues/ml", json=edited) as resp:
                assert resp.status == 200, await resp.text()
            await wait_for(lambda: len(events) >= 3, message="the edit's event")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK", "MODIFIED"], events
    weights = [e["object"]["spec"]["weight"] for e in events if e["type"] != "BOOKMARK"]
    assert weights == [3, 4]
