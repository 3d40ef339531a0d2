"""The resource-interpreter contract: what the propagator must know about one kind.

Role: every workload kind differs in where its replicas live, how a share of them is
written for one member, and how its status says "ready" or "finished". A plugin per kind
answers those questions; the registry (`interpreter/__init__.py`) maps (apiVersion, kind) to
its plugin and falls back to the generic one (propagated whole, health from conditions).
Fed by workload templates and member objects; feeds render (replica revision), status
(per-member `Observed`) and the workload status (aggregation across members).

Why aggregation lives with the kind: a Deployment is healthy when every member is, a job
has succeeded only when every member's share has; the rule is the kind's, not the
controller's. Per-pod requests are read through `policies.models.workload.Workload`, which
counts init containers, sidecars and pod overhead the way Kubernetes does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from federation.resources import ResourceList
from policies.models.rules import STORED
from policies.models.work import Observed, WorkCondition
from policies.models.workload import Workload

__all__ = [
    "Interpreter",
    "Obj",
    "aggregate_jobs",
    "aggregate_replicated",
    "cap_at",
    "condition",
    "dig",
    "job_record",
    "pod_requests",
    "split_largest_remainder",
    "split_roles",
    "timestamp",
]

Obj = dict[str, Any]


class Interpreter(Protocol):
    """One kind's rules. Implementations are stateless and never raise on odd status."""

    name: str
    api_version: str
    kind: str

    def replicas(self, obj: Mapping[str, Any]) -> int | None:
        """Replicas (pods at full size) the template asks for; None when not divisible."""
        ...

    def with_replicas(self, obj: Obj, *, replicas: int, total: int, before: int = 0) -> Obj:
        """`obj` edited in place to run `replicas` of the `total` placed across members;
        `before` of them are on the members ordered before this one (the Binding's order),
        so that shares of a count that is not divided evenly add up to it exactly.

        Render hands over its own copy of the template; nobody else calls this.
        """
        ...

    def observe(self, obj: Mapping[str, Any]) -> Observed:
        """Health and progress from a member's copy of the object."""
        ...

    def aggregate(self, parts: Sequence[Observed]) -> Observed:
        """The workload's status from every member's `Observed`."""
        ...


def dig(obj: Mapping[str, Any], *path: str) -> Any:
    """obj[a][b]…, None as soon as a step is missing or not a mapping."""
    current: Any = obj
    for part in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def cap_at(holder: Obj, field: str, most: int) -> None:
    """`holder[field]`, when a count, lowered to `most`: a gang size kept at the whole
    job's in a copy given fewer pods asks for pods the copy never has."""
    value = holder.get(field)
    if isinstance(value, int) and not isinstance(value, bool) and value > most:
        holder[field] = most


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The status condition of type `kind`, or None."""
    for cond in dig(obj, "status", "conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def timestamp(value: Any) -> dt.datetime | None:
    """An RFC 3339 time (a member's status, an object's creationTimestamp); None when
    absent, unreadable or without a zone."""
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


_FAILED = "Failed"
_SUCCEEDED = frozenset({"Complete", "Succeeded"})
"""The condition types that end a job well: a Job's Complete, a Kubeflow job's Succeeded."""


def job_record(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A job copy's start and completion times and its finishing conditions that are True,
    as `Observed` keeps them, for the kinds whose status has them (Job, PyTorchJob)."""
    conditions = []
    for cond in dig(obj, "status", "conditions") or ():
        if not isinstance(cond, Mapping) or cond.get("status") != "True":
            continue
        kind = cond.get("type")
        if kind == _FAILED or kind in _SUCCEEDED:
            conditions.append(
                WorkCondition(
                    type=str(kind),
                    status="True",
                    reason=str(cond.get("reason") or ""),
                    message=str(cond.get("message") or ""),
                    last_transition_time=timestamp(cond.get("lastTransitionTime")),
                )
            )
    return {
        "start_time": timestamp(dig(obj, "status", "startTime")),
        "completion_time": timestamp(dig(obj, "status", "completionTime")),
        "conditions": conditions,
    }


def pod_requests(obj: Mapping[str, Any]) -> ResourceList:
    """Effective per-pod requests of a template (largest pod set), as Kubernetes counts."""
    return Workload.model_validate(dict(obj), context=STORED).pod_requests()


def split_largest_remainder(counts: Sequence[int], *, replicas: int, total: int) -> list[int]:
    """Scale `counts` (summing to `total`) to sum to `replicas`, largest remainder first."""
    if total <= 0:
        return list(counts)
    exact = [c * replicas / total for c in counts]
    out = [int(x) for x in exact]
    order = sorted(range(len(counts)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[: replicas - sum(out)]:
        out[i] += 1
    return out


def split_roles(counts: Sequence[int], *, replicas: int) -> list[int]:
    """The pods of each role (`counts`) scaled to sum to `replicas`, by largest remainder,
    every role that has pods keeping one while there are pods enough for each.

    Why: a job of several roles is placed whole, but kept at fewer pods than it asks (its
    size raised past its queue's capability runs at the size it was admitted with), a
    Master of 1 beside 16 Workers scaled to 5 lost its Master to the Workers' larger
    remainder: workers with no master to join.
    """
    out = split_largest_remainder(counts, replicas=replicas, total=sum(counts))
    staffed = [i for i, c in enumerate(counts) if c > 0]
    if len(staffed) > replicas:
        return out
    for i in staffed:
        if out[i] == 0:
            out[max(range(len(out)), key=lambda j: out[j])] -= 1
            out[i] = 1
    return out


def _worst(parts: Sequence[Observed]) -> str:
    healths = {p.health for p in parts}
    for health in ("Failed", "Unhealthy", "Unknown", "Progressing"):
        if health in healths:
            return health
    return "Completed" if healths == {"Completed"} else "Healthy"


def _ready_of_desired(part: Observed) -> int:
    """A member's ready replicas, at most its desired ones: while a member scales down,
    Kubernetes still counts the surplus pods ready for a moment, and the total says how
    much of what is wanted is ready, never more than is wanted."""
    ready = part.ready_replicas or 0
    return ready if part.replicas is None else min(ready, part.replicas)


def aggregate_replicated(parts: Sequence[Observed]) -> Observed:
    """Sum replicas and ready replicas; healthy only when every member is."""
    if not parts:
        return Observed()
    return Observed(
        health=_worst(parts),
        replicas=sum(p.replicas or 0 for p in parts),
        ready_replicas=sum(_ready_of_desired(p) for p in parts),
        message="; ".join(p.message for p in parts if p.message),
    )


def aggregate_jobs(parts: Sequence[Observed]) -> Observed:
    """Sum running/succeeded/failed; Succeeded only when every share has, Failed if any."""
    if not parts:
        return Observed()
    phases = {p.phase for p in parts}
    if "Failed" in phases:
        phase = "Failed"
    elif phases == {"Succeeded"}:
        phase = "Succeeded"
    elif "Running" in phases or "Succeeded" in phases:
        phase = "Running"
    else:
        phase = "Pending"
    ends = [p.completion_time for p in parts if p.completion_time is not None]
    return Observed(
        health=_worst(parts),
        replicas=sum(p.replicas or 0 for p in parts),
        ready_replicas=sum(p.ready_replicas or 0 for p in parts),
        phase=phase,
        running=sum(p.running for p in parts),
        succeeded=sum(p.succeeded for p in parts),
        failed=sum(p.failed for p in parts),
        message="; ".join(p.message for p in parts if p.message),
        start_time=min((p.start_time for p in parts if p.start_time is not None), default=None),
        completion_time=max(ends, default=None) if phase == "Succeeded" else None,
        conditions=_job_conditions(parts, phase),
    )


def _job_conditions(parts: Sequence[Observed], phase: str) -> list[WorkCondition]:
    """The job's finishing condition across its copies, as Karmada aggregates a Job's: Failed
    once any copy failed, Complete (or Succeeded) once every copy did, none meanwhile.

    Why: `kubectl wait --for=condition=Complete` and a pipeline reading the template's
    conditions had nothing to wait on. The reason is the copies' own when they agree
    (BackoffLimitExceeded, DeadlineExceeded), else Karmada's JobFailed or Completed; the
    transition time is the latest copy's, so the condition holds still between reads."""
    if phase == "Failed":
        ended = [c for p in parts for c in p.conditions if c.type == _FAILED]
        fallback = "JobFailed"
    elif phase == "Succeeded":
        ended = [c for p in parts for c in p.conditions if c.type in _SUCCEEDED]
        if len(ended) < len(parts):
            return []  # a copy finished without saying so (Volcano's): nothing to merge
        fallback = "Completed"
    else:
        return []
    if not ended:
        return []
    reasons = {c.reason for c in ended}
    times = [c.last_transition_time for c in ended if c.last_transition_time is not None]
    messages = dict.fromkeys(c.message for c in ended if c.message)
    return [
        WorkCondition(
            type=ended[0].type,
            status="True",
            reason=reasons.pop() if len(reasons) == 1 and "" not in reasons else fallback,
            message="; ".join(messages),
            last_transition_time=max(times, default=None),
        )
    ]
