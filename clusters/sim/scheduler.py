"""Which node a pod fits on, and the upstream-style reason when none does.

Fed by the cluster's controllers, which keep a `NodeCache` current from store events
(nodes added or changed, pods bound or finished) and ask `NodeCache.place` for every
unbound pod. The answer either names a node (the controller then writes `spec.nodeName`)
or carries the message the real scheduler would put in the FailedScheduling event, e.g.
`0/4 nodes are available: 4 Insufficient nvidia.com/gpu.` — the federation controller's
capacity model must agree with this module, so it follows upstream filters in upstream
order: unschedulable, taints, node affinity / nodeSelector, then resource fit per node.
Fit is per node: 16 free GPUs spread over four nodes do not host an 8-GPU pod.
No I/O here; usage is tracked in integer milli-units from `quantity`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clusters.sim import quantity

__all__ = [
    "Decision",
    "NodeCache",
    "NodeInfo",
    "fit_reasons",
    "is_terminal",
    "node_matches_affinity",
    "pod_requests",
    "tolerates",
]

Obj = Mapping[str, Any]

_PODS = "pods"
# Among this many feasible nodes the least allocated wins (upstream scores a sample too).
_SAMPLE = 16


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _container_requests(container: Obj) -> dict[str, int]:
    res = container.get("resources") or {}
    # API defaulting: a limit without a request makes the request equal to the limit.
    merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    return {name: quantity.to_milli(value) for name, value in merged.items()}


def pod_requests(pod: Obj) -> dict[str, int]:
    """Effective requests in milli-units: max(sum of containers, largest init) + overhead."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        for name, value in _container_requests(container).items():
            total[name] = total.get(name, 0) + value
    for container in spec.get("initContainers") or ():
        for name, value in _container_requests(container).items():
            total[name] = max(total.get(name, 0), value)
    for name, value in (spec.get("overhead") or {}).items():
        total[name] = total.get(name, 0) + quantity.to_milli(value)
    return total


def tolerates(tolerations: Iterable[Obj], taint: Obj) -> bool:
    """Upstream `ToleratesTaint`: key, operator (Equal/Exists) and effect all match."""
    for tol in tolerations:
        effect = tol.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = tol.get("key") or ""
        operator = tol.get("operator") or "Equal"
        if key and key != taint.get("key"):
            continue
        if operator == "Exists" or (key and (tol.get("value") or "") == (taint.get("value") or "")):
            return True
    return False


def _expression_matches(expr: Obj, labels: Mapping[str, str]) -> bool:
    key, op = expr.get("key", ""), expr.get("operator", "")
    values = expr.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _term_matches(term: Obj, labels: Mapping[str, str], name: str) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches nothing, as upstream
    by_name = {"metadata.name": name}
    return all(_expression_matches(e, labels) for e in exprs) and all(
        _expression_matches(f, by_name) for f in fields
    )


def node_matches_affinity(pod: Obj, labels: Mapping[str, str], name: str) -> bool:
    """nodeSelector AND required node affinity (terms are ORed)."""
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms")
    if required:
        return any(_term_matches(t, labels, name) for t in required)
    return True


@dataclass
class NodeInfo:
    """What the scheduler knows about one node: its shape and what is already on it."""

    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    unschedulable: bool
    allocatable: dict[str, int]
    requested: dict[str, int] = field(default_factory=dict)
    pods: int = 0

    @classmethod
    def from_node(cls, node: Obj) -> NodeInfo:
        spec, status = node.get("spec") or {}, node.get("status") or {}
        alloc = status.get("allocatable") or status.get("capacity") or {}
        return cls(
            name=node["metadata"]["name"],
            labels=dict(node["metadata"].get("labels") or {}),
            taints=[dict(t) for t in spec.get("taints") or ()],
            unschedulable=bool(spec.get("unschedulable")),
            allocatable={k: quantity.to_milli(v) for k, v in alloc.items()},
        )

    def free(self, resource: str) -> int:
        return self.allocatable.get(resource, 0) - self.requested.get(resource, 0)


def fit_reasons(pod: Obj, requests: Mapping[str, int], node: NodeInfo) -> list[str]:
    """Why `pod` cannot go on `node`, in upstream filter order; empty when it fits."""
    if node.unschedulable and not tolerates(
        (pod.get("spec") or {}).get("tolerations") or (),
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
    ):
        return ["node(s) were unschedulable"]
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    for taint in node.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return [f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"]
    if not node_matches_affinity(pod, node.labels, node.name):
        return ["node(s) didn't match Pod's node affinity/selector"]
    reasons = []
    if node.pods + 1 > node.allocatable.get(_PODS, 0) // 1000:
        reasons.append("Too many pods")
    for resource, amount in sorted(requests.items()):
        if amount > 0 and amount > node.free(resource):
            reasons.append(f"Insufficient {resource}")
    return reasons


@dataclass(frozen=True)
class Decision:
    node: str | None
    message: str = ""


class NodeCache:
    """Nodes and per-node usage, kept current by the controllers from store events."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        # pod key -> (node, requests) for every non-terminal bound pod
        self._placed: dict[str, tuple[str, dict[str, int]]] = {}
        self._next_start = 0

    def set_node(self, node: Obj) -> None:
        info = NodeInfo.from_node(node)
        old = self.nodes.get(info.name)
        if old is not None:
            info.requested, info.pods = old.requested, old.pods
        self.nodes[info.name] = info

    def remove_node(self, name: str) -> None:
        self.nodes.pop(name, None)

    def set_pod(self, key: str, pod: Obj | None) -> None:
        """Account a pod's requests to its node; `None` or terminal releases them."""
        node_name = None if pod is None else (pod.get("spec") or {}).get("nodeName")
        placed = self._placed.get(key)
        same_node = pod is not None and placed is not None and placed[0] == node_name
        if same_node and pod is not None and not is_terminal(pod):
            return  # still on the same node; requests of a pod never change
        self._release(key)
        if pod is None or is_terminal(pod) or not node_name:
            return
        requests = pod_requests(pod)
        self._placed[key] = (node_name, requests)
        info = self.nodes.get(node_name)
        if info is not None:
            info.pods += 1
            for resource, amount in requests.items():
                info.requested[resource] = info.requested.get(resource, 0) + amount

    def _release(self, key: str) -> None:
        placed = self._placed.pop(key, None)
        if placed is None:
            return
        info = self.nodes.get(placed[0])
        if info is None:
            return
        info.pods -= 1
        for resource, amount in placed[1].items():
            info.requested[resource] = info.requested.get(resource, 0) - amount

    def place(self, pod: Obj) -> Decision:
        """Pick a node for `pod`, or explain why none fits."""
        names = sorted(self.nodes)
        if not names:
            return Decision(None, "no nodes available to schedule pods")
        requests = pod_requests(pod)
        reasons: Counter[str] = Counter()
        feasible: list[NodeInfo] = []
        start = self._next_start % len(names)
        for i in range(len(names)):
            info = self.nodes[names[(start + i) % len(names)]]
            why = fit_reasons(pod, requests, info)
            if why:
                reasons.update(why)
            else:
                feasible.append(info)
                if len(feasible) >= _SAMPLE:
                    break
        if not feasible:
            parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
            return Decision(None, f"0/{len(names)} nodes are available: {', '.join(parts)}.")
        best = max(feasible, key=lambda n: _free_score(n, requests))
        self._next_start = start + len(feasible)
        return Decision(best.name)


def _free_score(node: NodeInfo, requests: Mapping[str, int]) -> float:
    """Upstream LeastAllocated over cpu and memory (and any requested extended resource)."""
    score = 0.0
    resources = {"cpu", "memory", *requests}
    for resource in resources:
        cap = node.allocatable.get(resource, 0)
        if cap > 0:
            score += (node.free(resource) - requests.get(resource, 0)) / cap
    return score
