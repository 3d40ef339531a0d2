"""Workload: a plain Kubernetes object submitted to the federation, read through typed accessors.

Role: users submit ordinary manifests (Deployment, StatefulSet, ReplicaSet, Job, Pod, a
Volcano `batch.volcano.sh/v1alpha1` Job, a Kubeflow `kubeflow.org/v1` PyTorchJob, or any
other kind as an opaque object). fedctl keeps spec verbatim, because the propagator
sends it on to members (a document's status is accepted and dropped before storing, as
the Kubernetes API server drops it: members report status), and reads only what
scheduling needs: the queue, priority, acceptable chips and expected duration
(annotations `fedctl.io/queue`, `fedctl.io/priority`, `fedctl.io/chips`,
`fedctl.io/expected-duration`, `fedctl.io/min-available`; Volcano's `spec.queue` and
`spec.minAvailable`), the pod sets with their replica counts, and each pod's effective
requests computed as Kubernetes does.

Fed by workload YAML and the REST API; feeds the pending queues, admission (requests times
replicas against quota), the scheduler (per-pod fit, gang size, cost) and the propagator.
Bad annotation values or quantities are refused when the object is validated, with the path
of the offending value, so a typo fails at `fedctl apply` rather than in the scheduler.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar, overload

from pydantic import ConfigDict, Field, ValidationInfo, model_validator

from federation.resources import QuantityError, ResourceList, parse_quantity
from policies.models import node_arch
from policies.models.accelerator import _check_chip
from policies.models.base import KubeObject
from policies.models.common import Notice, PathPart, RuleError, RuleErrors
from policies.models.placement_ext import DurationError, parse_duration
from policies.models.rules import stored

__all__ = [
    "ANNOTATION_CHIPS",
    "ANNOTATION_EXPECTED_DURATION",
    "ANNOTATION_MIN_AVAILABLE",
    "ANNOTATION_PRIORITY",
    "ANNOTATION_QUEUE",
    "READ_ANNOTATIONS",
    "WORKLOAD_KINDS",
    "PodSet",
    "Workload",
    "WorkloadError",
]

ANNOTATION_QUEUE = "fedctl.io/queue"
ANNOTATION_PRIORITY = "fedctl.io/priority"
_PRIORITY_CLASS = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
"""A priority class name as queues define them (lowercase, a DNS label starting with a
letter, so it never reads as a number)."""
ANNOTATION_CHIPS = "fedctl.io/chips"
ANNOTATION_EXPECTED_DURATION = "fedctl.io/expected-duration"
ANNOTATION_MIN_AVAILABLE = "fedctl.io/min-available"
READ_ANNOTATIONS = (
    ANNOTATION_QUEUE,
    ANNOTATION_PRIORITY,
    ANNOTATION_CHIPS,
    ANNOTATION_EXPECTED_DURATION,
    ANNOTATION_MIN_AVAILABLE,
)
"""The annotations under `fedctl.io/` that fedctl reads on a workload."""
_KUEUE_LABELS = {
    "kueue.x-k8s.io/queue-name": ANNOTATION_QUEUE,
    "kueue.x-k8s.io/priority-class": ANNOTATION_PRIORITY,
}
"""Kueue's labels on a job, with the annotation fedctl reads in their place."""
_UNSET_MEANS = {
    ANNOTATION_QUEUE: "without it the workload goes to the queue named default (uncapped"
    " unless a Queue default is defined), not to its team's; name a fedctl Queue, which is"
    " cluster-scoped: one name for every namespace it serves",
    ANNOTATION_PRIORITY: "without it the workload is ordered at priority 0",
    ANNOTATION_CHIPS: "without it any chip is acceptable",
    ANNOTATION_EXPECTED_DURATION: "without it the workload's duration is unknown",
    ANNOTATION_MIN_AVAILABLE: "without it the gang size is the kind's own (or none)",
}
"""What a workload gets when one of the annotations fedctl reads is missing."""
_OWN_ANNOTATIONS = ("fedctl.io/workload-ref",)
"""One fedctl writes on the copies in members (a manifest exported from one carries it)."""

_REPLICATED = {("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet")}
_BATCH_JOB = ("batch/v1", "Job")
_POD = ("v1", "Pod")
_VOLCANO_JOB = ("batch.volcano.sh/v1alpha1", "Job")
_PYTORCH_JOB = ("kubeflow.org/v1", "PyTorchJob")

_SUSPEND_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    _BATCH_JOB: ("spec", "suspend"),
    _PYTORCH_JOB: ("spec", "runPolicy", "suspend"),
}
"""The field each kind that can be suspended is suspended by (`Workload.suspend_path`)."""

BATCH_KINDS: frozenset[tuple[str, str]] = frozenset({_BATCH_JOB, _VOLCANO_JOB, _PYTORCH_JOB})
"""(apiVersion, kind) pairs that run to completion and are placed as a gang (`is_batch`)."""

WORKLOAD_KINDS: frozenset[tuple[str, str]] = frozenset(
    {*_REPLICATED, _BATCH_JOB, _POD, _VOLCANO_JOB, _PYTORCH_JOB}
)
"""(apiVersion, kind) pairs whose pods fedctl understands; any other kind is opaque."""

_ANNOTATIONS = ("metadata", "annotations")


_T = TypeVar("_T")
_UNSET: Any = object()


class _read_once(cached_property[_T], Generic[_T]):
    """`functools.cached_property` without its lock: Python 3.11 takes one class-wide lock
    on every first read, and a new leader makes seven first reads per stored workload
    while it decodes them all. A workload is validated and read on one thread, and a race
    would only compute the same value twice."""

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> _read_once[_T]: ...
    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> _T: ...
    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> Any:
        if instance is None:
            return self
        cache, name = instance.__dict__, self.attrname or self.func.__name__
        value = cache.get(name, _UNSET)
        if value is _UNSET:
            value = cache[name] = self.func(instance)
        return value


class WorkloadError(RuleError):
    """A workload value fedctl cannot read; the message names the annotation or field."""


@dataclass(frozen=True)
class PodSet:
    """Pods of one template: `count` pods, each requesting `requests`."""

    name: str
    count: int
    requests: ResourceList
    template_path: tuple[PathPart, ...]
    """Where the pod spec sits in the object, e.g. ("spec", "template", "spec")."""


class Workload(KubeObject):
    """Any Kubernetes object; spec is kept verbatim, the envelope is strict.

    For the kinds in `WORKLOAD_KINDS` only apiVersion, kind, metadata, spec and status are
    allowed, so a misspelt `spce:` is caught. Opaque kinds keep extra top-level fields
    (a ConfigMap's `data`, a Secret's `stringData`) and pass them on untouched.
    """

    model_config = ConfigDict(extra="allow", ignored_types=(_read_once,))

    spec: dict[str, Any] = Field(
        default_factory=dict,
        exclude_if=lambda spec: not spec,
        description="Kept verbatim (left out when empty: a ConfigMap has none).",
    )
    status: dict[str, Any] | None = Field(
        default=None,
        description="Accepted and not stored: the API drops it, as Kubernetes drops status"
        " from a create or update; members report status.",
    )

    @model_validator(mode="before")
    @classmethod
    def _strict_for_known_kinds(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        kind = (data.get("apiVersion", data.get("api_version")), data.get("kind"))
        if kind not in WORKLOAD_KINDS:
            return data
        allowed = ("apiVersion", "kind", "metadata", "spec", "status")
        for key in data:
            if key not in allowed and key not in ("api_version",):
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise RuleError(f"unknown field {key!r}{hint}", at=(key,))
        return data

    @model_validator(mode="after")
    def _readable(self, info: ValidationInfo) -> Workload:
        # Read everything once so bad values fail validation, not the scheduler later; every
        # unreadable value is reported at once.
        problems: list[RuleError] = []
        for name in ("queue", "priority", "chips", "expected_duration", "pod_sets"):
            try:
                getattr(self, name)
            except RuleError as exc:
                problems.append(exc)
        if not stored(info):
            problems.extend(self._priority_range())
        if len(problems) == 1:
            raise problems[0]
        if problems:
            raise RuleErrors(problems)
        minimum = self.min_available
        if minimum is not None and self.pod_sets and minimum > self.replicas:
            raise WorkloadError(
                f"minAvailable ({minimum}) exceeds the {self.replicas} replicas;"
                " the gang could never start",
                at=self._min_available_path(),
            )
        return self

    def _priority_range(self) -> list[RuleError]:
        """A `fedctl.io/priority` number outside Kubernetes' int32 priorities, refused
        when written (not when read back, so a stored one still decodes): a 20-digit
        value is a typo, and no Go client or browser reads it back exactly."""
        try:
            value = self.priority
        except RuleError:
            return []  # reported as unreadable
        if value is None or _INT32_MIN <= value <= _INT32_MAX:
            return []
        return [
            WorkloadError(
                f"annotation {ANNOTATION_PRIORITY}: {value} is outside the priorities"
                f" Kubernetes allows ({_INT32_MIN} to {_INT32_MAX}, int32)",
                at=(*_ANNOTATIONS, ANNOTATION_PRIORITY),
            )
        ]

    # -- identity

    @property
    def type_key(self) -> tuple[str, str]:
        """(apiVersion, kind)."""
        return (self.api_version, self.kind)

    @property
    def namespace(self) -> str:
        """metadata.namespace, `default` when unset (as kubectl assumes); empty for a
        cluster-scoped kind (a ClusterRole, a Namespace), as Kubernetes reports it, so that
        no namespace's policy ever selects one."""
        from policies.models import kinds  # kinds imports this module

        if not kinds.is_namespaced(self.kind):
            return ""
        return self.metadata.namespace or "default"

    @property
    def is_opaque(self) -> bool:
        """True for kinds whose pods fedctl does not understand (kept and propagated as is)."""
        return self.type_key not in WORKLOAD_KINDS

    # -- annotations and scheduling hints

    def warnings(self) -> list[Notice]:
        """Annotations under `fedctl.io/` that fedctl does not read: a misspelt
        `fedctl.io/qeue` sent the job to the default queue and said nothing."""
        found = []
        for name in self.metadata.annotations:
            if not name.startswith("fedctl.io/") or name in (*READ_ANNOTATIONS, *_OWN_ANNOTATIONS):
                continue
            close = difflib.get_close_matches(name, READ_ANNOTATIONS, n=1, cutoff=0.75)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            read = [a.removeprefix("fedctl.io/") for a in READ_ANNOTATIONS]
            found.append(
                Notice(
                    ("metadata", "annotations", name),
                    f"annotation {name!r} is not one fedctl reads{hint}; under fedctl.io/ it"
                    f" reads {', '.join(read[:-1])} and {read[-1]}",
                )
            )
        found.extend(self._priority_class_notices())
        if not self.is_opaque:
            found.extend(self._label_notices())
            found.extend(self._volcano_queue_notices())
        return found

    def _label_notices(self) -> list[Notice]:
        """Labels a team coming from Kueue names its queue and priority with: Kueue's own
        (`kueue.x-k8s.io/queue-name`, `kueue.x-k8s.io/priority-class`), or fedctl's keys
        written as labels, as Kueue's are. fedctl reads annotations only, so such a job
        went to the default queue, outside every team's limit, and nothing said so."""
        found = []
        for name in self.metadata.labels:
            reads = _KUEUE_LABELS.get(name)
            if reads is None and name in READ_ANNOTATIONS:
                reads = name
            if reads is None or self._annotation(reads) is not None:
                continue
            if name == reads:
                said = f"{name} is read as an annotation, not a label: move it to"
                said += " metadata.annotations"
            else:
                said = f"label {name} is Kueue's and fedctl does not read it: set the"
                said += f" {reads} annotation"
            found.append(Notice(("metadata", "labels", name), f"{said}; {_UNSET_MEANS[reads]}"))
        return found

    def _volcano_queue_notices(self) -> list[Notice]:
        """A Volcano Job whose `spec.queue` and `fedctl.io/queue` differ: fedctl admits it
        under the annotation's queue, while the member's Volcano schedules it in the
        Volcano Queue `spec.queue` names (and refuses it when the member has none)."""
        named = self._annotation(ANNOTATION_QUEUE)
        queue = self.spec.get("queue")
        if self.type_key != _VOLCANO_JOB or not named or not isinstance(queue, str):
            return []
        if queue.strip() == named:
            return []
        return [
            Notice(
                ("spec", "queue"),
                f"spec.queue {queue!r} differs from the {ANNOTATION_QUEUE} annotation"
                f" {named!r}: fedctl admits this job in queue {named!r}, while the member's"
                f" Volcano schedules it in its Volcano Queue {queue!r}",
            )
        ]

    def _priority_class_notices(self) -> list[Notice]:
        """A `priorityClassName` (a Volcano Job's, or a pod template's) with no
        `fedctl.io/priority`: it reaches the member's pods, but admission orders the job at
        priority 0, which nothing said (Volcano reads it as the job's priority)."""
        if self._annotation(ANNOTATION_PRIORITY) is not None:
            return []
        found: list[tuple[PathPart, ...]] = []
        if self.type_key == _VOLCANO_JOB and isinstance(self.spec.get("priorityClassName"), str):
            found.append(("spec", "priorityClassName"))
        try:
            sets = self.pod_sets
        except WorkloadError:
            sets = ()
        wire = self.to_wire()
        for pod_set in sets:
            pod = _dig(wire, pod_set.template_path)
            if isinstance(pod, dict) and isinstance(pod.get("priorityClassName"), str):
                found.append((*pod_set.template_path, "priorityClassName"))
        return [
            Notice(
                path,
                "priorityClassName sets the pods' priority in the member; fedctl admits and"
                " preempts by fedctl.io/priority (a number, or a class of the queue's"
                " priorityClasses), which is not set: this job is ordered at priority 0",
            )
            for path in found[:1]
        ]

    def _annotation(self, name: str) -> str | None:
        value = self.metadata.annotations.get(name)
        return value.strip() if value is not None else None

    @_read_once
    def queue(self) -> str | None:
        """`fedctl.io/queue`, else Volcano's spec.queue, else None (the default queue)."""
        named = self._annotation(ANNOTATION_QUEUE)
        if named:
            return named
        if self.type_key == _VOLCANO_JOB and self.spec.get("queue") is not None:
            return str(_typed(self.spec["queue"], str, ("spec", "queue")))
        return None

    @property
    def queue_path(self) -> tuple[PathPart, ...]:
        """Where the workload names its queue: the `fedctl.io/queue` annotation, or a
        Volcano Job's `spec.queue` when it has no annotation; a message asking to correct
        the queue names the one the workload has."""
        named = self._annotation(ANNOTATION_QUEUE)
        if self.type_key == _VOLCANO_JOB and self.spec.get("queue") is not None and not named:
            return ("spec", "queue")
        return (*_ANNOTATIONS, ANNOTATION_QUEUE)

    @property
    def queue_field(self) -> str:
        """`queue_path` as a message names it: `fedctl.io/queue` or `spec.queue`."""
        path = self.queue_path
        return ANNOTATION_QUEUE if path[-1] == ANNOTATION_QUEUE else ".".join(map(str, path))

    @_read_once
    def priority(self) -> int | None:
        """`fedctl.io/priority` as an integer (int32, as Kubernetes bounds priorities),
        or None (also when it names a class)."""
        raw = self._annotation(ANNOTATION_PRIORITY)
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            if _PRIORITY_CLASS.match(raw.strip()):
                return None  # a name from the queue's priorityClasses: `priority_class`
            raise WorkloadError(
                f"annotation {ANNOTATION_PRIORITY}: expected an integer or the name of one of"
                f" its queue's priorityClasses, got {raw!r}",
                at=(*_ANNOTATIONS, ANNOTATION_PRIORITY),
            ) from None

    @_read_once
    def priority_class(self) -> str | None:
        """`fedctl.io/priority` when it names one of the queue's `priorityClasses` rather
        than giving a number; the scheduler resolves it against the queue."""
        raw = self._annotation(ANNOTATION_PRIORITY)
        if raw is None or self.priority is not None:
            return None
        return raw.strip()

    @_read_once
    def chips(self) -> tuple[str, ...]:
        """`fedctl.io/chips`: acceptable chip models, most preferred first (empty: any)."""
        raw = self._annotation(ANNOTATION_CHIPS)
        if not raw:
            return ()
        chips = tuple(part.strip() for part in raw.split(","))
        for chip in chips:
            try:
                _check_chip(chip)
            except ValueError as err:
                raise WorkloadError(
                    f"annotation {ANNOTATION_CHIPS}: {err}", at=(*_ANNOTATIONS, ANNOTATION_CHIPS)
                ) from None
        return chips

    @_read_once
    def node_arches(self) -> frozenset[str] | None:
        """The node arches its pod templates' own `kubernetes.io/arch` nodeSelector or
        required node affinity allow (None: any; `node_arch`). The scheduler places it only
        on those arches' nodes, as a member's scheduler would run its pods nowhere else."""
        return node_arch.allowed(
            pod
            for pod_set in self.pod_sets
            if isinstance(pod := _dig(self.spec, pod_set.template_path[1:]), Mapping)
        )

    @_read_once
    def expected_duration(self) -> int | None:
        """`fedctl.io/expected-duration` in seconds (e.g. `6h`), or None."""
        raw = self._annotation(ANNOTATION_EXPECTED_DURATION)
        if raw is None:
            return None
        try:
            return parse_duration(raw)
        except DurationError as err:
            raise WorkloadError(
                f"annotation {ANNOTATION_EXPECTED_DURATION}: {err}",
                at=(*_ANNOTATIONS, ANNOTATION_EXPECTED_DURATION),
            ) from None

    @_read_once
    def min_available(self) -> int | None:
        """Gang size: `fedctl.io/min-available`, else Volcano or PyTorchJob minAvailable.
        Any value makes the workload a gang, placed whole on one member that has room for
        every replica at once, not only for minAvailable of them."""
        raw = self._annotation(ANNOTATION_MIN_AVAILABLE)
        path = self._min_available_path()
        if raw is not None:
            if not raw.isdigit() or int(raw) < 1:
                raise WorkloadError(
                    f"annotation {ANNOTATION_MIN_AVAILABLE}: expected a positive integer,"
                    f" got {raw!r}",
                    at=path,
                )
            return int(raw)
        value = _dig(self.spec, path[1:])
        if value is None:
            return None
        return _count(value, path, minimum=1)

    def _min_available_path(self) -> tuple[PathPart, ...]:
        if self._annotation(ANNOTATION_MIN_AVAILABLE) is not None:
            return (*_ANNOTATIONS, ANNOTATION_MIN_AVAILABLE)
        if self.type_key == _PYTORCH_JOB:
            return ("spec", "runPolicy", "schedulingPolicy", "minAvailable")
        return ("spec", "minAvailable")

    @property
    def is_batch(self) -> bool:
        """Runs to completion and is placed as a gang: Jobs of any flavour, or a set gang size."""
        return self.type_key in BATCH_KINDS or self.min_available is not None

    @property
    def suspend_path(self) -> tuple[str, ...] | None:
        """Where this kind says it is suspended: a Job's `spec.suspend`, a PyTorchJob's
        `spec.runPolicy.suspend` (the Kubeflow training operator's, v1.7 on); None for a
        kind without such a field (a Volcano Job is suspended by a command, not a field)."""
        return _SUSPEND_PATHS.get(self.type_key)

    @property
    def is_suspended(self) -> bool:
        """A Job with `spec.suspend: true`, or a PyTorchJob with `spec.runPolicy.suspend:
        true`: Kubernetes' job controller and the training operator start none of its pods
        and delete any that run, so it holds no quota or room until resumed (Kueue likewise
        treats either as not admitted). A suspended PyTorchJob was admitted and charged its
        GPUs while nothing ran."""
        path = self.suspend_path
        return path is not None and _dig(self.spec, path[1:]) is True

    @property
    def is_indexed(self) -> bool:
        """A Job whose pods each run one index (`completionMode: Indexed`): it cannot be
        divided over members, since each member's copy would number its indexes from 0,
        running some twice and the rest never."""
        return self.type_key == _BATCH_JOB and self.spec.get("completionMode") == "Indexed"

    @property
    def never_divided(self) -> str:
        """Why a job goes whole to one member even under a policy dividing by weight, as a
        phrase naming what it is ("": it may be divided).

        An Indexed Job's copies would each number their indexes from 0. A job of several
        roles (a PyTorchJob's Master and Workers, a Volcano Job's tasks) is scaled role by
        role, so a member's share could lack a role: a PyTorchJob divided 1:1 gave one
        member two Workers and no Master for them to join.
        """
        if self.is_indexed:
            return "an Indexed Job (each member's copy would number its indexes from 0)"
        roles = [s.name for s in self.pod_sets if s.count > 0]
        if self.is_batch and len(roles) > 1:
            return (
                f"a job of several roles ({', '.join(roles)}; a member's share could lack"
                " one of them)"
            )
        return ""

    # -- pods

    @_read_once
    def pod_sets(self) -> tuple[PodSet, ...]:
        """Every pod template with its replica count; empty for objects without pods."""
        kind = self.type_key
        if kind == _POD:
            return (_pod_set("pod", 1, self.spec, ("spec",)),)
        if kind == _VOLCANO_JOB:
            return self._volcano_sets()
        if kind == _PYTORCH_JOB:
            return self._pytorch_sets()
        template = ("spec", "template", "spec")
        known = kind in WORKLOAD_KINDS
        count = self._template_replicas() if known or "replicas" in self.spec else 1
        if _dig(self.spec, template[1:]) is None:
            return ()
        return (_pod_set("main", count, self.spec, template),)

    def _template_replicas(self) -> int:
        if self.type_key == _BATCH_JOB:
            parallelism = _count(self.spec.get("parallelism", 1), ("spec", "parallelism"))
            completions = self.spec.get("completions")
            if completions is None:
                return parallelism
            return min(parallelism, _count(completions, ("spec", "completions")))
        return _count(self.spec.get("replicas", 1), ("spec", "replicas"))

    def _volcano_sets(self) -> tuple[PodSet, ...]:
        tasks = _typed(self.spec.get("tasks", []), list, ("spec", "tasks"))
        sets = []
        for index, raw in enumerate(tasks):
            at: tuple[PathPart, ...] = ("spec", "tasks", index)
            task = _typed(raw, dict, at)
            name = str(task.get("name") or f"task-{index}")
            count = _count(task.get("replicas", 1), (*at, "replicas"))
            _task_gang(task, count, at)
            sets.append(_pod_set(name, count, self.spec, (*at, "template", "spec")))
        return tuple(sets)

    def _pytorch_sets(self) -> tuple[PodSet, ...]:
        at: tuple[PathPart, ...] = ("spec", "pytorchReplicaSpecs")
        specs = _typed(self.spec.get("pytorchReplicaSpecs", {}), dict, at)
        sets = []
        for role, raw in specs.items():
            here = (*at, role)
            replica_spec = _typed(raw, dict, here)
            count = _count(replica_spec.get("replicas", 1), (*here, "replicas"))
            sets.append(_pod_set(str(role), count, self.spec, (*here, "template", "spec")))
        return tuple(sets)

    @property
    def replicas(self) -> int:
        """Pods the workload runs at full size (sum over pod sets)."""
        return sum(s.count for s in self.pod_sets)

    def pod_requests(self) -> ResourceList:
        """Effective requests of one pod; with several templates, the component-wise largest."""
        largest = ResourceList()
        for pod_set in self.pod_sets:
            largest = largest.max_with(pod_set.requests)
        return largest

    def total_requests(self) -> ResourceList:
        """Requests of every pod together: what admission charges to a queue."""
        total = ResourceList()
        for pod_set in self.pod_sets:
            total = total + pod_set.requests.scaled(pod_set.count)
        return total


def _task_gang(task: Mapping[str, Any], replicas: int, at: tuple[PathPart, ...]) -> None:
    """Refuse a Volcano task whose own `minAvailable` is above its replicas: Volcano's
    admission webhook refuses the job ("'minAvailable' is greater than 'replicas' in
    task"), so every member would, and the job-level check alone let it through."""
    raw = task.get("minAvailable")
    if raw is None:
        return
    minimum = _count(raw, (*at, "minAvailable"))
    if minimum > replicas:
        raise WorkloadError(
            f"minAvailable ({minimum}) exceeds the task's {replicas} replicas; Volcano refuses"
            " such a job (its task's gang could never start)",
            at=(*at, "minAvailable"),
        )


# --------------------------------------------------------------------------- pod arithmetic


def _pod_set(name: str, count: int, spec: Mapping[str, Any], path: tuple[PathPart, ...]) -> PodSet:
    pod = _typed(_dig(spec, path[1:]) or {}, dict, path)
    return PodSet(name=name, count=count, requests=pod_requests(pod, at=path), template_path=path)


def pod_requests(pod: Mapping[str, Any], *, at: tuple[PathPart, ...]) -> ResourceList:
    """Kubernetes' effective pod requests: max(app + sidecars, each init step) + overhead.

    A container's request defaults to its limit when only the limit is given. Sidecars (init
    containers with `restartPolicy: Always`) keep running, so they add to everything after.
    """
    apps: ResourceList | None = None
    for index, container in enumerate(_containers(pod, "containers", at)):
        one = _container_requests(container, (*at, "containers", index))
        apps = one if apps is None else apps + one
    apps = apps if apps is not None else ResourceList()
    if pod.get("initContainers") is None and pod.get("overhead") is None:
        return apps  # the usual pod: its app containers' sum is the whole answer
    sidecars = ResourceList()
    init_peak = ResourceList()
    for index, container in enumerate(_containers(pod, "initContainers", at)):
        requests = _container_requests(container, (*at, "initContainers", index))
        if container.get("restartPolicy") == "Always":
            sidecars = sidecars + requests
            init_peak = init_peak.max_with(sidecars)
        else:
            init_peak = init_peak.max_with(requests + sidecars)
    overhead = _resources(pod.get("overhead"), (*at, "overhead"))
    return (apps + sidecars).max_with(init_peak) + overhead


def _containers(
    pod: Mapping[str, Any], field: str, at: tuple[PathPart, ...]
) -> list[dict[str, Any]]:
    items = _typed(pod.get(field) or [], list, (*at, field))
    return [_typed(item, dict, (*at, field, i)) for i, item in enumerate(items)]


def _container_requests(container: Mapping[str, Any], at: tuple[PathPart, ...]) -> ResourceList:
    resources = _typed(container.get("resources") or {}, dict, (*at, "resources"))
    limits = _resources(resources.get("limits"), (*at, "resources", "limits"))
    requests = _resources(resources.get("requests"), (*at, "resources", "requests"))
    if not limits:
        return requests
    return limits.only(set(limits) - set(requests)) + requests


_PARSED: dict[tuple[tuple[type, object, type, object], ...], ResourceList] = {}
"""Requests or limits already parsed, by their raw entries (each with its type, so `1`,
`1.0` and `True` stay apart). A new leader decodes every stored workload, and tens of
thousands of them spell their requests in a few dozen ways; a hit also shares one
ResourceList among them, which the scheduler's caches keyed by identity profit from."""
_PARSED_LIMIT = 4096


def _resources(raw: Any, at: tuple[PathPart, ...]) -> ResourceList:
    if raw is None:
        return ResourceList()
    entries = _typed(raw, dict, at)
    try:
        key = tuple((type(n), n, type(v), v) for n, v in entries.items())
        hit = _PARSED.get(key)
    except TypeError:  # an unhashable value: parsed below, to say what is wrong with it
        key, hit = None, None
    if hit is not None:
        return hit
    parsed = _parse_resources(entries, at)
    if key is not None:
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[key] = parsed
    return parsed


def _parse_resources(entries: dict[Any, Any], at: tuple[PathPart, ...]) -> ResourceList:
    parsed: dict[str, int] = {}
    for name, text in entries.items():
        try:
            amount = parse_quantity(text)
        except QuantityError as err:
            raise WorkloadError(str(err), at=(*at, name)) from None
        if amount < 0:
            raise WorkloadError(f"invalid quantity {text!r}: must not be negative", at=(*at, name))
        parsed[str(name)] = amount
    try:
        return ResourceList(parsed)
    except QuantityError as err:
        raise WorkloadError(str(err), at=at) from None


# --------------------------------------------------------------------------- reading raw dicts


def _dig(data: Mapping[str, Any], path: tuple[PathPart, ...]) -> Any:
    current: Any = data
    for part in path:
        if isinstance(part, int):
            if not isinstance(current, list) or part >= len(current):
                return None
            current = current[part]
        elif isinstance(current, Mapping):
            current = current.get(part)
        else:
            return None
    return current


_LABELS = {"dict": "a mapping", "list": "a list", "str": "a string"}


def _typed(value: Any, expected: type, at: tuple[PathPart, ...]) -> Any:
    if not isinstance(value, expected):
        label = _LABELS.get(expected.__name__, expected.__name__)
        raise WorkloadError(f"expected {label}, got {type(value).__name__}", at=at)
    return value


_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
"""Kubernetes counts (replicas, parallelism, completions) are int32: an apiserver refuses
more, and past 2^53 the scheduler's float arithmetic could not tell two counts apart."""


def _count(value: Any, at: tuple[PathPart, ...], *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise WorkloadError(f"expected an integer of at least {minimum}, got {value!r}", at=at)
    if value > _INT32_MAX:
        raise WorkloadError(
            f"expected at most {_INT32_MAX} (Kubernetes counts are int32), got {value}", at=at
        )
    return value
