"""ResourceQuota admission and usage, the way the Kubernetes quota plugin does it.

Fed by the store: `QuotaTracker.observe` is a store listener that keeps per-namespace
usage (non-terminal pods' requests and limits, object counts) current after every commit,
and `admit_pod` / `admit_count` are admission hooks that reject a create which would take
usage over `spec.hard`. It feeds the quota status writer in the controllers (`status_for`)
and, through the 403 Status, the federation controller, which matches the upstream message
`exceeded quota: NAME, requested: K=V, used: K=V, limited: K=V` to tell "this member is
full" from "this member is broken". Usage is read from committed objects, so admission sees
exactly what `status.used` will say; a rejected pod never counts.

Upstream rules kept here: extended resources count only as `requests.<name>`; `cpu` and
`memory` alias `requests.cpu` and `requests.memory`; if a quota constrains cpu or memory,
every container must state it (`failed quota: NAME: must specify ...`); `count/<plural>.
<group>` counts stored objects. Sums keep the first operand's notation, as upstream prints.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from clusters.sim import quantity
from clusters.sim.api_errors import ApiError
from clusters.sim.quantity import Quantity
from clusters.sim.resources import ResourceType

log = logging.getLogger(__name__)

__all__ = ["QuotaTracker", "count_key", "pod_usage"]

Obj = Mapping[str, Any]

_NATIVE = {
    "cpu": ("cpu", "requests.cpu", "limits.cpu"),
    "memory": ("memory", "requests.memory", "limits.memory"),
    "ephemeral-storage": (
        "ephemeral-storage",
        "requests.ephemeral-storage",
        "limits.ephemeral-storage",
    ),
}
# Upstream `validationSet`: quota on these makes every container state them.
_MUST_SPECIFY = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
# Core kinds that also have a legacy quota name without the `count/` prefix.
_LEGACY_COUNTS = frozenset(
    {"configmaps", "secrets", "resourcequotas", "services", "persistentvolumeclaims"}
)


def _is_extended(resource: str) -> bool:
    if "/" not in resource:
        return False
    domain = resource.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def _add(into: dict[str, Quantity], key: str, value: Quantity) -> None:
    have = into.get(key)
    into[key] = value if have is None else have + value


def _parsed(values: Mapping[str, Any]) -> Iterator[tuple[str, Quantity]]:
    """The quantities that parse: admission refuses the others, but one stored before it
    did must cost the quota controller that value, not every pod event after it."""
    for name, raw in values.items():
        try:
            yield name, quantity.parse(raw)
        except (ValueError, TypeError):
            log.warning("ignoring resource %s=%r: not a quantity", name, raw)


def _sum(
    containers: Iterable[Obj], section: str, *, init: Iterable[Obj] = ()
) -> dict[str, Quantity]:
    total: dict[str, Quantity] = {}
    for c in containers:
        res = c.get("resources") or {}
        values = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        if section == "limits":
            values = dict(res.get("limits") or {})
        for name, q in _parsed(values):
            _add(total, name, q)
    for c in init:
        res = c.get("resources") or {}
        for name, q in _parsed(res.get(section) or {}):
            if name not in total or total[name] < q:
                total[name] = q
    return total


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_usage(pod: Obj) -> dict[str, Quantity]:
    """Quota usage of one pod (upstream `podComputeUsageHelper` plus the pod counts)."""
    if _terminal(pod):
        return {}
    spec = pod.get("spec") or {}
    containers, init = spec.get("containers") or (), spec.get("initContainers") or ()
    usage: dict[str, Quantity] = {
        "pods": Quantity(Fraction(1)),
        "count/pods": Quantity(Fraction(1)),
    }
    for name, value in _sum(containers, "requests", init=init).items():
        if name in _NATIVE:
            usage[_NATIVE[name][0]] = value
            usage[_NATIVE[name][1]] = value
        elif _is_extended(name):
            usage[f"requests.{name}"] = value
    for name, value in _sum(containers, "limits", init=init).items():
        if name in _NATIVE:
            usage[_NATIVE[name][2]] = value
    return usage


def count_key(rt: ResourceType) -> str:
    """`count/deployments.apps`, `count/configmaps`."""
    return f"count/{rt.qualified}"


def _missing(pod: Obj, required: frozenset[str]) -> str:
    """Upstream `Constraints`: which containers fail to state a constrained resource."""
    spec = pod.get("spec") or {}
    missing: dict[str, list[str]] = {}
    for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        res = c.get("resources") or {}
        stated: set[str] = set()
        for name in {**(res.get("limits") or {}), **(res.get("requests") or {})}:
            if name in _NATIVE:
                stated.update(_NATIVE[name][:2])
        for name in res.get("limits") or {}:
            if name in _NATIVE:
                stated.add(_NATIVE[name][2])
        for resource in required - stated:
            missing.setdefault(resource, []).append(c.get("name", ""))
    return "; ".join(
        f"{resource} for: {','.join(sorted(names))}" for resource, names in sorted(missing.items())
    )


def _pretty(values: Mapping[str, Quantity]) -> str:
    return ",".join(f"{key}={values[key]}" for key in sorted(values))


class QuotaTracker:
    """Usage per namespace from committed objects, and the admission checks against it."""

    def __init__(self) -> None:
        self._quotas: dict[str, dict[str, Obj]] = {}  # ns -> name -> quota object
        self._pods: dict[str, dict[str, dict[str, Quantity]]] = {}  # ns -> pod -> usage
        self._counts: dict[str, dict[str, int]] = {}  # ns -> count key -> objects
        self._totals: dict[str, dict[str, Quantity]] = {}  # ns -> key -> sum over pods

    # -- listener ---------------------------------------------------------------------------

    def observe(self, etype: str, rt: ResourceType, obj: Obj, old: Obj | None) -> set[str]:
        """Fold one committed change in; returns namespaces whose quota status may change."""
        if not rt.namespaced:
            return set()
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        if rt.kind == "ResourceQuota" and rt.group == "":
            bucket = self._quotas.setdefault(ns, {})
            if etype == "DELETED":
                bucket.pop(name, None)
            else:
                bucket[name] = obj
            return {ns}
        if etype in ("ADDED", "DELETED"):
            counts = self._counts.setdefault(ns, {})
            key = count_key(rt)
            counts[key] = counts.get(key, 0) + (1 if etype == "ADDED" else -1)
        if rt.kind == "Pod" and rt.group == "":
            pods = self._pods.setdefault(ns, {})
            totals = self._totals.setdefault(ns, {})
            if etype == "MODIFIED" and pods.get(name) and not _terminal(obj):
                return {ns} if self._quotas.get(ns) else set()  # requests are immutable
            for key, value in pods.pop(name, {}).items():
                totals[key] = totals[key] - value
            if etype != "DELETED":
                usage = pods[name] = pod_usage(obj)
                for key, value in usage.items():
                    _add(totals, key, value)
        return {ns} if self._quotas.get(ns) else set()

    # -- usage ------------------------------------------------------------------------------

    def _count(self, ns: str, key: str) -> int | None:
        if key.startswith("count/"):
            return self._counts.get(ns, {}).get(key, 0)
        if key in _LEGACY_COUNTS:
            return self._counts.get(ns, {}).get(f"count/{key}", 0)
        return None

    def used(self, ns: str, keys: Iterable[str]) -> dict[str, Quantity]:
        """Current usage in `ns` for each quota key (zero when nothing uses it)."""
        out: dict[str, Quantity] = {}
        totals = self._totals.get(ns, {})
        for key in keys:
            if key not in ("pods", "count/pods"):
                counted = self._count(ns, key)
                if counted is not None:
                    out[key] = Quantity(Fraction(counted))
                    continue
            out[key] = totals.get(key) or Quantity(Fraction(0))
        return out

    def quotas(self, ns: str) -> list[Obj]:
        return [self._quotas[ns][n] for n in sorted(self._quotas.get(ns, {}))]

    def status_for(self, quota: Obj) -> dict[str, Any]:
        """What `status` of this quota should be now."""
        hard = dict((quota.get("spec") or {}).get("hard") or {})
        ns = quota["metadata"].get("namespace", "")
        used = self.used(ns, hard)
        return {"hard": hard, "used": {k: str(v) for k, v in used.items()}}

    # -- admission --------------------------------------------------------------------------

    def admit_pod(self, op: str, new: dict[str, Any] | None, old: Obj | None) -> None:
        """Admission hook for pods: 403 over quota or when a constrained resource is unset."""
        if op != "CREATE" or new is None:
            return
        ns, name = new["metadata"].get("namespace", ""), new["metadata"].get("name", "")
        quotas = self.quotas(ns)
        if not quotas:
            return
        for q in quotas:
            hard = (q.get("spec") or {}).get("hard") or {}
            missing = _missing(new, _MUST_SPECIFY & set(hard))
            if missing:
                raise _forbidden(
                    "pods", name, f"failed quota: {q['metadata']['name']}: must specify {missing}"
                )
        self._check(quotas, ns, "pods", name, pod_usage(new))

    def admit_count(self, rt: ResourceType) -> Any:
        """An admission hook for any namespaced kind, enforcing `count/<resource>` quotas."""
        key = count_key(rt)
        legacy = rt.plural if rt.group == "" and rt.plural in _LEGACY_COUNTS else None

        def admit(op: str, new: dict[str, Any] | None, old: Obj | None) -> None:
            if op != "CREATE" or new is None:
                return
            ns, name = new["metadata"].get("namespace", ""), new["metadata"].get("name", "")
            quotas = self.quotas(ns)
            if quotas:
                delta = {key: Quantity(Fraction(1))}
                if legacy:
                    delta[legacy] = Quantity(Fraction(1))
                self._check(quotas, ns, rt.qualified, name, delta)

        return admit

    def _check(
        self, quotas: list[Obj], ns: str, resource: str, name: str, delta: dict[str, Quantity]
    ) -> None:
        for q in quotas:
            hard = dict(_parsed((q.get("spec") or {}).get("hard") or {}))
            requested = {k: v for k, v in delta.items() if k in hard}
            if not requested:
                continue
            used = self.used(ns, requested)
            exceeded = [k for k, v in requested.items() if used[k].value + v.value > hard[k].value]
            if exceeded:
                raise _forbidden(
                    resource,
                    name,
                    f"exceeded quota: {q['metadata']['name']}, "
                    f"requested: {_pretty({k: requested[k] for k in exceeded})}, "
                    f"used: {_pretty({k: used[k] for k in exceeded})}, "
                    f"limited: {_pretty({k: hard[k] for k in exceeded})}",
                )


def _forbidden(resource: str, name: str, why: str) -> ApiError:
    kind = resource.split(".", 1)[0]
    group = resource.split(".", 1)[1] if "." in resource else ""
    return ApiError(
        403,
        "Forbidden",
        f'{resource} "{name}" is forbidden: {why}',
        details={"name": name, "group": group, "kind": kind},
    )
