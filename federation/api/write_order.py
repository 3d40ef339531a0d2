"""The order in which `/apply` writes its documents, so the scheduler judges a template
and the placing policies of the same apply together.

Fed by the apply handler (`api.objects`) with the documents of one request; feeds it the
order of their writes, which it cuts into transactions of at most 100 objects.

Why: the scheduler claims an unclaimed template as soon as it sees it, possibly between
two transactions of one apply, and a claim sticks (`preemption: Never`). Written in
document order, a Deployment, a policy selecting it by label, 98 ConfigMaps and a policy
selecting it by name gave it to the label policy, which came in the first transaction,
while `fedctl plan` (and Karmada's order: by name before by label) named the name
policy. So every placing policy is written first, then the other objects that are not
templates (override policies, quotas, queues: what a placement reads), then the
templates in document order: a template written by the apply is claimed only once every
policy of the apply is stored.

A template stored before and still unclaimed may still be claimed between two
transactions of policies, when an apply holds more than one transaction of them. So the
policies go strongest first, in Karmada's order of claim as far as it does not depend on
the template: PropagationPolicy before ClusterPropagationPolicy, higher priority first,
then the closest selector (by name, by label, by kind alone), then the name. A claim made
between two of their transactions is then the one all of them would make, unless one
policy selects a template by kind and another by name at the same priority.

Within each group the documents keep their order: Jobs queue FIFO by creation, and a key
given twice is written in the order given.
"""

from __future__ import annotations

from collections.abc import Sequence

from federation.scheduler import plan
from policies.models.base import KubeObject
from policies.models.workload import Workload

__all__ = ["order"]


def order(models: Sequence[KubeObject]) -> list[int]:
    """The indices of `models` in the order they are written."""
    return sorted(range(len(models)), key=lambda i: _rank(models[i], i))


def _rank(model: KubeObject, index: int) -> tuple[int, tuple[int, int, int, str], int]:
    if isinstance(model, plan.AnyPolicy):
        return 0, _strength(model), index
    return (2 if isinstance(model, Workload) else 1), (0, 0, 0, ""), index


def _strength(policy: plan.AnyPolicy) -> tuple[int, int, int, str]:
    """Karmada's order of claim (`plan._ranked`) without the template: the closest of the
    policy's selectors stands for its specificity."""
    closest = max(
        (2 if s.name else 1 if s.label_selector is not None else 0)
        for s in policy.spec.resource_selectors
    )
    namespaced = 0 if plan.is_namespaced(policy) else 1
    return namespaced, -policy.spec.priority, -closest, policy.metadata.name
