"""Pod (v1): one pod, never divided; healthy when Ready, finished when Succeeded/Failed.

Fed by the registry in `interpreter/__init__.py`; feeds render and status (see base.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from federation.propagation.interpreter import base
from policies.models.work import Observed

__all__ = ["Pod"]


class Pod:
    name = "pod"
    api_version = "v1"
    kind = "Pod"

    def replicas(self, obj: Mapping[str, Any]) -> int | None:
        return 1

    def with_replicas(
        self, obj: base.Obj, *, replicas: int, total: int, before: int = 0
    ) -> base.Obj:
        return obj

    def observe(self, obj: Mapping[str, Any]) -> Observed:
        phase = str(base.dig(obj, "status", "phase") or "Pending")
        ready_cond = base.condition(obj, "Ready")
        ready = 1 if ready_cond is not None and ready_cond.get("status") == "True" else 0
        running = 1 if phase == "Running" else 0
        succeeded = 1 if phase == "Succeeded" else 0
        failed = 1 if phase == "Failed" else 0
        health = {"Succeeded": "Completed", "Failed": "Failed"}.get(
            phase, "Healthy" if ready else "Progressing"
        )
        message = str(base.dig(obj, "status", "message") or "")
        return Observed(
            health=health,
            replicas=1,
            ready_replicas=ready,
            phase=phase,
            running=running,
            succeeded=succeeded,
            failed=failed,
            message=message,
        )

    def aggregate(self, parts: Sequence[Observed]) -> Observed:
        return base.aggregate_jobs(parts)
