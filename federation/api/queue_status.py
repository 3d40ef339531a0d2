"""`GET /apis/status.fedctl.io/v1alpha1/queues`: each queue's usage against its limits.

Fed by the registry as the live plan reads it (`plan_routes.PlanApi.live`: queues, clusters
and their statuses, workloads, Bindings), so usage is charged exactly as the controller
charges it, chip-model entries (`accelerator/<model>`) included; feeds `fedctl get queues`,
`fedctl describe queue` and any client.

Why a view of its own: the question a platform team asks of a queue is "how much of its
capability is used, how much is guaranteed, how many workloads wait", and neither the
Queue object nor any one Binding answers it. A parent takes no work itself, so its usage
and counts are its whole subtree's; a queue that Bindings name but nobody defined is listed
too (that is where a workload with a mistyped queue waits). Only aggregates are returned,
never workload names, so any signed-in caller may read it, as it may read the queues.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from federation import clock as clock_mod
from federation.api import plan_routes
from federation.queue import fairshare
from federation.quota import hierarchy
from federation.registry import store as st
from federation.resources import ResourceList
from federation.settings import SchedulerSettings

__all__ = ["QUEUES_PATH", "QueueStatusApi", "summarise"]

QUEUES_PATH = "/apis/status.fedctl.io/v1alpha1/queues"


REFRESH_SECONDS = 2.0
"""How old an answer may be while the registry keeps changing. One answer charges every
admitted workload (about 2 s of CPU at 50,000), so a dashboard left open on a busy
federation must not recompute it on every call: that CPU is taken from the controller."""


@dataclass(frozen=True, slots=True)
class _Answer:
    revision: int
    at: float
    items: list[dict[str, Any]]


class QueueStatusApi:
    """The queue status route bound to one Store.

    An answer is kept and served again while the registry has not changed since it was
    read, or while it is younger than `refresh` seconds; concurrent calls share one
    computation. The response says which registry revision it reflects and its age."""

    def __init__(
        self,
        store: st.Store,
        *,
        settings: SchedulerSettings | None = None,
        clock: clock_mod.Clock = clock_mod.real,
        refresh: float = REFRESH_SECONDS,
    ) -> None:
        self.store = store
        self.plan = plan_routes.PlanApi(store, settings=settings)
        self.default_queue = (settings or SchedulerSettings()).default_queue
        self.clock = clock
        self.refresh = refresh
        self.computed = 0
        """How many answers were computed (not served again): for tests and curiosity."""
        self._kept: _Answer | None = None
        self._lock = asyncio.Lock()

    def routes(self) -> list[web.RouteDef]:
        return [web.get(QUEUES_PATH, self.list_queues)]

    async def list_queues(self, _: web.Request) -> web.Response:
        async with self._lock:
            answer, stale = await self._answer()
        age = max(0.0, self.clock.monotonic() - answer.at)
        return web.json_response(
            {
                "items": answer.items,
                "revision": answer.revision,
                "ageSeconds": round(age, 1),
                "stale": stale,  # the registry changed since: ask again after a while
            }
        )

    async def _answer(self) -> tuple[_Answer, bool]:
        """The answer to serve, and whether the registry has changed since it was read."""
        revision = await self.store.current_revision()
        kept = self._kept
        if kept is not None and kept.revision == revision:
            return kept, False
        if kept is not None and self.clock.monotonic() - kept.at < self.refresh:
            return kept, True
        state = await self.plan.live()  # read after the revision: never older than it says
        # Charging every admitted workload is pure CPU work that grows with the federation;
        # off the event loop, which the watches and the leader lease share.
        items = await asyncio.to_thread(summarise, state, default=self.default_queue)
        self.computed += 1
        self._kept = _Answer(revision, self.clock.monotonic(), items)
        return self._kept, False


def summarise(state: plan_routes.LiveState, *, default: str) -> list[dict[str, Any]]:
    """One item per queue, defined or named by a Binding, in name order."""
    snapshot = state.snapshot()
    usage = state.usage(snapshot)
    queues = snapshot.queues
    tree = hierarchy.tree_of(queues)
    capacity = dict(snapshot.capacity.items())
    admitted = {q: len(usage.in_queue(q)) for q in usage.by_queue()}
    names = set(queues) | set(admitted) | set(state.pending)
    items = []
    for name in sorted(names):
        members = tree.members.get(name, (name,))
        used = ResourceList(usage.totals_of(members))
        queue = queues.get(name)
        spec = queue.spec if queue is not None else None
        weight = spec.weight if spec is not None else 1
        item: dict[str, Any] = {
            "name": name,
            "defined": queue is not None,
            "implicit": queue is None and name == default,
            "created": queue.metadata.creation_timestamp if queue is not None else None,
            "parent": spec.parent if spec is not None else None,
            "children": list(tree.children.get(name, ())),
            "weight": weight,
            "priority": spec.priority if spec is not None else 0,
            "admitted": sum(admitted.get(m, 0) for m in members),
            "pending": sum(state.pending.get(m, 0) for m in members),
            "used": used.to_wire(),
            "capability": spec.capability.to_wire()
            if spec is not None and spec.capability is not None
            else None,
            "guarantee": spec.guarantee.to_wire() if spec is not None else {},
            "share": round(float(fairshare.ShareKey(used, capacity, weight).approx), 6),
        }
        items.append(item)
    return items
