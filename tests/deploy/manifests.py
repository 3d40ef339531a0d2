"""Lookups over rendered manifests and the Dockerfile, shared by the deploy tests.

Fed by `render.render` (objects of one overlay) and deploy/Dockerfile; feeds
test_manifests.py (invariants) and test_entrypoint.py (running the container's command).
Kept apart so each test reads as the property it checks, not as dictionary digging.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.deploy.render import DEPLOY

__all__ = [
    "WORKLOAD_KINDS",
    "container",
    "containers",
    "dockerfile_instruction",
    "find",
    "of_kind",
    "pod_labels",
    "pod_spec",
    "selects",
    "workloads",
]

Obj = dict[str, Any]
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")


def of_kind(objects: list[Obj], kind: str) -> list[Obj]:
    return [obj for obj in objects if obj["kind"] == kind]


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [obj for obj in of_kind(objects, kind) if obj["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def workloads(objects: list[Obj]) -> list[Obj]:
    return [obj for obj in objects if obj["kind"] in WORKLOAD_KINDS]


def pod_spec(workload: Obj) -> Obj:
    spec: Obj = workload["spec"]["template"]["spec"]
    return spec


def pod_labels(workload: Obj) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"].get("labels", {})
    return labels


def containers(workload: Obj) -> Iterator[Obj]:
    spec = pod_spec(workload)
    yield from spec.get("initContainers", [])
    yield from spec["containers"]


def container(workload: Obj, name: str) -> Obj:
    found: list[Obj] = [c for c in pod_spec(workload)["containers"] if c["name"] == name]
    assert len(found) == 1, f"no container {name} in {workload['metadata']['name']}"
    return found[0]


def selects(selector: Obj, labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels only, as ours are) selects `labels`."""
    assert set(selector) <= {"matchLabels"}, f"selector form not understood: {selector}"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def dockerfile_instruction(name: str) -> list[str]:
    """The argument of the last `name` instruction of the final stage (exec form or words)."""
    text = (DEPLOY / "Dockerfile").read_text()
    logical = re.sub(r"\\\n", " ", text)
    found = [
        line.split(None, 1)[1].strip()
        for line in logical.splitlines()
        if line.strip() and line.split(None, 1)[0].upper() == name.upper() and " " in line
    ]
    assert found, f"Dockerfile has no {name}"
    value = found[-1]
    if value.startswith("["):
        parsed: list[str] = json.loads(value)
        return parsed
    return value.split()
