"""Resource interpreters, one plugin per kind, and the registry that picks one.

Fed by a template's or member object's (apiVersion, kind); feeds render, status and the
workload status. A registry refuses a second plugin for the same kind so a new plugin can
never silently shadow another; any kind without a plugin gets `Generic` (Duplicated).

    Deployment, StatefulSet, ReplicaSet   spec.replicas, ready/updated counts
    Job                                   parallelism (+ completions), Complete/Failed
    VolcanoJob                            tasks[].replicas, state.phase
    PyTorchJob                            pytorchReplicaSpecs.*.replicas, Kubeflow conditions
    Pod                                   one pod, phase and Ready
    Generic                               whole object, status.conditions
"""

from __future__ import annotations

from federation.propagation.interpreter import (
    base,
    deployment,
    generic,
    job,
    pod,
    pytorch,
    replicaset,
    statefulset,
    volcano,
)

__all__ = ["KNOWN", "Registry", "for_kind", "known_kinds"]


class Registry:
    """(apiVersion, kind) → plugin; duplicates are refused."""

    def __init__(self, plugins: list[base.Interpreter], *, fallback: base.Interpreter) -> None:
        self._by_kind: dict[tuple[str, str], base.Interpreter] = {}
        for plugin in plugins:
            key = (plugin.api_version, plugin.kind)
            if key in self._by_kind:
                raise ValueError(f"two interpreters for {key}: {self._by_kind[key].name}")
            self._by_kind[key] = plugin
        self.fallback = fallback

    def for_kind(self, api_version: str, kind: str) -> base.Interpreter:
        return self._by_kind.get((api_version, kind), self.fallback)

    def kinds(self) -> list[tuple[str, str]]:
        return list(self._by_kind)


KNOWN = Registry(
    [
        deployment.Deployment(),
        statefulset.StatefulSet(),
        replicaset.ReplicaSet(),
        job.Job(),
        volcano.VolcanoJob(),
        pytorch.PyTorchJob(),
        pod.Pod(),
    ],
    fallback=generic.Generic(),
)


def for_kind(api_version: str, kind: str) -> base.Interpreter:
    """The plugin for a kind; the generic one for kinds without their own."""
    return KNOWN.for_kind(api_version, kind)


def known_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every kind with its own plugin."""
    return KNOWN.kinds()
