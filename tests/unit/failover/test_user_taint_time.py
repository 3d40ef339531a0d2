"""A user's NoExecute taint, written through the API by `fedctl cluster taint`, evicts a
workload tolerating it for 60 s once the 60 s are up: the API stamps its timeAdded, so
failover stops counting the toleration afresh on every pass.

The failover controller and the API share an in-memory registry and a fake clock.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from federation.api import app as api_app
from federation.clock import FakeClock
from federation.failover.controller import FailoverController, Terms
from federation.registry import codec, keys
from federation.registry.memory import MemoryStore
from federation.settings import FailoverSettings
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.common import Toleration
from tests.serving import fedctl, serving
from tests.unit.failover.builders import binding, status
from tests.waiting import wait_for

WEB = keys.WorkloadRef("default", "Deployment.apps", "web")
TOLERANT = Terms(
    tolerations=(
        Toleration(key="maintenance", operator="Exists", effect="NoExecute", toleration_seconds=60),
    )
)


@dataclass
class World:
    clock: FakeClock
    store: MemoryStore
    controller: FailoverController

    async def placement(self) -> dict[str, int]:
        stored = await codec.TypedStore(self.store, codec.Codec(Binding)).get(keys.binding_key(WEB))
        assert stored is not None
        return stored.obj.placement()

    async def settle(self) -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        await wait_for(lambda: self.controller.queue.pending == 0, timeout=2, message="drained")

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds)
        await self.settle()


@contextlib.asynccontextmanager
async def world(spec: dict[str, Any]) -> AsyncIterator[World]:
    """Cluster `a` (with `spec`) Ready, `web` placed there, failover running."""
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    controller = FailoverController(store, settings=FailoverSettings(), clock=clock)
    controller.terms = lambda b: TOLERANT  # type: ignore[method-assign,assignment]
    cluster = Cluster.model_validate({"metadata": {"name": "a"}, "spec": spec})
    await codec.TypedStore(store, codec.Codec(Cluster)).create(keys.cluster_key("a"), cluster)
    await codec.TypedStore(store, codec.Codec(ClusterStatus)).create(
        keys.cluster_status_key("a"), status("True", reason="ClusterReady")
    )
    await codec.TypedStore(store, codec.Codec(Binding)).create(
        keys.binding_key(WEB), binding("web", clusters={"a": 1})
    )
    task = asyncio.create_task(controller.run())
    try:
        w = World(clock, store, controller)
        await w.settle()
        yield w
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await store.close()


async def test_a_tolerated_user_taint_evicts_when_its_seconds_run_out() -> None:
    async with (
        world({"region": "r"}) as w,
        serving(api_app.build_app(w.store, clock=w.clock)) as server,
    ):
        assert await fedctl(server, "cluster", "taint", "a", "maintenance:NoExecute") == 0
        await w.settle()
        await w.advance(59)
        assert await w.placement() == {"a": 1}, "tolerated for 60 s"
        await w.advance(1.1)
        assert await w.placement() == {}, "60 s after the taint was added, not after a pass"


async def test_a_taint_stored_without_a_time_counts_from_when_failover_first_saw_it() -> None:
    """Written before the API stamped NoExecute taints (straight to the registry here), it
    has no timeAdded: counted afresh on every pass, its toleration never ran out."""
    untimed = {"key": "maintenance", "effect": "NoExecute"}
    async with world({"region": "r", "taints": [untimed]}) as w:
        await w.advance(59)
        assert await w.placement() == {"a": 1}, "tolerated for 60 s"
        await w.advance(1.1)
        assert await w.placement() == {}, "60 s after failover first saw it"
