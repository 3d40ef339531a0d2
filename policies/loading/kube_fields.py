"""Unknown fields in the Kubernetes objects fedctl propagates, found before any member.

Workload templates are kept as the user wrote them: fedctl reads the parts it places by
(replicas, pod requests) and sends the rest on. A misspelt field there (`spec.replica: 3`,
`resourcez:`) was accepted, ran one replica with no requests (so no quota and no cost),
and reached every member, where kubectl's strict field validation, or a server-side
apply's "field not declared in schema", refuses it late and with no file or line. Here it
is refused at its line, as `kubectl apply` refuses it, with the field the user meant.

The fields of each built-in kind come from the Kubernetes client's models (generated from
the API's OpenAPI), kept in `kube_fields.json` so that loading a file does not import the
client; `python -m policies.loading.kube_fields` writes it again from the installed client.
Custom kinds (Volcano Jobs, PyTorchJobs, anything else) are not judged: fedctl has no
schema for them.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from policies.loading.findings import suggest
from policies.models import secret_data

__all__ = ["KINDS", "generate", "unknown_fields"]

KINDS: Final[Mapping[tuple[str, str], str]] = {
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "Service"): "V1Service",
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("v1", "Pod"): "V1Pod",
    ("v1", "ResourceQuota"): "V1ResourceQuota",
    ("v1", "LimitRange"): "V1LimitRange",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("apps/v1", "ReplicaSet"): "V1ReplicaSet",
    ("batch/v1", "Job"): "V1Job",
    ("batch/v1", "CronJob"): "V1CronJob",
    ("networking.k8s.io/v1", "Ingress"): "V1Ingress",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "V2HorizontalPodAutoscaler",
    ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "V1ClusterRoleBinding",
    ("scheduling.k8s.io/v1", "PriorityClass"): "V1PriorityClass",
}
"""The kinds judged, by apiVersion and kind: the client model each one's fields are."""

_DATA: Final = Path(__file__).with_name("kube_fields.json")
_MODEL = re.compile(r"V\d\w+")

Path_ = tuple[str | int, ...]


@functools.cache
def _types() -> dict[str, dict[str, str]]:
    """Model name -> JSON field -> its type (`str`, `list[V1Container]`, `dict(str, str)`,
    or another model's name)."""
    loaded: dict[str, dict[str, str]] = json.loads(_DATA.read_text(encoding="utf-8"))
    return loaded


def unknown_fields(doc: Mapping[str, Any]) -> Iterator[tuple[Path_, str]]:
    """(path, message) for each field of `doc` its kind does not have, at any depth; for
    the ConfigMap and Secret data values that are not strings (Kubernetes decodes those
    maps as strings and refuses a number or a boolean, which YAML reads unquoted).

    `status` is not judged: it is what members report, which `kubectl apply` of the main
    resource ignores and the API drops before storing a template, so nothing under it
    reaches a member. `fedctl get -o yaml` adds its own fields there (health, placement),
    and the file it writes must apply back as it is."""
    root = KINDS.get((str(doc.get("apiVersion")), str(doc.get("kind"))))
    if root is None:
        return
    yield from _walk(root, {k: v for k, v in doc.items() if k != "status"}, ())
    if root in ("V1ConfigMap", "V1Secret"):
        yield from _data_keys(doc)
        yield from _data_values(doc, secret=root == "V1Secret")


_KEY = re.compile(r"[-._a-zA-Z0-9]+")
"""Kubernetes' config key (`IsConfigMapKey`), for ConfigMap and Secret data keys."""


def _data_maps(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[Any, Any]]]:
    """(field, its map) for each data map a ConfigMap or Secret gives."""
    for field in ("data", "stringData", "binaryData"):
        values = doc.get(field)
        if isinstance(values, Mapping):
            yield field, values


def _key_problem(key: str) -> str | None:
    """Why Kubernetes refuses `key` as a config key (`IsConfigMapKey`); None if it does not."""
    if len(key) > 253:
        return "it must be no more than 253 characters"
    if not _KEY.fullmatch(key):
        return "it must consist of alphanumeric characters, '-', '_' or '.'"
    if key in (".", "..") or key.startswith(".."):
        return "it must not be '.' or start with '..'"
    return None


def _data_keys(doc: Mapping[str, Any]) -> Iterator[tuple[Path_, str]]:
    """ConfigMap and Secret data keys a member refuses (`IsConfigMapKey`, a key in both of
    a ConfigMap's maps): the object was accepted and every member refused its copy."""
    seen: set[str] = set()
    for field, values in _data_maps(doc):
        for key in map(str, values):
            if problem := _key_problem(key):
                yield (
                    (field, key),
                    f"{key!r} is not a valid config key: {problem} (members refuse it)",
                )
            elif field == "binaryData" and key in seen:
                yield (
                    (field, key),
                    f"{key!r} is given in data too: a key is in one of data and binaryData"
                    " (members refuse it)",
                )
            seen.add(key)


_BASE64_FIELDS = {True: ("data",), False: ("binaryData",)}
"""Per kind (a Secret: True), the data fields members decode as base64 ([]byte)."""


def _data_values(doc: Mapping[str, Any], *, secret: bool) -> Iterator[tuple[Path_, str]]:
    """ConfigMap and Secret data values a member refuses: not a string, or in a field
    of bytes not base64. A Secret's value is never quoted (`secret_data.REDACTED`): the
    messages end up in CI logs, and Kubernetes' field errors redact them too."""
    for field, values in _data_maps(doc):
        for key, value in values.items():
            if not isinstance(value, str):
                kind = type(value).__name__
                yield (
                    (field, key),
                    f"{field} values are strings: quote the value ({secret_data.REDACTED};"
                    f" members refuse {kind} values here)"
                    if secret
                    else f"{field} values are strings: quote {value!r} (members refuse"
                    f" {kind} values here)",
                )
            elif field in _BASE64_FIELDS[secret] and (problem := secret_data.base64_problem(value)):
                yield (
                    (field, key),
                    f"{field} values are base64: {problem}, which members refuse (give the"
                    " value as typed under stringData instead, or encode it)"
                    if secret
                    else f"{field} values are base64: {problem}, which members refuse",
                )


def _walk(kind: str, value: Any, path: Path_) -> Iterator[tuple[Path_, str]]:
    if value is None:
        return
    if kind.startswith("list["):
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _walk(kind[5:-1], item, (*path, i))
        return
    if kind.startswith("dict("):
        inner = kind[kind.index(",") + 1 : -1].strip()
        if isinstance(value, Mapping):
            for key, item in value.items():
                yield from _walk(inner, item, (*path, str(key)))
        return
    fields = _types().get(kind)
    if fields is None or not isinstance(value, Mapping):
        return
    for key, item in value.items():
        name = str(key)
        if name in fields:
            yield from _walk(fields[name], item, (*path, name))
        else:
            yield (*path, name), f"unknown field {name!r}{suggest(name, fields)}: members refuse it"


def generate() -> dict[str, dict[str, str]]:
    """The field table of every model `KINDS` reaches, read from the installed client."""
    from kubernetes_asyncio.client import models

    types: dict[str, dict[str, str]] = {}

    def visit(name: str) -> None:
        model = getattr(models, name, None)
        if name in types or model is None:
            return  # a type the client names but does not define stays unjudged
        fields = {model.attribute_map[a]: t for a, t in model.openapi_types.items()}
        types[name] = fields
        for t in fields.values():
            for ref in _MODEL.findall(t):
                visit(ref)

    for root in KINDS.values():
        visit(root)
    return dict(sorted(types.items()))


if __name__ == "__main__":
    _DATA.write_text(json.dumps(generate(), indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {_DATA}")
