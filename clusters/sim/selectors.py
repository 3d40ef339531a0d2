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

__all__ = ["Selector", "field_selector", "label_selector", "match_all"]

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


def _field_term(term: str) -> Predicate:
    for op in ("!=", "==", "="):
        if op in term:
            path, value = (s.strip() for s in term.split(op, 1))
            return _field_eq(path, value, negate=op == "!=")
    raise ApiError(400, "BadRequest", f"invalid selector: '{term}'; can't understand '{term}'")


def field_selector(text: str | None) -> Selector:
    """Parse `spec.nodeName=n1,status.phase!=Failed` (any dotted path is accepted)."""
    if not text:
        return match_all
    return Selector(tuple(_field_term(t) for t in _split_top(text)))
