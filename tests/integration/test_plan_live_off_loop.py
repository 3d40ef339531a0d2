"""A live plan runs off the event loop: the API (and the leader lease the same loop renews)
keeps answering while one plans.

A 40 s `fedctl plan --live` of 520 workloads ran on the event loop and the controller lost
its lease. Here the plan of one workload is held at its start, in `PlanApi._plan`, until
another request has been answered: on the loop, that request could never be, and the hold
ends at its deadline instead.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from federation.api import plan_routes
from federation.cli import client
from tests.integration.test_scheduler_loop import registry_with_member
from tests.serving import api_server
from tests.unit.scheduler import fleet

pytestmark = pytest.mark.integration

HOLD = 5.0
"""Seconds the plan waits for the other request's answer before it gives up."""


async def test_the_api_answers_another_request_while_a_plan_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started, answered = threading.Event(), threading.Event()
    timed_out: list[bool] = []
    real = plan_routes.PlanApi._plan

    def held(self: plan_routes.PlanApi, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if not started.is_set():
            started.set()
            timed_out.append(not answered.wait(HOLD))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(plan_routes.PlanApi, "_plan", held)
    store, _ = await registry_with_member()
    body = json.dumps(fleet.workload("small", cpu="1").to_wire())
    async with api_server(store) as server, client.ApiClient(server) as api:
        planning = asyncio.create_task(
            api.request("POST", plan_routes.PLAN_PATH, text=body, content_type="application/yaml")
        )
        await asyncio.wait_for(asyncio.to_thread(started.wait, HOLD), HOLD + 1)
        listed = await asyncio.wait_for(
            api.request("GET", "/apis/fedctl.io/v1alpha1/clusters"), HOLD
        )
        answered.set()
        planned = await asyncio.wait_for(planning, HOLD * 2)
    assert timed_out == [False], "the other request waited for the plan to finish"
    assert [c["metadata"]["name"] for c in listed["items"]] == ["a"]
    assert planned["plans"][0]["after"]["placement"] == {"a": 1}
