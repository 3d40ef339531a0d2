"""One document -> a validated model and its findings; a set of documents -> cross-checks.

Role: picks the model from apiVersion and kind (`policies.models.kinds`), validates, turns
errors into findings placed on the document, and adds each model's warnings (Karmada fields
accepted but not acted on yet). Across a set of documents it reports chips named by a
policy or workload that no AcceleratorProfile or Cluster defines, and objects defined
twice. Fed by `policies.loading.files` (YAML) and the REST API (JSON, via
`validate_document`); feeds `LoadResult` to the CLI and the API.

Why the chip check is a warning: a profile may live on the server already, so an
unknown chip in a file is suspicious, not necessarily wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from policies.loading import kube_fields, node_arches, sizes
from policies.loading.findings import Finding, Severity, format_path, suggest
from policies.loading.source import SourceMap
from policies.loading.validation import describe_value, findings_from_error
from policies.models import kinds
from policies.models import queue as queue_mod
from policies.models.accelerator import AcceleratorProfile, is_arch
from policies.models.base import KubeObject
from policies.models.cluster import Cluster
from policies.models.common import RuleError
from policies.models.frq import FederatedResourceQuota
from policies.models.propagation import FedctlClusterPropagationPolicy, FedctlPropagationPolicy
from policies.models.queue import CHIP_RESOURCE_PREFIX, Queue, hierarchy_problems, priority_classes
from policies.models.workload import Workload

__all__ = [
    "Checked",
    "Loaded",
    "chips_defined_by",
    "cross_check",
    "finding_at",
    "names_clusters",
    "names_priority_classes",
    "names_queues",
    "namespace_problem",
    "queue_children",
    "reserved_namespace",
    "undefined_chips",
    "undefined_priority_classes",
    "undefined_queues",
    "unjoined_clusters",
    "unknown_parents",
    "validate_document",
]

_ALL_KIND_NAMES = sorted({k for _, k in (*kinds.known_kinds(), *kube_fields.KINDS)})
"""Every kind fedctl reads: a CronJob, whose fields `kube_fields` checks, is no misspelt Job."""


@dataclass(frozen=True)
class Checked:
    """The outcome of validating one document: the model (None when invalid) and findings."""

    model: KubeObject | None
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return self.model is not None and not any(f.is_error for f in self.findings)


@dataclass(frozen=True)
class Loaded:
    """A valid object and where it came from."""

    model: KubeObject
    file: str
    line: int
    doc_index: int
    source: SourceMap = field(default_factory=SourceMap, repr=False, compare=False)
    item: tuple[int, ...] = ()
    """Its place among the items of a List document, if it is one of them."""

    @property
    def place(self) -> tuple[str, int, tuple[int, ...]]:
        """What tells this object from every other one loaded: file, document, item."""
        return (self.file, self.doc_index, self.item)


def finding_at(
    obj: Loaded, path: tuple[str | int, ...], message: str, *, severity: Severity = "warning"
) -> Finding:
    """A warning (or an error) at `path` inside a loaded object, for checks made outside
    the loader (against a server's fleet, or the policy claiming it) that must still name
    the file, line and field."""
    return _at(obj.source, obj.file, path, message, severity=severity)


def _at(
    source: SourceMap,
    filename: str,
    path: tuple[str | int, ...],
    message: str,
    *,
    key: bool = False,
    **kw: Any,
) -> Finding:
    line, col = source.locate(path, key=key)
    return Finding(filename, line, col, format_path(path), message, **kw)


def _type_field(doc: Mapping[str, Any], name: str, source: SourceMap, filename: str) -> Any:
    """The string value of apiVersion/kind, or a finding saying what is wrong with it."""
    if name not in doc:
        return _at(source, filename, (name,), f"required field {name!r} is missing")
    value = doc[name]
    if not isinstance(value, str) or not value:
        return _at(source, filename, (name,), f"expected a string, got {describe_value(value)}")
    return value


def validate_document(
    doc: Any, *, source: SourceMap | None = None, filename: str = "<input>"
) -> Checked:
    """Validate one decoded document (from YAML or JSON).

    Without a `source` map the findings carry no line numbers (line 0), which is what the
    REST API has for JSON bodies.
    """
    source = source if source is not None else SourceMap()
    if not isinstance(doc, Mapping):
        message = f"a document must be a mapping, got {describe_value(doc)}"
        return Checked(None, [_at(source, filename, (), message)])
    api_version = _type_field(doc, "apiVersion", source, filename)
    kind = _type_field(doc, "kind", source, filename)
    problems = [v for v in (api_version, kind) if isinstance(v, Finding)]
    if problems:
        return Checked(None, problems)
    try:
        model_cls = kinds.model_for(api_version, kind)
    except kinds.UnknownKind as err:
        return Checked(None, [_at(source, filename, (err.field,), str(err))])
    try:
        model = model_cls.model_validate(doc)
    except ValidationError as err:
        found = findings_from_error(
            err, model=model_cls, data=doc, source=source, filename=filename
        )
        return Checked(None, found)
    found = _name_rules(model, source=source, filename=filename)
    reserved = reserved_namespace(model)
    if reserved is not None:
        found.append(_at(source, filename, *reserved))
    found += _warnings(model, source=source, filename=filename)
    if isinstance(model, Workload):
        found += _kubernetes_rules(model, doc, source=source, filename=filename)
        found += [
            _at(source, filename, path, problem)
            for path, name in _queue_references(model)
            if (problem := queue_mod.name_problem(name)) is not None
        ]
        found += [
            _at(source, filename, path, message, key=message.startswith("unknown"))
            for path, message in kube_fields.unknown_fields(doc)
        ]
    return Checked(model, found)


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NATIVE = ("cpu", "memory", "ephemeral-storage", "storage", "pods")


def _name_rules(model: KubeObject, *, source: SourceMap, filename: str) -> list[Finding]:
    """Names as the Kubernetes API server (and so Karmada's) takes them, for every kind:
    a policy or quota named `UPPER` was stored, and then every member refused the
    ResourceQuota it became, or the registry refused the name later with no line. Checked
    on the document, not the model, so objects already stored still decode."""
    found: list[Finding] = []
    meta = model.metadata
    name_rule = _DNS_LABEL if model.kind == "Namespace" else _DNS_SUBDOMAIN
    if meta.name and not name_rule.match(meta.name):
        what = (
            "a DNS label (lowercase letters, digits and '-', at most 63)"
            if name_rule is _DNS_LABEL
            else "a DNS subdomain (lowercase letters, digits, '-' and '.')"
        )
        message = f"name {meta.name!r} is not {what}: members refuse it"
        found.append(_at(source, filename, ("metadata", "name"), message))
    problem = namespace_problem(meta.namespace or "")
    if problem is not None:
        found.append(_at(source, filename, ("metadata", "namespace"), problem))
    return found


def namespace_problem(namespace: str) -> str | None:
    """Why members refuse `namespace` ('' is none given: no problem). Public so the API
    judges a namespace it takes from its URL as one from the body: a ConfigMap POSTed
    to `namespaces/_/workloads` was stored in `_` (which lists as cluster-scoped) and
    refused by every member."""
    if not namespace or _DNS_LABEL.match(namespace):
        return None
    return (
        f"namespace {namespace!r} is not a DNS label (lowercase letters, digits and"
        " '-', at most 63): members refuse it"
    )


RESERVED_PREFIX = "kube-"
"""Namespaces Kubernetes keeps for itself (kube-system, kube-public, kube-node-lease...)."""


def reserved_namespace(model: KubeObject) -> tuple[tuple[str | int, ...], str] | None:
    """Where `model` names a namespace Kubernetes keeps for itself, which fedctl would
    write into on every member, and why that is refused; None when it does not.

    A Namespace template kube-node-lease adopted each member's own namespace (which holds
    the nodes' heartbeat Leases), and deleting the template deleted it there; a workload
    or a quota's ResourceQuota in kube-system would sit among, or take over, the member's
    system objects. Karmada never propagates these namespaces (its
    `--skipped-propagating-namespaces` defaults to `kube-.*`). Policies write nothing to
    members, so one there is left alone. Public so the API judges an object again once it
    has placed it in its URL's namespace."""
    if isinstance(model, Workload) and model.kind == "Namespace":
        at, namespace = ("metadata", "name"), model.metadata.name
    elif isinstance(model, Workload | FederatedResourceQuota):
        at, namespace = ("metadata", "namespace"), model.metadata.namespace or ""
    else:
        return None
    if not namespace.startswith(RESERVED_PREFIX):
        return None
    return at, (
        f"namespace {namespace!r} is one Kubernetes keeps for itself (kube-*): fedctl, as"
        " Karmada, propagates nothing there, since a copy would take over or delete the"
        " member's own"
    )


def _kubernetes_rules(
    model: Workload, doc: Mapping[str, Any], *, source: SourceMap, filename: str
) -> list[Finding]:
    """What every member's API server refuses of a workload, refused here first: a
    workload the members cannot create would otherwise be admitted, hold its queue's
    quota and never run. Checked on the document, not the model, so objects already
    stored still decode."""
    found: list[Finding] = []
    found += sizes.data_findings(doc, source=source, filename=filename)
    if model.is_opaque:
        return found
    models = [c for c in model.chips if not is_arch(c)]
    asks = {name for pod_set in model.pod_sets for name in pod_set.requests}
    if models and len(models) == len(model.chips) and not any(_is_device(n) for n in asks):
        message = (
            f"fedctl.io/chips lists accelerator models ({', '.join(models)}) but no pod"
            " requests a device, and a pod without one never runs on accelerator nodes:"
            " the list is ignored (request the device, e.g. nvidia.com/gpu, or list an arch)"
        )
        path = ("metadata", "annotations", "fedctl.io/chips")
        found.append(_at(source, filename, path, message, severity="warning"))
    cpu_only = not any(_is_device(n) for n in asks)  # listed arches bind CPU pods only
    accepted = node_arches.own_chips(model) if cpu_only else ()
    found += [
        _at(source, filename, at, message)
        for at, message in node_arches.conflicts(model, accepted, by="its fedctl.io/chips")
    ]
    for pod_set in model.pod_sets:
        pod = _dig(doc, pod_set.template_path)
        if not isinstance(pod, Mapping):
            continue
        for group in ("initContainers", "containers"):
            for index, container in enumerate(pod.get(group) or ()):
                at = (*pod_set.template_path, group, index, "resources")
                found += _device_rules(container, at, source=source, filename=filename)
    return found


def _device_rules(
    container: Any, at: tuple[str | int, ...], *, source: SourceMap, filename: str
) -> list[Finding]:
    """Devices (extended resources, e.g. nvidia.com/gpu) are whole and never overcommitted:
    Kubernetes wants a whole number, and a limit equal to any request."""
    resources = container.get("resources") if isinstance(container, Mapping) else None
    if not isinstance(resources, Mapping):
        return []
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    if not isinstance(requests, Mapping) or not isinstance(limits, Mapping):
        return []
    found: list[Finding] = []
    for kind, values in (("requests", requests), ("limits", limits)):
        for name, raw in values.items():
            if not _is_device(str(name)):
                continue
            amount = _whole(raw)
            if amount is None:
                message = f"{name}: {raw!r} is not a whole number: a device is never shared"
                found.append(_at(source, filename, (*at, kind, name), message))
    for name, raw in requests.items():
        if not _is_device(str(name)):
            continue
        # A request without a limit is fine: the members get the limit filled in, equal to
        # the request (`propagation.render`), as Kubernetes requires for a device.
        if name in limits and _whole(raw) is not None and _whole(raw) != _whole(limits[name]):
            message = (
                f"{name} is requested as {raw} but limited to {limits[name]}: Kubernetes"
                " wants the two equal for a device"
            )
            found.append(_at(source, filename, (*at, "requests", name), message))
    return found


def _is_device(name: str) -> bool:
    if name in _NATIVE or name.startswith(("hugepages-", "requests.", "limits.")):
        return False
    domain = name.partition("/")[0] if "/" in name else ""
    return bool(domain) and not domain.endswith("kubernetes.io")


def _whole(raw: Any) -> int | None:
    """A device count: a whole number (int, or a string of digits), else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return None


def _dig(doc: Mapping[str, Any], path: tuple[Any, ...]) -> Any:
    node: Any = doc
    for part in path:
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return None
    return node


def _warnings(model: KubeObject, *, source: SourceMap, filename: str) -> list[Finding]:
    found: list[Finding] = []
    notices = getattr(model, "warnings", None)
    if callable(notices):
        for notice in notices():
            found.append(_at(source, filename, notice.path, notice.message, severity="warning"))
    if not isinstance(model, Workload):
        return found
    note = kinds.migration_note(model.api_version, model.kind)
    if note is not None:
        found.append(_at(source, filename, ("kind",), note, severity="warning"))
    elif model.kind not in _ALL_KIND_NAMES:
        hint = suggest(model.kind, _ALL_KIND_NAMES)
        if hint:
            message = f"kind {model.kind!r} is not one fedctl knows; kept as an opaque object{hint}"
            found.append(_at(source, filename, ("kind",), message, severity="warning"))
    return found


def cross_check(
    objects: Iterable[Loaded],
) -> tuple[list[Finding], set[tuple[str, int, tuple[int, ...]]]]:
    """Findings that need the whole set (duplicate objects, the queue tree, chips defined
    nowhere, priority classes their queue does not define), and the documents
    (`Loaded.place`) an error among them falls on: valid alone, such a document is not a valid
    object of the set (a duplicate, a child capped above its parent)."""
    objects = list(objects)
    dual, tree, classes = (
        _duplicates(objects),
        _queue_tree(objects),
        _undefined_priority_classes(objects),
    )
    found = [
        *(f for _, f in dual + tree),
        *unknown_parents(objects),
        *undefined_chips(objects),
        *(f for _, f in classes),
    ]
    return found, {o.place for o, f in dual + tree + classes if f.is_error}


def _undefined_priority_classes(objects: list[Loaded]) -> list[tuple[Loaded, Finding]]:
    """A workload naming a priority class its queue, given alongside, does not define
    (a queue not given may be stored on the server: nothing is said then)."""
    queues = {o.model.metadata.name: o.model for o in objects if isinstance(o.model, Queue)}
    found: list[tuple[Loaded, Finding]] = []
    for obj in objects:
        model = obj.model
        if not isinstance(model, Workload):
            continue
        try:
            name, queue = model.priority_class, queues.get(model.queue or "default")
        except ValueError:
            continue  # reported with the workload itself
        if name is None or queue is None:
            continue
        classes = priority_classes(queue.name, queues)
        if classes is None or name in classes:
            continue  # a parent not given alongside may define it on the server
        known = sorted(classes)
        message = (
            f"priority class {name!r} is not defined in queue {queue.name}"
            f" (its priorityClasses: {', '.join(known) or 'none'}){suggest(name, known)}"
        )
        path = ("metadata", "annotations", "fedctl.io/priority")
        found.append((obj, _at(obj.source, obj.file, path, message)))
    return found


def _priority_class_references(obj: Loaded) -> tuple[str, str] | None:
    """(queue, class) of a workload naming a priority class by name, or None; the queue
    is the default one when it names none."""
    model = obj.model
    if not isinstance(model, Workload) or model.is_opaque:
        return None
    try:
        name, queue = model.priority_class, model.queue
    except RuleError:
        return None  # refused with its own finding
    return None if name is None else (queue or "default", name)


def names_priority_classes(objects: Iterable[Loaded]) -> bool:
    """Whether a workload here names a priority class (`fedctl.io/priority: high`)."""
    return any(_priority_class_references(obj) for obj in objects)


def undefined_priority_classes(
    objects: Iterable[Loaded], *, held: Iterable[Queue], default: str = "default"
) -> list[Finding]:
    """A warning for each workload naming a priority class its queue does not define,
    that queue held by the server (`held`) rather than given alongside: the scheduler
    holds such a workload Pending with that reason, and nothing said so before. A queue
    given alongside is judged by the loader, as an error; one held nowhere is the
    undefined-queue warning's, but for the implicit default queue, which defines none."""
    objects = list(objects)
    here = {o.model.metadata.name for o in objects if isinstance(o.model, Queue)}
    stored = {q.metadata.name: q for q in held}
    found: list[Finding] = []
    for obj in objects:
        named = _priority_class_references(obj)
        if named is None or named[0] in here:
            continue
        queue, name = named
        if queue in stored:
            classes = priority_classes(queue, stored)
        else:
            classes = {} if queue == default else None
        if classes is None or name in classes:
            continue
        known = ", ".join(f"{n} ({v})" for n, v in sorted(classes.items(), key=lambda i: -i[1]))
        message = (
            f"priority class {name!r} is not defined in queue {queue} on the server (its"
            f" priorityClasses: {known or 'none'}){suggest(name, sorted(classes))}: the"
            " workload waits, Pending, until it is defined there or fedctl.io/priority names"
            " one that is"
        )
        path = ("metadata", "annotations", "fedctl.io/priority")
        found.append(_at(obj.source, obj.file, path, message, severity="warning"))
    return found


def _identity(model: KubeObject) -> tuple[str, str, str, str]:
    meta = model.metadata
    return (model.api_version, model.kind, meta.namespace or "", meta.name)


def _duplicates(objects: list[Loaded]) -> list[tuple[Loaded, Finding]]:
    """Each later definition of an object, at its name, naming the line of the first's
    name: the one a user compares it with."""
    first: dict[tuple[str, str, str, str], Loaded] = {}
    found: list[tuple[Loaded, Finding]] = []
    for obj in objects:
        key = _identity(obj.model)
        if key not in first:
            first[key] = obj
            continue
        earlier = first[key]
        line, _ = earlier.source.locate(("metadata", "name"))
        name = f"{obj.model.kind} {key[2] + '/' if key[2] else ''}{key[3]}"
        message = f"{name} is defined twice (first at {earlier.file}:{line or earlier.line})"
        found.append((obj, _at(obj.source, obj.file, ("metadata", "name"), message)))
    return found


def _queue_tree(objects: list[Loaded]) -> list[tuple[Loaded, Finding]]:
    """The queue hierarchy's set-wide rules but for a parent the set lacks, which may be
    stored on the server already (`unknown_parents`)."""
    queues: dict[str, tuple[Queue, Loaded]] = {
        o.model.metadata.name: (o.model, o) for o in objects if isinstance(o.model, Queue)
    }
    found: list[tuple[Loaded, Finding]] = []
    for name, notice in hierarchy_problems(queue for queue, _ in queues.values()):
        queue, obj = queues[name]
        if notice.path == ("spec", "parent") and queue.spec.parent not in queues:
            continue
        found.append((obj, _at(obj.source, obj.file, notice.path, notice.message)))
    return found


def unknown_parents(
    objects: Iterable[Loaded], *, held: Collection[str] | None = None
) -> list[Finding]:
    """A warning at `spec.parent` of each queue whose parent the documents do not define.

    `held`: the names of the queues a server holds, for input about to be applied there;
    a parent among them is fine, and one neither defines is what the server will refuse.
    Without it (`fedctl validate`, no server), a note that apply needs the server to hold
    the parent: a warning, since only the server knows.
    """
    objects = list(objects)
    here = {o.model.metadata.name for o in objects if isinstance(o.model, Queue)}
    known = here | set(held or ())
    found: list[Finding] = []
    for obj in objects:
        queue = obj.model
        parent = queue.spec.parent if isinstance(queue, Queue) else None
        if parent is None or parent in known:
            continue
        if held is None:
            message = (
                f"parent queue {parent!r} is not in these files: apply refuses this queue"
                f" unless the server already holds it (fedctl get queues {parent})"
            )
        else:
            message = (
                f"parent queue {parent!r} is not defined on the server or in these"
                f" files{suggest(parent, sorted(known))}: the server refuses this queue"
            )
        found.append(_at(obj.source, obj.file, ("spec", "parent"), message, severity="warning"))
    return found


def _chip_references(obj: Loaded) -> list[tuple[tuple[str | int, ...], str]]:
    model = obj.model
    refs: list[tuple[tuple[str | int, ...], str]] = []
    if isinstance(model, FedctlPropagationPolicy | FedctlClusterPropagationPolicy):
        placement = model.spec.fedctl
        if placement is not None:
            refs.extend((("spec", "fedctl", "chips", i), c) for i, c in enumerate(placement.chips))
    elif isinstance(model, Queue):
        for field in ("capability", "guarantee"):
            for name in getattr(model.spec, field) or ():
                if name.startswith(CHIP_RESOURCE_PREFIX):
                    chip = name.removeprefix(CHIP_RESOURCE_PREFIX)
                    refs.append((("spec", field, name), chip))
    elif isinstance(model, Workload):
        try:
            chips = model.chips
        except ValueError:
            chips = ()
        path = ("metadata", "annotations", "fedctl.io/chips")
        refs.extend((path, chip) for chip in chips)
    return refs


_CLUSTER_LISTS = ("clusterNames", "exclude")
_CLUSTER_KINDS = frozenset(
    {"PropagationPolicy", "ClusterPropagationPolicy", "OverridePolicy"}
    | {"ClusterOverridePolicy", "FederatedResourceQuota"}
)


def _cluster_references(obj: Loaded) -> list[tuple[tuple[str | int, ...], str]]:
    """Every member named by a policy or quota: affinities and their exclusions, static
    weights' and override rules' target clusters, quota assignments."""
    if obj.model.kind not in _CLUSTER_KINDS:
        return []
    refs: list[tuple[tuple[str | int, ...], str]] = []

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _CLUSTER_LISTS and isinstance(value, list):
                    refs.extend(((*path, key, i), v) for i, v in enumerate(value) if v)
                elif key == "clusterName" and isinstance(value, str):
                    refs.append(((*path, key), value))
                else:
                    walk(value, (*path, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, (*path, i))

    walk(obj.model.to_wire().get("spec") or {}, ("spec",))
    return refs


def names_clusters(objects: Iterable[Loaded]) -> bool:
    """Whether a policy or quota here names a member cluster."""
    return any(_cluster_references(obj) for obj in objects)


def unjoined_clusters(objects: Iterable[Loaded], *, joined: Collection[str]) -> list[Finding]:
    """A warning for each member named that is neither joined (`joined`: the server's
    Clusters) nor defined among the documents: a misspelt name places nothing there and
    raises no error anywhere else, as a name only a later join will fill is allowed."""
    objects = list(objects)
    known = set(joined) | {o.model.metadata.name for o in objects if isinstance(o.model, Cluster)}
    return _unknown(
        objects,
        _cluster_references,
        known,
        lambda name: (
            f"cluster {name!r} is not joined{suggest(name, sorted(known))}: nothing is"
            " placed there, or taken from there, until a cluster of that name joins"
        ),
    )


def _queue_references(model: KubeObject) -> list[tuple[tuple[str | int, ...], str]]:
    """The queue a workload names, at the annotation or Volcano field naming it."""
    if not isinstance(model, Workload) or model.is_opaque:
        return []
    try:
        name = model.queue
    except RuleError:
        return []  # refused with its own finding
    if name is None:
        return []
    return [(model.queue_path, name)]


def queue_children(queues: Iterable[tuple[str, str | None]]) -> dict[str, list[str]]:
    """Each queue (name, parent) with its children: what `undefined_queues` judges by."""
    pairs = list(queues)
    tree: dict[str, list[str]] = {name: [] for name, _ in pairs}
    for name, parent in pairs:
        if parent:
            tree.setdefault(parent, []).append(name)
    return tree


def names_queues(objects: Iterable[Loaded]) -> bool:
    """Whether a workload here names a queue (not the default by leaving it out)."""
    return any(_queue_references(obj.model) for obj in objects)


def undefined_queues(
    objects: Iterable[Loaded], *, defined: Mapping[str, Collection[str]], default: str
) -> list[Finding]:
    """A warning for each workload naming a queue that neither `defined` (a server's
    queues, each with its children) nor the documents hold, or a parent queue, which takes
    no work: either way the workload waits, Pending, with no error at apply."""
    objects = list(objects)
    here = queue_children(
        (o.model.metadata.name, o.model.spec.parent) for o in objects if isinstance(o.model, Queue)
    )
    queues = {n: [*defined.get(n, ()), *here.get(n, ())] for n in {*defined, *here}}
    given = {o.model.metadata.name for o in objects if isinstance(o.model, Queue)}
    found = []
    for obj in objects:
        for path, name in _queue_references(obj.model):
            if name == default and name not in queues:
                continue  # the implicit default queue takes work with no Queue object
            if name not in queues:
                message = (
                    f"queue {name!r} is not defined on the server or in these"
                    f" files{suggest(name, sorted(queues))}: the workload waits, Pending,"
                    " until a queue of that name exists"
                )
            elif here.get(name) and name in given:
                continue  # a parent by the documents themselves: `queue_checks` said so
            elif queues[name]:
                message = (
                    f"queue {name!r} is a parent: it takes no work, so the workload waits;"
                    f" name one of its children ({', '.join(sorted(queues[name]))})"
                )
            else:
                continue
            found.append(_at(obj.source, obj.file, path, message, severity="warning"))
    return found


def _unknown(
    objects: list[Loaded],
    references: Callable[[Loaded], list[tuple[tuple[str | int, ...], str]]],
    known: Collection[str],
    say: Callable[[str], str],
) -> list[Finding]:
    """A warning, at its place, for each name `references` finds that `known` lacks."""
    return [
        _at(obj.source, obj.file, path, say(name), severity="warning")
        for obj in objects
        for path, name in references(obj)
        if name not in known
    ]


def _defined_chips(objects: list[Loaded]) -> set[str]:
    return chips_defined_by(o.model for o in objects)


def chips_defined_by(models: Iterable[KubeObject]) -> set[str]:
    """The chips AcceleratorProfiles and Clusters among `models` define (names, chip
    models and their archs)."""
    defined: set[str] = set()
    for model in models:
        if isinstance(model, AcceleratorProfile):
            defined.add(model.metadata.name)
        elif isinstance(model, Cluster):
            for chip in model.spec.chips:
                defined.add(chip.model)
                if chip.arch:
                    defined.add(chip.arch)
    return defined


def undefined_chips(
    objects: Iterable[Loaded], *, known: Collection[str] | None = None
) -> list[Finding]:
    """A warning for each chip named that no AcceleratorProfile or Cluster defines.

    `known`: the chips a server defines (its clusters' and profiles'), for input about to
    be applied there; without it only the documents loaded together count, so applying a
    workload alone warned about every chip of the fleet it was going to.
    """
    objects = list(objects)
    defined = _defined_chips(objects) | set(known or ())
    where = (
        "in the loaded documents" if known is None else "in the loaded documents or on the server"
    )
    return _unknown(
        objects,
        _chip_references,
        defined,
        lambda chip: (
            f"chip {chip!r} is not defined by any AcceleratorProfile or Cluster"
            f" {where}{suggest(chip, sorted(defined))}"
        ),
    )
