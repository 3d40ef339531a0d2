"""Pinning: node affinity that keeps a copy's pods where the scheduler counted them (pure).

Fed by render with one pod spec of a rendered copy and the AcceleratorProfiles; edits the
pod spec in place. The scheduler judges fit per node flavor and counts a pod that asks for
no device on a CPU flavor only. A member's scheduler does not know that: a GPU or NPU node
without a taint (an L4 pool, Ascend nodes) takes a CPU pod as readily as a CPU node, and
the room a device job was placed by is gone when it arrives. So a pod that asks for no
device gets a required node affinity that no accelerator profile's node-selector label
matches, written with `NotIn` so a node without the label (every CPU node) passes; it
works on any Kubernetes member, not only the simulated ones.

The exclusion is merged with the node affinity the pod already has: it is added to each
of the user's `nodeSelectorTerms` (terms are ORed, so it must hold in every one), and the
preferred terms and other affinities are left alone. A pod whose own nodeSelector names an
accelerator's label value was pointed at those nodes on purpose and is left as written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from policies.models.accelerator import AcceleratorProfile

__all__ = ["accelerator_labels", "keep_off_accelerators", "tolerate_device"]

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def accelerator_labels(profiles: Iterable[AcceleratorProfile]) -> dict[str, list[str]]:
    """Node label key -> the values that mark an accelerator's nodes, from every
    accelerator profile's nodeSelector (a plain-arch profile marks none)."""
    found: dict[str, set[str]] = {}
    for profile in profiles:
        if not profile.is_accelerator:
            continue
        for key, value in profile.spec.node_selector.items():
            found.setdefault(key, set()).add(value)
    return {key: sorted(values) for key, values in sorted(found.items())}


def keep_off_accelerators(pod: dict[str, Any], *, profiles: Iterable[AcceleratorProfile]) -> None:
    """Require, in `pod`'s node affinity, a node that carries no accelerator's label.

    A pod spec whose affinity is not the shape Kubernetes expects is left for the member
    to refuse, as it would refuse the template."""
    labels = accelerator_labels(profiles)
    selector = pod.get("nodeSelector")
    if not labels or not isinstance(selector, dict | None):
        return
    if any(str(value) in labels.get(key, ()) for key, value in (selector or {}).items()):
        return
    away = [{"key": key, "operator": "NotIn", "values": values} for key, values in labels.items()]
    affinity = pod.setdefault("affinity", {})
    node = affinity.setdefault("nodeAffinity", {}) if isinstance(affinity, dict) else None
    required = node.setdefault(_REQUIRED, {}) if isinstance(node, dict) else None
    if not isinstance(required, dict):
        return
    terms = required.get("nodeSelectorTerms") or [{}]
    if not isinstance(terms, list) or not all(isinstance(t, dict) for t in terms):
        return
    required["nodeSelectorTerms"] = [
        {**term, "matchExpressions": [*(term.get("matchExpressions") or []), *away]}
        for term in terms
    ]


def tolerate_device(pod: dict[str, Any], resource: str) -> None:
    """Let a pod that asks for `resource` onto nodes tainted `resource:NoSchedule`.

    GPU and NPU node pools are commonly tainted with their device resource's name
    (`nvidia.com/gpu=present:NoSchedule`) so that nothing else lands there, and the
    clusters that do so run Kubernetes' ExtendedResourceToleration admission plugin,
    which gives exactly this toleration to every pod asking for the device. A member
    without it left a GPU job Pending there for good, while the scheduler, which counts a
    device pod on device nodes only, had placed it there. An equal toleration the pod has
    (that key, or every key, for NoSchedule or every effect) is left as it is.
    """
    tolerations = pod.get("tolerations")
    if tolerations is None:
        tolerations = pod["tolerations"] = []
    if not isinstance(tolerations, list):
        return  # not the shape Kubernetes expects: the member refuses it as written
    for t in tolerations:
        if (
            isinstance(t, dict)
            and t.get("key") in (resource, None, "")
            and t.get("operator") == "Exists"
            and t.get("effect") in ("NoSchedule", None, "")
        ):
            return
    tolerations.append({"key": resource, "operator": "Exists", "effect": "NoSchedule"})
