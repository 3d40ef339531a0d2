"""Kubernetes' list and watch filters: `labelSelector` and `fieldSelector`, judged on the
objects a list or watch of any kind returns (`objects.ObjectsApi`, `watch.WatchApi`).

Why here and not left to the client: a script that lists `?labelSelector=app=x` and
deletes what comes back deleted every object when the parameter was ignored. So what is
taken is taken exactly as the Kubernetes API server takes it, and what is not supported
is a 400 naming the parameter, never silently ignored:

    labelSelector   key=v, key==v, key!=v, key in (a,b), key notin (a,b), key, !key,
                    joined by commas (all must hold)
    fieldSelector   metadata.name and metadata.namespace, with =, == or !=; on clusters
                    also spec.region, spec.zone and spec.provider (`KIND_FIELDS`): they
                    are spec fields, not labels, so `-l region=eu-west` found nothing
    limit           ignored: a list is returned whole, at one resourceVersion, with no
                    continue token, which Kubernetes' API conventions let a server that
                    does not page do; kubectl and client-go's pager send limit=500 on
                    every list, and refusing it broke each of them
    continue        refused: no continue token is ever issued, so one given is not ours

The views of `status.fedctl.io` (workloads, queues, costs), computed from several kinds,
take none of Kubernetes' list parameters: each is refused there (`not_taken`), for a
selector they ignored returned every item; `limit` alone is ignored there too, as above.

A watch with a selector sends what a client filtering the full stream would keep, as
Kubernetes does: an object that stops matching is DELETED, one that starts matching is
ADDED.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from federation import errors

__all__ = ["EVERYTHING", "KIND_FIELDS", "Filter", "from_query", "not_taken"]

_KEY = r"(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_EXISTS = re.compile(rf"(?P<not>!?)\s*(?P<key>{_KEY})")
_EQUALS = re.compile(rf"(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})")
_SET = re.compile(rf"(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)")
_FIELDS = ("metadata.name", "metadata.namespace")
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "clusters": ("spec.region", "spec.zone", "spec.provider"),
}
"""Field selectors a kind (by plural) takes beyond `_FIELDS`, as a Kubernetes kind adds its
own (a Pod's `spec.nodeName`): where a member is, which a fleet is chosen by."""

Test = Callable[[Mapping[str, Any]], bool]
"""Whether one object (as the API shows it) meets one requirement."""


@dataclass(frozen=True, slots=True)
class Filter:
    """The requirements a list or watch was given; every one must hold."""

    tests: tuple[Test, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tests)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(test(obj) for test in self.tests)

    def event(
        self, kind: str, obj: Mapping[str, Any], before: Mapping[str, Any] | None
    ) -> str | None:
        """The type of the watch event a change is sent as, or None when it is not sent:
        `before` is the object the change replaced, if known."""
        if not self.tests or kind in ("BOOKMARK", "ERROR"):
            return kind
        now = self.matches(obj)
        if kind != "MODIFIED" or before is None:
            return kind if now else None
        was = self.matches(before)
        if now:
            return "MODIFIED" if was else "ADDED"
        return "DELETED" if was else None


EVERYTHING = Filter()


def from_query(query: Mapping[str, str], *, kind: str | None = None) -> Filter:
    """The filter of a list or watch request's query; Invalid naming the parameter for
    one that is malformed or not supported. `kind`: the plural listed, whose own fields
    (`KIND_FIELDS`) may be selected on too; None for a watch of several kinds."""
    _limit(query)
    if query.get("continue"):
        raise errors.Invalid(
            f"continue: Invalid value: {query['continue']!r}: no continue token is ever"
            " issued here: lists are returned whole, at one resourceVersion; list again"
            " without continue"
        )
    tests = [
        *_labels(query.get("labelSelector", "")),
        *_fields(query.get("fieldSelector", ""), kind=kind),
    ]
    return Filter(tuple(tests))


_LIST_PARAMETERS = (
    *("labelSelector", "fieldSelector", "limit", "continue", "watch", "resourceVersion"),
    *("resourceVersionMatch", "sendInitialEvents", "timeoutSeconds"),
)
"""Kubernetes' list and watch query parameters."""


def not_taken(query: Mapping[str, str], *, view: str) -> None:
    """Refuse, naming it, a Kubernetes list parameter given to `view`, which takes none
    (but `limit`, ignored: the view is whole)."""
    _limit(query)
    for name in _LIST_PARAMETERS:
        if name == "limit":
            continue
        if query.get(name, "").lower() not in ("", "false", "0"):
            raise errors.Invalid(
                f"{name}: not supported by {view}, a view computed from several kinds: it"
                " returns every item the caller may read; filter them on the client"
            )


def _limit(query: Mapping[str, str]) -> None:
    """A `limit` is ignored (see the module doc), but one that is not a count is refused,
    as kube-apiserver refuses it: a typo should not pass for paging."""
    text = query.get("limit", "")
    if text and not (text.isascii() and text.isdigit()):
        raise errors.Invalid(
            f"limit: Invalid value: {text!r}: expected a whole number, 0 or more"
            " (ignored: lists are returned whole)"
        )


def _terms(text: str) -> list[str]:
    """`text` split at the commas outside parentheses."""
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(text[start:i].strip())
            start = i + 1
    terms.append(text[start:].strip())
    return [t for t in terms if t] if text.strip() else []


def _labels(text: str) -> list[Test]:
    tests: list[Test] = []
    for term in _terms(text):
        if m := _SET.fullmatch(term):
            values = frozenset(v.strip() for v in m["values"].split(","))
            bad = [v for v in values if not re.fullmatch(_VALUE, v)]
            if bad or not values - {""}:
                raise _bad("labelSelector", term, "a set of label values, e.g. (a,b)")
            tests.append(_in(m["key"], values, inside=m["op"] == "in"))
        elif m := _EQUALS.fullmatch(term):
            tests.append(_in(m["key"], frozenset({m["value"]}), inside=m["op"] != "!="))
        elif m := _EXISTS.fullmatch(term):
            tests.append(_has(m["key"], present=not m["not"]))
        else:
            raise _bad(
                "labelSelector",
                term,
                "key=value, key==value, key!=value, key in (a,b), key notin (a,b), key or !key",
            )
    return tests


def _in(key: str, values: frozenset[str], *, inside: bool) -> Test:
    """`key in values` (`inside`), or `key notin values`, which an object without the
    label meets, as in Kubernetes (so does `key!=value`)."""

    def test(obj: Mapping[str, Any]) -> bool:
        labels = _labels_of(obj)
        if key not in labels:
            return not inside
        return (labels[key] in values) == inside

    return test


def _has(key: str, *, present: bool) -> Test:
    return lambda obj: (key in _labels_of(obj)) == present


def _labels_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _fields(text: str, *, kind: str | None) -> list[Test]:
    known = (*_FIELDS, *KIND_FIELDS.get(kind or "", ()))
    tests: list[Test] = []
    for term in _terms(text):
        m = re.fullmatch(r"(?P<field>[^=!\s]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^=!]*)", term)
        if m is None:
            raise _bad("fieldSelector", term, "field=value, field==value or field!=value")
        if m["field"] not in known:
            of = f" of {kind}" if kind else ""
            raise errors.Invalid(
                f"fieldSelector: {m['field']!r} is not a known field selector{of}: only"
                f" {', '.join(map(repr, known))}"
            )
        tests.append(_field(m["field"], m["value"], equal=m["op"] != "!="))
    return tests


def _field(path: str, value: str, *, equal: bool) -> Test:
    """`path` (`metadata.name`, `spec.region`) equals `value`; a field not set reads as
    empty, as Kubernetes reads it (`spec.zone=` selects the clusters with no zone)."""
    section, _, name = path.partition(".")

    def test(obj: Mapping[str, Any]) -> bool:
        part = obj.get(section)
        have = part.get(name) if isinstance(part, Mapping) else None
        return ((have or "") == value) == equal

    return test


def _bad(parameter: str, term: str, expected: str) -> errors.Invalid:
    return errors.Invalid(f"{parameter}: Invalid value: {term!r}: expected {expected}")
