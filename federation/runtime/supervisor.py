"""The one owner of every long-lived coroutine in a controller process (STYLE.md §8).

Why: a bare `create_task` that dies takes its exception with it and leaves the process
half-alive. Here every component runs under a name; an unexpected exit or crash is logged
with that name and stops the whole process (a controller missing its scheduler must not
pretend to be healthy), and shutdown cancels components in reverse start order so the API
stops taking requests before the loops it relies on go away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from federation import errors

__all__ = ["Supervisor"]

log = logging.getLogger(__name__)


@dataclass
class _Child:
    name: str
    factory: Callable[[], Awaitable[None]]
    task: asyncio.Task[None] | None = None


@dataclass
class Supervisor:
    """Start components by name, watch them, stop them in reverse order."""

    stop_timeout: float = 10.0
    _children: list[_Child] = field(default_factory=list)
    _failed: asyncio.Event = field(default_factory=asyncio.Event)
    failure: BaseException | None = None

    def add(self, name: str, factory: Callable[[], Awaitable[None]]) -> None:
        """Register a component; `factory()` returns the coroutine that runs it."""
        if any(c.name == name for c in self._children):
            raise ValueError(f"component {name!r} registered twice")
        self._children.append(_Child(name, factory))

    @property
    def names(self) -> list[str]:
        return [c.name for c in self._children]

    def running(self, name: str) -> bool:
        child = next((c for c in self._children if c.name == name), None)
        return bool(child and child.task and not child.task.done())

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Run every component until `stop` is set or one of them exits; then stop all."""
        stop = stop or asyncio.Event()
        for child in self._children:
            child.task = asyncio.create_task(self._guard(child), name=child.name)
            log.info("started %s", child.name)
        stopper = asyncio.create_task(stop.wait())
        failed = asyncio.create_task(self._failed.wait())
        try:
            await asyncio.wait({stopper, failed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            failed.cancel()
            await self.shutdown()
        if self.failure is not None:
            raise self.failure

    async def _guard(self, child: _Child) -> None:
        try:
            await child.factory()
        except asyncio.CancelledError:
            raise
        except errors.FedctlError as exc:  # says what is wrong; a traceback adds nothing
            log.error("component %s stopped: %s", child.name, exc)
            self.failure = self.failure or exc
        except Exception as exc:
            log.exception("component %s crashed", child.name)
            self.failure = self.failure or exc
        else:
            log.error("component %s exited unexpectedly", child.name)
            self.failure = self.failure or RuntimeError(f"component {child.name} exited")
        self._failed.set()

    async def shutdown(self) -> None:
        """Cancel components newest first, waiting for each to finish its cleanup."""
        for child in reversed(self._children):
            task, child.task = child.task, None
            if task is None or task.done():
                continue
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, self.stop_timeout)
            log.info("stopped %s", child.name)
