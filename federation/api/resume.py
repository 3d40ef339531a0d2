"""Where a watch from a client's `resourceVersion` may start, judged before its stream
begins: the per-kind watch (`objects.ObjectsApi`) and the multiplexed one (`watch`) ask it,
and a list not older than a `resourceVersion` asks whether the registry has reached it.

A watch the registry cannot serve from that revision ends at once with one ERROR event
carrying a `Status`, as the Kubernetes API server ends it (its cacher's `newErrWatcher`):

    410 Expired   its history was compacted: the client lists again and watches from there
    504 Timeout   the revision is ahead of the registry ("Too large resource version")

Why before the stream: a watch learns of compaction only once it runs, and an error after
the 200 began used to write a second response inside the open body. Why an ERROR event and
never a BOOKMARK: a bookmark at a revision that cannot be served told the client it was
in sync, so it reconnected from the same revision for ever, or missed every change up to
a revision from the future.
"""

from __future__ import annotations

from typing import Any

from federation import errors
from federation.api import status
from federation.registry import store as st

__all__ = ["expired", "refusal", "too_large"]


async def refusal(store: st.Store, since: int) -> dict[str, Any] | None:
    """The Status a watch of changes after revision `since` ends with at once; None when
    the registry can serve it."""
    current = await store.current_revision()
    if since > current:
        return too_large(since, current)
    try:
        await store.check_history(since + 1)
    except errors.Compacted as exc:
        return expired(exc)
    return None


def too_large(since: int, current: int) -> dict[str, Any]:
    """The 504 Status of a watch or list from a revision ahead of the registry's
    (`current`), in Kubernetes' words: the client retries after a second."""
    return status.status_body(
        504,
        "Timeout",
        f"Too large resource version: {since}, current: {current}",
        details={
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def expired(exc: errors.Compacted) -> dict[str, Any]:
    """The 410 Status of a watch whose history is gone, in Kubernetes' words."""
    oldest = "" if exc.compact_revision is None else f" ({exc.compact_revision})"
    return status.status_body(
        410,
        "Expired",
        f"too old resource version: {exc.requested - 1}{oldest}: list again, then watch"
        " from the list's resourceVersion",
    )
