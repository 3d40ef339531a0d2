"""The kind table: which model validates a document with a given apiVersion and kind.

Role: the one registry of every kind fedctl understands — its own (`fedctl.io/v1alpha1`),
Karmada's (`policy.karmada.io/v1alpha1`) and workloads (plain Kubernetes objects, any other
kind accepted as an opaque object). Fed by nothing; consulted by `policies.loading` to pick
a model, by `fedctl schema` to list kinds, and by the REST API for routes and scope.

Why two groups are closed and everything else is open: under fedctl's and Karmada's policy
groups a misspelt kind is a mistake worth an error ("did you mean …?"); any other apiVersion
is a workload fedctl propagates without needing to understand it. But Karmada's other
groups (`*.karmada.io`: a WorkloadRebalancer, a ResourceInterpreterCustomization) are
refused too: stored as a workload, such an object is accepted and acted on by nothing.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic.json_schema import models_json_schema

from policies.models.accelerator import AcceleratorProfile
from policies.models.base import KubeObject
from policies.models.cluster import Cluster
from policies.models.frq import FederatedResourceQuota
from policies.models.override import ClusterOverridePolicy, OverridePolicy
from policies.models.propagation import (
    ClusterPropagationPolicy,
    FedctlClusterPropagationPolicy,
    FedctlPropagationPolicy,
    PropagationPolicy,
)
from policies.models.queue import Queue
from policies.models.workload import Workload

__all__ = [
    "FEDCTL_API",
    "KARMADA_API",
    "POLICY_KINDS",
    "WORKLOAD_KINDS",
    "UnknownKind",
    "is_namespaced",
    "json_schema",
    "known_kinds",
    "lookup",
    "migration_note",
    "migration_table",
    "model_for",
]

FEDCTL_API = "fedctl.io/v1alpha1"
KARMADA_API = "policy.karmada.io/v1alpha1"
CLOSED_GROUPS = frozenset({"fedctl.io", "policy.karmada.io"})

POLICY_KINDS: dict[tuple[str, str], type[KubeObject]] = {
    (FEDCTL_API, "Cluster"): Cluster,
    (FEDCTL_API, "Queue"): Queue,
    (FEDCTL_API, "AcceleratorProfile"): AcceleratorProfile,
    (FEDCTL_API, "PropagationPolicy"): FedctlPropagationPolicy,
    (FEDCTL_API, "ClusterPropagationPolicy"): FedctlClusterPropagationPolicy,
    (KARMADA_API, "PropagationPolicy"): PropagationPolicy,
    (KARMADA_API, "ClusterPropagationPolicy"): ClusterPropagationPolicy,
    (KARMADA_API, "OverridePolicy"): OverridePolicy,
    (KARMADA_API, "ClusterOverridePolicy"): ClusterOverridePolicy,
    (KARMADA_API, "FederatedResourceQuota"): FederatedResourceQuota,
}
"""Closed-group kinds and their models."""

WORKLOAD_KINDS: tuple[tuple[str, str], ...] = (
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "ReplicaSet"),
    ("batch/v1", "Job"),
    ("v1", "Pod"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("kubeflow.org/v1", "PyTorchJob"),
)
"""Workload kinds fedctl reads replicas and requests from; other kinds are opaque objects."""

_CLUSTER_SCOPED = frozenset(
    {
        "Cluster",
        "Queue",
        "AcceleratorProfile",
        "ClusterPropagationPolicy",
        "ClusterOverridePolicy",
        # Kubernetes' built-in cluster-scoped kinds (its API groups, as kubernetes_asyncio's
        # clients serve them without a namespace), when propagated as opaque objects. A
        # member's API server drops the namespace of such an object, so one taken for
        # namespaced was a tenant's write that acted on every namespace of the member.
        "Namespace",
        "Node",
        "PersistentVolume",
        "ComponentStatus",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "CustomResourceDefinition",
        "APIService",
        "TokenReview",
        "SelfSubjectReview",
        "SubjectAccessReview",
        "SelfSubjectAccessReview",
        "SelfSubjectRulesReview",
        "CertificateSigningRequest",
        "ClusterTrustBundle",
        "FlowSchema",
        "PriorityLevelConfiguration",
        "StorageVersion",
        "StorageVersionMigration",
        "IngressClass",
        "IPAddress",
        "ServiceCIDR",
        "RuntimeClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "DeviceClass",
        "DeviceTaintRule",
        "ResourcePoolStatusRequest",
        "ResourceSlice",
        "PriorityClass",
        "CSIDriver",
        "CSINode",
        "StorageClass",
        "VolumeAttachment",
        "VolumeAttributesClass",
        # Cluster-scoped kinds of add-ons found in most fleets (Gateway API, CSI snapshots).
        "GatewayClass",
        "VolumeSnapshotClass",
        "VolumeSnapshotContent",
        # Kueue's and Volcano's cluster-scoped kinds (Volcano's Queue is "Queue", above),
        # propagated to members that run them: stored in `default`, they read as a
        # namespace's and a member's API server would drop the namespace.
        "ClusterQueue",
        "ResourceFlavor",
        "WorkloadPriorityClass",
        "Cohort",
        "AdmissionCheck",
        "MultiKueueConfig",
        "MultiKueueCluster",
        "ProvisioningRequestConfig",
        "Topology",
        "HyperNode",
    }
)
"""Kinds whose objects live outside any namespace. A tenant may write none of them: a
kind missing here would be taken for namespaced and written by a tenant of the namespace
its document names (`auth.py`)."""


class UnknownKind(LookupError):
    """A document names a kind fedctl does not know under a closed group; `field` is the
    one to correct (`apiVersion` when the kind is known under another, or the version
    names none), so the finding is put on its line."""

    def __init__(self, message: str, *, field: str = "kind") -> None:
        super().__init__(message)
        self.field = field


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def model_for(api_version: str, kind: str, *, stored: bool = False) -> type[KubeObject]:
    """The model for this apiVersion and kind; `Workload` for any kind outside fedctl's groups.

    Raises `UnknownKind` (message lists the known kinds) for an unknown kind or version
    under fedctl.io or policy.karmada.io, for any kind of Karmada's other groups
    (`*.karmada.io`), and for a policy kind under another apiVersion. `stored`: the
    object is one the registry holds, which a Karmada kind stored as a workload before
    this release refused them still decodes as, so it can be read and deleted.
    """
    model = POLICY_KINDS.get((api_version, kind))
    if model is not None:
        return model
    group = _group(api_version)
    if group in CLOSED_GROUPS:
        raise _unknown(api_version, kind)
    if group.endswith(".karmada.io") and not stored:
        raise _karmada(group, kind)
    homes = sorted(av for av, k in POLICY_KINDS if k == kind)
    if homes and (group, kind) not in _FOREIGN_HOMONYMS:
        raise UnknownKind(
            f"kind {kind} belongs to apiVersion {' or '.join(homes)}", field="apiVersion"
        )
    return Workload


_FOREIGN_HOMONYMS = frozenset({("scheduling.volcano.sh", "Queue")})
"""Foreign kinds named as one of fedctl's, accepted as opaque objects under their own
group. A Volcano Job's `spec.queue` must name a Volcano Queue in the member, so one
refused for its name could never be propagated there; any other apiVersion for a
fedctl kind still reads as a typo of fedctl's."""

_KUEUE = "kueue.x-k8s.io"
_VOLCANO = "scheduling.volcano.sh"
_MIGRATION: dict[tuple[str, str], str] = {
    (_KUEUE, "ClusterQueue"): "a fedctl.io/v1alpha1 Queue holds a team's quota"
    " (nominalQuota -> spec.guarantee, nominalQuota + borrowingLimit -> spec.capability,"
    " cohort -> spec.parent, namespaceSelector -> spec.namespaces)",
    (_KUEUE, "LocalQueue"): "a fedctl Queue is cluster-scoped: list the namespaces it serves"
    " in its spec.namespaces, and name it on each workload with the fedctl.io/queue"
    " annotation (not the kueue.x-k8s.io/queue-name label)",
    (_KUEUE, "ResourceFlavor"): "a Queue caps a chip model with accelerator/<chip model> keys"
    " in spec.capability and spec.guarantee, and a workload's fedctl.io/chips annotation"
    " picks its chips",
    (_KUEUE, "WorkloadPriorityClass"): "a Queue's spec.priorityClasses names priorities,"
    " which a workload picks with the fedctl.io/priority annotation",
    (_KUEUE, "Cohort"): "a parent Queue (its children's spec.parent) caps what they"
    " borrow together",
    (_KUEUE, "AdmissionCheck"): "fedctl admits by a Queue's capability, guarantee and"
    " maxHourlyCost and a FederatedResourceQuota's overall; it has no admission checks",
    (_VOLCANO, "Queue"): "fedctl admits by a fedctl.io/v1alpha1 Queue (capability,"
    " guarantee as a flat resource list, weight, reclaimable, parent); a member's Volcano"
    " needs this Queue when a Volcano Job's spec.queue names it, so propagate it there"
    " with a ClusterPropagationPolicy",
    (_VOLCANO, "PodGroup"): "fedctl reads a gang from a Volcano Job's minAvailable or a"
    " workload's fedctl.io/min-available annotation",
}
"""What fedctl reads in place of a Kueue or Volcano kind, for the kinds a migrating team
writes most.

Why a note and not a refusal: these objects are legitimate to propagate to members that
run Kueue or Volcano. But "did you mean 'Cluster'?" for a ClusterQueue told its writer
they had misspelt fedctl's member kind, and a stored ClusterQueue let a team believe its
quota was in place while fedctl's scheduler never read it."""
_MIGRATION_SCHEDULERS = {_KUEUE: "Kueue", _VOLCANO: "Volcano"}


def migration_note(api_version: str, kind: str) -> str | None:
    """A warning for a Kueue or Volcano scheduling object: fedctl's scheduler does not
    read it, and what it reads instead; None for any other kind."""
    group = _group(api_version)
    scheduler = _MIGRATION_SCHEDULERS.get(group)
    if scheduler is None:
        return None
    instead = _MIGRATION.get((group, kind))
    said = (
        f"a {scheduler} {kind} ({group}) is not read by fedctl's scheduler; it is kept and"
        f" propagated as is, for members that run {scheduler}"
    )
    return said if instead is None else f"{said}. Instead, {instead}"


def migration_table() -> list[tuple[str, str, str]]:
    """(group, kind, what fedctl reads instead) of every kind with a migration note, for
    the policy reference."""
    return [(group, kind, text) for (group, kind), text in _MIGRATION.items()]


_KARMADA_INSTEAD = {
    ("apps.karmada.io", "WorkloadRebalancer"): "`fedctl rebalance --workload NS/NAME` (or"
    " --all) places workloads afresh",
}
"""What fedctl offers in place of a Karmada kind outside policy.karmada.io, where it has one."""


def _karmada(group: str, kind: str) -> UnknownKind:
    """A Karmada kind outside policy.karmada.io (a Cluster, a WorkloadRebalancer, a
    ResourceInterpreterCustomization): refused, since as an opaque workload it would be
    stored and copied to the members, and its writer would believe it had been acted on."""
    if (group, kind) == ("cluster.karmada.io", "Cluster"):
        return UnknownKind(
            "a Karmada Cluster (cluster.karmada.io) is not read: fedctl's is"
            " fedctl.io/v1alpha1 Cluster, which also holds the member's region, chips and"
            " prices; `fedctl cluster join NAME --kubeconfig FILE --region R` writes one",
            field="apiVersion",
        )
    instead = _KARMADA_INSTEAD.get((group, kind))
    return UnknownKind(
        f"a Karmada {kind} ({group}) is not read: stored as a workload, it would only be"
        " copied to the members, where nothing acts on it"
        + ("" if instead is None else f"; {instead}"),
        field="apiVersion",
    )


_KARMADA_POLICY_INSTEAD = {
    "ClusterTaintPolicy": "fedctl taints an unhealthy member itself"
    " (cluster.fedctl.io/not-ready or unreachable, NoSchedule at once, NoExecute after the"
    " eviction grace: FEDCTL_FAILOVER__EVICTION_GRACE, or the Cluster's"
    " spec.evictionGraceSeconds), and a policy's placement.clusterTolerations say which"
    " workloads stay; `fedctl cluster taint NAME KEY[=VALUE]:EFFECT` taints a member by hand",
}
"""Karmada kinds of policy.karmada.io fedctl does not read, with what it does instead.

Why a word of its own: the kind is valid Karmada (ClusterTaintPolicy is how a Karmada
v1.14 fleet turns member failures into NoExecute taints), so "did you mean
'ClusterOverridePolicy'?" told its writer they had misspelt a kind they had not."""


def _unknown(api_version: str, kind: str) -> UnknownKind:
    instead = _KARMADA_POLICY_INSTEAD.get(kind)
    if instead is not None and _group(api_version) == "policy.karmada.io":
        return UnknownKind(f"a Karmada {kind} is not read: {instead}")
    kinds = sorted(k for av, k in POLICY_KINDS if av == api_version)
    if not kinds:
        versions = sorted({av for av, _ in POLICY_KINDS if _group(av) == _group(api_version)})
        return UnknownKind(
            f"unknown apiVersion {api_version!r}; use {' or '.join(versions)}", field="apiVersion"
        )
    close = difflib.get_close_matches(kind, kinds, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return UnknownKind(
        f"unknown kind {kind!r} for apiVersion {api_version}{hint}; known kinds: {', '.join(kinds)}"
    )


def is_namespaced(kind: str) -> bool:
    """Whether objects of this kind live in a namespace (policies follow Karmada's scopes)."""
    return kind not in _CLUSTER_SCOPED


def known_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every typed kind: policies first, then workloads."""
    return sorted(POLICY_KINDS) + list(WORKLOAD_KINDS)


def lookup(name: str) -> tuple[str, str] | None:
    """Resolve `PropagationPolicy`, `queue` or `fedctl.io/v1alpha1/PropagationPolicy`.

    A bare name that exists in both groups means Karmada's kind; qualify it with
    `fedctl.io/v1alpha1/` for fedctl's variant.
    """
    wanted = name.lower()
    matches = [(av, k) for av, k in POLICY_KINDS if wanted in (k.lower(), f"{av}/{k}".lower())]
    if not matches:
        return None
    matches.sort(key=lambda pair: (pair[0] != KARMADA_API, pair))
    return matches[0]


_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(api_version: str | None = None, kind: str | None = None) -> dict[str, Any]:
    """JSON Schema for one kind, or for every kind discriminated by apiVersion and kind.

    The all-kinds form uses `if`/`then` per (apiVersion, kind) rather than `oneOf`, so an
    editor reports the errors of the kind the document declares instead of every kind's.
    Workload kinds get the envelope schema (spec is free-form).
    """
    if api_version is not None and kind is not None:
        schema = model_for(api_version, kind).model_json_schema(by_alias=True)
        _require_type_fields(schema, api_version, kind)
        return {"$schema": _SCHEMA_DIALECT, **schema}
    typed = [(pair, POLICY_KINDS[pair]) for pair in sorted(POLICY_KINDS)]
    typed += [(pair, Workload) for pair in WORKLOAD_KINDS]
    unique = list(dict.fromkeys(model for _, model in typed))
    refs, defs = models_json_schema([(m, "validation") for m in unique], by_alias=True)
    branches: list[dict[str, Any]] = []
    for (av, k), model in typed:
        target = defs["$defs"][refs[(model, "validation")]["$ref"].rsplit("/", 1)[-1]]
        _require_type_fields(target, None, None)
        branches.append(
            {
                "if": {
                    "properties": {"apiVersion": {"const": av}, "kind": {"const": k}},
                    "required": ["apiVersion", "kind"],
                },
                "then": {"$ref": refs[(model, "validation")]["$ref"]},
            }
        )
    return {
        "$schema": _SCHEMA_DIALECT,
        "title": "fedctl and Karmada documents",
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "properties": {
            "apiVersion": {"type": "string", "examples": sorted({av for (av, _), _ in typed})},
            "kind": {"type": "string", "examples": sorted({k for (_, k), _ in typed})},
        },
        "allOf": branches,
        "$defs": defs["$defs"],
    }


def _require_type_fields(schema: dict[str, Any], api_version: str | None, kind: str | None) -> None:
    required = schema.setdefault("required", [])
    for name in ("apiVersion", "kind"):
        if name not in required:
            required.insert(0, name)
    props = schema.get("properties", {})
    if api_version is not None and "const" not in props.get("apiVersion", {}):
        props["apiVersion"] = {"const": api_version, "type": "string"}
    if kind is not None and "const" not in props.get("kind", {}):
        props["kind"] = {"const": kind, "type": "string"}
