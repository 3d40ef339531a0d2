"""The drill in flight as one registry record, the `Runner` that runs it on the leading
replica, and the fenced store it drills through.

Fed by `drills.DrillsApi`: a POST on any replica writes the record (`keys.drill_run_key`),
the leading replica's `Runner.lead` (run by the controller under the election) takes it,
runs the drill and publishes its progress into it, and deletes it when the report is
stored. Feeds every replica's drill routes, which show the
running drill from it.

Why a record the leader picks up, and not a follower forwarding the request to the leader:
the replicas sit behind one Service, and the one a caller reaches is the Service's choice.
Forwarding would need every replica to know and reach the leader's own address (an
advertised URL, a NetworkPolicy letting replicas call each other, TLS to a pod IP its
certificate does not name) and to pass on the caller's credentials, which a client
certificate cannot be. The record needs none of that: the replica that answers checks the
caller as for any other write, the registry tells the leader, and since the leader publishes
the drill's progress there, every replica (and the dashboard behind any of them) shows the
same running drill. Its key is single, so creating it is also what keeps one drill at a
time across replicas, as Kubernetes keeps one owner of a name.

Why the leader's writes for a drill are fenced (taking the record, the fault, its progress,
the report) and its heal is not: a replica that stops leading must not go on breaking a
member, so its drill is stopped with its other leader loops and a write it prepared before
noticing is refused (`errors.Fenced`). Healing what it injected is the one write it still
makes: it only undoes its own fault (a compare-and-swap on the Cluster like any edit), and
refusing it would leave the member broken until the fault's backstop, 30 s past its hold.
The report it can no longer store is the next leader's to write: a leader that finds the
record taken by a term that ended stores the last progress published there as the drill's
report, marked stopped, and deletes the record. (That heal lifts the member's drill taint
whoever set it: a drill the next leader started on the same member before the deposed one
woke would lose its taint early. Its report would show the work coming back sooner.)
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from federation import clock as clock_mod
from federation import errors
from federation.failover import drills, faults
from federation.registry import keys
from federation.registry import store as st

__all__ = ["FencedStore", "Flight", "Runner", "Running", "View", "injector", "read"]

log = logging.getLogger(__name__)


@dataclass
class Flight:
    """The drill asked for: the report it starts from, the fault asked for (the report's
    may be the taint standing in), the settle; whether a leader took it, and the progress
    it last published (a report so far, its stage and live curve)."""

    report: drills.Report
    requested: str
    settle: float
    taken: bool = False
    shown: dict[str, Any] | None = None

    def encode(self) -> bytes:
        return json.dumps(
            {
                "report": self.report.to_json(),
                "requested": self.requested,
                "settle": self.settle,
                "taken": self.taken,
                "shown": self.shown,
            }
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> Flight:
        """Raises one of `drills.UNREADABLE` for a record this release cannot read."""
        doc = json.loads(data)
        return cls(
            report=drills.Report.from_json(doc["report"]),
            requested=str(doc["requested"]),
            settle=float(doc["settle"]),
            taken=bool(doc["taken"]),
            shown=doc.get("shown"),
        )

    def progress(self) -> View:
        """The report so far, the stage and the live curve, as last published; a drill no
        leader has taken yet is `pending`."""
        if self.shown is None:
            return self.report, "pending", []
        shown = self.shown
        return drills.Report.from_json(shown["report"]), str(shown["stage"]), shown["samples"]


View = tuple[drills.Report, str, list[dict[str, Any]]]
"""A drill in flight as every replica shows it: the report so far, the stage, the live
curve."""


@dataclass
class Running:
    """The drill this replica runs: what was asked, what has been seen, the task driving it."""

    report: drills.Report
    settle: float
    requested: str
    progress: drills.Progress = field(default_factory=drills.Progress)
    task: asyncio.Task[None] | None = None

    def view(self) -> View:
        """The report so far, the stage and the live curve: what every replica shows."""
        partial = self.progress.partial(self.report, final=self.progress.stage == "done")
        samples = drills.curve(
            self.progress.samples,
            cluster=self.report.cluster,
            fault_at=self.progress.fault_at or 0.0,
        )
        return partial, self.progress.stage, samples


async def read(store: st.Store) -> tuple[Flight | None, st.KeyValue] | None:
    """The drill in flight and its record (None for one that does not read), or None."""
    kv = await store.get(keys.drill_run_key())
    if kv is None:
        return None
    try:
        return Flight.decode(kv.value), kv
    except drills.UNREADABLE as exc:
        log.warning("the drill in flight (%s) cannot be read: %s", kv.key, exc)
        return None, kv


def injector(
    store: st.Store, *, kubeconfig: str | None, cluster: str, fault: str, duration: float
) -> faults.Injector:
    """How the drill breaks and mends `cluster`, its writes going through `store`."""
    return faults.injector(
        store, cluster=cluster, fault=fault, kubeconfig=kubeconfig, hold=duration
    )


class Runner:
    """Runs the drill in flight on the replica that leads, one at a time: takes the record,
    breaks and mends the member, publishes progress, stores the report."""

    def __init__(
        self,
        store: st.Store,
        *,
        kubeconfig: str | None,
        guards: Callable[[], Sequence[st.Guard]] | None,
        clock: clock_mod.Clock,
        poll: float,
        publish: float,
    ) -> None:
        """`guards`: the election's fence for this replica's writes as leader (None: this
        process is the only controller); `publish`: seconds between the running drill's
        progress writes, what other replicas show."""
        self.store = store
        self.fenced: st.Store = FencedStore(store, guards) if guards else store
        self.kubeconfig = kubeconfig
        self.clock = clock
        self.poll = poll
        self.publish = publish
        self.running: Running | None = None

    async def lead(self) -> None:
        """Run the drill in flight whenever there is one; until cancelled, which stops a
        running drill (healing its member first). The controller runs this only while its
        replica leads; an app with no election runs it for as long as it serves."""
        key = keys.drill_run_key()
        try:
            while True:
                revision = await self.store.current_revision()
                found = await read(self.store)
                if found is not None and self.running is None:
                    flight, kv = found
                    if flight is None:  # it would block every drill: drop it, said in the log
                        await self._land(None, revision=kv.mod_revision)
                    else:
                        await self._take(flight, kv)
                await self._next_change(key, revision)
        finally:
            await self.close()

    async def _next_change(self, key: str, revision: int) -> None:
        """Until the record changes after `revision`, or the drill running here ends (and
        a record asked for meanwhile may be taken)."""

        async def changed() -> None:
            async for event in self.store.watch(key, start_revision=revision + 1):
                if event.key == key:
                    return

        watching = asyncio.ensure_future(changed())
        waits: set[asyncio.Future[None]] = {watching}
        if self.running is not None and self.running.task is not None:
            waits.add(self.running.task)
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
        if not watching.cancelled() and watching.exception() is not None:
            watching.result()

    async def _take(self, flight: Flight, kv: st.KeyValue) -> None:
        """Start the drill asked for; finish one whose leader stopped leading mid-drill."""
        if flight.taken:
            await self._orphaned(flight, kv)
            return
        report, cluster = flight.report, flight.report.cluster

        def through(store: st.Store) -> faults.Injector:
            return injector(
                store,
                kubeconfig=self.kubeconfig,
                cluster=cluster,
                fault=flight.requested,
                duration=report.duration,
            )

        try:
            inject = through(self.fenced)
        except errors.FedctlError as exc:  # this replica cannot play it: say so, drop it
            report.error = str(exc)
            await self._land(report)
            return
        flight.taken = True
        try:
            await self.fenced.commit([st.Update(kv.key, flight.encode(), revision=kv.mod_revision)])
        except errors.Conflict:
            return  # changed meanwhile: the loop reads it again
        # Healing goes through the plain store: a deposed leader still undoes its own fault.
        heal = through(self.store)
        running = Running(report, flight.settle, flight.requested)
        running.task = asyncio.create_task(
            self._drive(running, inject.inject, heal.heal), name=f"drill-{report.id}"
        )
        self.running = running
        log.info("drill %s: %s on %s for %gs", report.id, inject.fault, cluster, report.duration)

    async def _orphaned(self, flight: Flight, kv: st.KeyValue) -> None:
        """Store the report of a drill whose leader stopped leading before it could."""
        report = flight.progress()[0]
        stored = await self.store.get(keys.drill_key(report.id)) is not None
        if not stored:
            report.error = (
                "stopped: the controller running it stopped leading; it lifted the fault then,"
                f" or the fault ended by itself {faults.BACKSTOP:g}s past its hold"
            )
            log.warning("drill %s %s", report.id, report.error)
        # Stored already (it lost the lead between its report and this record): only
        # the record is left to end.
        await self._land(None if stored else report, revision=kv.mod_revision)

    async def _land(self, report: drills.Report | None, *, revision: int | None = None) -> None:
        """Store `report` (when given) and end the flight, in one fenced transaction."""
        ops: list[st.Op] = [st.Delete(keys.drill_run_key(), revision=revision)]
        if report is not None:
            ops.insert(0, st.Put(keys.drill_key(report.id), drills.encode(report)))
        try:
            await self.fenced.commit(ops)
        except errors.FedctlError as exc:
            what = f"drill {report.id}: report" if report else "the drill in flight"
            log.warning("%s not stored: %s", what, exc)

    async def _drive(self, running: Running, inject: drills.Action, heal: drills.Action) -> None:
        """Run the drill; a drill that fails or is stopped still leaves its report."""
        error = ""
        publishing = asyncio.create_task(self._publish(running), name="drill-progress")
        try:
            running.report = await drills.run(
                self.fenced,
                report=running.report,
                inject=inject,
                heal=heal,
                settle=running.settle,
                poll=self.poll,
                clock=self.clock,
                progress=running.progress,
            )
        except asyncio.CancelledError:
            # Stored only while it still leads: a deposed leader's drill is reported by
            # the next one (`_orphaned`).
            error = "stopped: the controller shut down during the drill"
            raise
        except errors.NotFound:  # its message is a registry key; say what went missing
            error = f'cluster "{running.report.cluster}" not found: removed during the drill'
        except errors.FedctlError as exc:
            error = str(exc)
        except Exception:  # no supervisor owns a drill: say so in its report, and the log
            log.exception("drill %s failed", running.report.id)
            error = "internal error; see the controller log"
        finally:
            publishing.cancel()
            await asyncio.gather(publishing, return_exceptions=True)
            failed = None
            if error:
                failed = running.progress.partial(running.report, final=True)  # no more samples
                failed.error = error
            await self._land(failed)
            self.running = None
            log.info("drill %s ended%s", running.report.id, f": {error}" if error else "")

    async def _publish(self, running: Running) -> None:
        """Write the running drill's progress into its record every `publish` seconds, so
        every replica shows it; fenced, as every write of a leader."""
        key = keys.drill_run_key()
        flight = Flight(running.report, running.requested, running.settle, True)
        while True:
            await self.clock.sleep(self.publish)
            partial, stage, samples = running.view()
            flight.shown = {"report": partial.to_json(), "stage": stage, "samples": samples}
            try:
                await self.fenced.commit([st.Put(key, flight.encode())])
            except errors.FedctlError as exc:
                log.warning("drill %s: progress not published: %s", running.report.id, exc)

    async def close(self, _: web.Application | None = None) -> None:
        """Stop a running drill (healing its member first); the app calls this on cleanup."""
        running = self.running
        if running is None or running.task is None:
            return
        running.task.cancel()
        await asyncio.gather(running.task, return_exceptions=True)


class FencedStore:
    """`inner` with `guards()` added to every transaction: a write through it lands only
    while the replica that made it leads (the election's `guards` raises `Fenced` at once
    once it does not)."""

    def __init__(self, inner: st.Store, guards: Callable[[], Sequence[st.Guard]]) -> None:
        self._inner = inner
        self._guards = guards

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        return await self._inner.commit(ops, guards=(*guards, *self._guards()))

    async def get(self, key: str) -> st.KeyValue | None:
        return await self._inner.get(key)

    async def list(self, prefix: str) -> st.ListResult:
        return await self._inner.list(prefix)

    async def count(self, prefix: str) -> int:
        return await self._inner.count(prefix)

    def watch(self, prefix: str, *, start_revision: int) -> AsyncIterator[st.WatchEvent]:
        return self._inner.watch(prefix, start_revision=start_revision)

    async def current_revision(self) -> int:
        return await self._inner.current_revision()

    async def ping(self, *, timeout: float) -> None:
        await self._inner.ping(timeout=timeout)

    async def check_history(self, revision: int) -> None:
        await self._inner.check_history(revision)

    async def grant(self, ttl: int) -> st.Lease:
        return await self._inner.grant(ttl)

    async def keepalive(self, lease_id: int) -> int:
        return await self._inner.keepalive(lease_id)

    async def revoke(self, lease_id: int) -> None:
        await self._inner.revoke(lease_id)

    async def compact(self, revision: int) -> None:
        await self._inner.compact(revision)

    async def close(self) -> None:
        """The inner store belongs to its owner, who closes it."""
