"""Job (batch/v1): its pods are `parallelism`, a member's share also gets its `completions`.

Fed by the registry in `interpreter/__init__.py`; feeds render and status (see base.py).
Why completions are split: a Job divided over two members must finish once in total, so
each share completes its proportion (at least its own parallelism's worth of one pod).
Complete/Failed conditions are final; otherwise active pods mean Running.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from federation.propagation.interpreter import base
from policies.models.work import Observed

__all__ = ["Job"]


class Job:
    name = "job"
    api_version = "batch/v1"
    kind = "Job"

    def replicas(self, obj: Mapping[str, Any]) -> int | None:
        spec = obj.get("spec") or {}
        parallelism = base.as_int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        return parallelism if completions is None else min(parallelism, base.as_int(completions))

    def with_replicas(
        self, obj: base.Obj, *, replicas: int, total: int, before: int = 0
    ) -> base.Obj:
        out = obj
        spec = out.setdefault("spec", {})
        if replicas == self.replicas(out):
            return out
        # Compared with the object's own count, not the Binding's total: a Job placed whole
        # at fewer pods than its template asks (its parallelism raised past its queue's
        # capability, kept at the size it was admitted with) still runs that size.
        spec["parallelism"] = replicas
        completions = spec.get("completions")
        if isinstance(completions, int) and total > 0:
            # This member's run of the completions, cut where the parallelism is: the
            # shares add up to the whole (each share floored on its own lost the rest, and
            # a Job of 10 ran 9), and none is below its parallelism, as completions >= the
            # parallelism placed. An Indexed Job is never divided (each copy would number
            # its indexes from 0): the scheduler places it whole.
            end = completions * (before + replicas) // total
            spec["completions"] = max(replicas, end - completions * before // total)
        return out

    def observe(self, obj: Mapping[str, Any]) -> Observed:
        status = obj.get("status") or {}
        active = base.as_int(status.get("active"))
        succeeded = base.as_int(status.get("succeeded"))
        failed = base.as_int(status.get("failed"))
        ready = base.as_int(status.get("ready", active))
        common = {
            "replicas": self.replicas(obj),
            "ready_replicas": ready,
            "running": active,
            "succeeded": succeeded,
            "failed": failed,
            **base.job_record(obj),
        }
        done = base.condition(obj, "Complete")
        if done is not None and done.get("status") == "True":
            return Observed(health="Completed", phase="Succeeded", **common)
        broken = base.condition(obj, "Failed")
        if broken is not None and broken.get("status") == "True":
            why = str(broken.get("message") or broken.get("reason") or "job failed")
            return Observed(health="Failed", phase="Failed", message=why, **common)
        phase = "Running" if active else "Pending"
        return Observed(health="Progressing", phase=phase, **common)

    def aggregate(self, parts: Sequence[Observed]) -> Observed:
        return base.aggregate_jobs(parts)
