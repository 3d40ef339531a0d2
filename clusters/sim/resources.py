"""The registry of kinds a simulated cluster serves: one row per REST resource.

Everything generic in the simulator is driven by this table: the store keeps one index
per `ResourceType`, the server builds routes and discovery documents from it, and status
and scale handling look at `subresources`. Adding a kind is adding a row here, which is
why the opaque custom kinds (Volcano Job, PyTorchJob) sit next to the built-in ones.

Some kinds are stored and served with no controller behind them, so that what a real
member accepts (a workload's ServiceAccount, its claims, the kinds fedctl propagates) is
accepted here too: a PersistentVolumeClaim is Bound as it is created (`api_validation`),
and a DaemonSet starts no pods, a CronJob never fires and a HorizontalPodAutoscaler never
scales. Their status stays as the simulator leaves it, empty but for the claim's phase.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "RESOURCES",
    "ResourceType",
    "by_kind",
    "by_plural",
    "group_versions",
]


@dataclass(frozen=True)
class ResourceType:
    """One REST resource: where it lives, what it is called and what it supports."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: frozenset[str]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        """`apps/v1` for grouped kinds, `v1` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """`deployments.apps` or `pods`: the resource name used in Status messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


_STATUS = frozenset({"status"})
_SCALED = frozenset({"status", "scale"})
_NONE: frozenset[str] = frozenset()

RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", False, _STATUS, ("ns",)),
    ResourceType("", "v1", "Node", "nodes", False, _STATUS, ("no",)),
    ResourceType("", "v1", "Pod", "pods", True, _STATUS, ("po",), ("all",)),
    ResourceType("", "v1", "Event", "events", True, _NONE, ("ev",)),
    ResourceType("", "v1", "ConfigMap", "configmaps", True, _NONE, ("cm",)),
    ResourceType("", "v1", "Secret", "secrets", True, _NONE),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, _NONE, ("sa",)),
    ResourceType(
        "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, _STATUS, ("pvc",)
    ),
    ResourceType("", "v1", "ResourceQuota", "resourcequotas", True, _STATUS, ("quota",)),
    ResourceType("", "v1", "Service", "services", True, _STATUS, ("svc",), ("all",)),
    ResourceType("apps", "v1", "Deployment", "deployments", True, _SCALED, ("deploy",), ("all",)),
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", True, _SCALED, ("rs",), ("all",)),
    ResourceType("apps", "v1", "StatefulSet", "statefulsets", True, _SCALED, ("sts",), ("all",)),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", True, _STATUS, ("ds",), ("all",)),
    ResourceType("batch", "v1", "Job", "jobs", True, _STATUS, (), ("all",)),
    ResourceType("batch", "v1", "CronJob", "cronjobs", True, _STATUS, ("cj",), ("all",)),
    ResourceType(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        True,
        _STATUS,
        ("hpa",),
        ("all",),
    ),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True, _NONE),
    ResourceType("batch.volcano.sh", "v1alpha1", "Job", "jobs", True, _STATUS, ("vcjob", "vj")),
    ResourceType("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs", True, _STATUS),
)

_BY_PLURAL = {(rt.group, rt.version, rt.plural): rt for rt in RESOURCES}
_BY_KIND = {(rt.api_version, rt.kind): rt for rt in RESOURCES}


def by_plural(group: str, version: str, plural: str) -> ResourceType | None:
    """The resource served at `/apis/<group>/<version>/<plural>` (core: group "")."""
    return _BY_PLURAL.get((group, version, plural))


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    """The resource for an object's `apiVersion` and `kind`."""
    return _BY_KIND.get((api_version, kind))


def group_versions() -> list[tuple[str, str]]:
    """Every (group, version) served, core first, in registry order without repeats."""
    seen: list[tuple[str, str]] = []
    for rt in RESOURCES:
        if (rt.group, rt.version) not in seen:
            seen.append((rt.group, rt.version))
    return seen
