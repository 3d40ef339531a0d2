"""Volcano Job (batch.volcano.sh/v1alpha1): pods per task, gang size in `spec.minAvailable`.

Fed by the registry in `interpreter/__init__.py`; feeds render and status (see base.py).
A share of a Volcano Job (divided when of one task, else kept at the size it was admitted
with) scales every task by largest remainder, each task with pods keeping one
(`base.split_roles`), and caps the job's minAvailable at the share and each task's at the
task's share, so a gang is never asked for more pods than it has: Volcano's webhook
refuses a task whose minAvailable is above its replicas, and a job-level gang above the
copy's pods could never start. Status is Volcano's `state.phase` (Pending, Running,
Completed, Failed, Aborted, …) with counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from federation.propagation.interpreter import base
from policies.models.work import Observed

__all__ = ["VolcanoJob"]

_FAILED = {"Failed", "Aborted", "Terminated"}


class VolcanoJob:
    name = "volcano-job"
    api_version = "batch.volcano.sh/v1alpha1"
    kind = "Job"

    def _tasks(self, obj: Mapping[str, Any]) -> list[Any]:
        tasks = base.dig(obj, "spec", "tasks")
        return tasks if isinstance(tasks, list) else []

    def replicas(self, obj: Mapping[str, Any]) -> int | None:
        return sum(base.as_int((t or {}).get("replicas", 1)) for t in self._tasks(obj))

    def with_replicas(
        self, obj: base.Obj, *, replicas: int, total: int, before: int = 0
    ) -> base.Obj:
        out = obj
        own = self.replicas(out) or 0
        if replicas == own:
            return out
        tasks = self._tasks(out)
        counts = [base.as_int(t.get("replicas", 1)) for t in tasks]
        for task, count in zip(tasks, base.split_roles(counts, replicas=replicas), strict=True):
            task["replicas"] = count
            base.cap_at(task, "minAvailable", count)
        base.cap_at(out["spec"], "minAvailable", replicas)
        return out

    def observe(self, obj: Mapping[str, Any]) -> Observed:
        status = obj.get("status") or {}
        phase = str(base.dig(status, "state", "phase") or "Pending")
        running = base.as_int(status.get("running"))
        common = {
            "replicas": self.replicas(obj),
            "ready_replicas": running,
            "running": running,
            "succeeded": base.as_int(status.get("succeeded")),
            "failed": base.as_int(status.get("failed")),
        }
        if phase == "Completed":
            return Observed(health="Completed", phase="Succeeded", **common)
        if phase in _FAILED:
            why = str(base.dig(status, "state", "message") or phase)
            return Observed(health="Failed", phase="Failed", message=why, **common)
        shown = "Running" if phase == "Running" else "Pending"
        return Observed(health="Progressing", phase=shown, **common)

    def aggregate(self, parts: Sequence[Observed]) -> Observed:
        return base.aggregate_jobs(parts)
