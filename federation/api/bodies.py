"""Request bodies -> validated models, for the object routes (`api.objects`).

Fed by their create, update and apply handlers with a body's text and content type;
feeds them the models, or one `errors.Invalid` carrying every finding (a 400 that writes
nothing).

YAML bodies go through the policy loader, so findings read `<request>:LINE:COL: path:
message` as `fedctl validate` prints them. JSON bodies are decoded here and each document
validated alone.

Why JSON is held to YAML's nesting limit (`loading.MAX_FLOW_DEPTH`, 64 levels): no
Kubernetes object comes near it, and past a few hundred levels the model's serializer,
then the JSON decoder itself, gave up with errors that became a 500. Judged on the text
before it is decoded, so a body of a million brackets costs one scan and says where.
"""

from __future__ import annotations

import json
import re

from federation import errors
from federation.registry import objects
from policies import loading
from policies.models.base import KubeObject

__all__ = ["FILENAME", "documents"]

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
    `items`."""
    deep = _too_deep(text)
    if deep is not None:
        line, col = deep
        message = f"invalid JSON: nested deeper than {loading.MAX_FLOW_DEPTH} levels"
        return [loading.Finding(FILENAME, line, col, "", message)], []
    doc = json.loads(text)  # malformed: the error middleware's 400
    docs = doc.get("items") if isinstance(doc, dict) and "items" in doc else doc
    docs = docs if isinstance(docs, list) else [docs]
    checked = [loading.validate_document(d, filename=FILENAME) for d in docs]
    return [f for c in checked for f in c.findings], [c.model for c in checked if c.model]


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
