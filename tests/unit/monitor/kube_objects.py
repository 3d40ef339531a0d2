"""Node and Pod JSON as a member's API returns them, for the monitor's unit tests."""

from __future__ import annotations

from typing import Any


def node(
    name: str,
    *,
    arch: str = "amd64",
    cpu: str = "16",
    memory: str = "64Gi",
    devices: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", **(devices or {})}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/arch": arch, **(labels or {})}},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    *,
    node_name: str | None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    phase: str = "Running",
    init: dict[str, str] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": resources}]}
    if node_name:
        spec["nodeName"] = node_name
    if init:
        spec["initContainers"] = [{"name": "init", "resources": {"requests": init}}]
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": phase},
    }
