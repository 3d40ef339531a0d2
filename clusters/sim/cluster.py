"""One simulated member cluster: store, API server, control plane and faults on loopback ports.

The fleet runner (`fleet.py`) and tests build a `SimCluster` per member. It owns an
`ObjectStore`, serves the API app from `server.build_app` on its own 127.0.0.1 port (so a
`down` fault really refuses connections), runs the `Controllers` that make it behave like
a cluster, and serves the `/_sim` admin routes both on the API port and on a separate
admin port that keeps answering while the API listener is down or blackholed. The store
and its resourceVersion counter live for the life of the object, so state survives any
number of down/up cycles, as it does when a real apiserver restarts in front of etcd.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiohttp import web

from clusters.sim import controllers_nodes, faults
from clusters.sim.clock import Clock, SimClock
from clusters.sim.controllers import Controllers
from clusters.sim.controllers_base import NODE, POD, Settings
from clusters.sim.profile import ClusterProfile
from clusters.sim.server import ClusterInfo, build_app
from clusters.sim.store import ObjectStore

__all__ = ["SimCluster"]

log = logging.getLogger(__name__)

_HOST = "127.0.0.1"


class _Silent(asyncio.Protocol):
    """Accepts a connection and never answers: what a blackholed apiserver looks like."""

    def __init__(self, sink: set[asyncio.BaseTransport]) -> None:
        self._sink = sink

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._sink.add(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        pass


class SimCluster:
    """A member cluster served over HTTP, controlled through `/_sim` or these methods."""

    def __init__(
        self,
        profile: ClusterProfile,
        *,
        clock: Clock | None = None,
        settings: Settings | None = None,
        history_limit: int = 10_000,
        bookmark_interval: float = 60.0,
    ) -> None:
        self.profile = profile
        self.name = profile.name
        self.clock = clock or SimClock(speed=1.0)
        self.store = ObjectStore(clock=self.clock, history_limit=history_limit)
        self.controllers = Controllers(
            self.store, self.clock, settings=settings, cluster_name=profile.name
        )
        self.faults = faults.FaultManager(self)
        version = profile.kubernetes_version
        major, minor = version.lstrip("v").split(".")[:2]
        self.info = ClusterInfo(name=profile.name, git_version=version, major=major, minor=minor)
        self._app = build_app(
            self.store,
            info=self.info,
            middlewares=[self.faults.middleware],
            extra_routes=faults.admin_routes(self.faults),
            bookmark_interval=bookmark_interval,
        )
        self._runner = web.AppRunner(self._app, shutdown_timeout=0.5, access_log=None)
        self._site: web.TCPSite | None = None
        self._admin_runner: web.AppRunner | None = None
        self._hole: asyncio.base_events.Server | None = None
        self._hole_conns: set[asyncio.BaseTransport] = set()
        self._task: asyncio.Task[None] | None = None
        self.port = 0
        self.admin_port = 0
        self.listening = False

    @property
    def url(self) -> str:
        return f"http://{_HOST}:{self.port}"

    @property
    def admin_url(self) -> str:
        return f"http://{_HOST}:{self.admin_port}/_sim"

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self, *, port: int = 0, admin_port: int = 0) -> None:
        """Seed nodes, start the control plane and both listeners (port 0: pick a free one)."""
        if self.store.count(NODE) == 0:
            self.controllers.seed_nodes(
                controllers_nodes.build_nodes(
                    self.profile, now=self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
                )
            )
        self._task = asyncio.create_task(self.controllers.run(), name=f"sim-{self.name}")
        await self._runner.setup()
        self.port = port
        await self.go_up()
        admin = web.Application()
        admin.add_routes(faults.admin_routes(self.faults))
        self._admin_runner = web.AppRunner(admin, access_log=None)
        await self._admin_runner.setup()
        site = web.TCPSite(self._admin_runner, _HOST, admin_port)
        await site.start()
        self.admin_port = self._admin_runner.addresses[0][1]

    async def stop(self) -> None:
        await self.faults.close()
        self._close_hole()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.store.close_watches()
        await self._runner.cleanup()
        if self._admin_runner is not None:
            await self._admin_runner.cleanup()
        self.listening = False

    # -- the Listener protocol used by faults -------------------------------------------------

    async def go_down(self) -> None:
        """Close the API listener and every open connection: clients get ECONNREFUSED."""
        self._close_hole()
        await self._stop_site()

    async def go_blackhole(self) -> None:
        """Keep the port open but never answer, so only a client timeout ends a call."""
        await self._stop_site()
        if self._hole is None:
            loop = asyncio.get_running_loop()
            self._hole = await loop.create_server(
                lambda: _Silent(self._hole_conns), _HOST, self.port, reuse_address=True
            )

    async def go_up(self) -> None:
        self._close_hole()
        if self._site is None:
            self._site = web.TCPSite(self._runner, _HOST, self.port, reuse_address=True)
            await self._site.start()
            if not self.port:
                self.port = self._site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.listening = True

    async def _stop_site(self) -> None:
        if self._site is not None:
            await self._site.stop()
            self._site = None
        self.store.close_watches()
        server = self._runner.server
        if server is not None:
            for conn in server.connections:
                conn.force_close()
        self.listening = False

    def _close_hole(self) -> None:
        if self._hole is not None:
            self._hole.close()
            self._hole = None
        for transport in self._hole_conns:
            transport.close()
        self._hole_conns.clear()

    def drop_watches(self) -> None:
        self.store.close_watches()

    def compact(self) -> None:
        self.store.compact()

    def set_nodes_ready(self, count: int, *, ready: bool, pool: str | None) -> list[str]:
        """NotReady: the first `count` Ready nodes (of `pool`); Ready: every NotReady node."""
        nodes, _ = self.store.list(NODE, copy=False)
        names = []
        for node in nodes:
            labels = node["metadata"].get("labels") or {}
            if pool and labels.get("fedctl.io/node-pool") != pool:
                continue
            is_ready = controllers_nodes.node_ready(self.controllers.ctx, node["metadata"]["name"])
            if is_ready != ready:
                names.append(node["metadata"]["name"])
        if not ready:
            names = names[:count]
        return self.controllers.set_nodes_ready(names, ready=ready)

    def state(self) -> dict[str, Any]:
        ctx = self.controllers.ctx
        ready = sum(1 for n in ctx.nodes.nodes if controllers_nodes.node_ready(ctx, n))
        return {
            "cluster": self.name,
            "url": self.url,
            "listening": self.listening,
            "resourceVersion": str(self.store.resource_version),
            "nodes": {"total": len(ctx.nodes.nodes), "ready": ready},
            "pods": self.store.count(POD),
        }
