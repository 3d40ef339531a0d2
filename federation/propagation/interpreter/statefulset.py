"""StatefulSet (apps/v1): replicas in `spec.replicas`; new pods are counted as updatedReplicas.

Fed by the registry in `interpreter/__init__.py`; feeds render and status (see base.py).
Why its own plugin: a StatefulSet that never reports updatedReplicas (older members) is
judged on readyReplicas alone, which `Replicated` already falls back to.
"""

from __future__ import annotations

from federation.propagation.interpreter.replicated import Replicated

__all__ = ["StatefulSet"]


class StatefulSet(Replicated):
    name = "statefulset"
    kind = "StatefulSet"
    updated_field = "updatedReplicas"
