"""User-facing objects in the registry: which resource each kind is, its key, its codec.

Role: the REST API and the controllers store policies, clusters and workloads of many
kinds; this module maps a resource name (`clusters`, `propagationpolicies`, `workloads`)
to its kind, scope and key, and stores any of those models through one polymorphic codec
that picks the model from the document's apiVersion and kind on read. Fed by the API and
the CLI's resource names; feeds `codec.TypedStore`.

Why server-set metadata is stripped on write: `resourceVersion` is the etcd mod revision
and is added on read, so it can never disagree with the store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from federation import errors, secrets
from federation.registry import codec, keys
from policies.models import kinds
from policies.models.base import KubeObject
from policies.models.rules import STORED
from policies.models.workload import Workload

__all__ = [
    "RESOURCES",
    "ObjectCodec",
    "Resource",
    "access_namespace",
    "called",
    "key_for",
    "list_prefix",
    "namespace_of",
    "namespace_workload",
    "resource_for_kind",
    "resource_named",
    "with_revision",
    "workload_ref",
]


@dataclass(frozen=True, slots=True)
class Resource:
    """A REST resource: plural name, kind, scope, and whether users may write it."""

    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    readonly: bool = False

    @property
    def singular(self) -> str:
        return self.kind.lower()


RESOURCES: tuple[Resource, ...] = (
    Resource("clusters", "Cluster", False, ("cluster", "cl")),
    Resource("queues", "Queue", False, ("queue", "q")),
    Resource("acceleratorprofiles", "AcceleratorProfile", False, ("ap",)),
    Resource("clusterpropagationpolicies", "ClusterPropagationPolicy", False, ("cpp",)),
    Resource("clusteroverridepolicies", "ClusterOverridePolicy", False, ("cop",)),
    Resource("propagationpolicies", "PropagationPolicy", True, ("pp",)),
    Resource("overridepolicies", "OverridePolicy", True, ("op",)),
    Resource("federatedresourcequotas", "FederatedResourceQuota", True, ("frq", "quota")),
    Resource("workloads", "Workload", True, ("workload", "wl")),
    Resource("bindings", "Binding", True, ("binding", "rb"), readonly=True),
    Resource("works", "Work", False, ("work",), readonly=True),
    Resource("events", "Event", True, ("event", "ev"), readonly=True),
)
_POLICY_KINDS = {
    "Queue",
    "AcceleratorProfile",
    "ClusterPropagationPolicy",
    "ClusterOverridePolicy",
    "PropagationPolicy",
    "OverridePolicy",
    "FederatedResourceQuota",
}


def resource_named(name: str) -> Resource:
    """The resource for a plural, singular, kind or short name (`pp`, `cluster`, `Queue`)."""
    wanted = name.lower()
    for res in RESOURCES:
        if wanted in (res.plural, res.singular, *res.short_names):
            return res
    known = ", ".join(r.plural for r in RESOURCES)
    raise errors.Invalid(f"unknown resource {name!r}; known: {known}")


def resource_for_kind(obj: KubeObject) -> Resource:
    """Which resource a validated object is stored as."""
    if isinstance(obj, Workload):
        return resource_named("workloads")
    return resource_named(obj.kind)


def called(res: Resource, key: str) -> str:
    """The object at `key` as an error names it, `queues "web"`: its resource and name, as
    Kubernetes names one (a workload's or Binding's kind too, which its name alone does not
    pick out), never its registry key, which the user never typed and cannot type back."""
    name = key.rpartition("/")[2]
    if res.plural in ("workloads", "bindings"):
        name = f"{keys.parse_workload_key(key).kind}/{name}"
    return f'{res.plural} "{name}"'


def workload_ref(obj: Workload) -> keys.WorkloadRef:
    """The registry identity of a workload; cluster-scoped kinds (Namespace, …) use `_`."""
    scoped = kinds.is_namespaced(obj.kind)
    return keys.WorkloadRef(
        namespace=(obj.metadata.namespace or "default") if scoped else keys.CLUSTER_SCOPE,
        kind=keys.kind_segment(obj.api_version, obj.kind),
        name=obj.metadata.name,
    )


NAMESPACE_KIND = "Namespace"
"""The kind segment of a v1 Namespace workload (core group: no `.group` suffix)."""


def namespace_of(ref: keys.WorkloadRef) -> str | None:
    """The namespace a workload is, when it is a v1 Namespace; None for any other.

    A Namespace template is cluster-scoped (`_`) but stands for the namespace it names:
    deleting it deletes what the federation holds there, a tenant of that namespace may
    manage it, and a member's copy holds the copies of every workload in it."""
    if ref.namespace == keys.CLUSTER_SCOPE and ref.kind == NAMESPACE_KIND:
        return ref.name
    return None


def namespace_workload(name: str) -> keys.WorkloadRef:
    """The registry identity of the Namespace template for namespace `name`."""
    return keys.WorkloadRef(keys.CLUSTER_SCOPE, NAMESPACE_KIND, name)


def access_namespace(obj: KubeObject) -> str | None:
    """The namespace whose rights a write of `obj` needs (`auth.py`'s tenant rules): its
    own for a namespaced object, the one it names for a Namespace, `_` for any other
    cluster-scoped workload (a ClusterRole: no tenant's), None for a cluster-scoped
    resource (a Cluster, a Queue)."""
    if isinstance(obj, Workload):
        ref = workload_ref(obj)
        return namespace_of(ref) or ref.namespace
    if resource_for_kind(obj).namespaced:
        return obj.metadata.namespace or "default"
    return None


def key_for(obj: KubeObject) -> str:
    """The registry key of a user object; raises `Invalid` for unsafe names."""
    if isinstance(obj, Workload):
        return keys.workload_key(workload_ref(obj))
    if obj.kind == "Cluster":
        return keys.cluster_key(obj.metadata.name)
    if obj.kind in _POLICY_KINDS:
        namespace = obj.metadata.namespace if resource_for_kind(obj).namespaced else None
        if resource_for_kind(obj).namespaced and not namespace:
            namespace = "default"
        return keys.policy_key(obj.kind, namespace, obj.metadata.name)
    raise errors.Invalid(f"{obj.kind} objects are not stored through the API")


def list_prefix(res: Resource, namespace: str | None) -> str:
    """The key prefix holding every object of `res` (in `namespace` when given)."""
    ns = f"{keys.namespace_segment(namespace)}/" if namespace else ""
    if res.plural == "clusters":
        return keys.prefix("clusters")
    if res.plural in ("workloads", "bindings"):
        return keys.prefix(res.plural) + ns
    if res.plural == "works":
        return keys.prefix("works")
    if res.plural == "events":
        return keys.prefix("events") + ns
    base = keys.policy_prefix(res.kind)
    return base + (ns if res.namespaced else "")


def with_revision(obj: KubeObject, revision: int) -> KubeObject:
    """A copy whose metadata.resourceVersion is the etcd mod revision."""
    meta = obj.metadata.model_copy(update={"resource_version": str(revision)})
    return obj.model_copy(update={"metadata": meta})


class ObjectCodec(codec.Codec[KubeObject]):
    """Stores any user kind; the model is chosen from apiVersion and kind on read.

    With a cipher, a Cluster's inline kubeconfig is sealed before it is stored and opened
    when read, so etcd (and its backups) never hold member credentials in plaintext.
    """

    def __init__(self, *, cipher: secrets.Cipher | None = None) -> None:
        super().__init__(KubeObject)
        self._cipher = cipher

    def encode(self, obj: KubeObject) -> bytes:
        wire = obj.to_wire()
        meta = dict(wire.get("metadata", {}))
        meta.pop("resourceVersion", None)
        wire["metadata"] = meta
        if obj.kind == "Cluster":
            wire.pop("status", None)  # status lives under its own key, owned by the monitor
            conn = wire.get("spec", {}).get("connection") or {}
            if self._cipher is not None and conn.get("kubeconfig"):
                conn["kubeconfig"] = self._cipher.seal(conn["kubeconfig"])
        body = json.dumps(wire, separators=(",", ":"), sort_keys=True).encode()
        return self._prefix + body + b"}"

    def decode(self, key: str, data: bytes) -> KubeObject:
        try:
            doc = json.loads(data)
            body: Any = doc["object"] if isinstance(doc, dict) and "object" in doc else None
            if not isinstance(body, dict):
                raise ValueError("missing schemaVersion/object envelope")
            model = kinds.model_for(str(body.get("apiVersion")), str(body.get("kind")), stored=True)
            if self._cipher is not None and body.get("kind") == "Cluster":
                conn = (body.get("spec") or {}).get("connection") or {}
                if secrets.is_sealed(conn.get("kubeconfig")):
                    conn["kubeconfig"] = self._cipher.open(conn["kubeconfig"])
            return model.model_validate(body, context=STORED)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise errors.Invalid(
                f"{key}: stored object is invalid at {where}: {first['msg']}"
            ) from exc
        except (ValueError, KeyError, TypeError, LookupError) as exc:
            raise errors.Invalid(f"{key}: stored value is not a fedctl object: {exc}") from exc
