"""`fedctl controller`: the long-running process that serves the API and runs the loops.

Every component starts under the runtime supervisor; SIGINT and SIGTERM stop them in
reverse order so the API stops accepting writes before the loops behind it go away.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
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
    cmd.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="kubeconfig for members whose connection names only a context (env KUBECONFIG)",
    )
    cmd.set_defaults(func=_run)


def split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


async def serve(
    app: web.Application, *, host: str, port: int, ready: asyncio.Event | None = None
) -> None:
    """Serve `app` until cancelled; the supervisor owns this coroutine."""
    from aiohttp import web

    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info("API listening on http://%s:%d", host, port)
    print(f"fedctl controller: API on http://{host}:{port}", flush=True)
    if ready is not None:
        ready.set()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


async def _run(args: argparse.Namespace) -> int:
    return await run_controller(etcd=args.etcd, listen=args.listen, kubeconfig=args.kubeconfig)


async def run_controller(
    *,
    etcd: str,
    listen: str,
    kubeconfig: str | None = None,
    stop: asyncio.Event | None = None,
    ready: asyncio.Event | None = None,
) -> int:
    """Run every controller component until `stop` (or SIGINT/SIGTERM when not given)."""
    from federation.api import app as api_app
    from federation.monitor.monitor import ClusterMonitor
    from federation.registry.etcd import EtcdStore
    from federation.runtime.supervisor import Supervisor

    if kubeconfig:
        # Members whose connection names only a context are looked up in this file.
        os.environ["KUBECONFIG"] = kubeconfig

    settings = settings_mod.from_env(
        etcd={"endpoints": [e.strip() for e in etcd.split(",") if e.strip()]},
        api={"listen": listen},
    )
    store = EtcdStore(settings.etcd)
    await store.connect()
    host, port = split_listen(settings.api.listen)
    supervisor = Supervisor()
    app = api_app.build_app(store, settings=settings.api)
    supervisor.add("api", lambda: serve(app, host=host, port=port, ready=ready))
    monitor = ClusterMonitor(store, settings=settings.monitor, member_settings=settings.member)
    supervisor.add("cluster-monitor", monitor.run)
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    log.info("controller: API on http://%s:%d, registry %s", host, port, store.endpoint)
    try:
        await supervisor.run(stop)
    finally:
        await store.close()
    return 0
