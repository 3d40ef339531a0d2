"""The node arches a workload's pod templates ask for themselves (`kubernetes.io/arch`).

Fed by a workload's pod templates (`Workload.node_arches`); feeds the scheduler's chip and
arch filter (through `framework.accepted_chips`) and the loader's check of a workload's
`fedctl.io/chips` against them.

Why: a template written for one arch (`nodeSelector: {kubernetes.io/arch: arm64}`, or a
required node affinity `kubernetes.io/arch In [arm64]`) can only run on that arch's nodes:
a member's scheduler leaves its pods Pending anywhere else. Ignored, the scheduler placed
an Arm-only service on an amd64-only cluster. Read here as a workload's own annotation is,
so the filter treats it exactly as it treats the arches a policy accepts.

Only `In` expressions on the label narrow the arches (`NotIn`, `Exists` and friends do not
name a set to choose from); a template without either constraint accepts any arch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from policies.models.common import PathPart

__all__ = ["ARCH_LABEL", "allowed", "of_pod", "path_of"]

ARCH_LABEL = "kubernetes.io/arch"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def of_pod(pod: Mapping[str, Any]) -> frozenset[str] | None:
    """The arches one pod spec's own constraints allow (None: any). Its nodeSelector and
    its required node affinity must both hold; the affinity's terms are ORed, and a term
    that does not name the label allows any arch."""
    found: frozenset[str] | None = None
    selector = pod.get("nodeSelector")
    if isinstance(selector, Mapping) and isinstance(selector.get(ARCH_LABEL), str):
        found = frozenset({selector[ARCH_LABEL]})
    terms = _terms(pod)
    if terms:
        by_term = [_of_term(t) for t in terms]
        if all(t is not None for t in by_term):
            union = frozenset().union(*(t for t in by_term if t is not None))
            found = union if found is None else found & union
    return found


def allowed(pods: Iterable[Mapping[str, Any]]) -> frozenset[str] | None:
    """The arches every pod of the workload may run on (None: any): all its pods go to one
    cluster's nodes of one arch, so each template's constraint must hold."""
    found: frozenset[str] | None = None
    for pod in pods:
        one = of_pod(pod)
        if one is not None:
            found = one if found is None else found & one
    return found


def _terms(pod: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    affinity = pod.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node.get(_REQUIRED) if isinstance(node, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list):
        return ()
    return [t for t in terms if isinstance(t, Mapping)]


def _of_term(term: Mapping[str, Any]) -> frozenset[str] | None:
    found: frozenset[str] | None = None
    for expression in term.get("matchExpressions") or ():
        if not isinstance(expression, Mapping) or expression.get("key") != ARCH_LABEL:
            continue
        values = expression.get("values")
        if expression.get("operator") != "In" or not isinstance(values, list):
            continue
        one = frozenset(str(v) for v in values)
        found = one if found is None else found & one
    return found


def path_of(template: tuple[PathPart, ...], pod: Mapping[str, Any]) -> tuple[PathPart, ...]:
    """Where the pod spec at `template` states its arch: its nodeSelector entry when it
    has one, else its required node affinity (what a finding points at)."""
    selector = pod.get("nodeSelector")
    if isinstance(selector, Mapping) and ARCH_LABEL in selector:
        return (*template, "nodeSelector", ARCH_LABEL)
    return (*template, "affinity", "nodeAffinity", _REQUIRED)
