"""Shared rules of the replica controllers (Deployment, StatefulSet, ReplicaSet).

Fed by the three plugins that differ only in name and in how their status counts updated
pods; feeds their `observe`. Why shared: `spec.replicas` is read and written the same way,
and "ready" means ready replicas reached the desired count on the current generation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from federation.propagation.interpreter import base
from policies.models.work import Observed

__all__ = ["Replicated"]


class Replicated:
    """`spec.replicas` workloads; `updated_field` names the status count of new pods."""

    name = "replicated"
    api_version = "apps/v1"
    kind = ""
    updated_field = "updatedReplicas"

    def replicas(self, obj: Mapping[str, Any]) -> int | None:
        value = base.dig(obj, "spec", "replicas")
        return 1 if value is None else base.as_int(value)

    def with_replicas(
        self, obj: base.Obj, *, replicas: int, total: int, before: int = 0
    ) -> base.Obj:
        out = obj
        out.setdefault("spec", {})["replicas"] = replicas
        return out

    def observe(self, obj: Mapping[str, Any]) -> Observed:
        desired = self.replicas(obj) or 0
        status = obj.get("status") or {}
        ready = base.as_int(status.get("readyReplicas"))
        updated = base.as_int(status.get(self.updated_field, ready))
        generation = base.as_int(base.dig(obj, "metadata", "generation"))
        seen = base.as_int(status.get("observedGeneration"))
        problem = self._problem(obj)
        if problem:
            health, message = "Unhealthy", problem
        elif seen >= generation and ready >= desired and updated >= desired:
            health, message = "Healthy", ""
        else:
            health, message = "Progressing", f"{ready}/{desired} ready"
        return Observed(
            health=health,
            replicas=desired,
            ready_replicas=ready,
            message=message,
        )

    def _problem(self, obj: Mapping[str, Any]) -> str:
        failure = base.condition(obj, "ReplicaFailure")
        if failure is not None and failure.get("status") == "True":
            return str(failure.get("message") or failure.get("reason") or "ReplicaFailure")
        progressing = base.condition(obj, "Progressing")
        if progressing is not None and progressing.get("status") == "False":
            return str(progressing.get("message") or progressing.get("reason") or "stalled")
        return ""

    def aggregate(self, parts: Sequence[Observed]) -> Observed:
        return base.aggregate_replicated(parts)
