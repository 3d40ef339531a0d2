"""Nodes and pods of one member to capacity per node flavor: what the scheduler fits against.

Fed by the monitor with raw Node and Pod JSON from the member's list+watch (`CapacityIndex`
keeps them current event by event; `summarize` does the same for a one-off list); feeds
`ClusterStatus.flavors` and `.totals`. Pure: no I/O, no clock.

A flavor is (arch, accelerator model, allocatable shape of one node). Per flavor we keep
the node count, allocatable, what non-terminal pods request, what is free, and the free
amounts of the emptiest node (`largest_free`): the largest pod that fits on some node. 16
free GPUs spread 4 per node cannot host an 8-GPU pod, and only per-node numbers show it.
How the free room is split is kept too (`free_nodes`: nodes grouped by free amounts,
at most `FREE_NODE_GROUPS` groups): 3 CPU free on each of two nodes is 6 free but holds
one 4-CPU pod at most, and the scheduler counts pods node by node from these groups.

What counts: a node counts when its Ready condition is True and it is not cordoned
(`spec.unschedulable`). A pod counts against its node (`spec.nodeName`) unless it has
finished (phase Succeeded or Failed). A pod's request is what the kube-scheduler charges:
the larger of the sum over containers and the largest init container, plus overhead,
plus one `pods` slot.

Which accelerator a node carries (first match wins):
  1. device resource with a positive allocatable: `nvidia.com/gpu`, `amd.com/gpu`,
     `huawei.com/Ascend*`, `habana.ai/gaudi`, `aws.amazon.com/neuron(core|device)`,
     `google.com/tpu`, `intel.com/gpu`, `cambricon.com/mlu` — the first present names
     `accelerator_resource`;
  2. its model from the labels, in order: `fedctl.io/accelerator` (fedctl's chip name, taken
     verbatim), `nvidia.com/gpu.product` (GPU feature discovery: `NVIDIA-A100-SXM4-80GB`
     becomes `nvidia-a100-80gb`, form-factor words dropped), `cloud.google.com/gke-accelerator`,
     `accelerator/huawei-npu`, `amd.com/gpu.product-name`;
  3. without such a label, a name derived from the resource (`nvidia.com/gpu` → `nvidia-gpu`,
     `huawei.com/Ascend910` → `ascend-910`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from federation.resources import QuantityError, ResourceList
from policies.models.accelerator import ARCHES, DEVICE_RESOURCES
from policies.models.cluster import FREE_NODE_GROUPS, FreeNodes, NodeFlavor, ResourceTotals

__all__ = [
    "ACCELERATOR_RESOURCES",
    "MODEL_LABELS",
    "Capacity",
    "CapacityIndex",
    "NodeShape",
    "accelerator_model",
    "free_groups",
    "node_shape",
    "pod_node",
    "pod_requests",
    "summarize",
]

Obj = Mapping[str, Any]

ACCELERATOR_RESOURCES: tuple[str, ...] = DEVICE_RESOURCES
MODEL_LABELS: tuple[str, ...] = (
    "fedctl.io/accelerator",
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "accelerator/huawei-npu",
    "amd.com/gpu.product-name",
)
_FORM_FACTOR = {"sxm", "sxm2", "sxm4", "sxm5", "pcie", "hbm2", "hbm2e", "hbm3", "hbm3e", "tesla"}
_NOT_SLUG = re.compile(r"[^a-z0-9.]+")
_CHIP = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")  # ChipModel's rule
_DONE = ("Succeeded", "Failed")
_ONE_POD = ResourceList({"pods": 1000})


def _slug(text: str) -> str:
    return _NOT_SLUG.sub("-", text.lower()).strip("-.")[:63].strip("-.")


def _from_label(label: str, value: str) -> str:
    if label == "fedctl.io/accelerator":
        return _slug(value)
    words = [w for w in _slug(value).split("-") if w and w not in _FORM_FACTOR]
    if label == "nvidia.com/gpu.product" and words[:1] != ["nvidia"]:
        words.insert(0, "nvidia")
    return "-".join(words)


def accelerator_model(labels: Mapping[str, str], resource: str) -> str:
    """The chip model of a node's accelerator, from its labels or else its resource name."""
    for label in MODEL_LABELS:
        value = labels.get(label)
        model = _from_label(label, value) if value else ""
        if _CHIP.fullmatch(model):
            return model
    vendor, _, device = resource.partition("/")
    if device.lower().startswith("ascend"):
        return _slug("ascend-" + device[len("ascend") :])
    return _slug(f"{vendor.split('.')[0]}-{device}") or "accelerator"


@dataclass(frozen=True, slots=True)
class NodeShape:
    """What one node contributes: its flavor key and whether it counts at all."""

    name: str
    arch: str
    accelerator_model: str | None
    accelerator_resource: str | None
    allocatable: ResourceList
    counts: bool

    @property
    def flavor(self) -> tuple[str, str | None, str | None, ResourceList]:
        return (self.arch, self.accelerator_model, self.accelerator_resource, self.allocatable)


def _ready(node: Obj) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def _resources(data: Any) -> ResourceList:
    try:
        return ResourceList.from_wire(data or {})
    except QuantityError:
        return ResourceList()


def node_shape(node: Obj) -> NodeShape:
    """A node's arch, accelerator, allocatable, and whether it counts (Ready, not cordoned)."""
    meta = node.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    status = node.get("status") or {}
    arch = labels.get("kubernetes.io/arch") or (status.get("nodeInfo") or {}).get(
        "architecture", ""
    )
    allocatable = _resources(status.get("allocatable") or status.get("capacity"))
    resource = next((r for r in ACCELERATOR_RESOURCES if allocatable.amount(r) > 0), None)
    counts = _ready(node) and not (node.get("spec") or {}).get("unschedulable") and arch in ARCHES
    return NodeShape(
        name=str(meta.get("name") or ""),
        arch=str(arch),
        accelerator_model=accelerator_model(labels, resource) if resource else None,
        accelerator_resource=resource,
        allocatable=allocatable,
        counts=counts,
    )


def _sum_requests(containers: Iterable[Obj]) -> ResourceList:
    total = ResourceList()
    for c in containers:
        resources = c.get("resources") or {}
        # Kubernetes defaults a missing request to the limit (always so for devices).
        total = total + _resources(
            {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        )
    return total


def pod_requests(pod: Obj) -> ResourceList:
    """What the scheduler charges a node for this pod, including one `pods` slot."""
    spec = pod.get("spec") or {}
    requests = _sum_requests(spec.get("containers") or ())
    for init in spec.get("initContainers") or ():
        requests = requests.max_with(_sum_requests([init]))
    return requests + _resources(spec.get("overhead")) + _ONE_POD


def pod_node(pod: Obj) -> str | None:
    """The node a pod holds resources on, or None (unscheduled or finished)."""
    node = (pod.get("spec") or {}).get("nodeName")
    phase = (pod.get("status") or {}).get("phase")
    return str(node) if node and phase not in _DONE else None


def _pod_key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


@dataclass(frozen=True, slots=True)
class Capacity:
    """A member's capacity: flavors (sorted) and cluster totals over counted nodes."""

    flavors: tuple[NodeFlavor, ...]
    totals: ResourceTotals
    nodes: int

    def chips(self) -> dict[str, int]:
        """Accelerators by model (devices), plain arches by node count."""
        out: dict[str, int] = {}
        for f in self.flavors:
            if f.accelerator_model and f.accelerator_resource:
                devices = f.allocatable.amount(f.accelerator_resource) // 1000 * f.node_count
                out[f.accelerator_model] = out.get(f.accelerator_model, 0) + devices
            else:
                out[f.arch] = out.get(f.arch, 0) + f.node_count
        return out


def _emptiest(free: ResourceList, shape: NodeShape) -> tuple[int, int, int]:
    device = free.amount(shape.accelerator_resource) if shape.accelerator_resource else 0
    return (device, free.amount("cpu"), free.amount("memory"))


class CapacityIndex:
    """Nodes and pods of one member, kept current from watch events; summary on demand."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeShape] = {}
        self._pods: dict[str, tuple[str, ResourceList]] = {}
        self._requested: dict[str, ResourceList] = {}

    def replace_nodes(self, nodes: Iterable[Obj]) -> None:
        self._nodes = {s.name: s for s in map(node_shape, nodes)}

    def replace_pods(self, pods: Iterable[Obj]) -> None:
        self._pods = {}
        self._requested = {}
        for pod in pods:
            self.pod_event("ADDED", pod)

    def node_event(self, kind: str, node: Obj) -> bool:
        """Apply one node event; True when the node's contribution changed."""
        shape = node_shape(node)
        if kind == "DELETED":
            return self._nodes.pop(shape.name, None) is not None
        if self._nodes.get(shape.name) == shape:
            return False
        self._nodes[shape.name] = shape
        return True

    def pod_event(self, kind: str, pod: Obj) -> bool:
        """Apply one pod event; True when what it holds on a node changed."""
        key = _pod_key(pod)
        node = None if kind == "DELETED" else pod_node(pod)
        new = (node, pod_requests(pod)) if node else None
        old = self._pods.get(key)
        if old == new:
            return False
        if old is not None:
            self._requested[old[0]] = self._requested.get(old[0], ResourceList()) - old[1]
            del self._pods[key]
        if new is not None:
            self._pods[key] = (new[0], new[1])
            self._requested[new[0]] = self._requested.get(new[0], ResourceList()) + new[1]
        return True

    def summary(self) -> Capacity:
        groups: dict[tuple[str, str | None, str | None, ResourceList], list[NodeShape]] = {}
        for shape in self._nodes.values():
            if shape.counts:
                groups.setdefault(shape.flavor, []).append(shape)
        flavors = []
        totals = [ResourceList(), ResourceList(), ResourceList()]
        for key, shapes in groups.items():
            arch, model, resource, allocatable = key
            requested = ResourceList()
            free = ResourceList()
            best: ResourceList | None = None
            frees: list[ResourceList] = []
            for shape in shapes:
                used = self._requested.get(shape.name, ResourceList())
                node_free = (allocatable - used).nonnegative()
                requested, free = requested + used, free + node_free
                frees.append(node_free)
                if best is None or _emptiest(node_free, shape) > _emptiest(best, shape):
                    best = node_free
            total = allocatable.scaled(len(shapes))
            totals = [totals[0] + total, totals[1] + requested, totals[2] + free]
            flavors.append(
                NodeFlavor(
                    arch=arch,
                    accelerator_model=model,
                    accelerator_resource=resource,
                    allocatable=allocatable,
                    node_count=len(shapes),
                    requested=requested,
                    free=free,
                    largest_free=best or ResourceList(),
                    free_nodes=free_groups(frees, key=lambda f: _emptiest(f, shapes[0])),
                )
            )
        flavors.sort(key=lambda f: (f.arch, f.accelerator_model or "", -f.node_count))
        return Capacity(
            flavors=tuple(flavors),
            totals=ResourceTotals(allocatable=totals[0], requested=totals[1], free=totals[2]),
            nodes=sum(f.node_count for f in flavors),
        )


def free_groups(
    frees: Sequence[ResourceList],
    *,
    key: Callable[[ResourceList], tuple[int, ...]],
    limit: int = FREE_NODE_GROUPS,
) -> list[FreeNodes]:
    """Nodes' free amounts as at most `limit` groups, emptiest (by `key`) first.

    Identical amounts share a group. Past `limit` kinds, neighbours in emptiness order are
    merged into groups of about equal numbers of kinds, each showing the least of every
    amount over its nodes: the scheduler may then count fewer pods than fit, never more
    (pods left Pending on a member that was said to hold them are what this prevents).
    """
    counts: dict[ResourceList, int] = {}
    for f in frees:
        counts[f] = counts.get(f, 0) + 1
    kinds = sorted(counts, key=key, reverse=True)
    size = -(-len(kinds) // limit) if kinds else 1  # ceil: kinds per group
    groups = []
    for start in range(0, len(kinds), size):
        chunk = kinds[start : start + size]
        least = chunk[0]
        for other in chunk[1:]:
            least = least.min_with(other)
        groups.append(FreeNodes(free=least, count=sum(counts[k] for k in chunk)))
    return groups


def summarize(nodes: Iterable[Obj], pods: Iterable[Obj]) -> Capacity:
    """Capacity from one list of nodes and one of pods."""
    index = CapacityIndex()
    index.replace_nodes(nodes)
    index.replace_pods(pods)
    return index.summary()
