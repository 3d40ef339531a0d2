"""The per-client token bucket, on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from federation import clock as clock_mod
from federation.api import limits


async def test_burst_then_refusal_then_refill() -> None:
    clock = clock_mod.FakeClock()
    limiter = limits.RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.wait_for("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.wait_for("a") == pytest.approx(0.5)
    assert limiter.wait_for("b") == 0.0, "another client has its own bucket"
    await clock.advance(0.5)
    assert limiter.wait_for("a") == 0.0
    assert limiter.wait_for("a") > 0


@pytest.mark.parametrize(
    ("elapsed", "expected"),
    [
        pytest.param(0.0, 0.0, id="full bucket"),
        pytest.param(100.0, 0.0, id="refill never exceeds the burst"),
    ],
)
async def test_refill_is_capped_at_burst(elapsed: float, expected: float) -> None:
    clock = clock_mod.FakeClock()
    limiter = limits.RateLimiter(rate=1.0, burst=2, clock=clock)
    await clock.advance(elapsed)
    assert [limiter.wait_for("a") for _ in range(2)] == [expected, expected]
    assert limiter.wait_for("a") > 0


def test_idle_clients_are_forgotten_when_the_table_is_full() -> None:
    limiter = limits.RateLimiter(rate=1.0, burst=1, clock=clock_mod.FakeClock(), max_clients=2)
    for key in ("a", "b", "c"):
        limiter.wait_for(key)
    assert list(limiter._buckets) == ["b", "c"]


async def test_a_stuck_request_is_answered_504_but_a_watch_is_not_cut() -> None:
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    async def stuck(request: web.Request) -> web.Response:
        await asyncio.Event().wait()
        return web.Response()

    async def quick(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(middlewares=[limits.timeout_middleware(0.05)])
    app.add_routes([web.get("/stuck", stuck), web.get("/quick", quick)])
    async with TestClient(TestServer(app)) as client:
        resp = await client.get("/stuck")
        assert resp.status == 504 and (await resp.json())["reason"] == "Timeout"
        assert (await client.get("/quick")).status == 200
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await client.get("/stuck?watch=true")
