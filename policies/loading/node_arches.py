"""A workload's pod templates asking for an arch its placement can never give.

Fed by the loader with each workload document (`documents._kubernetes_rules`) and by
`federation.scheduler.claims` with the arches of the policy that claims it; feeds their
findings, errors that refuse the apply at the template's `kubernetes.io/arch`.

Why refused rather than warned: the scheduler places a workload only on the arches its
template's own `kubernetes.io/arch` (nodeSelector, or required node affinity `In`) allows
and its placement accepts (`node_arch`), and the propagator never writes over the
template's selector. Where the two share no arch, nothing ever runs: the workload would
be admitted into its queue and wait for good. So it is refused with the field to change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from policies.models import node_arch
from policies.models.accelerator import is_arch
from policies.models.common import PathPart
from policies.models.workload import Workload

__all__ = ["conflicts", "own_chips", "stated"]

Problem = tuple[tuple[PathPart, ...], str]
"""Where (inside the document) and what."""


def stated(model: Workload) -> Iterator[tuple[tuple[PathPart, ...], frozenset[str]]]:
    """(where, arches) for each pod template of `model` that names its arch itself."""
    for pod_set in model.pod_sets:
        pod: Any = model.spec
        for part in pod_set.template_path[1:]:
            pod = pod.get(part) if isinstance(pod, Mapping) else None
        if not isinstance(pod, Mapping):
            continue
        arches = node_arch.of_pod(pod)
        if arches is not None:
            yield node_arch.path_of(pod_set.template_path, pod), arches


def conflicts(model: Workload, accepted: Collection[str], *, by: str) -> list[Problem]:
    """Where `model`'s templates name arches that meet neither each other nor `accepted`
    (the arches `by` accepts; empty: any)."""
    found: list[Problem] = []
    allowed: frozenset[str] | None = None
    for at, arches in stated(model):
        shown = ", ".join(sorted(arches)) or "no arch"
        if not arches:
            why = "its nodeSelector and required node affinity allow no arch together"
            return [(at, f"kubernetes.io/arch: {why}, so its pods could run on no node")]
        if allowed is not None and not allowed & arches:
            return [
                (
                    at,
                    f"kubernetes.io/arch allows {shown} here and {', '.join(sorted(allowed))}"
                    " in another pod template: all its pods run on one arch's nodes",
                )
            ]
        allowed = arches if allowed is None else allowed & arches
        if accepted and not arches & set(accepted):
            found.append(
                (
                    at,
                    f"kubernetes.io/arch allows {shown}, and {by} accepts only"
                    f" {', '.join(accepted)}: it could be placed nowhere (make them agree)",
                )
            )
    return found


def own_chips(model: Workload) -> tuple[str, ...]:
    """The arches a CPU-only workload's own `fedctl.io/chips` accepts (empty: any, or
    chips the check leaves to the chip filter: accelerator models)."""
    chips = model.chips
    listed = tuple(c for c in chips if is_arch(c))
    return listed if listed and len(listed) == len(chips) else ()
