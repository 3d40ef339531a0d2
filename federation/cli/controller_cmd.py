"""`fedctl controller`: the long-running process that serves the API and runs the loops.

Every component starts under the runtime supervisor; SIGINT and SIGTERM stop them in
reverse order so the API stops accepting writes before the loops behind it go away.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from typing import TYPE_CHECKING, Any

from federation import settings as settings_mod

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["register", "serve"]

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    cmd = sub.add_parser("controller", help="run the federation controller and its REST API")
    cmd.add_argument(
        "--listen",
        default=settings_mod.ApiSettings().listen,
        help="HOST:PORT for the API and dashboard (default %(default)s)",
    )
    cmd.set_defaults(func=_run)


def split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


async def serve(app: web.Application, *, host: str, port: int) -> None:
    """Serve `app` until cancelled; the supervisor owns this coroutine."""
    from aiohttp import web

    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info("API listening on http://%s:%d", host, port)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


async def _run(args: argparse.Namespace) -> int:
    from federation.api import app as api_app
    from federation.registry.etcd import EtcdStore
    from federation.runtime.supervisor import Supervisor

    settings = settings_mod.from_env(
        etcd={"endpoints": [e.strip() for e in args.etcd.split(",") if e.strip()]},
        api={"listen": args.listen},
    )
    store = EtcdStore(settings.etcd)
    await store.connect()
    host, port = split_listen(settings.api.listen)
    supervisor = Supervisor()
    app = api_app.build_app(store, settings=settings.api)
    supervisor.add("api", lambda: serve(app, host=host, port=port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"fedctl controller: API on http://{host}:{port}, registry {store.endpoint}", flush=True)
    try:
        await supervisor.run(stop)
    finally:
        await store.close()
    return 0
