"""Writes that race: a `metadata.resourceVersion` in an applied document is a
precondition (a stale one is a 409 naming the object and both revisions, never a lost
update); a write without one is last-writer-wins and re-reads after losing a race, as
Kubernetes' GuaranteedUpdate does; an apply stopped after some documents were stored says
which; and an update that changes nothing writes nothing.

Concurrency on a real etcd; the exact interleavings on an in-memory registry whose
commit lets "another writer" in just before a chosen transaction."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp
import pytest

from federation.api import app as api_app
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from tests.integration import test_api_input
from tests.integration.test_api import Api
from tests.serving import serving

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"


def queue(name: str, weight: int, rv: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} | ({"resourceVersion": rv} if rv else {})
    return {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": meta,
            "spec": {"weight": weight}}  # fmt: skip


def listed(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


client = test_api_input.client
"""The API over the session's etcd, wiped before and after (a fixture)."""


class Interloper(MemoryStore):
    """A registry where another writer changes `key` just before each of the next
    `times` transactions that write it (after the API read it)."""

    def __init__(self) -> None:
        super().__init__()
        self.key = ""
        self.times = 1

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        if self.times and any(op.key == self.key for op in ops):
            self.times -= 1
            current = await self.get(self.key)
            assert current is not None
            changed = current.value.replace(b'"weight":', b'"weight":9')
            await super().commit([st.Put(self.key, changed)])
        return await super().commit(ops, guards=guards)


@pytest.fixture
async def raced() -> AsyncIterator[tuple[Api, Interloper]]:
    store = Interloper()
    async with serving(api_app.build_app(store)) as base, aiohttp.ClientSession() as session:
        yield Api(base, session), store
    await store.close()


async def test_apply_with_a_stale_resource_version_is_a_409_not_a_lost_update(
    client: Api,
) -> None:
    code, _ = await client.call("POST", f"{API}/apply", queue("lu", 1))
    assert code == 200
    _, mine = await client.call("GET", f"{API}/queues/lu")
    stale = mine["metadata"]["resourceVersion"]
    code, theirs = await client.call("PUT", f"{API}/queues/lu", queue("lu", 9, stale))
    assert code == 200, theirs
    code, doc = await client.call("POST", f"{API}/apply", queue("lu", 2, stale))
    assert code == 409, doc
    assert doc["reason"] == "Conflict"
    current = theirs["metadata"]["resourceVersion"]
    assert (
        f'queues "lu": expected revision {stale}, current revision is {current}' in doc["message"]
    )
    _, now = await client.call("GET", f"{API}/queues/lu")
    assert now["spec"]["weight"] == 9, "the other writer's change was overwritten"
    # The current resourceVersion is a precondition that holds.
    code, doc = await client.call("POST", f"{API}/apply", queue("lu", 2, current))
    assert code == 200 and doc["results"][0]["result"] == "configured", doc


async def test_a_stale_document_refuses_the_whole_apply_before_anything_is_stored(
    client: Api,
) -> None:
    await client.call("POST", f"{API}/apply", queue("lu", 1))
    _, mine = await client.call("GET", f"{API}/queues/lu")
    stale = mine["metadata"]["resourceVersion"]
    await client.call("PUT", f"{API}/queues/lu", queue("lu", 9))
    code, doc = await client.call(
        "POST", f"{API}/apply", listed(queue("fresh", 1), queue("lu", 2, stale))
    )
    assert code == 409, doc
    code, _ = await client.call("GET", f"{API}/queues/fresh")
    assert code == 404, "a document was stored by an apply answered 409"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("POST", "/apply", id="apply"),
        pytest.param("PUT", "/queues/race1", id="PUT without a resourceVersion"),
    ],
)
async def test_concurrent_writers_without_a_resource_version_all_succeed(
    client: Api, method: str, path: str
) -> None:
    await client.call("POST", f"{API}/apply", queue("race1", 1))
    answers = await asyncio.gather(
        *(client.call(method, API + path, queue("race1", w)) for w in range(1, 9))
    )
    assert [code for code, _ in answers] == [200] * 8, answers
    _, now = await client.call("GET", f"{API}/queues/race1")
    assert now["spec"]["weight"] in range(1, 9)


async def test_an_apply_that_loses_a_race_reads_again_and_writes(
    raced: tuple[Api, Interloper],
) -> None:
    client, store = raced
    await client.call("POST", f"{API}/apply", listed(*(queue(f"q{i}", 1) for i in range(150))))
    # Its batch loses, and so does its write on its own after reading it again.
    store.key, store.times = "/fedctl/policies/Queue/_/q120", 3
    code, doc = await client.call(
        "POST", f"{API}/apply", listed(*(queue(f"q{i}", 2) for i in range(150)))
    )
    assert code == 200, doc
    assert {r["result"] for r in doc["results"]} == {"configured"}
    _, hot = await client.call("GET", f"{API}/queues/q120")
    assert hot["spec"]["weight"] == 2


async def test_an_apply_stopped_after_storing_some_documents_says_which(
    raced: tuple[Api, Interloper],
) -> None:
    client, store = raced
    await client.call("POST", f"{API}/apply", listed(*(queue(f"q{i}", 1) for i in range(150))))
    _, hot = await client.call("GET", f"{API}/queues/q120")
    docs = [queue(f"q{i}", 2) for i in range(150)]
    docs[120] = queue("q120", 2, hot["metadata"]["resourceVersion"])
    store.key = "/fedctl/policies/Queue/_/q120"  # changed after the apply read it
    code, doc = await client.call("POST", f"{API}/apply", listed(*docs))
    assert code == 409, doc
    assert 'queues "q120"' in doc["message"] and "/fedctl/" not in doc["message"]
    assert "120 of the 150 documents were applied" in doc["message"]
    results = {r["name"]: r["result"] for r in doc["details"]["results"]}
    assert results["q0"] == results["q119"] == "configured"
    assert results["q120"] == "failed" and results["q121"] == "not applied"
    _, after = await client.call("GET", f"{API}/queues/q121")
    assert after["spec"]["weight"] == 1, "a document reported as not applied was stored"


async def test_an_update_that_changes_nothing_keeps_its_resource_version(client: Api) -> None:
    _, created = await client.call("POST", f"{API}/queues", queue("qa", 3))
    rv = created["metadata"]["resourceVersion"]
    for _ in range(2):
        code, again = await client.call("PUT", f"{API}/queues/qa", queue("qa", 3))
        assert code == 200 and again["metadata"]["resourceVersion"] == rv, again
