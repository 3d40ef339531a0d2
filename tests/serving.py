"""The controller's API on a free loopback port, and the CLI pointed at it: what the CLI
tests share, so each starts its server and runs `fedctl` the one same way."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

from federation.api import app as api_app
from federation.cli import main
from federation.registry import embedded
from federation.registry import store as st


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """`app` served on a free loopback port; yields its URL."""
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    port = embedded.free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def api_server(store: st.Store) -> contextlib.AbstractAsyncContextManager[str]:
    """The controller's API over `store`, served as `serving` does."""
    return serving(api_app.build_app(store))


async def fedctl(server: str, *args: str) -> int:
    """`fedctl ARGS --server SERVER` in a worker thread (the CLI runs its own event loop)."""
    return await asyncio.to_thread(main.main, [*args, "--server", server])
