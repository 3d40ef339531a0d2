"""A stored drill report this release cannot read (written by a newer one, or edited by
hand) is named as unreadable, with why; it never hides the readable ones by turning the
whole list into a 500, which left the dashboard's Drills view empty."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from federation.api import drills as drills_api
from federation.api import status
from federation.failover import drills
from federation.registry import keys
from federation.registry import store as st
from federation.registry.memory import MemoryStore

DRILLS = drills_api.DRILLS_PATH
GOOD, NEWER, BROKEN = (
    "20261206T230000Z-east",
    "20261206T231000Z-west",
    "20261206T232000Z-north",
)


def report(drill_id: str) -> drills.Report:
    return drills.Report(
        id=drill_id,
        cluster=drill_id.rpartition("-")[2],
        fault="down",
        started=f"2026-12-06T23:{drill_id[11:13]}:00+00:00",
        duration=90.0,
        detect=40.0,
        workloads=[drills.WorkloadTimeline("web/Deployment.apps/shop", replaced=70.0)],
    )


@pytest.fixture
async def client() -> AsyncIterator[TestClient[Any, Any]]:
    store = MemoryStore()
    # A newer release's report: its workload timelines carry a field this one lacks.
    newer = json.loads(drills.encode(report(NEWER)))
    newer["object"]["workloads"][0]["movedBy"] = "eviction"
    await store.commit(
        [
            st.Put(keys.drill_key(GOOD), drills.encode(report(GOOD))),
            st.Put(keys.drill_key(NEWER), json.dumps(newer).encode()),
            st.Put(keys.drill_key(BROKEN), b"{not json"),
        ]
    )
    api = drills_api.DrillsApi(store)
    app = web.Application(middlewares=[status.error_middleware])
    app.add_routes(api.routes())
    async with TestClient(TestServer(app)) as http:
        yield http
    await store.close()


async def test_the_list_keeps_the_readable_reports_and_names_the_others(
    client: TestClient[Any, Any],
) -> None:
    resp = await client.get(DRILLS)
    assert resp.status == 200, await resp.text()
    doc = await resp.json()
    assert [item["id"] for item in doc["items"]] == [GOOD]
    unreadable = {u["id"]: u for u in doc["unreadable"]}
    assert set(unreadable) == {NEWER, BROKEN}
    assert "movedBy" in unreadable[NEWER]["error"], "says which field it does not know"
    assert unreadable[NEWER]["key"] == keys.drill_key(NEWER)
    assert unreadable[BROKEN]["error"]
    warnings = resp.headers.getall("Warning")
    assert len(warnings) == 2 and all("cannot be read" in w for w in warnings)


async def test_reading_an_unreadable_report_is_a_status_saying_why(
    client: TestClient[Any, Any],
) -> None:
    for fmt in ("json", "svg", "markdown"):
        resp = await client.get(f"{DRILLS}/{NEWER}?format={fmt}")
        doc = await resp.json()
        assert resp.status == 500 and doc["kind"] == "Status", doc
        assert doc["message"].startswith(f"drill {NEWER} is stored but cannot be read")
        assert "movedBy" in doc["message"]
    resp = await client.get(f"{DRILLS}/{GOOD}")
    assert resp.status == 200 and (await resp.json())["detect"] == 40.0
