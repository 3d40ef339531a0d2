"""Kubernetes' limit on what one ConfigMap or Secret holds, judged where a file is read.

Role: one of the rules every member's API server applies (`documents._kubernetes_rules`).
Fed a decoded document; feeds its findings to `fedctl validate`, `fedctl apply` and the
REST API's 400s.

Why here: the Kubernetes API server refuses a ConfigMap whose `data` and `binaryData`
together, or a Secret whose `data` (with `stringData`), hold more than 1 MiB
(`MaxSecretSize`), so no member would take the copy. The registry judged such an object
only when it wrote it, and etcd refused one of 1.9 MiB as too large after the documents
before it in the same apply were stored. Binary values count decoded, as the API server
counts them; keys do not count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.loading.findings import Finding, format_path
from policies.loading.source import SourceMap

__all__ = ["MAX_DATA_BYTES", "data_findings"]

MAX_DATA_BYTES = 1024 * 1024
"""What one ConfigMap or Secret may hold (Kubernetes' `MaxSecretSize`)."""

_HOLDERS = {
    "ConfigMap": (("data", False), ("binaryData", True)),
    "Secret": (("data", True), ("stringData", False)),
}
"""Per kind, the fields whose values count, and whether each is base64 (counted decoded)."""


def data_findings(doc: Mapping[str, Any], *, source: SourceMap, filename: str) -> list[Finding]:
    """The finding for a core ConfigMap or Secret holding more than `MAX_DATA_BYTES`, at
    the first field holding data; none for anything else."""
    fields = _HOLDERS.get(doc.get("kind", "")) if doc.get("apiVersion") == "v1" else None
    if fields is None:
        return []
    held = 0
    present: list[str] = []
    for field, encoded in fields:
        values = doc.get(field)
        if not isinstance(values, Mapping):
            continue
        present.append(field)
        held += sum(_size(v, encoded=encoded) for v in values.values() if isinstance(v, str))
    if held <= MAX_DATA_BYTES:
        return []
    line, col = source.locate((present[0],), key=True)
    message = (
        f"Too long: must have at most {MAX_DATA_BYTES} bytes; this {doc['kind']} holds {held}"
        f" bytes in {' and '.join(present)}, which every member's API server refuses"
        " (split it, or keep what is large elsewhere)"
    )
    return [Finding(filename, line, col, format_path((present[0],)), message)]


def _size(value: str, *, encoded: bool) -> int:
    """Bytes a value holds: base64 counted as the bytes it decodes to."""
    if not encoded:
        return len(value.encode())
    text = "".join(value.split())
    return len(text) * 3 // 4 - text[-2:].count("=")
