"""Pydantic validation errors -> findings a platform engineer can act on.

Role: pydantic reports `('spec', 'placement', 'replicaScheduling', 'replicaSchedulingTyp')`
and "Extra inputs are not permitted"; users need the line of that key and
`unknown field 'replicaSchedulingTyp' (did you mean 'replicaSchedulingType'?)`. This module
maps each error's location onto the document (skipping pydantic's union tags), picks the
position (the key for an unknown field, the parent for a missing one, the value otherwise)
and rewrites the message. Fed by `policies.loading.documents`; feeds findings back to it.

Why the field candidates come from walking the model class: pydantic does not say which
fields were allowed where an unknown one appeared, and "did you mean" needs them.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from policies.loading.findings import Finding, PathPart, format_path, suggest
from policies.loading.source import SourceMap
from policies.models.common import RuleErrors

__all__ = ["describe_value", "findings_from_error"]

_TYPE_NAMES = {
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "decimal_type": "a number",
    "decimal_parsing": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}
_BOUNDS = {
    "greater_than": ("gt", "must be greater than {}"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be at most {}"),
}
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


def describe_value(value: Any) -> str:
    """`string 'abc'`, `integer 5`, `a mapping`: how a YAML user would name a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value:g}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def findings_from_error(
    exc: ValidationError,
    *,
    model: type[BaseModel],
    data: Any,
    source: SourceMap,
    filename: str,
) -> list[Finding]:
    """One finding per pydantic error (per rule, when a validator reports several), in
    document order."""
    found = []
    for err in exc.errors():
        ctx = err.get("ctx") or {}
        several = ctx.get("error") if err["type"] == "value_error" else None
        if isinstance(several, RuleErrors):
            for one in several.errors:
                single: Any = {**err, "msg": str(one), "ctx": {**ctx, "error": one}}
                found.append(
                    _finding(single, model=model, data=data, source=source, filename=filename)
                )
            continue
        found.append(_finding(err, model=model, data=data, source=source, filename=filename))
    return sorted(set(found), key=lambda f: (f.line, f.col, f.path, f.message))


def _finding(
    err: ErrorDetails, *, model: type[BaseModel], data: Any, source: SourceMap, filename: str
) -> Finding:
    path = _document_path(err["loc"], data)
    kind = err["type"]
    ctx = err.get("ctx") or {}
    at_key = kind == "extra_forbidden"
    message = _message(err, path=path, model=model)
    if kind in ("value_error", "assertion_error") and isinstance(ctx.get("error"), Exception):
        extra = getattr(ctx["error"], "at", ())
        path = (*path, *extra)
        at_key = bool(getattr(ctx["error"], "on_key", False))
    line, col = source.locate(path, key=at_key)
    return Finding(filename, line, col, format_path(path), message)


def _document_path(loc: Sequence[PathPart], data: Any) -> tuple[PathPart, ...]:
    """The error location as a path in the document, without pydantic's union tags."""
    path: list[PathPart] = []
    node = data
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if part == "[key]":
            continue
        in_mapping = isinstance(node, Mapping) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_mapping or in_list:
            node = node[part]
            path.append(part)
        elif last and isinstance(node, Mapping):
            path.append(part)  # a missing or unknown field of this mapping
    return tuple(path)


def _message(err: ErrorDetails, *, path: tuple[PathPart, ...], model: type[BaseModel]) -> str:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    name = str(path[-1]) if path else ""
    if kind == "extra_forbidden":
        instead = _foreign_field(model, path)
        if instead is not None:
            return f"unknown field {name!r}: {instead}"
        candidates = _fields_at(model, path[:-1])
        hint = suggest(name, candidates)
        if hint or not candidates:
            return f"unknown field {name!r}{hint}"
        return f"unknown field {name!r}; known fields: {', '.join(sorted(set(candidates)))}"
    if kind == "missing":
        return f"required field {name!r} is missing"
    if kind == "literal_error":
        allowed = _QUOTED.findall(str(ctx.get("expected", "")))
        shown = value if isinstance(value, str) else describe_value(value)
        hint = suggest(value, allowed) if isinstance(value, str) else ""
        return f"invalid value {shown!r}: expected one of {', '.join(allowed)}{hint}"
    if kind in _TYPE_NAMES:
        return f"expected {_TYPE_NAMES[kind]}, got {describe_value(value)}"
    if kind in _BOUNDS:
        key, text = _BOUNDS[kind]
        return f"{text.format(ctx.get(key))}, got {value}"
    if kind in ("too_short", "string_too_short"):
        least = ctx.get("min_length", 1)
        if kind == "string_too_short":
            return "must not be empty" if least == 1 else f"must be at least {least} characters"
        return f"must have at least {least} item{'s' if least != 1 else ''}"
    if kind in ("too_long", "string_too_long"):
        most = ctx.get("max_length")
        unit = "characters" if kind == "string_too_long" else "items"
        return f"must be at most {most} {unit}, got {len(value) if value is not None else 0}"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    return str(err["msg"])


def _foreign_field(model: type[BaseModel], path: Sequence[PathPart]) -> str | None:
    """What to write instead of a field another scheduler's object has in this place
    (a model's `FOREIGN_FIELDS`: a Kueue `cohort` on a Queue), or None."""
    if not path:
        return None
    current: list[Any] = [model]
    for part in path[:-1]:
        current = [t for c in current for t in _step(c, part)]
    for candidate in current:
        for model_cls in _models_in(candidate):
            foreign = getattr(model_cls, "FOREIGN_FIELDS", None)
            if isinstance(foreign, Mapping) and str(path[-1]) in foreign:
                return str(foreign[str(path[-1])])
    return None


def _fields_at(model: type[BaseModel], path: Sequence[PathPart]) -> list[str]:
    """Wire names of the fields allowed at `path` (a mapping inside `model`)."""
    current: list[Any] = [model]
    for part in path:
        current = [t for c in current for t in _step(c, part)]
    names: list[str] = []
    for candidate in current:
        for model_cls in _models_in(candidate):
            for fname, info in model_cls.model_fields.items():
                names.append(info.alias or fname)
    return names


def _step(annotation: Any, part: PathPart) -> list[Any]:
    out: list[Any] = []
    for option in _options(annotation):
        origin = typing.get_origin(option)
        if isinstance(option, type) and issubclass(option, BaseModel) and isinstance(part, str):
            for fname, info in option.model_fields.items():
                if part in (info.alias, fname):
                    out.append(info.annotation)
        elif origin in (list, tuple, set, frozenset, Sequence) and isinstance(part, int):
            out.extend(typing.get_args(option)[:1])
        elif origin in (dict, Mapping) and isinstance(part, str):
            out.extend(typing.get_args(option)[1:2])
    return out


def _options(annotation: Any) -> list[Any]:
    """A union's members (Annotated metadata stripped), or the annotation itself."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _options(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [o for arg in typing.get_args(annotation) for o in _options(arg)]
    return [annotation]


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    return [o for o in _options(annotation) if isinstance(o, type) and issubclass(o, BaseModel)]
