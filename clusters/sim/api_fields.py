"""Unknown fields in request bodies: the apiserver's `fieldValidation` directive.

A real apiserver decodes a body into Go structs, so a field the kind does not have
(`spec.replica: 3`) cannot be stored. With `fieldValidation=Strict`, which kubectl sends
by default, the write is refused (400, `strict decoding error: unknown field
"spec.replica"`); with `Warn` (the server's default, and what `kubernetes_asyncio` gets)
it succeeds with one `Warning` header per field and the field dropped; with `Ignore` it is
dropped silently. The simulator stored such fields verbatim and answered "created", so a
typo that a real member refuses looked applied.

The fields of each built-in kind are the Kubernetes client's models (generated from the
API's OpenAPI), read from the table fedctl's policy loader keeps in
`policies/loading/kube_fields.json`. It is read as a file, not imported, so the simulator
still imports nothing of fedctl's. Kinds the table lacks (custom kinds, Nodes, Events,
Leases) are not judged, as a CRD that preserves unknown fields is not.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Final

from clusters.sim.api_errors import ApiError
from clusters.sim.resources import ResourceType

__all__ = ["prune_unknown"]

_TABLE: Final = Path(__file__).resolve().parents[2] / "policies" / "loading" / "kube_fields.json"
_MODELS: Final = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "Pod"): "V1Pod",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("v1", "Service"): "V1Service",
    ("v1", "ResourceQuota"): "V1ResourceQuota",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("apps/v1", "ReplicaSet"): "V1ReplicaSet",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("batch/v1", "Job"): "V1Job",
    ("batch/v1", "CronJob"): "V1CronJob",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "V2HorizontalPodAutoscaler",
}
"""The served kinds the table describes: apiVersion and kind -> the client model."""


@functools.cache
def _types() -> dict[str, dict[str, str]]:
    """Model -> JSON field -> type (`str`, `list[V1Container]`, `dict(str, str)`, a model);
    empty when the table is not there (an installed simulator without fedctl's sources)."""
    try:
        loaded: dict[str, dict[str, str]] = json.loads(_TABLE.read_text(encoding="utf-8"))
    except OSError:
        return {}
    return loaded


def _prune(kind: str, value: Any, path: str, unknown: list[str]) -> Any:
    """`value` without the fields `kind` lacks, at any depth; their paths go to `unknown`."""
    if kind.startswith("list[") and isinstance(value, list):
        return [_prune(kind[5:-1], item, f"{path}[{i}]", unknown) for i, item in enumerate(value)]
    if kind.startswith("dict(") and isinstance(value, dict):
        inner = kind[kind.index(",") + 1 : -1].strip()
        return {k: _prune(inner, v, f"{path}[{k}]", unknown) for k, v in value.items()}
    fields = _types().get(kind)
    if fields is None or not isinstance(value, dict):
        return value
    kept: dict[str, Any] = {}
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key in fields:
            kept[key] = _prune(fields[key], item, where, unknown)
        else:
            unknown.append(where)
    return kept


def prune_unknown(
    rt: ResourceType, obj: dict[str, Any], *, directive: str | None, wrap: bool
) -> tuple[dict[str, Any], list[str]]:
    """The object as the apiserver decodes it, and the warnings to send.

    400 under `Strict` when a field is unknown; any other directive warns, as upstream's
    default (`Warn`) does; `wrap` gives create and update's
    `<Kind> in version "v1" cannot be handled as a <Kind>: ` prefix (patches have none).
    """
    model = _MODELS.get((rt.api_version, rt.kind))
    if model is None:
        return obj, []
    unknown: list[str] = []
    pruned = _prune(model, obj, "", unknown)
    messages = [f'unknown field "{field}"' for field in unknown]
    if not messages or directive == "Ignore":
        return pruned, []
    if directive != "Strict":
        return pruned, messages
    text = "strict decoding error: " + ", ".join(messages)
    if wrap:
        text = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {text}'
    raise ApiError(400, "BadRequest", text)
