"""Findings: one problem in one place of one file, printed as `FILE:LINE:COL: path: message`.

Role: the single shape every loader step reports in (YAML syntax, kinds, model validation,
cross-document checks), so the CLI prints them, `-o json` serialises them and the REST
API returns them without each inventing a format. Fed by every module of
`policies.loading`; feeds `fedctl validate`, `fedctl apply` and the API's 400 answers.

Why line 0 exists: JSON sent to the API has no lines; such findings print as
`FILE: path: message`, and so do file-level ones (a missing file has no line either).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Finding", "PathPart", "Severity", "format_path", "suggest"]

Severity = Literal["error", "warning"]
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
PathPart = str | int


@dataclass(frozen=True, order=True)
class Finding:
    """A problem (error) or a caution (warning) at a place in a file."""

    file: str
    line: int
    col: int
    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        label = "warning: " if self.severity == "warning" else ""
        if self.path:
            return f"{where}: {self.path}: {label}{self.message}"
        return f"{where}: {label}{self.message}"

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by `fedctl validate -o json` and the REST API."""
        return {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
        }


def format_path(parts: Sequence[PathPart]) -> str:
    """`("spec", "rules", 0, "name")` -> `spec.rules[0].name`.

    Keys that are not plain identifiers (`nvidia.com/gpu`, `fedctl.io/chips`) are bracketed
    and quoted, so the path stays unambiguous: `spec.overall["nvidia.com/gpu"]`.
    """
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not _PLAIN.fullmatch(part):
            text += f"[{json.dumps(part)}]"
        else:
            text += f".{part}" if text else part
    return text


def suggest(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest candidate, or an empty string."""
    choices = [c for c in candidates if c != word]
    lowered = {c.lower(): c for c in choices}
    if word.lower() in lowered:
        return f" (did you mean {lowered[word.lower()]!r}?)"
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
