"""Output for people and scripts: aligned tables, YAML and JSON, ages, the `fedctl get`
table of every kind without a view of its own (clusters, policies, bindings), and a
controller's refusal put back where it is in the user's files.

Fed by the REST API's object lists (a Cluster comes with its observed status, which
`federation.monitor.summary` reads the same way for `fedctl cluster list`) and its error
findings, with the documents the CLI loaded (`policies.loading.Loaded`: file, line, and
the place of every field); feeds every command that prints. Why one module: every command
prints the same way, so `-o json` and `-o yaml` behave the same everywhere, tables line up
like kubectl's, and every finding reads `FILE:LINE:COL: path: message` wherever it was
found.
"""

from __future__ import annotations

import datetime as dt
import difflib
import io
import json
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML
from ruamel.yaml.representer import RoundTripRepresenter

if TYPE_CHECKING:
    from policies.loading import Loaded
    from policies.models.cluster import ClusterStatus

__all__ = [
    "CLUSTER_HEADERS",
    "UNPRICED",
    "age",
    "clusters",
    "dump",
    "hourly",
    "objects",
    "per_hour",
    "placed",
    "pods",
    "table",
]

UNPRICED = "unpriced"
"""What a cost no price is known for reads as: never 0.0000, which reads as free."""

CLUSTER_HEADERS = [
    *("NAME", "READY", "REGION", "CHIPS", "CPU", "PODS", "ACCELERATORS", "TAINTS", "AGE"),
]
"""CPU, PODS and ACCELERATORS read free/total, as in `fedctl cluster list`. PODS: the
nodes' pod slots, which the scheduler counts like cpu: a member full by pod count (110 a
node) looked a third empty by CPU alone."""
CLUSTER_WIDE = ["REASON", "ZONE", "PROVIDER", "MEMORY", "PRICE/H", "LABELS"]
"""What `-o wide` adds to `CLUSTER_HEADERS`."""


def per_hour(name: str, currency: str | None, *extra: str) -> str:
    """A cost column's header with the currency its figures are in (`COST/H(EUR)`): a
    federation in EUR showed unlabelled EUR costs beside a cluster's USD prices."""
    inside = ",".join(x for x in (currency, *extra) if x)
    return f"{name}({inside})" if inside else name


def hourly(cost: Decimal, *, replicas: int, unpriced: int) -> str:
    """What `replicas` replicas cost an hour, to four places, when `unpriced` of them run
    where no price is known: `unpriced` when none has a price, `0.1234 (+2 unpriced)` when
    some lack one. Why: every view of a queue printed 0.0000 for work with no price, which
    reads as free, while `fedctl cost` said unpriced."""
    if unpriced and unpriced >= replicas:
        return UNPRICED
    shown = f"{cost:.4f}"
    return f"{shown} (+{unpriced} {UNPRICED})" if unpriced else shown


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, separated by three spaces, like kubectl."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


_YAML_11 = re.compile(
    r"^(?:[yYnN]|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)$"
)
"""Strings YAML 1.1 reads as another type where YAML 1.2 (fedctl's reader and writer)
reads a string: its booleans (with go-yaml's `y` and `n`) and base-60 numbers."""


class _Representer(RoundTripRepresenter):
    """ruamel's writer, quoting the strings `_YAML_11` matches as kubectl does (`"yes"`).
    It writes YAML 1.2, which reads `debug: yes` as the string it was; kubectl and PyYAML
    read YAML 1.1, to which it is true, so a ConfigMap backed up with `get -o yaml` and
    applied to a member had a bool where a string must be."""

    def represent_str(self, data: str) -> Any:
        if _YAML_11.match(data):
            return self.represent_scalar("tag:yaml.org,2002:str", data, style='"')
        return super().represent_str(data)


_Representer.add_representer(str, _Representer.represent_str)


def dump(doc: Any, fmt: str) -> str:
    """`doc` as JSON or YAML text: YAML that YAML 1.1 readers read the same (`_Representer`)."""
    if fmt == "json":
        return json.dumps(doc, indent=2)
    yaml = YAML()
    yaml.Representer = _Representer
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


def objects(
    items: Sequence[dict[str, Any]], *, namespaced: bool, now: dt.datetime, wide: bool
) -> str | None:
    """NAMESPACE (of a namespaced kind), NAME and AGE; `wide` adds LABELS. None when there
    is no row to show."""
    headers = ["NAMESPACE"] * namespaced + ["NAME", "AGE"] + ["LABELS"] * wide
    rows = []
    for item in items:
        meta = item.get("metadata", {})
        row = [meta.get("namespace", "")] * namespaced + [meta.get("name", "")]
        # A Binding is written by the scheduler without a creation time: its age is since
        # it was last scheduled (every row read `<unknown>`).
        since = meta.get("creationTimestamp") or (item.get("status") or {}).get("lastScheduledTime")
        row.append(age(since, now=now))
        if wide:
            row.append(_pairs(meta.get("labels")))
        rows.append(row)
    return table(headers, rows) if rows else None


def pods(status: ClusterStatus | None) -> str:
    """Free/total pod slots of a member's ready nodes (`1/220`); `-` when not observed, or
    when its nodes report no pod capacity (0/0 would read as full)."""
    from federation.resources import MILLI

    if status is None or not status.flavors:
        return "-"
    total = status.totals.allocatable.amount("pods") // MILLI
    return f"{status.totals.free.amount('pods') // MILLI}/{total}" if total else "-"


def clusters(items: Sequence[dict[str, Any]], *, now: dt.datetime, wide: bool) -> str | None:
    """One row per member in name order: whether it is Ready, where it is, its chips, what
    is free of its capacity (cores and pod slots), and the taints that keep work off it
    (the user's and those failover applied). `wide` adds why it is (not) Ready, zone,
    provider, memory, the price of an hour of the whole cluster (in its own currency) and
    labels.
    None when there is no row to show."""
    from federation.monitor import summary
    from policies.models.cluster import Cluster
    from policies.models.rules import STORED

    rows = []
    for item in sorted(items, key=lambda i: str(i.get("metadata", {}).get("name", ""))):
        cluster = Cluster.model_validate(item, context=STORED)
        line = summary.row(cluster, cluster.status)
        taints = ",".join(
            f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}"
            for t in cluster.effective_taints()
        )
        accelerators = ",".join(
            f"{m}={summary.pair(a, binary=False)}" for m, a in line.accelerators.items()
        )
        row = [
            line.name,
            line.ready,
            line.region,
            ",".join(f"{model}:{count}" for model, count in line.chips.items()) or "-",
            summary.pair(line.cpu, binary=False) if line.observed else "-",
            pods(cluster.status),
            (accelerators or "-") if line.observed else "-",
            taints or "-",
            age(item.get("metadata", {}).get("creationTimestamp"), now=now),
        ]
        if wide:
            memory = summary.pair(line.memory, binary=True)
            price = (
                "-" if line.price_per_hour is None else f"{line.price_per_hour:.2f} {line.currency}"
            )
            row += [
                line.reason or "-",
                cluster.spec.zone or "-",
                cluster.spec.provider or "-",
                memory if line.observed else "-",
                price,
                _pairs(item.get("metadata", {}).get("labels")),
            ]
        rows.append(row)
    headers = CLUSTER_HEADERS + (CLUSTER_WIDE if wide else [])
    return table(headers, rows) if rows else None


def _pairs(mapping: dict[str, Any] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((mapping or {}).items()))


# What the controller alone can check (the queue tree against the stored queues, a
# same-name object of another API group, a field an older controller does not know) comes
# back as text naming the object (`Queue NAME: PATH: message`, `Kind NS/NAME: message`) or,
# for a field of an unnamed document, `<request>: PATH: message`, or of one of the items
# sent, `items[N] (Kind ns/name): PATH: message`. The client still holds the files, so it
# puts each back where the user would edit it.
_NAMED = re.compile(r"(?P<kind>[A-Z][A-Za-z0-9]*) (?:(?P<ns>[^\s/:]+)/)?(?P<name>[^\s/:]+): ")
_FIELD = re.compile(r'(?P<path>[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\d+\]|\["[^"]*"\])*): ')
_PART = re.compile(r'\.?(?P<key>[A-Za-z_][\w-]*)|\[(?P<index>\d+)\]|\[(?P<quoted>"[^"]*")\]')
_REQUEST = "<request>: "
_ITEM = re.compile(r"(?:items)?\[(?P<index>\d+)\](?: \([^)]*\))?: ")
_UNKNOWN = re.compile(
    r"(?:parent queue|unknown field) '(?P<word>[^']+)'.*?known (?:queues|fields): (?P<known>[^)]*)"
)


def placed(finding: str, loaded: Sequence[Loaded]) -> str:
    """A server finding prefixed with `FILE:LINE:` of the document it names, or
    `FILE:LINE:COL:` of the field it names; with a did-you-mean where it lists the names
    it knows but suggests none. Unchanged but for the hint when no document fits."""
    text, doc = finding, None
    named = _NAMED.match(finding)
    if named:
        rest = finding[named.end() :]
        doc = _named(loaded, named["kind"], named["ns"], named["name"])
        if doc is None:  # e.g. a stored parent whose children's guarantees no longer fit
            rest, doc = "", _mentioned(loaded, named["kind"], finding[named.end() :])
    elif item := _ITEM.match(finding):
        rest, index = finding[item.end() :], int(item["index"])
        if index < len(loaded):  # the items sent are the documents loaded, in order
            text, doc = rest, loaded[index]
    elif finding.startswith(_REQUEST):
        text = rest = finding.removeprefix(_REQUEST)
    else:
        return finding + _hint(finding)
    field = _FIELD.match(rest)
    parts = _parts(field["path"]) if field else ()
    if doc is None and not named:
        holding = [o for o in loaded if parts in o.source.keys or parts in o.source.values]
        doc = holding[0] if len(holding) == 1 else loaded[0] if len(loaded) == 1 else None
    text += _hint(finding)
    if doc is None:
        return text
    line, col = doc.source.locate(parts) if parts else (0, 0)
    return f"{doc.file}:{line}:{col}: {text}" if line else f"{doc.file}:{doc.line}: {text}"


def _named(loaded: Sequence[Loaded], kind: str, ns: str | None, name: str) -> Loaded | None:
    """The document of that kind and name (and namespace, if given); the last of several,
    since a clash inside the files is reported at the later one."""
    found = None
    for obj in loaded:
        meta = obj.model.metadata
        if (
            obj.model.kind == kind
            and meta.name == name
            and ns in (None, meta.namespace or "default")
        ):
            found = obj
    return found


def _mentioned(loaded: Sequence[Loaded], kind: str, text: str) -> Loaded | None:
    """The first document of `kind` that `text` names, or None."""
    for obj in loaded:
        name = re.escape(obj.model.metadata.name)
        if obj.model.kind == kind and re.search(rf"(?<![\w.-]){name}(?![\w-])", text):
            return obj
    return None


def _parts(path: str) -> tuple[str | int, ...]:
    """`spec.capability["nvidia.com/gpu"]` -> ("spec", "capability", "nvidia.com/gpu")."""
    parts: list[str | int] = []
    for m in _PART.finditer(path):
        if m["key"] is not None:
            parts.append(m["key"])
        elif m["index"] is not None:
            parts.append(int(m["index"]))
        else:
            parts.append(str(json.loads(m["quoted"])))
    return tuple(parts)


def _hint(finding: str) -> str:
    """` (did you mean 'x'?)` for a name the server says it does not know, from the names
    it lists, as the loader words it; empty when the server suggested one already."""
    unknown = _UNKNOWN.search(finding)
    if unknown is None or "did you mean" in finding:
        return ""
    known = [k.strip() for k in unknown["known"].split(",") if k.strip() != unknown["word"]]
    close = difflib.get_close_matches(unknown["word"], known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
