"""Queue: where teams submit work, and how much of the fleet each team may hold.

Role: a `fedctl.io/v1alpha1` Queue carries Volcano's queue vocabulary (weight, capability,
guarantee, priority, reclaimable, parent, dequeue strategy) for the global admission step.
Fed by policy YAML and the REST API; feeds the pending queues (ordering and dequeue
strategy), weighted dominant-resource fair share (weight), admission (capability as the hard
cap, guarantee as the reserve never lent out) and reclaim (reclaimable, priority).

How capability and guarantee are keyed: by resource name, as pods request them (`cpu`,
`memory`, `nvidia.com/gpu`, `huawei.com/Ascend910`). One extended-resource name often covers
several chip models (every NVIDIA GPU is `nvidia.com/gpu`), so a queue may also cap a model
with the pseudo resource `accelerator/<chip model>` (`accelerator/nvidia-h100: 8`). Admission
charges a placed pod to both its extended resource and `accelerator/<model>` of the chip it
landed on. A resource with no entry is not limited; `0` forbids it. Pseudo resources are
never rendered into member ResourceQuotas.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from federation.resources import ResourceList
from policies.models.accelerator import DEVICE_RESOURCES, _check_chip
from policies.models.base import FrozenModel, KubeObject
from policies.models.common import Notice, RuleError
from policies.models.rules import stored

__all__ = [
    "CHIP_RESOURCE_PREFIX",
    "VOLCANO_GUARANTEE",
    "Queue",
    "QueueSpec",
    "chip_resource",
    "hierarchy_problems",
    "priority_classes",
]

_DNS_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

CHIP_RESOURCE_PREFIX = "accelerator/"
"""Prefix of the per-chip-model pseudo resource: `accelerator/nvidia-a100-80gb`."""


def chip_resource(model: str) -> str:
    """The pseudo resource that counts devices of one chip model in a queue."""
    return CHIP_RESOURCE_PREFIX + model


VOLCANO_GUARANTEE = (
    "fedctl's guarantee is the resource list itself (guarantee: {cpu: 8, memory: 32Gi})"
)
"""What a Volcano `guarantee.resource` is written as here."""


class QueueSpec(FrozenModel):
    """A queue's share of the fleet and its ordering rules."""

    weight: int = Field(
        default=1,
        ge=1,
        le=65535,
        description=(
            "Relative share under weighted dominant-resource fair share (1-65535), against"
            " its siblings: a parent's weight splits the fleet between subtrees."
        ),
    )
    capability: ResourceList | None = Field(
        default=None,
        description="Hard cap on what the queue may hold, borrowing included, and for a"
        " parent on what its whole subtree holds; a resource without an entry is not capped."
        " Keys: resource names or accelerator/<chip model>.",
    )
    guarantee: ResourceList = Field(
        default_factory=ResourceList,
        description="Reserved for this queue and never lent or reclaimed; at most capability.",
    )
    priority: int = Field(
        default=0,
        description="Queues with higher priority are served first and reclaimed from last.",
    )
    reclaimable: bool = Field(
        default=True,
        description="Whether capacity this queue borrowed may be taken back for others.",
    )
    parent: str | None = Field(
        default=None,
        min_length=1,
        description="Parent queue for a hierarchy; only queues without children take work,"
        " and every ancestor's capability caps them.",
    )
    dequeue_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = Field(
        default="BestEffortFIFO",
        description="StrictFIFO blocks on a head that does not fit; BestEffortFIFO tries the"
        " next workload.",
    )
    namespaces: list[str] = Field(
        default_factory=list,
        description="The namespaces whose workloads may use this queue (empty: any), as"
        " Kueue ties a queue to the namespaces it serves; a parent's list holds for its"
        " whole subtree. A workload from another namespace waits, told which namespaces"
        " the queue takes; what it runs already is not evicted.",
    )
    priority_classes: dict[str, int] = Field(
        default_factory=dict,
        description="Named priorities for workloads in this queue and the queues under it"
        " (a child's own entry wins), e.g. {high: 1000, low: 0}; int32 values, as"
        " Kubernetes bounds priorities.",
    )
    max_hourly_cost: Decimal | None = Field(
        default=None,
        ge=0,
        description="Budget: the most the queue's admitted work may cost per hour together"
        " (a parent's: its whole subtree's), in the federation's currency, as each placement"
        " was estimated. A workload whose placement would take it past is placed again on"
        " clusters within what is left, or waits; nothing admitted is evicted for it, a"
        " workload placed again at no more than it costs now is always admitted, and work"
        " whose cost is unknown is not admitted under a budget.",
    )

    FOREIGN_FIELDS: ClassVar[dict[str, str]] = {
        "deserved": "Volcano's deserved share has no fixed equivalent: a queue's share of"
        " what is free follows its spec.weight, spec.guarantee reserves a part of it and"
        " spec.capability caps it",
        "cohort": "Kueue's cohort is a parent Queue here: set spec.parent to a Queue whose"
        " capability caps its children together",
        "nominalQuota": "Kueue's nominalQuota is spec.guarantee (reserved, never lent) and"
        " spec.capability (the cap, borrowing included), each a flat resource list",
        "borrowingLimit": "a queue borrows up to spec.capability: set capability to"
        " nominalQuota + borrowingLimit",
        "lendingLimit": "spec.guarantee is never lent and the rest is: set guarantee to"
        " nominalQuota - lendingLimit",
        "preemption": "fedctl has no per-queue preemption policy: within a queue lower"
        " fedctl.io/priority work is preempted (the scheduler's preemption setting turns it"
        " off for the whole federation), and spec.reclaimable says whether other queues may"
        " take back what this one borrowed",
        "resourceGroups": "limits are flat resource lists: list each resource under"
        " spec.capability and spec.guarantee, and cap a chip model (a ResourceFlavor) with"
        " an accelerator/<chip model> key",
        "namespaceSelector": "spec.namespaces lists the namespaces the queue serves, by name",
        "queueingStrategy": "spec.dequeueStrategy (StrictFIFO or BestEffortFIFO)",
        "fairSharing": "spec.weight is the queue's fair-share weight",
    }
    """Volcano's and Kueue's queue fields, each with fedctl's equivalent: the first
    errors a team translating its queues meets, so each says what to write instead."""

    @field_validator("guarantee", mode="before")
    @classmethod
    def _flat_guarantee(cls, value: Any) -> Any:
        """Volcano's `guarantee: {resource: {cpu: 8}}` read as a resource named
        `resource` whose quantity is a map; say that fedctl's is the list itself."""
        if isinstance(value, Mapping) and isinstance(value.get("resource"), Mapping):
            raise RuleError(
                f"Volcano's guarantee.resource: {VOLCANO_GUARANTEE}",
                at=("resource",),
                on_key=True,
            )
        return value

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> QueueSpec:
        if not stored(info):
            _check_priorities(self.priority_classes)
        for i, namespace in enumerate(self.namespaces):
            if len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
                raise RuleError(
                    f"invalid namespace {namespace!r}: a namespace is a DNS label (lower-case"
                    " letters, digits and '-', starting and ending with a letter or digit)",
                    at=("namespaces", i),
                )
        _check_pseudo_names(self.capability, field="capability")
        _check_pseudo_names(self.guarantee, field="guarantee")
        if self.capability is None:
            return self
        over = self.guarantee.exceeding(self.capability, unlisted_unlimited=True)
        for name in over:
            raise RuleError(
                f"guarantee of {name} ({_fmt(self.guarantee, name)}) exceeds the capability"
                f" ({_fmt(self.capability, name)}); a queue cannot be promised more than it may"
                " hold",
                at=("guarantee", name),
            )
        return self


_INT32 = (-(2**31), 2**31 - 1)


def _check_priorities(classes: Mapping[str, int]) -> None:
    """Priority class values outside int32, which Kubernetes' priorities are: checked when
    written, so one stored before still decodes."""
    for name, value in classes.items():
        if not _INT32[0] <= value <= _INT32[1]:
            raise RuleError(
                f"priority class {name!r}: {value} is outside the priorities Kubernetes"
                f" allows ({_INT32[0]} to {_INT32[1]}, int32)",
                at=("priorityClasses", name),
            )


def _check_pseudo_names(resources: ResourceList | None, *, field: str) -> None:
    for name in resources or ():
        if name.startswith(CHIP_RESOURCE_PREFIX):
            try:
                _check_chip(name.removeprefix(CHIP_RESOURCE_PREFIX))
            except ValueError as err:
                raise RuleError(str(err), at=(field, name)) from None


def _fmt(resources: ResourceList, name: str) -> str:
    return resources.only([name]).to_wire()[name]


def name_problem(name: str) -> str | None:
    """Why `name` can never name a Queue, or None: the rule a Queue's name and a
    workload's queue reference (`fedctl.io/queue`) share, for a reference no Queue can
    ever answer would wait for ever, and grow every queue view and metric by a name."""
    if len(name) > 253 or not _DNS_NAME.fullmatch(name):
        shown = name if len(name) <= 80 else f"{name[:60]}... ({len(name)} characters)"
        return (
            f"invalid queue name {shown!r}: use lower-case letters, digits, '-' and '.',"
            " starting and ending with a letter or digit, at most 253 (e.g. ml-research)"
        )
    return None


class Queue(KubeObject):
    """`fedctl.io/v1alpha1` Queue (cluster-scoped)."""

    api_version: Literal["fedctl.io/v1alpha1"] = Field(
        default="fedctl.io/v1alpha1", description="Always `fedctl.io/v1alpha1`."
    )
    kind: Literal["Queue"] = "Queue"
    spec: QueueSpec = Field(default_factory=QueueSpec)

    @model_validator(mode="after")
    def _not_own_parent(self) -> Queue:
        problem = name_problem(self.metadata.name)
        if problem is not None:
            raise RuleError(problem, at=("metadata", "name"))
        if self.spec.parent == self.metadata.name:
            raise RuleError(
                f"queue {self.metadata.name!r} cannot be its own parent", at=("spec", "parent")
            )
        return self

    @property
    def name(self) -> str:
        """The queue name (metadata.name)."""
        return self.metadata.name

    def warnings(self) -> list[Notice]:
        """Limits on a resource name that looks like a misspelt known one.

        Why: any name is a valid extended resource, so `nvidia.com/gpus: 2` loaded and
        capped nothing (no pod asks for `nvidia.com/gpus`), and `huawei.com/ascend-910b`
        mixed a device resource with a chip model. A name no pod asks for caps nothing
        silently; one close to a known name is said aloud with the name meant."""
        found = []
        for field, limits in (
            ("capability", self.spec.capability),
            ("guarantee", self.spec.guarantee),
        ):
            for name in limits or ():
                meant = _misspelt(name)
                if meant:
                    found.append(
                        Notice(
                            ("spec", field, name),
                            f"no pod requests {name!r}, so this {field} limits nothing{meant}",
                        )
                    )
        return found


_KNOWN_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage", *DEVICE_RESOURCES)


def _misspelt(name: str) -> str:
    """` (did you mean ...?)` when `name` is no known resource but close to one (a chip
    model's `accelerator/<model>` is known), else ""."""
    if name in _KNOWN_RESOURCES or name.startswith(CHIP_RESOURCE_PREFIX):
        return ""
    by_case = {known.lower(): known for known in _KNOWN_RESOURCES}
    close = [by_case[name.lower()]] if name.lower() in by_case else []
    close = close or difflib.get_close_matches(name, _KNOWN_RESOURCES, n=1, cutoff=0.75)
    domain, _, model = name.rpartition("/")
    # `huawei.com/ascend-910b` reads as a chip model (they are named `maker-model`)
    chip = f"{CHIP_RESOURCE_PREFIX}{model}" if domain in _DEVICE_DOMAINS and "-" in model else ""
    if close and chip:
        return f" (did you mean {close[0]!r}, or {chip!r} to cap that chip model?)"
    if close or chip:
        return f" (did you mean {(close[0] if close else chip)!r}?)"
    return ""


_DEVICE_DOMAINS = frozenset(r.split("/", 1)[0] for r in DEVICE_RESOURCES)


def priority_classes(name: str, queues: Mapping[str, Queue]) -> dict[str, int] | None:
    """The priority classes a workload in queue `name` may name: the queue's own and its
    ancestors', the nearest definition of a name winning; None when the chain reaches a
    queue `queues` does not hold (what it defines is not known).

    Why inherited: Kueue's WorkloadPriorityClass and Kubernetes' PriorityClass are
    cluster-wide, so a team moving from them writes its classes once, on the department's
    parent; read from the leaf alone they were never used, and every leaf had to repeat
    them, with room for one department's `prod` to rank below another's `batch`."""
    chain: list[Queue] = []
    current: str | None = name
    while current is not None and current not in {q.name for q in chain}:
        queue = queues.get(current)
        if queue is None:
            return None
        chain.append(queue)
        current = queue.spec.parent
    out: dict[str, int] = {}
    for queue in reversed(chain):
        out.update(queue.spec.priority_classes)
    return out


def hierarchy_problems(queues: Iterable[Queue]) -> list[tuple[str, Notice]]:
    """Set-wide checks on a queue tree: (queue name, finding) pairs, empty when sound.

    Unknown parents, cycles, a child capped above its parent, and children whose guarantees
    add up to more than their parent's guarantee. Paths are relative to the queue document.
    """
    by_name = {q.name: q for q in queues}
    problems: list[tuple[str, Notice]] = []
    children: dict[str, list[Queue]] = {}
    for queue in by_name.values():
        parent = queue.spec.parent
        if parent is None:
            continue
        if parent not in by_name:
            known = ", ".join(sorted(by_name)) or "none"
            message = f"parent queue {parent!r} is not defined (known queues: {known})"
            problems.append((queue.name, Notice(("spec", "parent"), message)))
            continue
        children.setdefault(parent, []).append(queue)
        if _in_cycle(queue.name, by_name):
            message = f"queue {queue.name!r} is its own ancestor (parent chain loops)"
            problems.append((queue.name, Notice(("spec", "parent"), message)))
        problems.extend(_against_parent(queue, by_name[parent]))
    for parent_name, kids in sorted(children.items()):
        problems.extend(_guarantees_fit(by_name[parent_name], kids))
    return problems


def _in_cycle(start: str, by_name: dict[str, Queue]) -> bool:
    seen = {start}
    current = by_name[start].spec.parent
    while current is not None and current in by_name:
        if current == start:
            return True
        if current in seen:
            return False  # a loop further up; its own members report it
        seen.add(current)
        current = by_name[current].spec.parent
    return False


def _against_parent(queue: Queue, parent: Queue) -> list[tuple[str, Notice]]:
    if queue.spec.capability is None or parent.spec.capability is None:
        return []
    over = queue.spec.capability.exceeding(parent.spec.capability, unlisted_unlimited=True)
    return [
        (
            queue.name,
            Notice(
                ("spec", "capability", name),
                f"capability of {name} ({_fmt(queue.spec.capability, name)}) exceeds parent"
                f" {parent.name!r} ({_fmt(parent.spec.capability, name)})",
            ),
        )
        for name in over
    ]


def _guarantees_fit(parent: Queue, kids: list[Queue]) -> list[tuple[str, Notice]]:
    """Children's guarantees together within the parent's guarantee, and within its
    capability, each for the resources it lists: a guarantee that lists cpu only says
    nothing of GPUs, but a capability of 8 GPUs still caps what the children can be given."""
    total = ResourceList()
    for kid in kids:
        total = total + kid.spec.guarantee
    names = ", ".join(sorted(k.name for k in kids))
    found: list[tuple[str, Notice]] = []
    seen: set[str] = set()
    limits = [("guarantee", parent.spec.guarantee), ("capability", parent.spec.capability)]
    for field, limit in limits:
        if limit is None or limit.is_zero():
            continue
        for name in total.exceeding(limit, unlisted_unlimited=True):
            if name in seen:
                continue
            seen.add(name)
            what = "guarantee" if field == "guarantee" else "capability"
            found.append(
                (
                    parent.name,
                    Notice(
                        ("spec", field, name),
                        f"children ({names}) are guaranteed {_fmt(total, name)} of {name} in"
                        f" total, more than the parent's {what} {_fmt(limit, name)}",
                    ),
                )
            )
    return found
