"""A drill started with no hold given outlasts detection plus the eviction grace, as
`fedctl drill run`'s does (90 s); the API says so, and what this controller's detection and
grace are, so the dashboard's form can tell a hold that would move nothing."""

from __future__ import annotations

import argparse

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from federation.api import drills as drills_api
from federation.api import status
from federation.cli import drill_cmd
from federation.registry.memory import MemoryStore
from federation.settings import FailoverSettings, MonitorSettings


def cli_default_duration() -> str:
    parser = argparse.ArgumentParser()
    drill_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["drill", "run", "--cluster", "x"])
    return str(args.duration)


async def test_the_list_gives_the_cli_s_default_hold_and_this_controller_s_timing() -> None:
    store = MemoryStore()
    timing = drills_api.Timing.of(
        MonitorSettings(failure_threshold=12, probe_period=3), FailoverSettings(eviction_grace=20)
    )
    app = web.Application(middlewares=[status.error_middleware])
    app.add_routes(drills_api.DrillsApi(store, timing=timing).routes())
    async with TestClient(TestServer(app)) as client:
        doc = await (await client.get(drills_api.DRILLS_PATH)).json()
    await store.close()
    assert doc["defaults"]["duration"] == cli_default_duration() == "90s"
    assert doc["timing"] == {"detectSeconds": 15.0, "evictionGraceSeconds": 20.0}
    defaults = drills_api.Timing.of(MonitorSettings(), FailoverSettings())
    assert defaults.detect + defaults.grace < 90, "the default hold outlasts both"
