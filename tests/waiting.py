"""Waiting on a condition with a deadline: the only way tests wait (never sleep-and-hope)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def wait_for(
    probe: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "condition",
) -> T:
    """Poll `probe` until it returns something truthy; fail with `message` at the deadline."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        result = probe()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result  # type: ignore[return-value]
        last = result
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout:g}s waiting for {message} (last: {last!r})"
            )
        await asyncio.sleep(interval)


async def stop(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel background tasks and wait until each has ended (teardown of a test's loops)."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.asynccontextmanager
async def background(*coros: Coroutine[Any, Any, Any]) -> AsyncIterator[list[asyncio.Task[Any]]]:
    """Run `coros` as tasks for the block (a test's controllers and loops); `stop` them after."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        yield tasks
    finally:
        await stop(tasks)
