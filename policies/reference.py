"""The policy reference: every kind and field of fedctl's models, rendered as Markdown.

Role: the single source of `docs/policy-reference.md`. Fed by the kind table
(`policies.models.kinds`) and the pydantic models behind it (field types, defaults,
constraints, descriptions, docstrings), plus the workload annotations and the Karmada
fields that load but are not acted on yet; feeds the committed reference page and the
unit test that fails when the page no longer matches the models.

Why generated, not written: a hand-kept reference drifts from the models the first time a
field is added, and a reference that is wrong about a default is worse than none. `python
-m policies.reference` rewrites the page; `--check` exits 1 when the committed page is
stale, so CI and the test catch a model change whose page was not regenerated.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import AwareDatetime, BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from policies.models import kinds, override, propagation, queue, workload
from policies.models.accelerator import ChipModel
from policies.models.binding import Binding
from policies.models.work import Work

__all__ = ["DEFAULT_PATH", "main", "render"]

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "docs" / "policy-reference.md"
"""Where the reference is committed (`docs/policy-reference.md` of the repository)."""

_WRITTEN_BY_FEDCTL: tuple[type[BaseModel], ...] = (Binding, Work)
_ANNOTATIONS = (
    (workload.ANNOTATION_QUEUE, "queue"),
    (workload.ANNOTATION_PRIORITY, "priority"),
    (workload.ANNOTATION_CHIPS, "chips"),
    (workload.ANNOTATION_EXPECTED_DURATION, "expected_duration"),
    (workload.ANNOTATION_MIN_AVAILABLE, "min_available"),
)
_CHIP_CHECK = typing.get_args(ChipModel)[1]
_SCALARS: dict[Any, str] = {
    str: "string",
    int: "integer",
    bool: "boolean",
    float: "number",
    Decimal: "decimal",
    AwareDatetime: "timestamp",
}


class _Types:
    """Models and named value types met while rendering, in order of first appearance."""

    def __init__(self) -> None:
        self.models: dict[type[BaseModel], str] = {}
        self.values: dict[str, Any] = {}

    def model_link(self, model: type[BaseModel]) -> str:
        self.models.setdefault(model, model.__name__)
        return f"[{model.__name__}](#{_anchor('type', model.__name__)})"

    def value_link(self, name: str, annotation: Any) -> str:
        self.values.setdefault(name, annotation)
        return f"[{name}](#{_anchor('value', name)})"


def _anchor(*parts: str) -> str:
    text = "-".join(parts).lower()
    return "".join(c if c.isalnum() else "-" for c in text)


def _named_value(annotation: Any) -> str | None:
    """The name of a custom value type (Quantity, Duration, ResourceList, ChipModel)."""
    if annotation is ChipModel:
        return "ChipModel"
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            if meta is _CHIP_CHECK:
                return "ChipModel"
            if hasattr(meta, "__get_pydantic_core_schema__") and not isinstance(meta, FieldInfo):
                return type(meta).__name__.strip("_").removesuffix("Type")
        return None
    is_class = isinstance(annotation, type)
    if is_class and not issubclass(annotation, BaseModel) and annotation not in _SCALARS:
        return annotation.__name__ if hasattr(annotation, "__get_pydantic_core_schema__") else None
    return None


def _type(annotation: Any, seen: _Types) -> str:
    """A readable type with links to nested models and value types."""
    named = _named_value(annotation)
    if named is not None:
        return seen.value_link(named, annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type(args[0], seen)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        shown = [_type(a, seen) for a in args if a is not type(None)]
        return " or ".join(shown)
    if origin is list:
        return f"list of {_type(args[0], seen)}"
    if origin is dict:
        if args[1] is Any:
            return "object"
        return f"map of {_type(args[0], seen)} to {_type(args[1], seen)}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return seen.model_link(annotation)
    if annotation is Any:
        return "any"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _constraints(field: FieldInfo) -> str:
    """Bounds and patterns declared on the field."""
    found: list[str] = []
    for meta in field.metadata:
        if meta is _CHIP_CHECK:
            found.append("chip model name")
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(meta, attr, None)
            if isinstance(meta, annotated_types.BaseMetadata) and value is not None:
                found.append(f"{sign} {value}")
        if isinstance(meta, annotated_types.MinLen):
            found.append(f"min length {meta.min_length}")
        if isinstance(meta, annotated_types.MaxLen):
            found.append(f"max length {meta.max_length}")
        pattern = getattr(meta, "pattern", None)
        if isinstance(pattern, str):
            found.append(f"pattern `{pattern}`")
    return ", ".join(found)


def _show(value: Any, annotation: Any) -> str:
    """A default as it reads on the wire (camelCase, unset fields left out)."""
    wire = TypeAdapter(annotation).dump_python(
        value, mode="json", by_alias=True, exclude_none=True, exclude_defaults=True
    )
    return f"`{json.dumps(wire, sort_keys=True, ensure_ascii=False)}`"


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        return _show(field.default_factory(), field.annotation)  # type: ignore[call-arg]
    if field.default is None:
        return "—"
    return _show(field.default, field.annotation)


def _summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def _cell(text: str) -> str:
    """Table-safe text: pipes escaped, and `<`/`>` outside code spans, so `<chip model>` is
    shown rather than taken for an HTML tag."""
    parts = text.replace("|", "\\|").replace("\n", " ").split("`")
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _fields(model: type[BaseModel], seen: _Types) -> Iterator[str]:
    yield "| field | type | default | constraints | description |"
    yield "|---|---|---|---|---|"
    for name, field in model.model_fields.items():
        annotation = field.annotation
        kind_const = typing.get_origin(annotation) is typing.Literal and name in (
            "api_version",
            "kind",
        )
        shown = f"`{typing.get_args(annotation)[0]}`" if kind_const else _type(annotation, seen)
        default = "required" if kind_const else _default(field)
        description = field.description or ""
        nested = _nested_model(annotation)
        if not description and nested is not None:
            description = _summary(nested.__doc__)
        row = (
            f"`{field.alias or name}`",
            shown,
            default,
            _constraints(field),
            _cell(description),
        )
        yield "| " + " | ".join(row) + " |"


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _kind_section(
    api_version: str, kind: str, model: type[BaseModel], seen: _Types, *, written: bool = False
) -> list[str]:
    scope = "namespaced" if kinds.is_namespaced(kind) else "cluster-scoped"
    scope = "written by fedctl" if written else scope
    lines = [
        f'<a id="{_anchor("kind", api_version, kind)}"></a>',
        f"### `{api_version}` {kind}",
        "",
        f"{_summary(model.__doc__)} ({scope}; model `{model.__module__}.{model.__name__}`)",
        "",
        *_fields(model, seen),
        "",
    ]
    return lines


def _types_section(seen: _Types) -> list[str]:
    lines = ["## Types", "", "Nested objects, in the order the kinds above first use them.", ""]
    done: set[type[BaseModel]] = set()
    while len(done) < len(seen.models):
        model = next(m for m in seen.models if m not in done)
        done.add(model)
        body = list(_fields(model, seen))  # may discover more models
        lines += [
            f'<a id="{_anchor("type", model.__name__)}"></a>',
            f"### {model.__name__}",
            "",
            _summary(model.__doc__),
            "",
            *body,
            "",
        ]
    return lines


def _values_section(seen: _Types) -> list[str]:
    lines = ["## Value types", ""]
    for name, annotation in sorted(seen.values.items()):
        schema = TypeAdapter(annotation).json_schema()
        lines += [
            f'<a id="{_anchor("value", name)}"></a>',
            f"### {name}",
            "",
            schema.get("description", ""),
            "",
        ]
    return lines


def _annotations_section() -> list[str]:
    lines = [
        "## Workload annotations",
        "",
        "Any Kubernetes object may be submitted as a workload; fedctl reads these annotations"
        " from its `metadata.annotations`. Any other annotation under `fedctl.io/` is"
        " warned about by `fedctl validate`, `apply` and `plan` (a misspelt one would"
        " otherwise be ignored), and so is one of these written as a label, or Kueue's"
        " `kueue.x-k8s.io/queue-name` or `kueue.x-k8s.io/priority-class` label, on a"
        " workload without the annotation.",
        "",
        "| annotation | meaning |",
        "|---|---|",
    ]
    for annotation, attribute in _ANNOTATIONS:
        doc = getattr(workload.Workload, attribute).__doc__
        lines.append(f"| `{annotation}` | {_cell(_summary(doc))} |")
    kinds_list = ", ".join(f"`{av}` {k}" for av, k in sorted(workload.WORKLOAD_KINDS))
    opaque = (
        "others are propagated as opaque objects; Karmada's kinds outside"
        " `policy.karmada.io` are refused"
    )
    lines += ["", f"Kinds whose pods fedctl reads ({opaque}): {kinds_list}.", ""]
    return lines


def _migration_section() -> list[str]:
    """Kueue's and Volcano's kinds and Queue fields with fedctl's equivalents: the page a
    migrating team looks them up on, drawn from the same tables as the warnings."""
    lines = [
        "## Kueue and Volcano",
        "",
        "These kinds are accepted as opaque objects, to propagate to members that run Kueue"
        " or Volcano, but fedctl's scheduler does not read them; `fedctl validate` and"
        " `apply` warn at each one's `kind` with what fedctl reads instead:",
        "",
        "| group | kind | scope | instead |",
        "|---|---|---|---|",
    ]
    for group, kind, instead in kinds.migration_table():
        scope = "namespaced" if kinds.is_namespaced(kind) else "cluster"
        lines.append(f"| `{group}` | {kind} | {scope} | {_cell(instead)} |")
    lines += [
        "",
        "A Queue written with one of these Volcano or Kueue fields is refused at the field,"
        " with fedctl's equivalent:",
        "",
        "| field | instead |",
        "|---|---|",
    ]
    for field, instead in queue.QueueSpec.FOREIGN_FIELDS.items():
        lines.append(f"| `spec.{field}` | {_cell(instead)} |")
    lines.append(f"| `spec.guarantee.resource` | {_cell(queue.VOLCANO_GUARANTEE)} |")
    return [*lines, ""]


def _not_acted_on_section() -> list[str]:
    lines = [
        "## Accepted but not acted on",
        "",
        "These fields load (so Karmada YAML is accepted verbatim), and `fedctl validate`"
        " warns when one is set:",
        "",
        "| kinds | field | why |",
        "|---|---|---|",
    ]
    tables = (
        ("PropagationPolicy, ClusterPropagationPolicy", propagation.NOT_ACTED_ON),
        ("OverridePolicy, ClusterOverridePolicy", override.NOT_ACTED_ON),
    )
    for kinds_, fields in tables:
        for path, reason in fields.items():
            lines.append(f"| {kinds_} | `spec.{'.'.join(path)}` | {_cell(reason)} |")
    return [*lines, ""]


def render() -> str:
    """The whole reference page as Markdown (deterministic: same models, same text)."""
    seen = _Types()
    policy_kinds = sorted(kinds.POLICY_KINDS.items())
    lines = [
        "# Policy reference",
        "",
        "<!-- Generated by `python -m policies.reference` from the models in"
        " policies/models/. Do not edit by hand. -->",
        "",
        "Every kind `fedctl apply` and `fedctl validate` accept, with every field: its"
        " camelCase name, type, default (`—`: unset), constraints and meaning. Cross-field"
        " rules (for example `clusterAffinity` and `clusterAffinities` together) are checked"
        " by `fedctl validate`; `fedctl schema KIND` prints the same models as JSON Schema.",
        "",
        "| apiVersion | kind | scope |",
        "|---|---|---|",
    ]
    for (api_version, kind), _model in policy_kinds:
        scope = "namespaced" if kinds.is_namespaced(kind) else "cluster"
        link = f"[{kind}](#{_anchor('kind', api_version, kind)})"
        lines.append(f"| `{api_version}` | {link} | {scope} |")
    lines += ["", "## Kinds", ""]
    for (api_version, kind), model in policy_kinds:
        lines += _kind_section(api_version, kind, model, seen)
    lines += [
        "## Objects fedctl writes",
        "",
        "Read them with `fedctl get` and `fedctl describe`; they are not applied by users.",
        "",
    ]
    for written in _WRITTEN_BY_FEDCTL:
        api_version = str(written.model_fields["api_version"].default)
        kind = str(written.model_fields["kind"].default)
        lines += _kind_section(api_version, kind, written, seen, written=True)
    lines += _types_section(seen)
    lines += _values_section(seen)
    lines += _annotations_section()
    lines += _not_acted_on_section()
    lines += _migration_section()
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the reference page, or with `--check` report whether it is up to date."""
    parser = argparse.ArgumentParser(
        prog="python -m policies.reference", description="Generate docs/policy-reference.md."
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the file differs from the models"
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_PATH, help="file to write/check")
    args = parser.parse_args(argv)
    text = render()
    path: Path = args.output
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            state = "is missing" if current is None else "is out of date with the models"
            print(
                f"{path} {state}; regenerate it with: python -m policies.reference",
                file=sys.stderr,
            )
            return 1
        print(f"{path} is up to date")
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
