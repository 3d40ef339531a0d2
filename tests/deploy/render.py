"""Render the kustomize overlays under deploy/kustomize, with kubectl or without it.

Fed by the kustomization files in deploy/kustomize; feeds the manifest tests. Why a renderer
of our own: the tests must run on machines without kubectl, so this one understands exactly
the kustomize features the manifests use (resources, components, strategic-merge patches
named by path) and refuses any other, so a manifest change that needs more fails loudly
here instead of rendering something kubectl would not. When kubectl is present the tests
compare both renderings, which keeps this one honest.
"""

from __future__ import annotations

import copy
import io
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

__all__ = ["DEPLOY", "OVERLAYS", "canonical", "kubectl", "load_yaml", "render", "render_fallback"]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KUSTOMIZE = DEPLOY / "kustomize"
OVERLAYS = ("dev", "prod", "prod-external-etcd")

Obj = dict[str, Any]

_SUPPORTED = {"apiVersion", "kind", "resources", "components", "patches"}
# Strategic-merge keys of the lists our patches touch (from the Kubernetes API's
# x-kubernetes-patch-merge-key); every other list is replaced, as kustomize does.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
}


def load_yaml(text: str) -> list[Obj]:
    """Every non-empty document of a YAML stream."""
    return [doc for doc in YAML(typ="safe").load_all(io.StringIO(text)) if doc]


def kubectl() -> str | None:
    return shutil.which("kubectl")


def render(overlay: str) -> list[Obj]:
    """The overlay's objects: through `kubectl kustomize` when there, else our renderer."""
    binary = kubectl()
    if binary is None:
        return render_fallback(overlay)
    out = subprocess.run(
        [binary, "kustomize", str(KUSTOMIZE / "overlays" / overlay)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return load_yaml(out.stdout)


def render_fallback(overlay: str) -> list[Obj]:
    return _build(KUSTOMIZE / "overlays" / overlay)


def _build(directory: Path, objects: list[Obj] | None = None) -> list[Obj]:
    """Apply one kustomization (or component) in `directory` on top of `objects`."""
    spec = load_yaml((directory / "kustomization.yaml").read_text())[0]
    unknown = set(spec) - _SUPPORTED
    if unknown:
        raise ValueError(f"{directory}: kustomize fields {sorted(unknown)} not supported here")
    result = list(objects or [])
    for entry in spec.get("resources", []):
        path = (directory / entry).resolve()
        result += _build(path) if path.is_dir() else load_yaml(path.read_text())
    for entry in spec.get("components", []):
        component = (directory / entry).resolve()
        kind = load_yaml((component / "kustomization.yaml").read_text())[0]["kind"]
        if kind != "Component":
            raise ValueError(f"{component} is listed as a component but is a {kind}")
        result = _build(component, result)
    for patch in spec.get("patches", []):
        if set(patch) != {"path"}:
            raise ValueError(f"{directory}: only patches given by path are supported: {patch}")
        for doc in load_yaml((directory / patch["path"]).read_text()):
            _apply_patch(result, doc, where=directory / patch["path"])
    return result


def _identity(obj: Obj) -> tuple[str, str, str, str]:
    group = obj["apiVersion"].rpartition("/")[0]
    meta = obj.get("metadata", {})
    return group, obj["kind"], meta.get("namespace", ""), meta["name"]


def _apply_patch(objects: list[Obj], patch: Obj, *, where: Path) -> None:
    matches = [i for i, obj in enumerate(objects) if _identity(obj) == _identity(patch)]
    if len(matches) != 1:
        raise ValueError(f"{where}: patch matches {len(matches)} objects, not one")
    index = matches[0]
    objects[index] = _merge(objects[index], patch)


def _merge(base: Any, patch: Any, field: str = "") -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = _merge(merged[key], value, key)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    key = _MERGE_KEYS.get(field)
    if key and isinstance(base, list) and isinstance(patch, list):
        by_key = {item[key]: item for item in patch}
        kept = [
            _merge(item, by_key.pop(item[key]), "") if item[key] in by_key else item
            for item in base
        ]
        # kustomize puts the patch's new items first.
        return [copy.deepcopy(item) for item in by_key.values()] + kept
    return copy.deepcopy(patch)


def canonical(objects: list[Obj]) -> dict[tuple[str, str, str, str], Obj]:
    """Objects by identity, with merge-keyed lists sorted, for order-blind comparison."""
    return {_identity(obj): _sorted_lists(obj) for obj in objects}


def _sorted_lists(value: Any, field: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _sorted_lists(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [_sorted_lists(v) for v in value]
        key = _MERGE_KEYS.get(field)
        return sorted(items, key=lambda item: str(item[key])) if key else items
    return value
