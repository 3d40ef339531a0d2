"""Override edits that make a workload's copies run more than was admitted, said where
the policy is written.

Fed by the notes of a write or a plan (`api.plan_routes.policy_notes`: `fedctl apply`,
`fedctl plan`, the editor) with the override policies written and the stored workloads;
feeds them one note per edit that raises a workload's pods or their requests.

Why: queues, FederatedResourceQuota admission and cost count the template (its replicas
and requests, as the Binding records them), and override policies are applied after, to
each member's copy (`render`). An OverridePolicy setting `/spec/replicas` to 8 on a
Deployment of 1 ran 8 pods of 500m against a quota of 1 CPU overall, which the same
Deployment written with 8 replicas is refused for, and nothing said so. Karmada has the
same gap (its quota counts the ResourceBinding's replicas, not the overridden manifest).
It is not refused: a per-cluster replica count is a use Karmada allows. It is told.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from federation import errors
from federation.propagation import overrides
from federation.resources import ResourceList
from policies.models.override import Overriders
from policies.models.rules import STORED
from policies.models.workload import Workload

__all__ = ["notes"]

_SHOWN = 3
"""Workloads named per note; the rest are counted."""

_TAIL = (
    ": queues, FederatedResourceQuota and cost count the template, not what an override"
    " makes of it (as Karmada's quota does), so the members may run more than was"
    " admitted; change the template to have it counted"
)


def notes(
    policies: Sequence[overrides.AnyOverride],
    workloads: Sequence[Workload],
    templates: Sequence[dict[str, Any]] | None = None,
) -> list[str]:
    """One note per plaintext edit of `policies` that makes a selected workload run more
    pods, or pods asking for more, than its template: what admission counted.
    `templates`: the workloads' wire forms when the caller has them already."""
    out: list[str] = []
    wires = [w.to_wire() for w in workloads] if templates is None else templates
    for policy in policies:
        found: dict[str, list[str]] = {}
        for workload, template in zip(workloads, wires, strict=True):
            if not overrides.selects(policy, template):
                continue
            for index, rule in enumerate(policy.spec.effective_rules()):
                raised = _raised(rule.overriders, workload, template)
                if raised is not None:
                    at = f"{overrides.rule_label(policy, index)}.plaintext[{raised[0]}]"
                    found.setdefault(at, []).append(raised[1])
        out.extend(
            f"{overrides.policy_label(policy)} {at}: {_some(said)}{_TAIL}"
            for at, said in found.items()
        )
    return out


def _raised(
    overriders: Overriders, workload: Workload, template: dict[str, Any]
) -> tuple[int, str] | None:
    """The first plaintext edit of a rule after which `workload`'s copy runs more than its
    template (judged with the rule's other edits before it, as it renders), and what it
    makes of it; None when the rule raises nothing (or cannot apply: said elsewhere)."""
    edits = [j for j, edit in enumerate(overriders.plaintext) if edit.operator != "remove"]
    for j in edits:
        upto = overriders.model_copy(update={"plaintext": overriders.plaintext[: j + 1]})
        made = _made(upto, template)
        if made is None:
            return None
        said = _more(workload, made)
        if said is not None:
            return j, said
    return None


def _made(overriders: Overriders, template: dict[str, Any]) -> Workload | None:
    """The workload a copy of `template` is once `overriders` apply (None: they cannot,
    or what they make is no workload: `overrides.failing_rules` says why)."""
    obj = copy.deepcopy(template)
    try:
        overrides.apply_overriders(obj, overriders)
        return Workload.model_validate(obj, context=STORED)
    except (errors.FedctlError, ValueError):
        return None


def _more(before: Workload, after: Workload) -> str | None:
    """How `after` runs more than `before`: more pods, or larger ones; None if it does not."""
    where = f"{before.kind} {before.namespace + '/' if before.namespace else ''}"
    where += before.metadata.name
    if after.replicas > before.replicas:
        return f"{where} runs {after.replicas} pod(s) where its template has {before.replicas}"
    was, now = before.total_requests(), after.total_requests()
    grown = [name for name in now if now[name] > was.get(name, 0)]
    if not grown:
        return None
    return (
        f"{where} asks for {_shown(now, grown)} in all where its template asks for"
        f" {_shown(was, grown)}"
    )


def _shown(amounts: ResourceList, names: list[str]) -> str:
    wire = amounts.to_wire()
    return ", ".join(f"{name} {wire.get(name, '0')}" for name in names)


def _some(said: list[str]) -> str:
    more = f", and {len(said) - _SHOWN} more workload(s)" if len(said) > _SHOWN else ""
    return "; ".join(said[:_SHOWN]) + more
