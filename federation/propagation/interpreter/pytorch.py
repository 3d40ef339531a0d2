"""PyTorchJob (kubeflow.org/v1): pods per replica type in `spec.pytorchReplicaSpecs`.

Fed by the registry in `interpreter/__init__.py`; feeds render and status (see base.py).
A copy kept at another size than its template's scales the replica types by largest
remainder, each type with pods keeping one (`base.split_roles`): a job of several roles is
never divided, but runs at the size it was admitted with (a Workers-only one may be
divided). The gang size its pod group asks, `runPolicy.schedulingPolicy.minAvailable`, is
capped at the copy's pods: divided 2+2 with minAvailable 4, each member's pod group waited
for 4 pods that never came. Status follows the Kubeflow
conditions Created/Running/Succeeded/Failed and the per-type `replicaStatuses` counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from federation.propagation.interpreter import base
from policies.models.work import Observed

__all__ = ["PyTorchJob"]


class PyTorchJob:
    name = "pytorchjob"
    api_version = "kubeflow.org/v1"
    kind = "PyTorchJob"

    def _specs(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        specs = base.dig(obj, "spec", "pytorchReplicaSpecs")
        return specs if isinstance(specs, dict) else {}

    def replicas(self, obj: Mapping[str, Any]) -> int | None:
        return sum(base.as_int((s or {}).get("replicas", 1)) for s in self._specs(obj).values())

    def with_replicas(
        self, obj: base.Obj, *, replicas: int, total: int, before: int = 0
    ) -> base.Obj:
        out = obj
        own = self.replicas(out) or 0
        if replicas == own:
            return out
        specs = list(self._specs(out).values())
        counts = [base.as_int(s.get("replicas", 1)) for s in specs]
        for spec, count in zip(specs, base.split_roles(counts, replicas=replicas), strict=True):
            spec["replicas"] = count
        policy = base.dig(out, "spec", "runPolicy", "schedulingPolicy")
        if isinstance(policy, dict):
            base.cap_at(policy, "minAvailable", replicas)
        return out

    def _true(self, obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
        cond = base.condition(obj, kind)
        return cond if cond is not None and cond.get("status") == "True" else None

    def observe(self, obj: Mapping[str, Any]) -> Observed:
        counts = {"active": 0, "succeeded": 0, "failed": 0}
        for role in (base.dig(obj, "status", "replicaStatuses") or {}).values():
            for name in counts:
                counts[name] += base.as_int((role or {}).get(name))
        common = {
            "replicas": self.replicas(obj),
            "ready_replicas": counts["active"],
            "running": counts["active"],
            "succeeded": counts["succeeded"],
            "failed": counts["failed"],
            **base.job_record(obj),
        }
        if self._true(obj, "Succeeded"):
            return Observed(health="Completed", phase="Succeeded", **common)
        failed = self._true(obj, "Failed")
        if failed is not None:
            why = str(failed.get("message") or failed.get("reason") or "failed")
            return Observed(health="Failed", phase="Failed", message=why, **common)
        phase = "Running" if self._true(obj, "Running") else "Pending"
        return Observed(health="Progressing", phase=phase, **common)

    def aggregate(self, parts: Sequence[Observed]) -> Observed:
        return base.aggregate_jobs(parts)
