"""The multiplexed watch (`GET .../watch?resources=...`): one stream carrying the changes
of several kinds, each tagged with its resource, so a dashboard tab holds one connection
instead of one per kind (a browser allows six per host, shared by every tab).

The controller is the real API app over an in-memory registry, with tokens: what a client
relies on is that every change of each named kind arrives, once, tagged; that each kind
says when it is followed (BOOKMARK); that nothing another kind's watch would hide is
shown (kubeconfigs stay redacted); and that a kind the caller may not list is refused on
its own while the stream goes on with the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from federation.api import app as api_app
from federation.api import auth
from federation.registry.memory import MemoryStore
from federation.settings import ApiSettings
from tests.integration.test_api_security import (
    ADMIN,
    CLUSTER,
    MEMBER_SECRET,
    TENANT,
    TOKENS,
    job,
)
from tests.serving import serving
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
WATCH = f"{API}/watch"
QUEUE = {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": "ml"},
         "spec": {"weight": 2}}  # fmt: skip


class Stream:
    """A watch read in the background: every event so far, in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.status = 0

    def of(self, resource: str, *types: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e["resource"] == resource and (not types or e["type"] in types)
        ]


@pytest.fixture
async def server() -> AsyncIterator[str]:
    store = MemoryStore()
    # A request deadline far shorter than the test: the stream must be exempt from it.
    # Not shorter than a loaded machine may take to answer a POST (0.5 s was not).
    settings = ApiSettings(request_timeout=2.0)
    app = api_app.build_app(
        store, settings=settings, auth=auth.Authenticator(auth.TokenTable.from_yaml(TOKENS))
    )
    async with serving(app) as url:
        yield url
    await store.close()


@contextlib.asynccontextmanager
async def watching(
    session: aiohttp.ClientSession, url: str, *, token: str = ADMIN
) -> AsyncIterator[Stream]:
    stream = Stream()

    async def follow() -> None:
        async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as resp:
            stream.status = resp.status
            async for line in resp.content:
                stream.events.append(json.loads(line))

    task = asyncio.create_task(follow())
    try:
        yield stream
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def call(
    session: aiohttp.ClientSession, method: str, url: str, body: Any = None, token: str = ADMIN
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    async with session.request(method, url, json=body, headers=headers) as resp:
        return resp.status, await resp.json()


def bookmarked(stream: Stream) -> set[str]:
    return {e["resource"] for e in stream.events if e["type"] == "BOOKMARK"}


async def test_one_stream_carries_every_named_kind_tagged_with_its_resource(server: str) -> None:
    async with aiohttp.ClientSession() as session:
        code, _ = await call(session, "POST", f"{server}{API}/clusters", CLUSTER)
        assert code == 201
        url = f"{server}{WATCH}?resources=clusters,queues,workloads,bindings"
        async with watching(session, url) as stream:
            # Each kind's objects as ADDED, then its bookmark.
            await wait_for(
                lambda: bookmarked(stream) == {"clusters", "queues", "workloads", "bindings"},
                message="a bookmark for every resource",
            )
            (added,) = stream.of("clusters", "ADDED")
            assert added["object"]["metadata"]["name"] == "eu-test"
            assert MEMBER_SECRET not in json.dumps(stream.events), "a kubeconfig leaked"
            # Past the request deadline (2 s) on purpose: a stream is exempt from it.
            await asyncio.sleep(2.2)
            code, _ = await call(session, "POST", f"{server}{API}/queues", QUEUE)
            assert code == 201
            code, _ = await call(session, "DELETE", f"{server}{API}/clusters/eu-test")
            assert code == 200
            await wait_for(lambda: stream.of("queues", "ADDED"), message="the queue's event")
            await wait_for(lambda: stream.of("clusters", "DELETED"), message="the delete")
    assert stream.status == 200
    assert stream.of("queues", "ADDED")[0]["object"]["spec"]["weight"] == 2
    assert [e["type"] for e in stream.of("clusters")] == ["ADDED", "BOOKMARK", "DELETED"]
    assert not stream.of("workloads", "ADDED", "MODIFIED", "DELETED")


async def test_without_initial_events_each_kind_starts_at_a_bookmark_then_follows(
    server: str,
) -> None:
    """What the dashboard asks for: it lists each kind itself, so the stream sends no copy
    of every object, only a bookmark per kind and then the changes."""
    async with aiohttp.ClientSession() as session:
        code, _ = await call(session, "POST", f"{server}{API}/clusters", CLUSTER)
        assert code == 201
        url = f"{server}{WATCH}?resources=clusters,queues&sendInitialEvents=false"
        async with watching(session, url) as stream:
            await wait_for(
                lambda: bookmarked(stream) == {"clusters", "queues"}, message="both bookmarks"
            )
            assert [e["type"] for e in stream.events] == ["BOOKMARK", "BOOKMARK"]
            since = stream.events[0]["object"]["metadata"]["resourceVersion"]
            code, _ = await call(session, "POST", f"{server}{API}/queues", QUEUE)
            assert code == 201
            await wait_for(lambda: stream.of("queues", "ADDED"), message="the queue's event")
        # From a revision: what changed after it, and nothing before.
        async with watching(
            session, f"{server}{WATCH}?resources=clusters,queues&resourceVersion={since}"
        ) as again:
            await wait_for(lambda: again.of("queues", "ADDED"), message="the queue again")
            assert not again.of("clusters", "ADDED"), "the cluster was there before"


async def test_a_kind_the_caller_may_not_list_is_refused_alone(server: str) -> None:
    """A tenant reads clusters, and the workloads and Bindings of its own namespaces, but
    not cluster propagation policies: those get one 403 ERROR event, and the rest of the
    stream goes on, the workloads cut to the tenant's namespaces as their list is."""
    async with aiohttp.ClientSession() as session:
        kinds = "clusters,workloads,bindings,clusterpropagationpolicies"
        url = f"{server}{WATCH}?resources={kinds}&sendInitialEvents=false"
        async with watching(session, url, token=TENANT) as stream:
            streamed = {"clusters", "workloads", "bindings"}
            await wait_for(lambda: bookmarked(stream) == streamed, message="three bookmarks")
            errors = {e["resource"]: e["object"] for e in stream.events if e["type"] == "ERROR"}
            assert set(errors) == {"clusterpropagationpolicies"}
            assert errors["clusterpropagationpolicies"]["code"] == 403
            assert "may not read cluster-scoped" in errors["clusterpropagationpolicies"]["message"]
            code, _ = await call(session, "POST", f"{server}{API}/clusters", CLUSTER)
            assert code == 201
            for ns in ("web", "ml-research"):
                code, _ = await call(
                    session, "POST", f"{server}{API}/namespaces/{ns}/workloads", job(ns)
                )
                assert code == 201
            await wait_for(lambda: stream.of("clusters", "ADDED"), message="the cluster")
            await wait_for(lambda: stream.of("workloads", "ADDED"), message="its workload")
            names = [e["object"]["metadata"]["namespace"] for e in stream.of("workloads", "ADDED")]
            assert names == ["ml-research"], "another namespace's workload is not streamed"
        assert stream.status == 200


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param("", "resources: name the kinds to watch", id="no resources"),
        pytest.param("?resources=clusters,gizmos", "unknown resource 'gizmos'", id="unknown"),
        pytest.param(
            "?resources=queues&resourceVersion=x", "must be a resource version", id="bad revision"
        ),
    ],
)
async def test_a_bad_request_is_a_400_naming_what_is_wrong(
    server: str, query: str, message: str
) -> None:
    async with aiohttp.ClientSession() as session:
        code, doc = await call(session, "GET", f"{server}{WATCH}{query}")
    assert code == 400 and doc["kind"] == "Status", doc
    assert message in doc["message"]


async def test_the_per_kind_watch_also_starts_at_the_present_without_initial_events(
    server: str,
) -> None:
    """`sendInitialEvents=false` on `queues?watch=true`: a bookmark, then only changes."""
    async with aiohttp.ClientSession() as session:
        code, _ = await call(session, "POST", f"{server}{API}/queues", QUEUE)
        assert code == 201
        events: list[dict[str, Any]] = []

        async def follow() -> None:
            url = f"{server}{API}/queues?watch=true&sendInitialEvents=false"
            async with session.get(url, headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                async for line in resp.content:
                    events.append(json.loads(line))

        task = asyncio.create_task(follow())
        try:
            await wait_for(lambda: events, message="the bookmark")
            other = {**QUEUE, "metadata": {"name": "ops"}}
            code, _ = await call(session, "POST", f"{server}{API}/queues", other)
            assert code == 201
            await wait_for(lambda: len(events) >= 2, message="the new queue's event")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert [e["type"] for e in events] == ["BOOKMARK", "ADDED"]
    assert events[1]["object"]["metadata"]["name"] == "ops"
