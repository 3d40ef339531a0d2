"""Any other kind: propagated whole to every target (Duplicated), health from conditions.

Fed by the registry in `interpreter/__init__.py` when no plugin knows the kind; feeds
render and status (see base.py). Why conditions: most controllers publish Ready or
Available; an object with no conditions at all (a ConfigMap) is healthy once it exists,
as Karmada assumes for kinds without a health interpreter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from federation.propagation.interpreter import base
from policies.models.work import Observed

__all__ = ["Generic"]

_GOOD = ("Ready", "Available", "Succeeded", "Complete")


class Generic:
    name = "generic"
    api_version = "*"
    kind = "*"

    def replicas(self, obj: Mapping[str, Any]) -> int | None:
        return None

    def with_replicas(
        self, obj: base.Obj, *, replicas: int, total: int, before: int = 0
    ) -> base.Obj:
        return obj

    def observe(self, obj: Mapping[str, Any]) -> Observed:
        conditions = [
            c for c in base.dig(obj, "status", "conditions") or () if isinstance(c, Mapping)
        ]
        if not conditions:
            return Observed(health="Healthy")
        for cond in conditions:
            if cond.get("type") in _GOOD and cond.get("status") == "True":
                return Observed(health="Healthy")
        for cond in conditions:
            if cond.get("type") in _GOOD and cond.get("status") == "False":
                why = str(cond.get("message") or cond.get("reason") or cond.get("type"))
                return Observed(health="Unhealthy", message=why)
        return Observed(health="Progressing")

    def aggregate(self, parts: Sequence[Observed]) -> Observed:
        return base.aggregate_replicated(parts)
