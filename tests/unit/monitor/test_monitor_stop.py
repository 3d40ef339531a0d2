"""The monitor stops when it is cancelled (a change of leader), even while a worker is
replacing a member's connection, so the next leader's monitor can run.

A worker waiting for a member's old loops to end, under `suppress(CancelledError)`,
swallowed its own cancellation when the monitor was stopped right then: it went on
serving its queue, the monitor never ended, and the controller never ran it again, so
every member stayed `NotProbed` and a dead member was never detected."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from clusters import member
from federation.registry import codec, keys
from policies.models.cluster import Cluster
from tests.unit.monitor.test_monitor_loop import Harness, ScriptedMember, ready_status
from tests.waiting import stop, wait_for


class SlowToStop(ScriptedMember):
    """A member whose node watch, once cancelled, ends only when `released` is set (an
    in-flight request finishing)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.stopping = asyncio.Event()
        self.released = asyncio.Event()

    async def follow(
        self, api_version: str, kind: str, *, namespace: str | None = None
    ) -> AsyncIterator[member.Relisted | member.Changed]:
        yield member.Relisted(list(self.items[kind]), "1")
        try:
            while True:
                yield await self.changes[kind].get()
        except asyncio.CancelledError:
            if kind == "Node":
                self.stopping.set()
                await self.released.wait()
            raise


async def test_a_monitor_stopped_while_a_connection_is_replaced_ends() -> None:
    h = Harness()
    made: list[SlowToStop] = []

    async def connect(cluster: Cluster) -> SlowToStop:
        made.append(SlowToStop(cluster.name))
        return made[-1]

    h.monitor._connect = connect
    running = asyncio.create_task(h.monitor.run())
    try:
        await h.join("c1")
        await wait_for(lambda: ready_status(h, "c1", "True"), message="c1 Ready")
        # The connection changes: a worker stops c1's loops to connect it again.
        clusters = codec.TypedStore(h.store, codec.Codec(Cluster))
        stored = await clusters.get(keys.cluster_key("c1"))
        assert stored is not None
        spec = stored.obj.spec
        connection = spec.connection.model_copy(update={"context": "elsewhere"})
        moved = stored.obj.model_copy(
            update={"spec": spec.model_copy(update={"connection": connection})}
        )
        await clusters.update(keys.cluster_key("c1"), moved, revision=stored.revision)
        await wait_for(made[0].stopping.is_set, message="the worker waits on c1")
        running.cancel()  # leadership lost right then
        await asyncio.sleep(0)
        made[0].released.set()
        await wait_for(running.done, timeout=5, message="the monitor ended")
        assert running.cancelled()
    finally:
        for m in made:
            m.released.set()
        await stop([running])
        await h.store.close()
