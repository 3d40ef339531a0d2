"""A Secret's values as Kubernetes treats them: `stringData` is write-only, `data` is
base64, and neither is ever repeated in a message.

Fed by the API's writes and reads of workload templates, the propagator's rendering
and the field checks of the loader (`policies.loading.kube_fields`); feeds them the
folded object, the base64 verdict and the placeholder said in place of a value.

Why fold at write: the API server merges `stringData` into `data` (its entries winning)
and never returns it, so a reader sees base64, not the password as typed; kept as
written, `fedctl get secret -o yaml`, lists and watches showed it in clear. Why check
base64: a member's API server refuses a Secret whose `data` does not decode, so the
template is refused at its line rather than found failing in every member.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["REDACTED", "base64_problem", "fold", "is_secret"]

REDACTED: Final = "<secret contents redacted>"
"""Said in place of a Secret's value, as Kubernetes' field errors do."""

_ALPHABET: Final = re.compile(r"[^A-Za-z0-9+/=]")


def is_secret(doc: Mapping[str, Any]) -> bool:
    return (doc.get("apiVersion"), doc.get("kind")) == ("v1", "Secret")


def fold(doc: Mapping[str, Any]) -> dict[str, Any]:
    """`doc` with a v1 Secret's `stringData` merged into `data`, base64-encoded, its
    entries winning over `data`'s of the same key (Kubernetes' rule). Any other object,
    or a Secret with a `stringData` value that is not a string (refused at write; a
    member would refuse it), is returned as it is."""
    string_data = doc.get("stringData")
    if not is_secret(doc) or not isinstance(string_data, Mapping):
        return dict(doc)
    if not all(isinstance(v, str) for v in string_data.values()):
        return dict(doc)
    data = dict(doc.get("data") or {})
    for key, value in string_data.items():
        data[key] = base64.b64encode(value.encode("utf-8")).decode("ascii")
    folded = {k: v for k, v in doc.items() if k != "stringData"}
    folded["data"] = data
    return folded


def base64_problem(value: str) -> str | None:
    """Why a `data` value is not base64 as a member's API server decodes it (Go's
    standard encoding: its alphabet, padded to whole quanta of 4; line breaks skipped),
    with the byte Go's error names, or None. Its content is never quoted."""
    text = value.replace("\r", "").replace("\n", "")
    bad = _ALPHABET.search(text)
    if bad is not None:
        return f"illegal base64 data at input byte {bad.start()}"
    pad = text.find("=")
    if pad >= 0 and (text[pad:] not in ("=", "==") or len(text) % 4):
        return f"illegal base64 data at input byte {pad}: misplaced padding"
    if len(text) % 4:
        return f"illegal base64 data at input byte {len(text) - len(text) % 4}: not padded"
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return "illegal base64 data"
    return None
