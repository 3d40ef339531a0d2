"""`fedctl get -l SELECTOR`: kubectl's label selector syntax, read into a `LabelSelector`.

Fed by the command line (`app=web,tier!=db`, `env in (prod,staging)`, `gpu`, `!legacy`);
feeds `get`, which keeps the objects whose labels match, by the same matching the scheduler
uses for cluster affinity (`plugins.affinity.selector_matches`). A workload's labels are
its template's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from federation import errors
from federation.scheduler.plugins import affinity
from policies.models.common import LabelSelector, LabelSelectorRequirement

__all__ = ["matches", "parse"]

_SET = re.compile(r"^([^\s!=(),]+)\s+(in|notin)\s+\(([^()]*)\)$")
_EQUAL = re.compile(r"^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$")
_KEY = re.compile(r"^(!?)([^\s!=(),]+)$")


def parse(text: str) -> LabelSelector:
    """kubectl's selector: requirements separated by commas (not those inside a set). A key
    or value no label can have is refused, as kubectl refuses it: it would match nothing."""
    try:
        return _parse(text)
    except ValidationError as exc:
        reasons = "; ".join(
            str((e.get("ctx") or {}).get("error") or e["msg"]) for e in exc.errors()
        )
        raise errors.Invalid(f"label selector {text!r}: {reasons}") from None


def _parse(text: str) -> LabelSelector:
    labels: dict[str, str] = {}
    expressions: list[LabelSelectorRequirement] = []
    for part in _split(text):
        if match := _SET.match(part):
            key, op, values = match.groups()
            expressions.append(
                LabelSelectorRequirement(
                    key=key,
                    operator="In" if op == "in" else "NotIn",
                    values=[v.strip() for v in values.split(",") if v.strip()],
                )
            )
        elif match := _EQUAL.match(part):
            key, op, value = match.groups()
            if op == "!=":
                expressions.append(
                    LabelSelectorRequirement(key=key, operator="NotIn", values=[value])
                )
            else:
                labels[key] = value
        elif match := _KEY.match(part):
            negated, key = match.groups()
            operator = "DoesNotExist" if negated else "Exists"
            expressions.append(LabelSelectorRequirement(key=key, operator=operator))
        else:
            raise errors.Invalid(
                f"label selector {text!r}: cannot read {part!r}; use key=value, key!=value,"
                " 'key in (a,b)', 'key notin (a,b)', key or !key, separated by commas"
            )
    return LabelSelector(match_labels=labels, match_expressions=expressions)


def _split(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current.append(char)
    parts.append("".join(current).strip())
    if depth != 0 or not all(parts):
        raise errors.Invalid(f"label selector {text!r}: an empty requirement or an open '('")
    return parts


def matches(selector: LabelSelector, obj: Mapping[str, Any]) -> bool:
    """Whether an API object (as JSON) has labels the selector takes."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return affinity.selector_matches(selector, labels)
