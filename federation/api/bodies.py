"""Request bodies -> validated models, for the object routes (`api.objects`).

Fed by their create, update and apply handlers with a body's text and content type;
feeds them the models, or one `errors.Invalid` carrying every finding (a 400 that writes
nothing).

YAML bodies go through the policy loader, so findings read `<request>:LINE:COL: path:
message` as `fedctl validate` prints them. JSON bodies are decoded here and each document
validated alone. JSON has no lines to point at, so a finding about one document of a
list names it by its place and object, `items[1] (Queue j2): spec.weight: ...`, as
Kubernetes names the item of a List it refuses: two items wrong in the same way were two
identical lines, and the client could not tell which to fix (`fedctl apply`, which sends
its files as JSON items, puts such a finding back at its file and line).

Why JSON is held to YAML's nesting limit (`loading.MAX_FLOW_DEPTH`, 64 levels): no
Kubernetes object comes near it, and past a few hundred levels the model's serializer,
then the JSON decoder itself, gave up with errors that became a 500. Judged on the text
before it is decoded, so a body of a million brackets costs one scan and says where.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Protocol

from aiohttp import web

from federation import errors
from federation.api import auth
from federation.registry import keys, objects
from policies import loading
from policies.loading.findings import format_path
from policies.models.base import KubeObject
from policies.models.workload import Workload

__all__ = ["FILENAME", "Admit", "admit_each", "documents", "named"]

FILENAME = "<request>"
"""What findings call a body, in place of a file name."""

_JSON_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
"""A JSON string (skipped whole: brackets in it do not nest) or a bracket."""


def documents(text: str, *, content_type: str) -> list[KubeObject]:
    """Every document of a body, validated; every error found raises one `Invalid`."""
    if "yaml" in content_type:
        result = loading.load_text(text, filename=FILENAME)
        found = result.findings
        models = [o.model for o in result.objects]
    else:
        found, models = _json_documents(text)
    failures = [str(f) for f in found if f.is_error]
    if failures:
        raise errors.Invalid("; ".join(failures), findings=failures)
    for model in models:
        objects.key_for(model)  # names are checked before anything is stored
    return models


def _json_documents(text: str) -> tuple[list[loading.Finding], list[KubeObject]]:
    """Findings and models of a JSON body: one object, a list of them, or a List's
    `items`; a document of a list is named by its place in it (module doc)."""
    deep = _too_deep(text)
    if deep is not None:
        line, col = deep
        message = f"invalid JSON: nested deeper than {loading.MAX_FLOW_DEPTH} levels"
        return [loading.Finding(FILENAME, line, col, "", message)], []
    doc = json.loads(text, parse_int=_integer)  # malformed: the error middleware's 400
    if isinstance(doc, dict) and "items" in doc:
        listed, docs = "items", doc["items"]
    else:
        listed, docs = "", doc
    if not isinstance(docs, list):
        checked = [_checked(docs, FILENAME)]
    else:
        checked = [_checked(d, f"{listed}[{i}]{_named(d)}") for i, d in enumerate(docs)]
    return [f for c in checked for f in c.findings], [c.model for c in checked if c.model]


class _Long(int):
    """An integer of more digits than Python reads (`loading.MAX_INT_DIGITS`): kept as
    its length, so the document holding it is refused naming its field, not with a 500."""

    digits: int


def _integer(text: str) -> int:
    if len(text.lstrip("-")) <= loading.MAX_INT_DIGITS:
        return int(text)
    long = _Long(0)
    long.digits = len(text.lstrip("-"))
    return long


def _checked(doc: Any, filename: str) -> loading.Checked:
    """One document validated, or refused at the first integer too long to read."""
    found = _long_at(doc, ())
    if found is None:
        return loading.validate_document(doc, filename=filename)
    path, digits = found
    finding = loading.Finding(filename, 0, 0, format_path(path), loading.too_long(digits))
    return loading.Checked(None, [finding])


def _long_at(value: Any, path: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], int] | None:
    """The path and length of the first too-long integer in `value`, if any."""
    if isinstance(value, _Long):
        return path, value.digits
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in children:
        found = _long_at(child, (*path, key))
        if found is not None:
            return found
    return None


class Admit(Protocol):
    """Raises (a 403) unless the caller may write objects of the resource in the namespace
    (None: cluster-scoped), of the workload kind given (its `Kind.group` key segment),
    selecting what of the namespace's limits a policy can (`auth.selected_limits`);
    `what` names the object refused. `auth.Authenticator.admit` is the one there is."""

    def __call__(
        self,
        request: web.Request,
        res: objects.Resource,
        ns: str | None,
        /,
        *,
        kind: str | None = None,
        selects: str | None = None,
        what: str = "",
    ) -> None: ...


def admit_each(
    admit: Admit | None,
    request: web.Request,
    models: Iterable[KubeObject],
    *,
    stored: bool = False,
) -> None:
    """Every document judged by the tenant rules as the write it asks for, by its real scope
    (`objects.access_namespace`), before anything is read or stored: a create, an update,
    each document of an apply and of a plan. The refusal names the document (`named`), so
    a client sending many can say which, and where in its files (`fedctl apply`).

    `stored`: the models are what an update or deletion replaces, judged too, since
    replacing or deleting an admin's policy that places a namespace's quota removes
    that quota from the members as surely as writing one would."""
    if admit is None:
        return
    for obj in models:
        kind = keys.kind_segment(obj.api_version, obj.kind) if isinstance(obj, Workload) else None
        res, ns = objects.resource_for_kind(obj), objects.access_namespace(obj)
        what = f"the stored {named(obj)}" if stored else named(obj)
        admit(request, res, ns, kind=kind, selects=auth.selected_limits(obj), what=what)


def named(obj: KubeObject) -> str:
    """`Kind ns/name` (`Kind name` when cluster-scoped), as refusals open with it."""
    where = f"{obj.metadata.namespace}/" if obj.metadata.namespace else ""
    return f"{obj.kind} {where}{obj.metadata.name}"


def _named(doc: Any) -> str:
    """` (Kind ns/name)` of a document, as far as it says; empty when it says neither."""
    if not isinstance(doc, dict):
        return ""
    kind, meta = doc.get("kind"), doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(kind, str) or not isinstance(name, str) or not kind or not name:
        return ""
    where = f"{namespace}/" if isinstance(namespace, str) and namespace else ""
    return f" ({kind} {where}{name})"


def _too_deep(text: str) -> tuple[int, int] | None:
    """Line and column of the first bracket nested past the limit; None when none is."""
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > loading.MAX_FLOW_DEPTH:
                at = token.start()
                return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
        elif char in "]}":
            depth -= 1
    return None
