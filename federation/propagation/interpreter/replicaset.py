"""ReplicaSet (apps/v1): replicas in `spec.replicas`; it has no rollout, so ready is enough.

Fed by the registry in `interpreter/__init__.py`; feeds render and status (see base.py).
"""

from __future__ import annotations

from federation.propagation.interpreter.replicated import Replicated

__all__ = ["ReplicaSet"]


class ReplicaSet(Replicated):
    name = "replicaset"
    kind = "ReplicaSet"
    updated_field = "readyReplicas"
