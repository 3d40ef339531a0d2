"""Label and field selectors, parsed once and matched against stored objects.

The store filters lists and watch fan-out with these; kubectl and the Python client send
them as query strings (`describe node` sends `spec.nodeName=N,status.phase!=Succeeded`,
`rollout status` sends `metadata.name=X`). Parsing happens once per request, matching once
per object, so a `Selector` is a compiled tuple of predicates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clusters.sim.api_errors import ApiError

__all__ = ["Selector", "field_selector", "label_selector", "match_all", "selects"]

Predicate = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class Selector:
    """A conjunction of predicates over an object; empty means everything matches."""

    predicates: tuple[Predicate, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(p(obj) for p in self.predicates)

    def __bool__(self) -> bool:
        return bool(self.predicates)


match_all = Selector()

_OPERATOR_CHARS = frozenset("=!<>(),")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_COMMON_FIELDS = {"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace"}
_FIELD_LABELS: dict[tuple[str, str], dict[str, str]] = {
    ("v1", "Pod"): {
        f: f
        for f in (
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        )
    },
    ("v1", "Node"): {"spec.unschedulable": "spec.unschedulable"},
    ("v1", "Event"): {
        **{
            f"involvedObject.{f}": f"involvedObject.{f}"
            for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")
        },
        "involvedObject.fieldPath": "involvedObject.fieldPath",
        "reason": "reason",
        "reportingComponent": "reportingComponent",
        "source": "source.component",
        "type": "type",
    },
    ("v1", "Secret"): {"type": "type"},
    ("v1", "Namespace"): {"status.phase": "status.phase"},
    ("v1", "Service"): {"spec.clusterIP": "spec.clusterIP", "spec.type": "spec.type"},
    ("apps/v1", "ReplicaSet"): {"status.replicas": "status.replicas"},
    ("batch/v1", "Job"): {"status.successful": "status.succeeded"},
}
"""The field labels each kind's list accepts (upstream `AddFieldLabelConversionFunc`s),
beyond `metadata.name` and `metadata.namespace`: label -> the path it reads."""

_SET_RE = re.compile(r"^\s*(!?)\s*([^\s!=<>]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def _label_eq(key: str, value: str, *, negate: bool) -> Predicate:
    def pred(obj: Mapping[str, Any]) -> bool:
        return (_labels(obj).get(key) == value) != negate

    return pred


def _label_term(term: str) -> Predicate:
    for op in ("!=", "==", "="):
        if op in term and not re.search(r"\s(in|notin)\s*\(", term):
            key, value = (s.strip() for s in term.split(op, 1))
            if value[:1] in _OPERATOR_CHARS:
                # upstream's lexer reads `a===` as `a`, `==`, `=`: no value where one must be
                raise ApiError(400, "BadRequest", f"found '{value[0]}', expected: identifier")
            if not _LABEL_VALUE.match(value):
                raise ApiError(
                    400,
                    "BadRequest",
                    f"unable to parse requirement: values[0][{key}]: Invalid value: "
                    f'"{value}": {_LABEL_VALUE_MSG}',
                )
            return _label_eq(key, value, negate=op == "!=")
    m = _SET_RE.match(term)
    if not m:
        raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")
    neg, key, op, values = m.groups()
    if op:
        allowed = frozenset(v.strip() for v in values.split(",") if v.strip())
        if op == "in":
            return lambda o: _labels(o).get(key) in allowed
        return lambda o: _labels(o).get(key) not in allowed
    if neg:
        return lambda o: key not in _labels(o)
    return lambda o: key in _labels(o)


def label_selector(text: str | None) -> Selector:
    """Parse `a=b,c!=d,e in (x,y),f notin (z),g,!h`."""
    if not text:
        return match_all
    return Selector(tuple(_label_term(t) for t in _split_top(text)))


def _field_value(obj: Mapping[str, Any], parts: tuple[str, ...]) -> str:
    cur: Any = obj
    for part in parts:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _field_eq(path: str, value: str, *, negate: bool) -> Predicate:
    parts = tuple(path.split("."))

    def pred(obj: Mapping[str, Any]) -> bool:
        return (_field_value(obj, parts) == value) != negate

    return pred


def _field_term(term: str, labels: Mapping[str, str]) -> Predicate:
    for op in ("!=", "==", "="):
        if op in term:
            label, value = (s.strip() for s in term.split(op, 1))
            if label not in labels:
                raise ApiError(400, "BadRequest", f"field label not supported: {label}")
            return _field_eq(labels[label], value, negate=op == "!=")
    raise ApiError(400, "BadRequest", f"invalid selector: '{term}'; can't understand '{term}'")


def field_selector(text: str | None, *, api_version: str, kind: str) -> Selector:
    """Parse `spec.nodeName=n1,status.phase!=Failed`; 400 for a field label the kind's
    list does not support, as upstream (which would otherwise answer an empty list)."""
    if not text:
        return match_all
    labels = {**_COMMON_FIELDS, **_FIELD_LABELS.get((api_version, kind), {})}
    return Selector(tuple(_field_term(t, labels) for t in _split_top(text)))


def selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Whether a LabelSelector object (`matchLabels`, `matchExpressions` with the four
    operators) selects `labels`: admission checks templates and controllers adopt with it."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or ()
        present = key in labels
        if (
            (op == "In" and (not present or labels[key] not in values))
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True
