"""The two files a running fleet leaves for its clients: a kubeconfig and a fleet state file.

The federation controller, kubectl and the tests reach simulated members exactly as they
reach real ones, through a kubeconfig with one context per cluster (context, cluster and
user entries all named after the member). The fleet state file sits next to it
(`<kubeconfig>.fleet.json`) and is what `fedctl sim fault/heal` read to find each
member's admin URL, and what a demo reads to register members with their region, zone,
provider, prices and capacity without parsing the profile again.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

__all__ = ["load_state", "state_path", "write_kubeconfig", "write_state"]

_USER = "fedctl-sim"


def state_path(kubeconfig: str | Path) -> Path:
    """Where the fleet state file of this kubeconfig lives."""
    path = Path(kubeconfig)
    return path.with_name(path.name + ".fleet.json")


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_kubeconfig(path: str | Path, servers: Mapping[str, str]) -> Path:
    """One context per cluster name -> API URL; the first cluster is the current context."""
    names = list(servers)
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": n, "cluster": {"server": servers[n]}} for n in names],
        "users": [{"name": _USER, "user": {"token": _USER}}],
        "contexts": [{"name": n, "context": {"cluster": n, "user": _USER}} for n in names],
        "current-context": names[0] if names else "",
    }
    out = Path(path)
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    buf = io.StringIO()
    yaml.dump(doc, buf)
    _atomic_write(out, buf.getvalue())
    return out


def write_state(kubeconfig: str | Path, state: Mapping[str, Any]) -> Path:
    path = state_path(kubeconfig)
    _atomic_write(path, json.dumps(state, indent=2, sort_keys=True) + "\n")
    return path


def load_state(kubeconfig: str | Path) -> dict[str, Any]:
    """The fleet state written by `fedctl sim up`; FileNotFoundError if no fleet wrote it."""
    data: dict[str, Any] = json.loads(state_path(kubeconfig).read_text(encoding="utf-8"))
    return data
