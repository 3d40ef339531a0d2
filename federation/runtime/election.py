"""Leader election over an etcd lease, and the fence every leader write carries.

Fed by the registry (the leader key, its lease and a watch on it); feeds the controller
process: `while_leader` runs the write loops (cluster monitor, scheduler, propagator,
failover) only while this replica leads, and `guard()` gives the `store.Guard` (leader key
at the mod revision this replica created it with) that makes each leader write a
transaction conditional on still leading; `observe` is told of every change of role (the
`fedctl_leader` gauge), since only the election knows the moment it happens. A loop
stopped by a refused write or a registry outage is not a crash: it runs again once this
replica leads and the registry answers.

Why a guard and not just "stop when the lease is lost": a leader paused past its lease
(GC pause, SIGSTOP, partition) wakes up believing it leads and sends a write it prepared
before. The keepalive loop would notice a moment later, but that write must already fail.
A new leader creates the key afresh, so its mod revision differs and the deposed leader's
guard no longer holds: etcd refuses the transaction and the store raises `errors.Fenced`.

    campaign ── Create(leader key, lease) ──► leading: keepalive every ttl/3
        ▲            │ AlreadyExists                 │ lease gone / key changed /
        │            ▼                                │ no keepalive for a whole ttl
        └──── watch the key until it is deleted ◄────┘ step down (loops cancelled)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from federation import clock as clock_mod
from federation import errors
from federation.registry import keys
from federation.registry import store as st

__all__ = ["Election", "default_identity"]

log = logging.getLogger(__name__)
E = TypeVar("E", bound=BaseException)


def default_identity() -> str:
    """host/pid/random: unique per process, readable in `etcdctl get /fedctl/leader`."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def _only(exc: BaseException | None, kind: type[E]) -> E | None:
    """`exc` when it is a `kind`, or the first of a task group's failures when all are."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = exc.split(kind)
        if matched is not None and rest is None:
            return _only(matched.exceptions[0], kind)
    return None


def _awaiting(task: asyncio.Future[None]) -> str:
    """Where a suspended task waits, outermost first: each coroutine's function and line
    down the chain of awaits (a task's own stack shows only its outermost frame)."""
    where: list[str] = []
    coro: Any = task.get_coro() if isinstance(task, asyncio.Task) else None
    while coro is not None and len(where) < 16:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
        if frame is None:
            break
        where.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
    return " > ".join(where) or "unknown"


def _retrieve(task: asyncio.Future[None]) -> None:
    """Mark a straggling loop's end as seen, so asyncio does not log it as unretrieved."""
    if not task.cancelled():
        task.exception()


class _Lost(Exception):
    """Leadership ended (internal signal inside `_lead`)."""


class Election:
    """Campaign for the leader key; `await run()` until cancelled."""

    def __init__(
        self,
        store: st.Store,
        *,
        ttl: float = 15.0,
        identity: str | None = None,
        key: str | None = None,
        clock: clock_mod.Clock = clock_mod.real,
        resign_on_stop: bool = True,
        observe: Callable[[bool], None] | None = None,
    ) -> None:
        """`observe(leading)`: called as this replica starts and stops leading."""
        self._store = store
        self.ttl = max(1, math.ceil(ttl))
        self.identity = identity or default_identity()
        self.key = key or keys.leader_key()
        self._clock = clock
        self.resign_on_stop = resign_on_stop
        self._observe = observe
        self.leading = asyncio.Event()
        """Set while this replica leads."""
        self.following = asyncio.Event()
        """Set while it does not (the complement of `leading`)."""
        self.following.set()
        self._revision = 0
        self._lease = 0
        self._stragglers: set[asyncio.Future[None]] = set()
        """Loops that outlived their cancellation (`_stopping`), kept referenced."""
        self.terms = 0
        """How many times this replica became leader."""

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    def guard(self) -> st.Guard:
        """The fence for a leader write; raises `errors.Fenced` when not leading now."""
        if not self.is_leader:
            raise errors.Fenced(f"{self.identity} is not the leader")
        return st.Guard(self.key, self._revision)

    def guards(self) -> tuple[st.Guard, ...]:
        """`(guard(),)`, the shape `TypedStore` write methods take."""
        return (self.guard(),)

    async def leader(self) -> str | None:
        """Who leads now, as stored in the leader key (None when nobody)."""
        kv = await self._store.get(self.key)
        return kv.value.decode() if kv else None

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Campaign, lead, step down, campaign again; until cancelled."""
        try:
            while True:
                try:
                    won = await self._campaign()
                    if won:
                        await self._lead()
                except _Lost as exc:
                    log.warning("election: %s stepped down: %s", self.identity, exc)
                    await self._release()
                except errors.FedctlError as exc:
                    log.warning("election: %s: registry trouble: %s", self.identity, exc)
                    await self._release()
                    await self._clock.sleep(min(1.0, self.ttl / 3))
                finally:
                    self._step_down()
        finally:
            if self.resign_on_stop and self._lease:
                with contextlib.suppress(errors.FedctlError, asyncio.CancelledError):
                    await asyncio.shield(self._store.revoke(self._lease))
            self._lease = 0

    async def _campaign(self) -> bool:
        """Try once to create the key; when someone holds it, wait until it is gone."""
        lease = await self._store.grant(self.ttl)
        try:
            result = await self._store.commit(
                [st.Create(self.key, self.identity.encode(), lease.id)]
            )
        except errors.AlreadyExists:
            with contextlib.suppress(errors.FedctlError):
                await self._store.revoke(lease.id)
            await self._await_vacancy()
            return False
        except BaseException:
            with contextlib.suppress(errors.FedctlError, asyncio.CancelledError):
                await asyncio.shield(self._store.revoke(lease.id))
            raise
        self._lease, self._revision = lease.id, result.revision
        self.terms += 1
        self.following.clear()
        self.leading.set()
        if self._observe is not None:
            self._observe(True)
        # WARNING as its stepping down is: at the default level the log said leadership
        # was lost and never that it was taken again.
        log.warning("election: %s leads (revision %d)", self.identity, result.revision)
        return True

    async def _await_vacancy(self) -> None:
        kv = await self._store.get(self.key)
        if kv is None:
            return
        async for event in self._store.watch(self.key, start_revision=kv.mod_revision + 1):
            if event.key == self.key and event.type == "delete":
                return

    async def _lead(self) -> None:
        """Keep the lease and watch the key; return by raising `_Lost` (or a registry error)."""
        tasks = [
            asyncio.ensure_future(self._keepalive()),
            asyncio.ensure_future(self._watch_own_key()),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in done:
            task.result()
        raise _Lost("the watch on the leader key ended")

    async def _keepalive(self) -> None:
        period = self.ttl / 3
        expires = self._clock.monotonic() + self.ttl
        while True:
            await self._clock.sleep(period)
            remaining = expires - self._clock.monotonic()
            if remaining <= 0:
                raise _Lost("no keepalive answered within the lease TTL")
            try:
                async with asyncio.timeout(remaining):
                    granted = await self._store.keepalive(self._lease)
            except errors.NotFound:
                raise _Lost("the lease expired") from None
            except TimeoutError:
                # Its text is empty: the log said "keepalive failed ()".
                log.warning("election: keepalive failed (no answer within %.1fs)", remaining)
                continue
            except errors.RetryableError as exc:
                why = str(exc) or type(exc).__name__
                log.warning("election: keepalive failed (%s); %.1fs left", why, remaining)
                continue
            expires = self._clock.monotonic() + granted

    async def _watch_own_key(self) -> None:
        async for event in self._store.watch(self.key, start_revision=self._revision + 1):
            if event.key == self.key:
                raise _Lost(f"leader key {event.type} at revision {event.mod_revision}")

    async def _release(self) -> None:
        """Stop leading first, then give the lease back so a successor need not wait."""
        self._step_down()
        lease, self._lease = self._lease, 0
        if lease:
            with contextlib.suppress(errors.FedctlError):
                await self._store.revoke(lease)

    def _step_down(self) -> None:
        stepped = self.leading.is_set()
        if stepped:
            log.info("election: %s no longer leads", self.identity)
        self.leading.clear()
        self.following.set()
        if stepped and self._observe is not None:
            self._observe(False)

    # -- running loops only while leading ---------------------------------------------------

    async def while_leader(self, name: str, factory: Callable[[], Awaitable[None]]) -> None:
        """Run `factory()` each time this replica leads; cancel it the moment it stops."""
        while True:
            await self.leading.wait()
            task = asyncio.ensure_future(factory())
            lost = asyncio.ensure_future(self.following.wait())
            stopped = False
            try:
                await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                lost.cancel()
                if not task.done():
                    stopped = True
                    task.cancel()
                    # Wait without raising: a loop cancelled mid-write may end with the
                    # error its last write got (`Fenced`, etcd unavailable) instead.
                    await self._stopping(name, task)
            if not task.done():
                continue  # `_stopping` said so; this loop starts afresh at the next lead
            error = None if task.cancelled() else task.exception()
            if stopped or task.cancelled():
                if error is not None:
                    cause = _only(error, Exception) or error
                    log.warning("%s stopped: leadership lost (%r)", name, cause)
                else:
                    log.info("%s stopped: leadership lost", name)
                continue
            refused = _only(error, errors.Fenced)
            if refused is not None:
                # A write was refused before this replica noticed it was deposed: not a
                # crash. The watch on the leader key steps it down within moments.
                log.warning("%s stopped: write refused: %s", name, refused)
                await self._await_step_down()
                continue
            outage = _only(error, errors.RetryableError)
            if outage is not None:
                # The registry is away (an etcd restart): the loop starts again once it
                # answers, if this replica still leads; the process lives on meanwhile.
                log.warning("%s stopped: %s; starting it again", name, outage)
                await self._clock.sleep(min(1.0, self.ttl / 3))
                continue
            task.result()  # a crash or an unexpected return reaches the supervisor
            raise RuntimeError(f"{name} exited while leading")

    async def _stopping(self, name: str, task: asyncio.Future[None]) -> None:
        """Wait for the cancelled loop `task` to end, at most a TTL.

        Why bounded: a loop that swallows its cancellation (an `await` of a child that
        suppresses CancelledError) never ends, and waiting for it kept the loop from ever
        running again: a cluster monitor stuck so across a change of leader left every
        member `NotProbed` and no dead member detected, without a word. One that
        outlives the TTL is said at ERROR with where it hangs, cancelled once more and
        left to end by itself (its writes carry the old term's guard: they are refused)."""
        timer = asyncio.ensure_future(self._clock.sleep(self.ttl))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        if task.done():
            return
        log.error(
            "%s did not stop within %gs of being cancelled (at %s); it is started"
            " afresh when this replica leads, its old run cancelled again",
            name,
            self.ttl,
            _awaiting(task),
        )
        task.cancel()
        self._stragglers.add(task)
        task.add_done_callback(self._stragglers.discard)
        task.add_done_callback(_retrieve)

    async def _await_step_down(self) -> None:
        """Wait (at most a TTL) for the election to notice what a fenced write already did.

        Should it still lead after that, the fence came from a term that has since ended
        and been won again; the caller starts the loop afresh under the current term.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.ttl):
                await self.following.wait()
