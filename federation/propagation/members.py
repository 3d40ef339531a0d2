"""Member connectors for the propagator, built from each Cluster's `spec.connection`.

Fed by the clusters mirror (the Cluster objects) and a `connect` factory (by default
`clusters.kube.connector.connect`, as the cluster monitor builds them); feeds the applier,
the status watches and start-up garbage collection. A connector is rebuilt when the
Cluster's connection changes and closed when the Cluster leaves. Each member also gets a
semaphore so at most `concurrency_per_member` calls are in flight to it at once: one slow
member must not take every worker, and a member is never flooded.

Why dropping a connector calls the `on_retire` hooks first: closing it does not end a
read already in flight on it (an open watch stream just goes quiet: no event, no error, no
end), so whoever keeps a long read open on a member must hear that its connector is gone
and read again through the one that replaces it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from clusters import member as member_mod
from federation import clock as clock_mod
from federation.settings import MemberSettings
from policies.models.cluster import Cluster, Connection

__all__ = ["Connect", "Members", "kube_connect"]

log = logging.getLogger(__name__)

Connect = Callable[[Cluster], Awaitable[member_mod.Member]]
Retired = Callable[[str], None]


def kube_connect(settings: MemberSettings, clock: clock_mod.Clock) -> Connect:
    """The real factory: a KubeConnector per member (retries live inside it)."""

    async def make(cluster: Cluster) -> member_mod.Member:
        from clusters.kube import connector

        return await connector.connect(
            cluster.name, cluster.spec.connection, settings=settings, clock=clock
        )

    return make


class Members:
    """name → (connection it was built from, connector, semaphore)."""

    def __init__(self, connect: Connect, *, concurrency: int) -> None:
        self._connect = connect
        self._concurrency = concurrency
        self._conns: dict[str, tuple[Connection, member_mod.Member]] = {}
        self._limits: dict[str, asyncio.Semaphore] = {}
        self._lock = asyncio.Lock()
        self._on_retire: list[Retired] = []

    def on_retire(self, hook: Retired) -> None:
        """Call `hook(name)` each time `name`'s connector is dropped (the member left, or its
        connection changed), after it is out of the table and before it is closed."""
        self._on_retire.append(hook)

    def limit(self, name: str) -> asyncio.Semaphore:
        sem = self._limits.get(name)
        if sem is None:
            sem = self._limits[name] = asyncio.Semaphore(self._concurrency)
        return sem

    async def get(self, cluster: Cluster) -> member_mod.Member:
        """The connector for `cluster` (built or rebuilt on demand); errors.Invalid if unusable."""
        known = self._conns.get(cluster.name)
        if known is not None and known[0] == cluster.spec.connection:
            return known[1]
        async with self._lock:
            known = self._conns.get(cluster.name)
            if known is not None and known[0] == cluster.spec.connection:
                return known[1]
            if known is not None:
                del self._conns[cluster.name]
                await self._retire(cluster.name, known[1])
            conn = await self._connect(cluster)
            self._conns[cluster.name] = (cluster.spec.connection, conn)
            return conn

    async def forget(self, name: str) -> None:
        known = self._conns.pop(name, None)
        if known is not None:
            await self._retire(name, known[1])

    async def _retire(self, name: str, conn: member_mod.Member) -> None:
        for hook in self._on_retire:
            hook(name)
        await conn.close()

    async def close(self) -> None:
        for name in list(self._conns):
            await self.forget(name)
