"""Dependencies: the objects a workload's pods cannot start without (Karmada's propagateDeps).

Fed by the propagator's workload mirror (every template change, `Index.update`); feeds
the workload pass (`converge.WorkloadSync.wanted`), which sends a dependency to the
clusters its needers run on when their claiming policy sets `propagateDeps: true`, and the
work queue (which dependencies and needers to look at again after a change).

What counts, as Karmada's default interpreter reads a pod template: ConfigMaps and Secrets
mounted as volumes (projected ones too) or read by `env` / `envFrom`, Secrets named in
`imagePullSecrets`, PersistentVolumeClaims mounted as volumes, and the ServiceAccount
(not `default`: every namespace has its own). All live in the workload's namespace.

Why an index, not a scan per pass: a ConfigMap's pass must know every workload that needs
it, and scanning each template of the federation for each dependency would cost a pass
over the fleet per ConfigMap. The index is by reference, not by policy: whether a
needer's policy propagates its dependencies is read in the pass, so a policy edit costs
nothing here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any

from federation.propagation import overrides
from federation.registry import keys
from policies.models.base import KubeObject
from policies.models.workload import Workload, WorkloadError

__all__ = ["Index", "clusters_needing", "referenced"]

_ENV_SOURCES = (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret"))
_ENV_FROM = (("configMapRef", "ConfigMap"), ("secretRef", "Secret"))


def _named(value: Any, field: str = "name") -> str | None:
    """`value[field]` when `value` is a mapping holding a non-empty string there."""
    if isinstance(value, Mapping):
        name = value.get(field)
        if isinstance(name, str) and name:
            return name
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _volumes(pod: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    for volume in _list(pod.get("volumes")):
        if not isinstance(volume, Mapping):
            continue
        yield "ConfigMap", _named(volume.get("configMap"))
        yield "Secret", _named(volume.get("secret"), "secretName")
        yield "PersistentVolumeClaim", _named(volume.get("persistentVolumeClaim"), "claimName")
        projected = volume.get("projected")
        for source in _list(projected.get("sources") if isinstance(projected, Mapping) else []):
            if isinstance(source, Mapping):
                yield "ConfigMap", _named(source.get("configMap"))
                yield "Secret", _named(source.get("secret"))


def _containers(pod: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(pod.get(field)):
            if not isinstance(container, Mapping):
                continue
            for source in _list(container.get("envFrom")):
                for ref_field, kind in _ENV_FROM:
                    if isinstance(source, Mapping):
                        yield kind, _named(source.get(ref_field))
            for env in _list(container.get("env")):
                value_from = env.get("valueFrom") if isinstance(env, Mapping) else None
                for ref_field, kind in _ENV_SOURCES:
                    if isinstance(value_from, Mapping):
                        yield kind, _named(value_from.get(ref_field))


def _pod_references(pod: Mapping[str, Any]) -> set[tuple[str, str]]:
    found = {(kind, name) for kind, name in (*_volumes(pod), *_containers(pod)) if name}
    found |= {("Secret", n) for n in map(_named, _list(pod.get("imagePullSecrets"))) if n}
    account = pod.get("serviceAccountName")
    if isinstance(account, str) and account not in ("", "default"):
        found.add(("ServiceAccount", account))
    return found


def _dig(obj: Any, path: Iterable[str | int]) -> Any:
    for part in path:
        if isinstance(part, int):
            obj = obj[part] if isinstance(obj, list) and part < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, Mapping) else None
    return obj


def referenced(workload: Workload) -> frozenset[keys.WorkloadRef]:
    """The dependencies `workload`'s pod templates reference, as workload refs in its
    namespace (empty for a kind without pods, or a template that cannot be read)."""
    try:
        pod_sets = workload.pod_sets
    except WorkloadError:
        return frozenset()  # refused at admission with its path; nothing to follow here
    wire = workload.to_wire()
    pods = [_dig(wire, pod_set.template_path) for pod_set in pod_sets]
    # And the pod templates the overriders edit: a CronJob has no pods of its own until a
    # schedule fires, but each Job it starts needs them there already, as Karmada's
    # default interpreter reads a CronJob.
    pods += overrides.pod_specs(wire)
    found: set[tuple[str, str]] = set()
    for pod in pods:
        if isinstance(pod, Mapping):
            found |= _pod_references(pod)
    namespace = workload.metadata.namespace or "default"
    return frozenset(
        keys.WorkloadRef(namespace, keys.kind_segment("v1", kind), name) for kind, name in found
    )


class Index:
    """Which workloads reference which dependencies, kept as templates change."""

    def __init__(self) -> None:
        self._needs: dict[keys.WorkloadRef, frozenset[keys.WorkloadRef]] = {}
        self._needed_by: dict[keys.WorkloadRef, set[keys.WorkloadRef]] = {}

    def update(self, ref: keys.WorkloadRef, obj: KubeObject | None) -> frozenset[keys.WorkloadRef]:
        """Record what `ref`'s template `obj` (None: deleted) references now; returns the
        dependencies it referenced before or does now, whose needers may have changed."""
        now = referenced(obj) if isinstance(obj, Workload) else frozenset()
        before = self._needs.pop(ref, frozenset())
        if now:
            self._needs[ref] = now
        for dep in before - now:
            needers = self._needed_by.get(dep, set())
            needers.discard(ref)
            if not needers:
                self._needed_by.pop(dep, None)
        for dep in now - before:
            self._needed_by.setdefault(dep, set()).add(ref)
        return before | now

    def of(self, ref: keys.WorkloadRef) -> frozenset[keys.WorkloadRef]:
        """The dependencies `ref`'s template references."""
        return self._needs.get(ref, frozenset())

    def needing(self, dep: keys.WorkloadRef) -> frozenset[keys.WorkloadRef]:
        """The workloads whose templates reference `dep`."""
        return frozenset(self._needed_by.get(dep, ()))


def clusters_needing(
    dep: keys.WorkloadRef,
    *,
    index: Index,
    carrying: Callable[[keys.WorkloadRef], Collection[str]],
) -> dict[str, set[keys.WorkloadRef]]:
    """cluster → the workloads that need `dep` there: each workload referencing it, on
    the clusters `carrying` says it takes its dependencies to (none unless its policy
    sets `propagateDeps`)."""
    needed: dict[str, set[keys.WorkloadRef]] = {}
    for needer in sorted(index.needing(dep), key=str):
        for cluster in carrying(needer):
            needed.setdefault(cluster, set()).add(needer)
    return needed
