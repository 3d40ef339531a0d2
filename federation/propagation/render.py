"""Render: the manifest one member cluster receives for one workload (pure).

Fed by the controller with a workload template, its Binding target for that cluster (how
many replicas, which chip), the Cluster, every override policy and the AcceleratorProfiles;
feeds works (one Work per cluster) and the applier. The steps, in order:

    1. copy the template without server-set metadata and status
    2. give it the cluster's share of replicas (the kind's interpreter)
    3. translate it for the chip chosen there (AcceleratorProfile): in each pod template
       that requests a device, the device resource name in requests and limits, the node
       selector and arch, and the image rewrite of the containers using the device; a
       plain-arch chip pins every template to its arch; a template asking for no device
       is kept off every accelerator's nodes (pinning.py)
    4. apply override rules in Karmada's order (overrides.py) — the user has the last word
    5. give a device request with no limit its limit, equal to the request
    6. fold a Secret's `stringData` into its `data`, as the API server does on write
    7. label it as ours: managed-by, workload (not the Binding's revision: a label that
       changed with every Binding write re-applied each copy to every member, its share
       unchanged; the Work records the revision instead)

Why per template and per container: a Volcano Job or PyTorchJob mixes a CPU-only
launcher or master with device workers, and only the workers need the chip. Pinned to
the device nodes without the workers' toleration, a launcher never starts; given the
chip's image tag suffix, a launcher or a busybox sidecar asks for a tag that does not
exist. A member's untainted L4 or Ascend node would also take a CPU-only pod that the
scheduler counted on a CPU node, and the room a device job was placed by is gone.

Why the chip comes before overrides: a profile says what a chip needs in general
(`huawei.com/Ascend910`, the CANN image); an OverridePolicy is the user's explicit word for
one workload and must be able to correct it. Why the device limit is filled in: Kubernetes
never overcommits an extended resource, so every member's API server refuses a container
that requests one (`nvidia.com/gpu`) without a limit equal to the request, and a request
alone can only mean that amount. The limit is added only where it is missing, after the
overrides so a request they add is covered too; a limit that is there is left alone, and
CPU and memory, which may overcommit, are never touched. Why `stringData` is folded:
it is write-only, never read back, so a copy's data edited in the member could not be told
from ours and restored; sending the `data` the API server would have stored instead gives
the member the very same Secret and lets it be compared entry by entry.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from federation import errors
from federation.propagation import interpreter, overrides, pinning
from federation.registry import keys
from federation.resources import QuantityError, normalise_name, parse_quantity
from policies.models import secret_data
from policies.models.accelerator import AcceleratorProfile
from policies.models.binding import TargetCluster
from policies.models.cluster import Cluster

__all__ = [
    "ARCH_LABEL",
    "LABEL_MANAGED_BY",
    "LABEL_WORKLOAD",
    "MANAGED_BY",
    "PLACEHOLDER",
    "REF_ANNOTATION",
    "digest",
    "is_fedctls",
    "is_ours",
    "is_placeholder",
    "namespace_manifest",
    "released",
    "renamed",
    "render",
    "workload_label",
]

LABEL_MANAGED_BY = "fedctl.io/managed-by"
LABEL_WORKLOAD = "fedctl.io/workload"
REF_ANNOTATION = "fedctl.io/workload-ref"
MANAGED_BY = "fedctl"
ARCH_LABEL = "kubernetes.io/arch"

_SERVER_SET = (
    "resourceVersion",
    "uid",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "ownerReferences",
    "finalizers",
)


def workload_label(ref: keys.WorkloadRef) -> str:
    """A label value (≤ 63 chars) naming the workload; long names end in a digest."""
    value = ref.name
    if len(value) <= 63:
        return value
    return value[:50] + "-" + hashlib.sha256(str(ref).encode()).hexdigest()[:12]


def released(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """`manifest` without the labels and annotation that make a member object ours."""
    obj = copy.deepcopy(dict(manifest))
    meta = obj.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _OUR_LABELS}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != REF_ANNOTATION}
    for field, values in (("labels", labels), ("annotations", annotations)):
        if values:
            meta[field] = values
        else:
            meta.pop(field, None)
    return obj


_OUR_LABELS = frozenset({LABEL_MANAGED_BY, LABEL_WORKLOAD})


def is_ours(obj: Mapping[str, Any], ref: keys.WorkloadRef | None = None) -> bool:
    """Whether a member object carries our labels (for `ref`, when given)."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(LABEL_MANAGED_BY) != MANAGED_BY:
        return False
    if ref is None:
        return True
    return (meta.get("annotations") or {}).get(REF_ANNOTATION) == str(ref)


def renamed(obj: Mapping[str, Any]) -> bool:
    """Whether a member object of ours is named otherwise than the workload its annotation
    names: a copy no Work describes (an override of `/metadata/name`, refused now, made
    one), which garbage collection removes though its workload is wanted there."""
    meta = obj.get("metadata") or {}
    ref_text = (meta.get("annotations") or {}).get(REF_ANNOTATION)
    if not ref_text:
        return False
    try:
        ref = keys.parse_workload_key(f"{keys.ROOT}/workloads/{ref_text}")
    except errors.Invalid:
        return False  # the caller's `wanted` judges an annotation it cannot read
    return meta.get("name") != ref.name


PLACEHOLDER = "<placeholder>"
"""What the member watch records as the owner of a placeholder Namespace."""


def is_placeholder(obj: Mapping[str, Any]) -> bool:
    """A Namespace the applier created ahead of a namespaced object (ours, no workload):
    the Namespace workload of that name may adopt it."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    return labels.get(LABEL_MANAGED_BY) == MANAGED_BY and not (
        (meta.get("annotations") or {}).get(REF_ANNOTATION)
    )


def is_fedctls(obj: Mapping[str, Any], ref: keys.WorkloadRef | None) -> bool:
    """Whether `ref`'s copy may be written over or taken off in place of `obj`: our copy
    of it (with `ref` None, any object of ours), or an object we made with no workload
    (`is_placeholder`). Anything else is the
    member's own: `Abort` refuses to apply over it, and nothing deletes or releases it."""
    return is_ours(obj, ref) or is_placeholder(obj)


def digest(manifest: Mapping[str, Any]) -> str:
    """A stable digest of a manifest: equal digests mean nothing to apply."""
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def namespace_manifest(namespace: str) -> dict[str, Any]:
    """The Namespace created in a member that lacks it."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {LABEL_MANAGED_BY: MANAGED_BY}},
    }


def _clean(template: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(template))
    out.pop("status", None)
    meta = out.setdefault("metadata", {})
    for field in _SERVER_SET:
        meta.pop(field, None)
    return out


def _rename_devices(resources: dict[str, Any], *, devices: set[str], target: str) -> None:
    for field in ("requests", "limits"):
        section = resources.get(field)
        if not isinstance(section, dict):
            continue
        for name in list(section):
            plain = normalise_name(name)
            if plain in devices and plain != target:
                section[target] = section.pop(name)


def _uses_device(container: Mapping[str, Any], devices: set[str]) -> bool:
    """Whether a container asks for any of `devices` (requests or limits, not zero). An
    amount that does not parse counts as asked: the member refuses it either way."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return False
    for field in ("requests", "limits"):
        section = resources.get(field)
        if not isinstance(section, dict):
            continue
        for name, amount in section.items():
            if normalise_name(str(name)) not in devices:
                continue
            try:
                if parse_quantity(amount) != 0:
                    return True
            except (QuantityError, TypeError):
                return True
    return False


def _device_containers(pod: Mapping[str, Any], devices: set[str]) -> list[dict[str, Any]]:
    return [
        c
        for field in ("containers", "initContainers")
        for c in pod.get(field) or ()
        if isinstance(c, dict) and _uses_device(c, devices)
    ]


def _translate(
    obj: dict[str, Any],
    profile: AcceleratorProfile | None,
    *,
    profiles: Mapping[str, AcceleratorProfile],
) -> None:
    """Translate each pod template for the chip, as far as it uses the chip.

    An accelerator profile is for the templates that request a device (a Volcano worker
    task, not its launcher) and, in them, for the containers that do (the trainer, not a
    busybox sidecar, whose image has no CANN build): they get the resource name, the
    node selector and the image. A plain-arch profile pins every template to its arch. A
    template that requests no device is kept off every accelerator's nodes
    (`pinning.keep_off_accelerators`), as the scheduler counted it on a CPU flavor: untainted
    GPU or NPU nodes would otherwise take it and the room a device job was placed by.
    """
    devices = {
        normalise_name(p.spec.resource_name) for p in profiles.values() if p.spec.resource_name
    }
    accelerator = profile is not None and profile.is_accelerator
    for pod in overrides.pod_specs(obj):
        users = _device_containers(pod, devices)
        if not users:
            pinning.keep_off_accelerators(pod, profiles=profiles.values())
        if profile is None or (accelerator and not users):
            continue
        wanted = {ARCH_LABEL: profile.spec.arch, **profile.spec.node_selector}
        # The template's own entries win: the scheduler chose a chip its arch allows, and
        # a user's selector written over sent an amd64-only image to Arm nodes.
        pod["nodeSelector"] = {**wanted, **(pod.get("nodeSelector") or {})}
        meant = users if accelerator else overrides.containers({"kind": "Pod", "spec": pod})
        target = profile.spec.resource_name
        for container in meant:
            resources = container.get("resources")
            if target is not None and isinstance(resources, dict):
                _rename_devices(resources, devices=devices, target=target)
            if profile.spec.image is not None and isinstance(container.get("image"), str):
                container["image"] = profile.spec.image.apply(container["image"])
        if accelerator and target is not None:
            pinning.tolerate_device(pod, normalise_name(target))


def _is_extended(name: str) -> bool:
    """Kubernetes' extended resources: a domain-qualified name outside kubernetes.io."""
    domain, slash, _ = name.partition("/")
    return bool(slash) and not (
        domain == "kubernetes.io"
        or domain.endswith(".kubernetes.io")
        or name.startswith("requests.")
    )


def _limit_devices(obj: dict[str, Any]) -> None:
    for container in overrides.containers(obj):
        resources = container.get("resources")
        requests = resources.get("requests") if isinstance(resources, dict) else None
        if not isinstance(resources, dict) or not isinstance(requests, dict):
            continue
        limits = resources.get("limits") or {}
        if not isinstance(limits, dict):
            continue
        missing = {n: q for n, q in requests.items() if _is_extended(str(n)) and n not in limits}
        if missing:
            resources["limits"] = {**limits, **missing}


def _fold_string_data(obj: dict[str, Any]) -> None:
    """A v1 Secret's `stringData` merged into `data` (`secret_data.fold`): templates are
    folded when written, but one stored before that may still hold it."""
    folded = secret_data.fold(obj)
    obj.clear()
    obj.update(folded)


def render(
    *,
    template: Mapping[str, Any],
    ref: keys.WorkloadRef,
    target: TargetCluster,
    total: int,
    cluster: Cluster,
    policies: Sequence[overrides.AnyOverride] = (),
    profiles: Mapping[str, AcceleratorProfile] | None = None,
    before: int = 0,
) -> dict[str, Any]:
    """The manifest for `cluster`; raises `errors.Invalid` when an override cannot apply.
    `before`: the replicas placed on the Binding's targets ahead of this one."""
    profiles = profiles or {}
    plugin = interpreter.for_kind(str(template.get("apiVersion")), str(template.get("kind")))
    obj = _clean(template)
    if plugin.replicas(obj) is not None:
        obj = plugin.with_replicas(obj, replicas=target.replicas, total=total, before=before)
    profile = profiles.get(target.chip) if target.chip else None
    _translate(obj, profile, profiles=profiles)
    overrides.apply_policies(obj, policies, template=template, cluster=cluster)
    _limit_devices(obj)
    _fold_string_data(obj)
    meta = obj.setdefault("metadata", {})
    if ref.namespace != keys.CLUSTER_SCOPE:
        meta["namespace"] = ref.namespace
    meta["labels"] = {
        **(meta.get("labels") or {}),
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_WORKLOAD: workload_label(ref),
    }
    meta["annotations"] = {**(meta.get("annotations") or {}), REF_ANNOTATION: str(ref)}
    return obj
