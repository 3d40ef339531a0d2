"""A user's NoExecute taint, written through the API by `fedctl cluster taint`, evicts a
workload tolerating it for 60 s once the 60 s are up: the API stamps its timeAdded, so
failover stops counting the toleration afresh on every pass.

The failover controller and the API share an in-memory registry and a fake clock.
"""

from __future__ import annotations

import asyncio
import contextlib

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


async def test_a_tolerated_user_taint_evicts_when_its_seconds_run_out() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    controller = FailoverController(store, settings=FailoverSettings(), clock=clock)
    controller.terms = lambda b: TOLERANT  # type: ignore[method-assign,assignment]
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    cluster = Cluster.model_validate({"metadata": {"name": "a"}, "spec": {"region": "r"}})
    await codec.TypedStore(store, codec.Codec(Cluster)).create(keys.cluster_key("a"), cluster)
    await codec.TypedStore(store, codec.Codec(ClusterStatus)).create(
        keys.cluster_status_key("a"), status("True", reason="ClusterReady")
    )
    await bindings.create(keys.binding_key(WEB), binding("web", clusters={"a": 1}))

    async def placement() -> dict[str, int]:
        stored = await bindings.get(keys.binding_key(WEB))
        assert stored is not None
        return stored.obj.placement()

    async def settle() -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        await wait_for(lambda: controller.queue.pending == 0, timeout=2, message="drained")

    task = asyncio.create_task(controller.run())
    try:
        async with serving(api_app.build_app(store, clock=clock)) as server:
            await settle()
            assert await fedctl(server, "cluster", "taint", "a", "maintenance:NoExecute") == 0
            await settle()
            await clock.advance(59)
            await settle()
            assert await placement() == {"a": 1}, "tolerated for 60 s"
            await clock.advance(1.1)
            await settle()
            assert await placement() == {}, "60 s after the taint was added, not after a pass"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await store.close()
