"""Output for people and scripts: aligned tables, YAML and JSON, ages.

Why one module: every command prints the same way, so `-o json` and `-o yaml` behave the
same everywhere and tables line up like kubectl's.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Sequence
from typing import Any

from ruamel.yaml import YAML

__all__ = ["age", "dump", "table"]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, separated by three spaces, like kubectl."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def dump(doc: Any, fmt: str) -> str:
    """`doc` as JSON or YAML text."""
    if fmt == "json":
        return json.dumps(doc, indent=2)
    yaml = YAML()
    yaml.default_flow_style = False
    out = io.StringIO()
    if isinstance(doc, list):
        yaml.dump_all(doc, out)
    else:
        yaml.dump(doc, out)
    return out.getvalue().rstrip("\n")


def age(timestamp: str | None, *, now: dt.datetime) -> str:
    """Kubernetes-style age: 45s, 12m, 5h, 3d."""
    if not timestamp:
        return "<unknown>"
    try:
        then = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
