"""Deployment (apps/v1): replicas in `spec.replicas`, ready when ready == updated == desired.

Fed by the registry in `interpreter/__init__.py`; feeds render and status (see base.py).
"""

from __future__ import annotations

from federation.propagation.interpreter.replicated import Replicated

__all__ = ["Deployment"]


class Deployment(Replicated):
    name = "deployment"
    kind = "Deployment"
    updated_field = "updatedReplicas"
