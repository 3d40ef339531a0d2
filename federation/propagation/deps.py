"""Dependencies: the objects a workload's pods cannot start without (Karmada's propagateDeps).

Fed by the propagator's workload mirror (every template change, `Index.update`) and, after
each workload pass, by what its copies reference (`Index.update_copies`: each member copy
as its watch shows it, and each applied Work's manifest); feeds the workload pass
(`converge.WorkloadSync.wanted`), which sends a dependency to the clusters its needers
run on when their claiming policy sets `propagateDeps: true`, and the work queue (which
dependencies and needers to look at again after a change).

What counts, as Karmada's default interpreter reads a pod template: ConfigMaps and Secrets
mounted as volumes (projected ones too) or read by `env` / `envFrom`, Secrets named in
`imagePullSecrets` or by another volume source (Kubernetes' `VisitPodSecretNames`: csi,
azureFile, cephfs, cinder, flexVolume, rbd, scaleIO, iscsi, storageos),
PersistentVolumeClaims mounted as volumes, and the ServiceAccount (not `default`: every
namespace has its own). All live in the workload's namespace. A reference marked
`optional: true` is followed but not required: its pods start without it, so its absence
from the federation is not reported.

Why a copy's own references count: a copy whose template moved on (dispatching to its
cluster suspended, a leaving copy) still mounts what it mounted, and an override may name
another ConfigMap for one cluster; the template alone took the first away from under the
copy and never sent the second.

Why an index, not a scan per pass: a ConfigMap's pass must know every workload that needs
it, and scanning each template of the federation for each dependency would cost a pass
over the fleet per ConfigMap. The index is by reference, not by policy: whether a
needer's policy propagates its dependencies is read in the pass, so a policy edit costs
nothing here.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, TypeGuard

from federation.propagation import overrides
from federation.registry import keys
from policies.models.base import KubeObject
from policies.models.workload import Workload, WorkloadError

__all__ = ["Index", "clusters_needing", "in_manifest", "referenced", "references"]

_ENV_SOURCES = (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret"))
_ENV_FROM = (("configMapRef", "ConfigMap"), ("secretRef", "Secret"))
_SECRET_REF_VOLUMES = ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos")
"""Volume sources naming their Secret in `secretRef.name` (an iscsi volume's is its CHAP
Secret), as Kubernetes' `VisitPodSecretNames` visits them."""

Found = tuple[str, str | None, bool]
"""(kind, name or None, optional): one reference of a pod spec."""


def _named(value: Any, field: str = "name") -> str | None:
    """`value[field]` when `value` is a mapping holding a non-empty string there."""
    if isinstance(value, Mapping):
        name = value.get(field)
        if isinstance(name, str) and name:
            return name
    return None


def _optional(value: Any) -> bool:
    """Whether a reference says `optional: true`: its pods start without the object."""
    return isinstance(value, Mapping) and value.get("optional") is True


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _volumes(pod: Mapping[str, Any]) -> Iterator[Found]:
    for volume in _list(pod.get("volumes")):
        if not isinstance(volume, Mapping):
            continue
        config, secret = volume.get("configMap"), volume.get("secret")
        yield "ConfigMap", _named(config), _optional(config)
        yield "Secret", _named(secret, "secretName"), _optional(secret)
        claim = _named(volume.get("persistentVolumeClaim"), "claimName")
        yield "PersistentVolumeClaim", claim, False
        yield "Secret", _named(volume.get("azureFile"), "secretName"), False
        csi = volume.get("csi")
        yield "Secret", _named(csi.get("nodePublishSecretRef") if _is_map(csi) else None), False
        for field in _SECRET_REF_VOLUMES:
            source = volume.get(field)
            yield "Secret", _named(source.get("secretRef") if _is_map(source) else None), False
        projected = volume.get("projected")
        for source in _list(projected.get("sources") if _is_map(projected) else []):
            if _is_map(source):
                config, secret = source.get("configMap"), source.get("secret")
                yield "ConfigMap", _named(config), _optional(config)
                yield "Secret", _named(secret), _optional(secret)


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)


def _containers(pod: Mapping[str, Any]) -> Iterator[Found]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(pod.get(field)):
            if not isinstance(container, Mapping):
                continue
            for source in _list(container.get("envFrom")):
                for ref_field, kind in _ENV_FROM:
                    if isinstance(source, Mapping):
                        ref = source.get(ref_field)
                        yield kind, _named(ref), _optional(ref)
            for env in _list(container.get("env")):
                value_from = env.get("valueFrom") if isinstance(env, Mapping) else None
                for ref_field, kind in _ENV_SOURCES:
                    if isinstance(value_from, Mapping):
                        ref = value_from.get(ref_field)
                        yield kind, _named(ref), _optional(ref)


def _pod_references(pod: Mapping[str, Any]) -> dict[tuple[str, str], bool]:
    """(kind, name) → whether some reference to it is required (not `optional: true`)."""
    found: dict[tuple[str, str], bool] = {}
    pulls = [("Secret", n, False) for n in map(_named, _list(pod.get("imagePullSecrets")))]
    account = pod.get("serviceAccountName")
    accounts: list[Found] = []
    if isinstance(account, str) and account not in ("", "default"):
        accounts.append(("ServiceAccount", account, False))
    for kind, name, optional in (*_volumes(pod), *_containers(pod), *pulls, *accounts):
        if name:
            found[(kind, name)] = found.get((kind, name), False) or not optional
    return found


def _dig(obj: Any, path: Iterable[str | int]) -> Any:
    for part in path:
        if isinstance(part, int):
            obj = obj[part] if isinstance(obj, list) and part < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, Mapping) else None
    return obj


def _as_refs(namespace: str, found: Mapping[tuple[str, str], bool]) -> dict[keys.WorkloadRef, bool]:
    return {
        keys.WorkloadRef(namespace, keys.kind_segment("v1", kind), name): required
        for (kind, name), required in found.items()
    }


def references(workload: Workload) -> dict[keys.WorkloadRef, bool]:
    """The dependencies `workload`'s pod templates reference, as workload refs in its
    namespace, each with whether its pods need it (False: every reference to it says
    `optional: true`, and the pods start without it). Empty for a kind without pods, or a
    template that cannot be read."""
    try:
        pod_sets = workload.pod_sets
    except WorkloadError:
        return {}  # refused at admission with its path; nothing to follow here
    wire = workload.to_wire()
    pods = [_dig(wire, pod_set.template_path) for pod_set in pod_sets]
    # And the pod templates the overriders edit: a CronJob has no pods of its own until a
    # schedule fires, but each Job it starts needs them there already, as Karmada's
    # default interpreter reads a CronJob.
    pods += overrides.pod_specs(wire)
    found: dict[tuple[str, str], bool] = {}
    for pod in pods:
        if isinstance(pod, Mapping):
            for pair, required in _pod_references(pod).items():
                found[pair] = found.get(pair, False) or required
    return _as_refs(workload.metadata.namespace or "default", found)


def referenced(workload: Workload) -> frozenset[keys.WorkloadRef]:
    """The dependencies `workload`'s pod templates reference (`references`)."""
    return frozenset(references(workload))


def in_manifest(
    manifest: Mapping[str, Any], *, required: bool = False
) -> frozenset[keys.WorkloadRef]:
    """The dependencies a member copy or a Work's manifest references (`required`: only
    those its pods cannot start without): what the copy there needs, which a suspended
    or leaving copy's template no longer says, and an override may have renamed for one
    cluster. Read from the pod specs the overriders edit."""
    meta = manifest.get("metadata")
    namespace = str((meta.get("namespace") if _is_map(meta) else None) or "default")
    found: dict[tuple[str, str], bool] = {}
    for pod in overrides.pod_specs(dict(manifest)):
        for pair, needed in _pod_references(pod).items():
            found[pair] = found.get(pair, False) or needed
    return frozenset(
        dep for dep, needed in _as_refs(namespace, found).items() if needed or not required
    )


class Index:
    """Which workloads reference which dependencies, kept as templates and copies change.

    Two sources: a workload's template (what its copies will run) and, per cluster, what
    its copy there runs or is to run (`update_copies`: the member's copy and its Work's
    manifest). A copy whose template moved on (dispatching suspended there, a leaving
    copy) still needs what it mounts, and an override can name, for one cluster, an
    object the template does not."""

    def __init__(self) -> None:
        self._needs: dict[keys.WorkloadRef, dict[keys.WorkloadRef, bool]] = {}
        self._copies: dict[keys.WorkloadRef, Mapping[str, frozenset[keys.WorkloadRef]]] = {}
        self._needed_by: dict[keys.WorkloadRef, collections.Counter[keys.WorkloadRef]] = {}

    def _count(self, ref: keys.WorkloadRef, deps: Iterable[keys.WorkloadRef], by: int) -> None:
        for dep in deps:
            needers = self._needed_by.setdefault(dep, collections.Counter())
            needers[ref] += by
            if needers[ref] <= 0:
                del needers[ref]
            if not needers:
                del self._needed_by[dep]

    def update(self, ref: keys.WorkloadRef, obj: KubeObject | None) -> frozenset[keys.WorkloadRef]:
        """Record what `ref`'s template `obj` (None: deleted) references now; returns the
        dependencies it referenced before or does now, whose needers may have changed."""
        now = references(obj) if isinstance(obj, Workload) else {}
        before = self._needs.pop(ref, {})
        if now:
            self._needs[ref] = now
        self._reindex(ref, set(before), set(now))
        return frozenset(before) | frozenset(now)

    def update_copies(
        self, ref: keys.WorkloadRef, copies: Mapping[str, frozenset[keys.WorkloadRef]]
    ) -> frozenset[keys.WorkloadRef]:
        """Record, per cluster, what `ref`'s copy there references (`in_manifest`); returns
        the dependencies whose clusters may have changed."""
        before = self._copies.pop(ref, {})
        kept = {cluster: deps for cluster, deps in copies.items() if deps}
        if kept:
            self._copies[ref] = kept
        if before == kept:
            return frozenset()
        old = set().union(*before.values()) if before else set()
        new = set().union(*kept.values()) if kept else set()
        self._count(ref, old, -1)
        self._count(ref, new, +1)
        changed: set[keys.WorkloadRef] = set()
        for cluster in before.keys() | kept.keys():
            changed |= before.get(cluster, frozenset()) ^ kept.get(cluster, frozenset())
        return frozenset(changed)

    def _reindex(
        self, ref: keys.WorkloadRef, before: set[keys.WorkloadRef], now: set[keys.WorkloadRef]
    ) -> None:
        self._count(ref, before - now, -1)
        self._count(ref, now - before, +1)

    def of(self, ref: keys.WorkloadRef) -> frozenset[keys.WorkloadRef]:
        """The dependencies `ref`'s template references."""
        return frozenset(self._needs.get(ref, {}))

    def required(self, ref: keys.WorkloadRef) -> frozenset[keys.WorkloadRef]:
        """Those of `of` its pods cannot start without (not only `optional: true`)."""
        return frozenset(dep for dep, needed in self._needs.get(ref, {}).items() if needed)

    def held(self, ref: keys.WorkloadRef) -> frozenset[keys.WorkloadRef]:
        """The dependencies its template or any of its copies references."""
        held = set(self._needs.get(ref, {}))
        for deps in self._copies.get(ref, {}).values():
            held |= deps
        return frozenset(held)

    def needing(self, dep: keys.WorkloadRef) -> frozenset[keys.WorkloadRef]:
        """The workloads whose templates or copies reference `dep`."""
        return frozenset(self._needed_by.get(dep, ()))


def clusters_needing(
    dep: keys.WorkloadRef,
    *,
    index: Index,
    carrying: Callable[[keys.WorkloadRef], Mapping[str, Collection[keys.WorkloadRef]]],
) -> dict[str, set[keys.WorkloadRef]]:
    """cluster → the workloads that need `dep` there: each workload referencing it, on
    the clusters where `carrying` says it takes `dep` (none unless its policy sets
    `propagateDeps`)."""
    needed: dict[str, set[keys.WorkloadRef]] = {}
    for needer in sorted(index.needing(dep), key=str):
        for cluster, deps in carrying(needer).items():
            if dep in deps:
                needed.setdefault(cluster, set()).add(needer)
    return needed
