"""`GET /apis/status.fedctl.io/v1alpha1/queues`: each queue's usage against its limits.

Fed by the scheduling loop of this process while it leads (`queue_view.Published`: what
its latest cycle charged), else by the registry as the live plan reads it
(`plan_routes.PlanApi.live`: queues, clusters and their statuses, workloads, Bindings), so
usage is charged exactly as the controller charges it, chip-model entries
(`accelerator/<model>`) included; feeds `fedctl get queues`, `fedctl describe queue` and
any client.

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
from federation import gcpause
from federation.api import plan_routes, selectors
from federation.registry import store as st
from federation.scheduler import queue_view
from federation.settings import SchedulerSettings

__all__ = ["QUEUES_PATH", "QueueStatusApi", "summarise"]

QUEUES_PATH = "/apis/status.fedctl.io/v1alpha1/queues"


REFRESH_SECONDS = 2.0
"""How old a registry-read answer may be while the registry keeps changing. One answer
charges every admitted workload (about 5 s of CPU at 20,000), so a dashboard left open on a
busy federation must not recompute it on every call: that CPU is taken from the controller."""


@dataclass(frozen=True, slots=True)
class _Answer:
    revision: int
    at: float
    items: list[dict[str, Any]]
    source: str = "registry"


class QueueStatusApi:
    """The queue status route bound to one Store.

    While `source` holds a leading loop's tally, answers come from it (a pass over the
    queues). Otherwise the registry is read, and that answer is kept and served again
    while the registry has not changed since, or while it is younger than `refresh`
    seconds; concurrent calls share one computation. The response says which registry
    revision it reflects, its age, where it came from, and whether it is behind."""

    def __init__(
        self,
        store: st.Store,
        *,
        settings: SchedulerSettings | None = None,
        clock: clock_mod.Clock = clock_mod.real,
        refresh: float = REFRESH_SECONDS,
        source: queue_view.Published | None = None,
    ) -> None:
        self.store = store
        self.plan = plan_routes.PlanApi(store, settings=settings)
        self.default_queue = (settings or SchedulerSettings()).default_queue
        self.clock = clock
        self.refresh = refresh
        self.source = source
        self.computed = 0
        """How many answers were computed from the registry: for tests and curiosity."""
        self._kept: _Answer | None = None
        self._published: tuple[queue_view.Edition, _Answer] | None = None
        self._lock = asyncio.Lock()

    def routes(self) -> list[web.RouteDef]:
        return [web.get(QUEUES_PATH, self.list_queues)]

    async def list_queues(self, request: web.Request) -> web.Response:
        selectors.not_taken(request.query, view="the queue view")
        answer_stale = self._from_loop()
        if answer_stale is None:
            async with self._lock:
                answer_stale = await self._answer()
        answer, stale = answer_stale
        age = max(0.0, self.clock.monotonic() - answer.at)
        return web.json_response(
            {
                "items": answer.items,
                "revision": answer.revision,
                "ageSeconds": round(age, 1),
                "stale": stale,  # the registry changed since: ask again after a while
                "source": answer.source,  # "scheduler" (its latest cycle) or "registry"
            }
        )

    async def counts(self, name: str) -> tuple[int, int]:
        """How many workloads queue `name` has admitted and how many wait, as this view
        counts them (`fedctl get queues`): the leading loop's latest tally, else the
        registry read now, not an answer kept from before the work asked about."""
        from_loop = self._from_loop()
        if from_loop is None:
            items = await asyncio.to_thread(self._summarise, await self.plan.read())
        else:
            items = from_loop[0].items
        item = next((i for i in items if i["name"] == name), None)
        return (item["admitted"], item["pending"]) if item is not None else (0, 0)

    def _from_loop(self) -> tuple[_Answer, bool] | None:
        """The leading loop's latest tally as an answer, and whether changes wait for a
        cycle; None when no loop of this process leads."""
        latest = self.source.latest() if self.source is not None else None
        if latest is None:
            return None
        edition, behind = latest
        kept = self._published
        if kept is None or kept[0] is not edition:
            items = queue_view.items(edition.tally, default=self.default_queue)
            kept = self._published = (
                edition,
                _Answer(edition.revision, edition.at, items, "scheduler"),
            )
        return kept[1], behind

    async def _answer(self) -> tuple[_Answer, bool]:
        """The answer to serve, and whether the registry has changed since it was read."""
        revision = await self.store.current_revision()
        kept = self._kept
        if kept is not None and kept.revision == revision:
            return kept, False
        if kept is not None and self.clock.monotonic() - kept.at < self.refresh:
            return kept, True
        raw = await self.plan.read()  # read after the revision: never older than it says
        # Decoding and charging every admitted workload is pure CPU work that grows with
        # the federation; off the event loop, which the watches and the leader lease share.
        items = await asyncio.to_thread(self._summarise, raw)
        self.computed += 1
        self._kept = _Answer(revision, self.clock.monotonic(), items)
        return self._kept, False

    def _summarise(self, raw: dict[str, st.ListResult]) -> list[dict[str, Any]]:
        """`summarise` of a raw read, with the collector paused until everything decoded
        for it is freed again: resumed earlier, its next pass would walk every one of
        those objects (about a second at 20,000 workloads, every thread waiting)."""
        with gcpause.paused():
            return summarise(self.plan.state_of(raw), default=self.default_queue)


def summarise(state: plan_routes.LiveState, *, default: str) -> list[dict[str, Any]]:
    """One item per queue, defined or named by a Binding, in name order."""
    snapshot = state.snapshot()
    usage, waiting, pending = state.charged(snapshot)
    tally = queue_view.tally(snapshot, usage, pending, waiting)
    return queue_view.items(tally, default=default)
