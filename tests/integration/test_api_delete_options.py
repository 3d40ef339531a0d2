"""A DELETE's body, Kubernetes' `DeleteOptions`, is honoured as the Kubernetes API server
honours it, or refused with a 400 naming what is not taken; never ignored. Client
libraries put their preconditions there (the Python client sends a body with every
delete): ignored, a guarded delete removed an object another writer had replaced.

The controller is the real API over an in-memory registry."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from federation.registry.memory import MemoryStore
from tests.serving import api_server

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
QUEUE = {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": "pre1"},
         "spec": {"weight": 1}}  # fmt: skip


class Api:
    def __init__(self, base: str, session: aiohttp.ClientSession) -> None:
        self.base, self.session = base, session

    async def call(self, method: str, path: str, body: str | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        async with self.session.request(
            method, f"{self.base}{API}/{path}", data=body, headers=headers
        ) as resp:
            text = await resp.text()
            return resp.status, json.loads(text) if text.startswith("{") else text


@pytest.fixture
async def api() -> AsyncIterator[tuple[Api, dict[str, Any]]]:
    """The API holding queue pre1; yields it and the queue as stored."""
    store = MemoryStore()
    async with api_server(store) as url, aiohttp.ClientSession() as session:
        client = Api(url, session)
        code, stored = await client.call("POST", "queues", json.dumps(QUEUE))
        assert code == 201, stored
        yield client, stored
    await store.close()


def options(**fields: Any) -> str:
    return json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", **fields})


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        pytest.param(options(preconditions={"uid": "nope"}), 409,
                     "Precondition failed: UID in precondition: nope, UID in object meta: ",
                     id="another uid"),
        pytest.param(options(preconditions={"resourceVersion": "1", "uid": "nope"}), 409,
                     "Precondition failed: UID in precondition: nope",
                     id="the tester's body: uid and a stale resourceVersion"),
        pytest.param(options(preconditions={"resourceVersion": "999"}), 409,
                     "conflict on queues \"pre1\": expected revision 999", id="another revision"),
        pytest.param(options(preconditions={"resourceVersion": "x"}), 400,
                     'preconditions.resourceVersion: Invalid value: "x"', id="no revision"),
        pytest.param("{not json", 400, "DeleteOptions: malformed JSON: ", id="not JSON"),
        pytest.param("[1]", 400, "DeleteOptions: must be an object", id="not an object"),
        pytest.param(json.dumps({"kind": "Queue"}), 400,
                     'kind: Unsupported value: "Queue": supported values: "DeleteOptions"',
                     id="another kind"),
        pytest.param(options(propagationPolicy="Orphan"), 400,
                     'propagationPolicy: Unsupported value: "Orphan"', id="orphan the copies"),
        pytest.param(options(orphanDependents=True), 400,
                     "orphanDependents: Unsupported value: true", id="orphanDependents"),
        pytest.param(options(dryRun=["Some"]), 400,
                     'dryRun: Unsupported value: "Some": supported values: "All"',
                     id="another dry run"),
        pytest.param(options(precondition={"uid": "x"}), 400,
                     'precondition: unknown field "precondition"', id="a misspelt field"),
        pytest.param(options(dryRun=["All"]), 200, None, id="a dry run, kept"),
    ],
)  # fmt: skip
async def test_a_delete_whose_options_do_not_hold_deletes_nothing(
    api: tuple[Api, dict[str, Any]], body: str, code: int, message: str | None
) -> None:
    client, _ = api
    status, answer = await client.call("DELETE", "queues/pre1", body)
    assert status == code, answer
    if message is not None:
        assert answer["message"].startswith(message), answer
    status, _ = await client.call("GET", "queues/pre1")
    assert status == 200


@pytest.mark.parametrize(
    "preconditions",
    [
        pytest.param(lambda meta: {"uid": meta["uid"]}, id="its uid"),
        pytest.param(lambda meta: {"resourceVersion": meta["resourceVersion"]}, id="its revision"),
        pytest.param(
            lambda meta: {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]},
            id="both",
        ),
        pytest.param(lambda meta: None, id="none, with the body the Python client sends"),
    ],
)
async def test_a_delete_whose_options_hold_deletes(
    api: tuple[Api, dict[str, Any]], preconditions: Any
) -> None:
    client, stored = api
    given = preconditions(stored["metadata"])
    body = options(propagationPolicy="Background", gracePeriodSeconds=0, preconditions=given)
    status, answer = await client.call("DELETE", "queues/pre1", body)
    assert status == 200, answer
    assert answer["details"] == {
        "name": "pre1",
        "group": "fedctl.io",
        "kind": "queues",
        "uid": stored["metadata"]["uid"],
    }
    status, _ = await client.call("GET", "queues/pre1")
    assert status == 404


async def test_a_namespace_is_deleted_only_with_the_uid_given(
    api: tuple[Api, dict[str, Any]],
) -> None:
    """A Namespace takes what it holds with it: a stale guard must stop all of it."""
    client, _ = api
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    code, stored = await client.call("POST", "apply", json.dumps({"items": [namespace]}))
    assert code in (200, 201), stored
    path = "namespaces/_/workloads/Namespace/team"
    code, stored = await client.call("GET", path)
    assert code == 200, stored
    code, answer = await client.call("DELETE", path, options(preconditions={"uid": "old"}))
    assert code == 409, answer
    assert (await client.call("GET", path))[0] == 200
    uid = stored["metadata"]["uid"]
    code, answer = await client.call("DELETE", path, options(preconditions={"uid": uid}))
    assert code == 200, answer
    assert (await client.call("GET", path))[0] == 404
