"""OverridePolicy and ClusterOverridePolicy: per-cluster edits of a propagated manifest.

Role: Karmada's override kinds under `policy.karmada.io/v1alpha1`, accepted verbatim,
including the deprecated single `targetCluster` + `overriders` form. Fed by
`policies.loading` and the REST API; feeds the propagator, which renders one manifest per
member (registry mirrors per region, chip-specific images, labels, command and args).

Why `effective_rules()`: the legacy form and `overrideRules` mean the same thing; the
propagator should see one shape, and Karmada forbids mixing them.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from policies.models import rules
from policies.models.base import FrozenModel, KubeObject
from policies.models.common import (
    ClusterAffinity,
    Notice,
    ResourceSelector,
    RuleError,
    selector_notices,
)

__all__ = [
    "IMAGE_DIGEST",
    "IMAGE_TAG",
    "NOT_ACTED_ON",
    "AnnotationsOverrider",
    "ClusterOverridePolicy",
    "CommandArgsOverrider",
    "ImageOverrider",
    "LabelAnnotationOverrider",
    "LabelsOverrider",
    "OverridePolicy",
    "OverrideSpec",
    "Overriders",
    "PlaintextOverrider",
    "RuleWithCluster",
    "json_type",
]

Operator = Literal["add", "remove", "replace"]

# Docker's tag and digest grammars, as Karmada's image parser holds them: a Tag value that
# is neither leaves the image as it was.
IMAGE_TAG: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
IMAGE_DIGEST: Final = re.compile(
    r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}"
)
_ANNOTATIONS_MAX_BYTES: Final = 256 * 1024


def _json_pointer(path: str) -> str:
    """A path that is not a JSON pointer fails at render time, on every member, with a
    message about the manifest; refused here it names the policy field instead."""
    if not path.startswith("/"):
        raise RuleError(
            f"path {path!r} is not a JSON pointer: it must start with '/'"
            f" (e.g. /{path.lstrip('./')})"
        )
    return path


def json_type(value: Any) -> str:
    """The JSON name of a value's type, as messages about a misplaced value say it."""
    if isinstance(value, bool):
        return "boolean"
    names = {dict: "mapping", list: "list", str: "string", int: "number", float: "number"}
    return next((n for t, n in names.items() if isinstance(value, t)), "null")


_FIXED_PATHS: Final = ("/metadata/name", "/metadata/namespace")
_MAPS: Final = ("/metadata/labels", "/metadata/annotations")


def _path_problem(path: str, operator: str, value: Any) -> str | None:
    """What no manifest of any kind can take at `path`, known from the policy alone: a
    rename (the copy under the new name is not the one the Work and the garbage
    collector know, so both ran in the member for good), or a value of a type that
    cannot go there (metadata, its labels and annotations, a label's value)."""
    if path in _FIXED_PATHS:
        return (
            f"path {path} cannot be overridden: a copy under another name is not the"
            " workload's (Karmada does not support renaming either)"
        )
    if operator == "remove":
        return None
    if path == "/metadata" and not isinstance(value, dict):
        return f"path {path} holds a mapping, not a {json_type(value)}"
    if path in _MAPS and not (
        isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    ):
        return f"path {path} holds a mapping of names to strings, not a {json_type(value)}"
    parent = path.rpartition("/")[0]
    if parent in _MAPS and not isinstance(value, str):
        return f"path {path} holds a string, not a {json_type(value)}"
    return None


class PlaintextOverrider(FrozenModel):
    """A JSON-patch style edit: `path`, `operator`, `value` (a `remove` ignores its value).
    An `add` into a list takes an index up to its length (or `-`) to append, as JSON Patch
    does; `/metadata/name` and `/metadata/namespace` cannot be edited."""

    path: str = Field(min_length=1)
    operator: Operator
    value: Any = None

    _path_is_pointer = field_validator("path")(_json_pointer)

    @model_validator(mode="after")
    def _value_fits_path(self) -> PlaintextOverrider:
        problem = _path_problem(self.path, self.operator, self.value)
        if problem is not None:
            raise RuleError(problem)
        return self


class ImagePredicate(FrozenModel):
    """Restrict an image override to the image at one path (a container's `image`
    field, e.g. `/spec/template/spec/containers/0/image`)."""

    path: str = Field(min_length=1)

    _path_is_pointer = field_validator("path")(_json_pointer)


class ImageOverrider(FrozenModel):
    """Edit the Registry, Repository or Tag part of `[registry/]repository[:tag|@digest]`:
    of the image at `predicate.path`, else of every container of every pod template
    (a CronJob's Job template's too; init containers are left alone, as Karmada does)."""

    predicate: ImagePredicate | None = None
    component: Literal["Registry", "Repository", "Tag"]
    operator: Operator
    value: str = ""

    @model_validator(mode="after")
    def _value_when_setting(self) -> ImageOverrider:
        if self.operator in ("add", "replace") and not self.value:
            raise RuleError(f"operator {self.operator} needs a value", at=("value",))
        return self


class CommandArgsOverrider(FrozenModel):
    """Append to (`add`) or delete from (`remove`) a named container's command or args."""

    container_name: str = Field(min_length=1)
    operator: Literal["add", "remove"]
    value: list[str] = Field(default_factory=list)


class LabelAnnotationOverrider(FrozenModel):
    """Add, remove or replace metadata labels or annotations."""

    operator: Operator
    value: dict[str, str] = Field(default_factory=dict)


class LabelsOverrider(LabelAnnotationOverrider):
    """Add, remove or replace metadata labels; keys and values follow Kubernetes' rules."""

    @model_validator(mode="after")
    def _kubernetes_labels(self) -> LabelsOverrider:
        rules.raise_all(rules.label_problems(self.value, at=("value",)))
        return self


class AnnotationsOverrider(LabelAnnotationOverrider):
    """Add, remove or replace metadata annotations; keys follow Kubernetes' rules."""

    @model_validator(mode="after")
    def _kubernetes_annotations(self) -> AnnotationsOverrider:
        problems = rules.annotation_key_problems(self.value, at=("value",))
        size = sum(len(k.encode()) + len(v.encode()) for k, v in self.value.items())
        if size > _ANNOTATIONS_MAX_BYTES:
            message = f"annotations add up to {size} bytes, more than Kubernetes' 256 KiB"
            problems.append(RuleError(message, at=("value",)))
        rules.raise_all(problems)
        return self


class PatchOperation(FrozenModel):
    """One edit inside a JSON or YAML document held in a string field."""

    sub_path: str = Field(min_length=1)
    operator: Operator
    value: Any = None

    _sub_path_is_pointer = field_validator("sub_path")(_json_pointer)

    @model_validator(mode="after")
    def _value_matches_operator(self) -> PatchOperation:
        if self.operator == "remove" and self.value is not None:
            raise RuleError("operator remove takes no value", at=("value",))
        if self.operator != "remove" and self.value is None:
            raise RuleError(f"operator {self.operator} needs a value", at=("value",))
        return self


class FieldOverrider(FrozenModel):
    """Patch a JSON or YAML document stored in a string field (e.g. a ConfigMap value)."""

    field_path: str = Field(min_length=1)
    json_: list[PatchOperation] = Field(default_factory=list, alias="json")
    yaml: list[PatchOperation] = Field(default_factory=list)

    _field_path_is_pointer = field_validator("field_path")(_json_pointer)

    @model_validator(mode="after")
    def _one_format(self) -> FieldOverrider:
        if self.json_ and self.yaml:
            raise RuleError("json and yaml cannot both be set", at=("yaml",))
        return self


NOT_ACTED_ON: dict[tuple[str, ...], str] = {
    ("overrideRules[*]", "overriders", "fieldOverrider"): "editing a JSON or YAML document"
    " held in a string field is not implemented yet",
}
"""Overrider fields (path below `spec`) that load but that the propagator does not apply,
with the reason `fedctl validate` and the policy reference give. Remove an entry when the
propagator implements it."""


class Overriders(FrozenModel):
    """Every kind of edit; Karmada applies image edits before plaintext ones."""

    plaintext: list[PlaintextOverrider] = Field(default_factory=list)
    image_overrider: list[ImageOverrider] = Field(default_factory=list)
    command_overrider: list[CommandArgsOverrider] = Field(default_factory=list)
    args_overrider: list[CommandArgsOverrider] = Field(default_factory=list)
    labels_overrider: list[LabelsOverrider] = Field(default_factory=list)
    annotations_overrider: list[AnnotationsOverrider] = Field(default_factory=list)
    field_overrider: list[FieldOverrider] = Field(
        default_factory=list,
        description="Patch a JSON or YAML document stored in a string field. Accepted, not"
        " acted on yet: the propagator applies the other overriders only.",
    )

    def is_empty(self) -> bool:
        """True when no edit of any kind is given."""
        return not any(getattr(self, name) for name in type(self).model_fields)


class RuleWithCluster(FrozenModel):
    """Edits for the clusters `targetCluster` matches (absent: every cluster)."""

    target_cluster: ClusterAffinity | None = None
    overriders: Overriders


class OverrideSpec(FrozenModel):
    """Karmada's `OverrideSpec`; absent `resourceSelectors` matches every resource."""

    resource_selectors: list[ResourceSelector] = Field(
        default_factory=list, description="Templates to edit (empty: every template)."
    )
    override_rules: list[RuleWithCluster] = Field(
        default_factory=list, description="Edits per group of target clusters."
    )
    target_cluster: ClusterAffinity | None = Field(
        default=None, description="Deprecated: use overrideRules[].targetCluster."
    )
    overriders: Overriders = Field(
        default_factory=Overriders, description="Deprecated: use overrideRules[].overriders."
    )

    @model_validator(mode="after")
    def _one_form(self) -> OverrideSpec:
        legacy = self.target_cluster is not None or not self.overriders.is_empty()
        if legacy and self.override_rules:
            raise RuleError(
                "overrideRules cannot be combined with the deprecated targetCluster/overriders",
                at=("overriders",) if not self.overriders.is_empty() else ("targetCluster",),
            )
        return self

    def effective_rules(self) -> list[RuleWithCluster]:
        """`overrideRules`, or the deprecated single rule turned into that shape."""
        if self.override_rules:
            return list(self.override_rules)
        if self.overriders.is_empty():
            return []
        return [RuleWithCluster(target_cluster=self.target_cluster, overriders=self.overriders)]


def _override_notices(spec: OverrideSpec) -> list[Notice]:
    found: list[Notice] = []
    if spec.target_cluster is not None or not spec.overriders.is_empty():
        where = "overriders" if not spec.overriders.is_empty() else "targetCluster"
        found.append(
            Notice(("spec", where), "deprecated since Karmada v1.0: use overrideRules instead")
        )
    for index, rule in enumerate(spec.effective_rules()):
        base: tuple[str | int, ...] = (
            ("spec", "overrideRules", index) if spec.override_rules else ("spec",)
        )
        found.extend(_overrider_notices(rule.overriders, base=(*base, "overriders")))
    return found


def _overrider_notices(overriders: Overriders, *, base: tuple[str | int, ...]) -> list[Notice]:
    """Edits that load but do nothing, named so a user does not wait for them to work."""
    found: list[Notice] = []
    for index, plain in enumerate(overriders.plaintext):
        if plain.operator == "remove" and plain.value is not None:
            found.append(
                Notice(
                    (*base, "plaintext", index, "value"),
                    "ignored: operator remove takes no value (Karmada ignores it as well)",
                )
            )
    for index, image in enumerate(overriders.image_overrider):
        if image.predicate is not None and not image.predicate.path.endswith("/image"):
            found.append(
                Notice(
                    (*base, "imageOverrider", index, "predicate", "path"),
                    f"{image.predicate.path!r} names no image: a predicate points at a"
                    " container's image (…/containers/N/image); elsewhere the override"
                    " fails on every copy it renders",
                )
            )
        value = image.value
        if image.component != "Tag" or image.operator != "replace":
            continue
        if not (IMAGE_TAG.fullmatch(value) or IMAGE_DIGEST.fullmatch(value)):
            found.append(
                Notice(
                    (*base, "imageOverrider", index, "value"),
                    f"{value!r} is neither a tag nor a digest (sha256:<hex>): as in"
                    " Karmada, the image is left unchanged",
                )
            )
    if overriders.field_overrider:
        found.append(
            Notice(
                (*base, "fieldOverrider"),
                "fieldOverrider is accepted but not acted on: "
                + NOT_ACTED_ON[("overrideRules[*]", "overriders", "fieldOverrider")],
            )
        )
    return found


class _OverrideBase(KubeObject):
    spec: OverrideSpec

    def warnings(self) -> list[Notice]:
        """Deprecated forms, fields fedctl does not act on yet, and selectors of kinds
        that look misspelt."""
        return [*selector_notices(self.spec.resource_selectors), *_override_notices(self.spec)]


class OverridePolicy(_OverrideBase):
    """Namespaced overrides for templates in the policy's namespace."""

    api_version: Literal["policy.karmada.io/v1alpha1"] = "policy.karmada.io/v1alpha1"
    kind: Literal["OverridePolicy"] = "OverridePolicy"


class ClusterOverridePolicy(_OverrideBase):
    """Cluster-wide overrides, applied before any namespaced OverridePolicy."""

    api_version: Literal["policy.karmada.io/v1alpha1"] = "policy.karmada.io/v1alpha1"
    kind: Literal["ClusterOverridePolicy"] = "ClusterOverridePolicy"
