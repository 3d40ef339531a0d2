"""OverridePolicy and ClusterOverridePolicy: per-cluster edits of a propagated manifest.

Role: Karmada's override kinds under `policy.karmada.io/v1alpha1`, accepted verbatim,
including the deprecated single `targetCluster` + `overriders` form. Fed by
`policies.loading` and the REST API; feeds the propagator, which renders one manifest per
member (registry mirrors per region, chip-specific images, labels, command and args).

Why `effective_rules()`: the legacy form and `overrideRules` mean the same thing; the
propagator should see one shape, and Karmada forbids mixing them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from policies.models.base import FrozenModel, KubeObject
from policies.models.common import ClusterAffinity, Notice, ResourceSelector, RuleError

__all__ = [
    "ClusterOverridePolicy",
    "CommandArgsOverrider",
    "ImageOverrider",
    "LabelAnnotationOverrider",
    "OverridePolicy",
    "OverrideSpec",
    "Overriders",
    "PlaintextOverrider",
    "RuleWithCluster",
]

Operator = Literal["add", "remove", "replace"]


class PlaintextOverrider(FrozenModel):
    """A JSON-patch style edit: `path`, `operator`, `value`."""

    path: str = Field(min_length=1)
    operator: Operator
    value: Any = None

    @model_validator(mode="after")
    def _remove_has_no_value(self) -> PlaintextOverrider:
        if not self.path.startswith("/"):
            raise RuleError(
                f"path {self.path!r} is not a JSON pointer: it starts with '/'"
                f" (e.g. /{self.path.lstrip('./')})",
                at=("path",),
            )
        if self.operator == "remove" and self.value is not None:
            raise RuleError("operator remove takes no value", at=("value",))
        return self


class ImagePredicate(FrozenModel):
    """Restrict an image override to the image at one path."""

    path: str = Field(min_length=1)


class ImageOverrider(FrozenModel):
    """Edit the Registry, Repository or Tag part of `[registry/]repository[:tag]`."""

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


class PatchOperation(FrozenModel):
    """One edit inside a JSON or YAML document held in a string field."""

    sub_path: str = Field(min_length=1)
    operator: Operator
    value: Any = None


class FieldOverrider(FrozenModel):
    """Patch a JSON or YAML document stored in a string field (e.g. a ConfigMap value)."""

    field_path: str = Field(min_length=1)
    json_: list[PatchOperation] = Field(default_factory=list, alias="json")
    yaml: list[PatchOperation] = Field(default_factory=list)


class Overriders(FrozenModel):
    """Every kind of edit; Karmada applies image edits before plaintext ones."""

    plaintext: list[PlaintextOverrider] = Field(default_factory=list)
    image_overrider: list[ImageOverrider] = Field(default_factory=list)
    command_overrider: list[CommandArgsOverrider] = Field(default_factory=list)
    args_overrider: list[CommandArgsOverrider] = Field(default_factory=list)
    labels_overrider: list[LabelAnnotationOverrider] = Field(default_factory=list)
    annotations_overrider: list[LabelAnnotationOverrider] = Field(default_factory=list)
    field_overrider: list[FieldOverrider] = Field(default_factory=list)

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
        if rule.overriders.field_overrider:
            base: tuple[str | int, ...] = (
                ("spec", "overrideRules", index) if spec.override_rules else ("spec",)
            )
            found.append(
                Notice(
                    (*base, "overriders", "fieldOverrider"),
                    "fieldOverrider is accepted but not acted on: not implemented yet",
                )
            )
    return found


class _OverrideBase(KubeObject):
    spec: OverrideSpec

    def warnings(self) -> list[Notice]:
        """Deprecated forms and fields fedctl does not act on yet."""
        return _override_notices(self.spec)


class OverridePolicy(_OverrideBase):
    """Namespaced overrides for templates in the policy's namespace."""

    api_version: Literal["policy.karmada.io/v1alpha1"] = "policy.karmada.io/v1alpha1"
    kind: Literal["OverridePolicy"] = "OverridePolicy"


class ClusterOverridePolicy(_OverrideBase):
    """Cluster-wide overrides, applied before any namespaced OverridePolicy."""

    api_version: Literal["policy.karmada.io/v1alpha1"] = "policy.karmada.io/v1alpha1"
    kind: Literal["ClusterOverridePolicy"] = "ClusterOverridePolicy"
