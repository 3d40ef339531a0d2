"""Defaulting and the validation that belongs to the apiserver, with upstream wording.

The store calls these on every create and update, from HTTP and from in-process
controllers alike, so a Deployment whose template asks for half a GPU is refused with the
same 422 a real cluster gives. Only what clients and the federation controller can observe
is reproduced: object names, extended-resource rules (request equals limit, integers
only), and the defaults that kubectl and the Python models read back (replicas,
strategy, Job parallelism and completions, pod phase and QoS class).
"""

from __future__ import annotations

import base64
import functools
import random
import re
import uuid
from fractions import Fraction
from typing import Any

from clusters.sim import api_rules
from clusters.sim.api_errors import ApiError, invalid
from clusters.sim.resources import ResourceType

__all__ = [
    "check_namespace",
    "default",
    "parse_quantity",
    "prepare_create",
    "validate_metadata",
    "validate_spec",
    "validate_update",
]

_KEEP_STATUS_ON_CREATE = frozenset({"Node", "Namespace"})
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_SUFFIXES = {
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def parse_quantity(value: Any) -> Fraction | None:
    """A Kubernetes quantity as an exact number, or None when it does not parse."""
    return _parse(str(value).strip())


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Fraction | None:
    if text.isdigit():
        return Fraction(int(text))
    m = _QUANTITY.match(text)
    if not m or (m.group(2) and m.group(2) not in _SUFFIXES):
        return None
    try:
        number = Fraction(m.group(1))
    except ValueError:
        return None
    return number * _SUFFIXES.get(m.group(2), Fraction(1))


def prepare_create(rt: ResourceType, obj: dict[str, Any], *, now: str) -> dict[str, Any]:
    """A new object as the apiserver stores it: name, scope, uid, timestamps; validated name.

    Status is reset for kinds with a status subresource, except Node and Namespace.
    """
    obj = {**obj, "apiVersion": rt.api_version, "kind": rt.kind}
    meta = obj.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + "".join(random.choices(_SUFFIX_CHARS, k=5))
    if rt.namespaced:
        meta["namespace"] = meta.get("namespace") or "default"
    else:
        meta.pop("namespace", None)
    validate_metadata(rt, obj)
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now
    if "spec" in obj:
        meta["generation"] = 1
    if rt.has_status and rt.kind not in _KEEP_STATUS_ON_CREATE:
        obj.pop("status", None)
    return obj


def check_namespace(rt: ResourceType, name: str, ns: str, namespace: dict[str, Any] | None) -> None:
    """404 when the namespace is missing, 403 while it is terminating."""
    if namespace is None:
        raise ApiError(
            404,
            "NotFound",
            f'namespaces "{ns}" not found',
            details={"name": ns, "kind": "namespaces"},
        )
    if namespace["metadata"].get("deletionTimestamp"):
        raise ApiError(
            403,
            "Forbidden",
            f'{rt.plural} "{name}" is forbidden: unable to create new content in namespace '
            f"{ns} because it is being terminated",
            details={"name": name, "kind": rt.plural},
        )


def validate_metadata(rt: ResourceType, obj: dict[str, Any]) -> None:
    name = obj["metadata"].get("name") or ""
    if not name:
        raise invalid(
            rt, name, [("metadata.name", "Required value: name or generateName is required")]
        )
    pattern, msg = (
        (_DNS1123_LABEL, _LABEL_MSG)
        if rt.kind == "Namespace"
        else (_DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG)
    )
    if len(name) > 253 or not pattern.match(name):
        raise invalid(rt, name, [("metadata.name", f'Invalid value: "{name}": {msg}')])


def _is_extended(resource: str) -> bool:
    if "/" not in resource:
        return False
    domain = resource.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def _pod_specs(rt: ResourceType, obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    if rt.kind == "Pod" and rt.group == "":
        return [("spec", spec)]
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        return [("spec.template.spec", template["spec"])]
    return []


def _container_errors(path: str, container: dict[str, Any]) -> list[tuple[str, str]]:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    errors: list[tuple[str, str]] = []
    for kind, values in (("limits", limits), ("requests", requests)):
        for res, qty in values.items():
            if not _is_extended(res):
                continue
            number = parse_quantity(qty)
            if number is None or number.denominator != 1:
                errors.append(
                    (
                        f"{path}.resources.{kind}[{res}]",
                        f'Invalid value: "{qty}": must be an integer',
                    )
                )
    for res, qty in requests.items():
        if not _is_extended(res):
            continue
        if res not in limits:
            errors.append(
                (
                    f"{path}.resources.limits",
                    "Required value: Limit must be set for non overcommitable resources",
                )
            )
        elif parse_quantity(qty) != parse_quantity(limits[res]):
            errors.append(
                (
                    f"{path}.resources.requests",
                    f'Invalid value: "{qty}": must be equal to {res} limit of {limits[res]}',
                )
            )
    return errors


_COUNTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("replicas",),
    ("apps", "StatefulSet"): ("replicas",),
    ("apps", "ReplicaSet"): ("replicas",),
    ("batch", "Job"): ("parallelism", "completions", "backoffLimit"),
}
"""The int32 counts of a spec that decoding and validation check (`_counts`)."""


def _counts(rt: ResourceType, obj: dict[str, Any]) -> list[tuple[str, str]]:
    """A count that is no integer is a decode error (400), as the apiserver's JSON decoder
    gives for a string in an int32 field (an override writing `value: "3"` does that); a
    negative one is invalid (422)."""
    spec = obj.get("spec")
    errors: list[tuple[str, str]] = []
    for field in _COUNTS.get((rt.group, rt.kind), ()):
        value = spec.get(field) if isinstance(spec, dict) else None
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value >= 2**31:
            kind = type(value).__name__ if not isinstance(value, int) else "number"
            shown = {"str": "string", "float": "number", "bool": "bool"}.get(kind, kind)
            raise ApiError(
                400,
                "BadRequest",
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}:'
                f" json: cannot unmarshal {shown} into Go struct field {rt.kind}Spec.spec"
                f".{field} of type int32",
            )
        if value < 0:
            errors.append(
                (f"spec.{field}", f"Invalid value: {value}: must be greater than or equal to 0")
            )
    return errors


def validate_spec(rt: ResourceType, obj: dict[str, Any]) -> None:
    """400 for a count or a quantity that does not decode; 422 for a negative one, for
    extended resources whose request differs from the limit or is fractional, and for the
    field rules of `api_rules` (pull policies, selectors, containers, quota names)."""
    errors: list[tuple[str, str]] = _counts(rt, obj)
    errors.extend(api_rules.create_errors(rt, obj))
    for prefix, spec in _pod_specs(rt, obj):
        for field in ("initContainers", "containers"):
            for i, container in enumerate(spec.get(field) or ()):
                errors.extend(_container_errors(f"{prefix}.{field}[{i}]", container))
    if errors:
        raise invalid(rt, obj["metadata"].get("name", ""), errors)


def validate_update(rt: ResourceType, new: dict[str, Any], old: dict[str, Any]) -> None:
    """422 for a change to a field upstream makes immutable (selectors, Job templates,
    pod specs beyond images, deadlines, tolerations and the grace period)."""
    errors = api_rules.update_errors(rt, new, old)
    if errors:
        raise invalid(rt, new["metadata"].get("name", ""), errors)


def _qos(spec: dict[str, Any]) -> str:
    containers = list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in lim or parse_quantity(req.get(name, lim[name])) != parse_quantity(
                lim[name]
            ):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _default_pod(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    for c in list(spec.get("containers") or ()) + list(spec.get("initContainers") or ()):
        res = c.get("resources")
        if isinstance(res, dict) and res.get("limits"):
            requests = res.setdefault("requests", {})
            for name, qty in res["limits"].items():
                requests.setdefault(name, qty)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    status = obj.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", _qos(spec))


def _default_secret(obj: dict[str, Any]) -> None:
    """`stringData` is write-only: the apiserver merges it into `data` (base64, winning over
    a `data` key of the same name) and never stores it; `type` defaults to Opaque."""
    strings = obj.pop("stringData", None) or {}
    if strings:
        data = obj.setdefault("data", {}) or {}
        obj["data"] = data
        for key, value in strings.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
    obj.setdefault("type", "Opaque")


def _default_claim(obj: dict[str, Any]) -> None:
    """Bound as it is created, to a volume of the size and modes it asks for: the simulator
    has no volumes to wait for, and a claim left Pending would hold its pods back for good
    (the kubelet stand-in starts no pod whose claim is not Bound)."""
    spec = obj.get("spec") or {}
    status = obj.setdefault("status", {})
    status.setdefault("phase", "Bound")
    status.setdefault("accessModes", list(spec.get("accessModes") or ()))
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" in requests:
        status.setdefault("capacity", {"storage": requests["storage"]})


def default(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fill the defaults a real apiserver fills, in place."""
    if rt.group == "" and rt.kind == "Pod":
        _default_pod(obj)
    elif rt.group == "" and rt.kind == "Secret":
        _default_secret(obj)
    elif rt.group == "" and rt.kind == "Namespace":
        obj.setdefault("status", {}).setdefault("phase", "Active")
    elif rt.group == "" and rt.kind == "PersistentVolumeClaim":
        _default_claim(obj)
    elif rt.group == "apps" and rt.kind != "DaemonSet":
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        if rt.kind == "Deployment":
            spec.setdefault(
                "strategy",
                {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
                },
            )
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault("progressDeadlineSeconds", 600)
        elif rt.kind == "StatefulSet":
            spec.setdefault("podManagementPolicy", "OrderedReady")
            # `kubectl rollout status sts` reads it and refuses any other strategy
            spec.setdefault(
                "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
            )
            spec.setdefault("revisionHistoryLimit", 10)
    elif rt.group == "batch" and rt.kind == "Job":
        spec = obj.setdefault("spec", {})
        if "completions" not in spec and "parallelism" not in spec:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
