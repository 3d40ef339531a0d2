"""Bookmarks on a quiet watch, and the end of a watch that asked for no deadline: the real
API app, served on a socket, over an in-memory registry.

A connection that a NAT, load balancer or VPN keeps open but no longer carries looks like
a quiet stream: the dashboard kept saying `live` over stale data for as long as the
socket stayed, for nothing ever came to tell it otherwise. Now a watch that asks for
bookmarks (`allowWatchBookmarks=true`, as Kubernetes clients ask) gets one every
`watch_bookmark_interval` seconds however quiet it is, and is told that interval in a
header, so its client can take a longer silence as a dead stream. A client that did not
ask gets none, as from kube-apiserver; every watch without `timeoutSeconds` ends instead
after a random lifetime (`watch_min_lifetime` to twice it), and its client lists again.
Both routes, the multiplexed one and the per-kind `?watch=true`, behave alike.
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
from federation.api import auth, streams
from federation.registry.memory import MemoryStore
from federation.settings import ApiSettings
from tests.integration.test_api_security import ADMIN, TOKENS
from tests.serving import serving
from tests.waiting import stop, wait_for

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
ROUTES = [
    pytest.param(f"{API}/watch?resources=queues&", id="the multiplexed watch"),
    pytest.param(f"{API}/queues?watch=true&", id="the per-kind watch"),
]
QUEUE = {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": "ml"},
         "spec": {"weight": 2}}  # fmt: skip
INTERVAL = 0.2
"""Seconds between bookmarks here: short, so a test sees several."""


class Stream:
    """A watch read in the background: its headers, every event so far, and whether the
    server has ended it."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.events: list[dict[str, Any]] = []
        self.ended = False

    def bookmarks(self) -> list[str]:
        """The resourceVersion of each BOOKMARK so far, in order."""
        return [
            e["object"]["metadata"]["resourceVersion"]
            for e in self.events
            if e["type"] == "BOOKMARK"
        ]


@contextlib.asynccontextmanager
async def api(**settings: Any) -> AsyncIterator[tuple[str, aiohttp.ClientSession]]:
    store = MemoryStore()
    app = api_app.build_app(
        store,
        settings=ApiSettings(**settings),
        auth=auth.Authenticator(auth.TokenTable.from_yaml(TOKENS)),
    )
    async with serving(app) as url, aiohttp.ClientSession() as session:
        yield url, session
    await store.close()


@contextlib.asynccontextmanager
async def watching(session: aiohttp.ClientSession, url: str) -> AsyncIterator[Stream]:
    stream = Stream()

    async def follow() -> None:
        async with session.get(url, headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
            assert resp.status == 200
            stream.headers = dict(resp.headers)
            async for line in resp.content:
                stream.events.append(json.loads(line))
        stream.ended = True

    task = asyncio.create_task(follow())
    try:
        yield stream
    finally:
        await stop([task])


@pytest.mark.parametrize("path", ROUTES)
async def test_a_quiet_watch_that_asks_for_bookmarks_gets_one_each_interval(path: str) -> None:
    async with api(watch_bookmark_interval=INTERVAL) as (url, session):
        where = f"{url}{path}sendInitialEvents=false&allowWatchBookmarks=true"
        async with watching(session, where) as stream:
            await wait_for(
                lambda: len(stream.bookmarks()) >= 3,
                timeout=5,
                message="two bookmarks after the first on a stream with nothing to say",
            )
            first = stream.bookmarks()[0]
            assert set(stream.bookmarks()) == {first}, "nothing changed: the same revision"
            assert stream.headers[streams.BOOKMARK_INTERVAL_HEADER] == f"{INTERVAL:g}"
            # As kube-apiserver's, a bookmark names its kind: typed clients decode by it.
            marks = [e["object"] for e in stream.events if e["type"] == "BOOKMARK"]
            assert {(m["kind"], m["apiVersion"]) for m in marks} == {
                ("Queue", "fedctl.io/v1alpha1")
            }
            # A change moves the revision the next bookmarks carry.
            headers = {"Authorization": f"Bearer {ADMIN}"}
            async with session.post(f"{url}{API}/queues", json=QUEUE, headers=headers) as resp:
                assert resp.status == 201
                made = (await resp.json())["metadata"]["resourceVersion"]
            await wait_for(
                lambda: stream.bookmarks()[-1] == made,
                timeout=5,
                message=f"a bookmark at the queue's revision {made}",
            )
    assert [e["type"] for e in stream.events if e["type"] != "BOOKMARK"] == ["ADDED"]


@pytest.mark.parametrize("path", ROUTES)
async def test_a_watch_that_did_not_ask_for_bookmarks_gets_only_its_first(path: str) -> None:
    async with api(watch_bookmark_interval=INTERVAL) as (url, session):
        asked = f"{url}{path}sendInitialEvents=false&allowWatchBookmarks=true"
        quiet = f"{url}{path}sendInitialEvents=false"
        async with watching(session, quiet) as plain, watching(session, asked) as told:
            await wait_for(lambda: plain.events and told.events, message="both streams begun")
            await wait_for(
                lambda: len(told.bookmarks()) >= 4,
                timeout=5,
                message="three intervals' bookmarks on the stream that asked",
            )
            assert len(plain.bookmarks()) == 1, plain.events
            assert streams.BOOKMARK_INTERVAL_HEADER not in plain.headers


@pytest.mark.parametrize("path", ROUTES)
async def test_a_watch_without_a_timeout_ends_after_its_lifetime(path: str) -> None:
    """As kube-apiserver ends a watch after --min-request-timeout: its client lists and
    watches again, so a stalled connection cannot leave it unaware for ever. A watch with
    its own `timeoutSeconds` lasts that long instead."""
    quiet = f"{path}sendInitialEvents=false"
    async with (
        api(watch_min_lifetime=0.3) as (url, session),
        watching(session, f"{url}{quiet}") as bounded,
        watching(session, f"{url}{quiet}&timeoutSeconds=60") as own,
    ):
        await wait_for(lambda: bounded.ended, timeout=5, message="the server ending it")
        assert bounded.bookmarks(), "it had begun"
        await wait_for(own.bookmarks, message="the other stream begun")
        assert not own.ended
