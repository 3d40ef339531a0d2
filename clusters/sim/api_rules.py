"""The apiserver's field rules for workloads, pods and quotas, with upstream wording.

`api_validation` calls these on every create and update (from HTTP and from in-process
controllers), after defaulting. Without them a simulated member stored what a real one
refuses: `cpu: abc` (which then broke every controller that sums requests), an
`imagePullPolicy: Sometimes`, a Deployment whose selector picks none of its own pods, a
Job whose template was swapped under running pods, a pod whose requests grew past its
quota after admission. Each rule returns (field, message) causes for one 422, except an
unparsable quantity, which upstream refuses while decoding the body (400), before any
validation runs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from clusters.sim import quantity, selectors
from clusters.sim.api_errors import ApiError
from clusters.sim.resources import ResourceType

__all__ = ["check_quantities", "create_errors", "update_errors"]

Causes = list[tuple[str, str]]

QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
"""The pattern upstream's decode error quotes for a quantity it cannot parse."""

_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_SELECTED = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"})
_STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
        "storage",
    }
)
"""Upstream `standardResources`: the unqualified resource names any field may use."""
_QUOTA_RESOURCES = _STANDARD_RESOURCES - {"storage"}
"""Upstream `standardQuotaResources`: the unqualified names a quota may limit."""
_QUALIFIED = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_POD_UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def _go_map(values: dict[str, Any] | None) -> str:
    """A label map as Go's `%#v` prints it in upstream messages."""
    if not values:
        return "map[string]string(nil)"
    inner = ", ".join(f"{json.dumps(k)}:{json.dumps(str(v))}" for k, v in sorted(values.items()))
    return f"map[string]string{{{inner}}}"


def _go_selector(selector: dict[str, Any] | None) -> str:
    """A LabelSelector as `%#v` prints it (field is immutable messages)."""
    selector = selector or {}
    exprs = selector.get("matchExpressions")
    shown = "[]v1.LabelSelectorRequirement(nil)"
    if exprs:
        shown = "[]v1.LabelSelectorRequirement{{{}}}".format(
            ", ".join(
                f"v1.LabelSelectorRequirement{{Key:{json.dumps(e.get('key', ''))}, "
                f'Operator:"{e.get("operator", "")}", Values:[]string{{'
                + ", ".join(json.dumps(v) for v in e.get("values") or ())
                + "}}"
                for e in exprs
            )
        )
    return (
        f"v1.LabelSelector{{MatchLabels:{_go_map(selector.get('matchLabels'))}, "
        f"MatchExpressions:{shown}}}"
    )


def _pod_spec(rt: ResourceType, obj: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    if rt.group == "" and rt.kind == "Pod":
        return "spec", spec
    template = spec.get("template")
    if rt.group in ("apps", "batch") and isinstance(template, dict):
        inner = template.get("spec")
        return "spec.template.spec", inner if isinstance(inner, dict) else {}
    return None


def _containers(spec: dict[str, Any], prefix: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{prefix}.{field}[{i}]", c)
        for field in ("initContainers", "containers")
        for i, c in enumerate(spec.get(field) or ())
        if isinstance(c, dict)
    ]


def _undecodable(rt: ResourceType) -> ApiError:
    return ApiError(
        400,
        "BadRequest",
        f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: quantities '
        f"must match the regular expression '{QUANTITY_PATTERN}'",
    )


def _quantity_values(rt: ResourceType, obj: dict[str, Any]) -> list[tuple[str, Any]]:
    """(field, value) of every quantity the kind holds: container resources, quota hard."""
    found: list[tuple[str, Any]] = []
    located = _pod_spec(rt, obj)
    if located is not None:
        for path, c in _containers(located[1], located[0]):
            resources = c.get("resources") or {}
            for section in ("limits", "requests"):
                for name, value in (resources.get(section) or {}).items():
                    found.append((f"{path}.resources.{section}[{name}]", value))
    if rt.group == "" and rt.kind == "ResourceQuota":
        for name, value in ((obj.get("spec") or {}).get("hard") or {}).items():
            found.append((f"spec.hard[{name}]", value))
    return found


def check_quantities(rt: ResourceType, obj: dict[str, Any]) -> Causes:
    """400 for a quantity that does not parse (upstream fails decoding the body); the
    causes of a negative one, which upstream validation refuses (422)."""
    causes: Causes = []
    for field, value in _quantity_values(rt, obj):
        try:
            parsed = quantity.parse(value)
        except (ValueError, TypeError):
            raise _undecodable(rt) from None
        if parsed.value < 0:
            causes.append((field, f'Invalid value: "{value}": must be greater than or equal to 0'))
    return causes


def _pod_spec_errors(rt: ResourceType, obj: dict[str, Any]) -> Causes:
    located = _pod_spec(rt, obj)
    if located is None:
        return []
    prefix, spec = located
    causes: Causes = []
    if not spec.get("containers"):
        causes.append((f"{prefix}.containers", "Required value"))
    for path, c in _containers(spec, prefix):
        policy = c.get("imagePullPolicy")
        if policy is not None and policy not in _PULL_POLICIES:
            supported = ", ".join(f'"{p}"' for p in _PULL_POLICIES)
            causes.append(
                (
                    f"{path}.imagePullPolicy",
                    f'Unsupported value: "{policy}": supported values: {supported}',
                )
            )
    return causes


def _selector_errors(rt: ResourceType, obj: dict[str, Any]) -> Causes:
    """A controller's selector must select its own template (Jobs: a manual selector)."""
    spec = obj.get("spec") or {}
    if rt.group == "batch" and (rt.kind != "Job" or not spec.get("manualSelector")):
        return []
    if rt.group not in ("apps", "batch") or rt.kind not in _SELECTED | {"Job"}:
        return []
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return []
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if selectors.selects(selector, labels):
        return []
    return [
        (
            "spec.template.metadata.labels",
            f"Invalid value: {_go_map(labels)}: `selector` does not match template `labels`",
        )
    ]


def _quota_errors(rt: ResourceType, obj: dict[str, Any]) -> Causes:
    """Upstream `ValidateResourceQuotaResourceName`: an unqualified name must be a standard
    quota resource. Qualified names (`nvidia.com/gpu`) pass, and quota then ignores every
    extended resource not written `requests.<name>`, as upstream does."""
    if not (rt.group == "" and rt.kind == "ResourceQuota"):
        return []
    causes: Causes = []
    for name in (obj.get("spec") or {}).get("hard") or {}:
        field = f"spec.hard[{name}]"
        if "/" in name:
            if not _QUALIFIED.match(name):
                causes.append((field, f'Invalid value: "{name}": must be a qualified name'))
            continue
        hugepages = name.startswith(("hugepages-", "requests.hugepages-"))
        if name not in _STANDARD_RESOURCES and not hugepages:
            causes.append(
                (
                    field,
                    f'Invalid value: "{name}": must be a standard resource type or fully qualified',
                )
            )
        if name not in _QUOTA_RESOURCES and not hugepages:
            causes.append(
                (field, f'Invalid value: "{name}": must be a standard resource for quota')
            )
    return causes


def create_errors(rt: ResourceType, obj: dict[str, Any]) -> Causes:
    """Causes for a 422 on any write: pod specs, selectors, quota names, quantities."""
    return [
        *check_quantities(rt, obj),
        *_pod_spec_errors(rt, obj),
        *_selector_errors(rt, obj),
        *_quota_errors(rt, obj),
    ]


def _pod_update_errors(new: dict[str, Any], old: dict[str, Any]) -> Causes:
    """Pods are immutable but for images, deadlines, added tolerations, the grace period
    and the scheduler's binding (which upstream writes through `pods/binding`)."""

    def mutable_removed(spec: dict[str, Any], *, bound: bool) -> dict[str, Any]:
        kept = {
            k: v
            for k, v in spec.items()
            if k not in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")
        }
        if not bound:
            kept.pop("nodeName", None)
        for field in ("containers", "initContainers"):
            if field in kept:
                kept[field] = [{k: v for k, v in c.items() if k != "image"} for c in kept[field]]
        return kept

    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    bound = bool(old_spec.get("nodeName"))
    if mutable_removed(old_spec, bound=bound) == mutable_removed(new_spec, bound=bound):
        return []
    return [("spec", f"Forbidden: {_POD_UPDATABLE}")]


def update_errors(rt: ResourceType, new: dict[str, Any], old: dict[str, Any]) -> Causes:
    """Causes for a 422 on an update: fields upstream makes immutable."""
    if rt.group == "" and rt.kind == "Pod":
        return _pod_update_errors(new, old)
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    causes: Causes = []
    workload = rt.group in ("apps", "batch") and rt.kind in _SELECTED | {"Job"}
    if workload and new_spec.get("selector") != old_spec.get("selector"):
        causes.append(
            (
                "spec.selector",
                f"Invalid value: {_go_selector(new_spec.get('selector'))}: field is immutable",
            )
        )
    job = rt.group == "batch" and rt.kind == "Job"
    if job and new_spec.get("template") != old_spec.get("template"):
        causes.append(
            ("spec.template", "Invalid value: core.PodTemplateSpec{...}: field is immutable")
        )
    return causes
