"""Files and directories -> `LoadResult`: every valid object and every finding, in order.

Role: the entry of `fedctl validate`, `fedctl apply` and any test that reads policy YAML.
It expands directories (recursively, `*.yaml`/`*.yml`, sorted), refuses files that are
missing, empty or too large before reading them, expands a List document (or a plain
list, as JSON from `fedctl get -o json`) into its items, as kubectl apply does, and hands
each document to `policies.loading.documents`. Fed by CLI paths or text; feeds the CLI
and the API client.

Why the size limit is checked with `stat` first: a 10 MB YAML file takes the pure-Python
parser minutes; refusing it up front keeps `fedctl validate` instant and the reason clear.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.loading import arches, queue_checks, targets
from policies.loading.documents import (
    Loaded,
    chips_defined_by,
    cross_check,
    names_clusters,
    names_priority_classes,
    names_queues,
    undefined_chips,
    undefined_priority_classes,
    undefined_queues,
    unjoined_clusters,
    unknown_parents,
    validate_document,
)
from policies.loading.findings import Finding
from policies.loading.source import ParsedDocument, parse_documents
from policies.loading.validation import describe_value
from policies.models.base import KubeObject
from policies.models.cluster import Cluster
from policies.models.queue import Queue

__all__ = ["MAX_FILE_BYTES", "STDIN", "LoadResult", "load_paths", "load_text"]

MAX_FILE_BYTES = 10_000_000
"""Policy files must be smaller than this (10 MB); larger ones are refused unread."""

_SUFFIXES = (".yaml", ".yml")
STDIN = "<stdin>"


@dataclass
class LoadResult:
    """Valid objects (in file and document order) and findings (errors and warnings)."""

    objects: list[Loaded] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if not f.is_error]

    @property
    def ok(self) -> bool:
        """True when nothing is wrong (warnings allowed)."""
        return not self.errors

    @property
    def names_undefined_chips(self) -> bool:
        """Whether a chip named here is defined by nothing loaded with it."""
        return bool(undefined_chips(self.objects))

    def with_known_chips(self, known: Collection[str]) -> LoadResult:
        """The result with chips `known` elsewhere (a server's) counted as defined: the
        undefined-chip warnings are those of the documents and the server together."""
        return self._judged_again(
            undefined_chips(self.objects), undefined_chips(self.objects, known=known)
        )

    def _judged_again(self, stale: Iterable[Finding], fresh: list[Finding]) -> LoadResult:
        """The result with the loader's `stale` findings replaced by `fresh` ones (the same
        check, made against a server), in the first stale one's place, so the order stays
        the loader's."""
        stale = set(stale)
        findings: list[Finding] = []
        for finding in self.findings:
            if finding not in stale:
                findings.append(finding)
            elif fresh:
                findings.extend(fresh)
                fresh = []
        return LoadResult(objects=self.objects, findings=findings, files=self.files)

    @property
    def names_clusters(self) -> bool:
        """Whether a policy or quota here names a member cluster."""
        return names_clusters(self.objects)

    def against_fleet(self, fleet: Iterable[KubeObject]) -> LoadResult:
        """The result with its chip and member warnings judged against a fleet (a
        server's or a profile's Clusters, and AcceleratorProfiles): chips it defines are
        not warned about, members it lacks are (when it has any), and so are override
        rules whose targetCluster selects none of its Clusters."""
        fleet = list(fleet)
        result = self
        if result.names_undefined_chips:
            result = result.with_known_chips(chips_defined_by(fleet))
        stale = arches.arch_conflicts(self.objects)
        fresh = arches.arch_conflicts(self.objects, fleet=fleet)
        if fresh != stale:
            result = result._judged_again(stale, fresh) if stale else result.with_findings(fresh)
        joined = [m.metadata.name for m in fleet if isinstance(m, Cluster)]
        if joined and result.names_clusters:
            result = result.with_joined_clusters(joined)
        members = [m for m in fleet if isinstance(m, Cluster)]
        return result.with_findings(targets.unmatched_targets(result.objects, members))

    @property
    def names_queues(self) -> bool:
        """Whether a workload here names its queue."""
        return names_queues(self.objects)

    def with_defined_queues(
        self, defined: Mapping[str, Collection[str]], *, default: str = "default"
    ) -> LoadResult:
        """The result with a warning for each workload naming a queue that `defined` (a
        server's queues, each with its children) and the documents lack, or a parent."""
        return LoadResult(
            objects=self.objects,
            findings=[
                *self.findings,
                *undefined_queues(self.objects, defined=defined, default=default),
            ],
            files=self.files,
        )

    @property
    def needs_queues(self) -> bool:
        """Whether something here is judged against a server's queues: a queue or a
        priority class a workload names, or a parent queue the documents do not define."""
        return (
            self.names_queues
            or names_priority_classes(self.objects)
            or bool(unknown_parents(self.objects))
        )

    def with_stored_queues(
        self, queues: Iterable[Queue], *, default: str = "default"
    ) -> LoadResult:
        """The result judged against the queues a server holds (`queues`): a parent queue
        held there is no longer warned about, and one held nowhere is warned about as what
        the server refuses; a priority class a held queue does not define is warned
        about. Workloads naming a queue are `with_defined_queues`'."""
        queues = list(queues)
        held = [q.metadata.name for q in queues]
        result = self._judged_again(
            unknown_parents(self.objects), unknown_parents(self.objects, held=held)
        )
        classes = undefined_priority_classes(self.objects, held=queues, default=default)
        return result.with_findings(classes)

    def without_warnings(self) -> LoadResult:
        """The result with its errors alone: what `delete -f` says, since a warning tells
        what the objects would do or lack once stored, and delete stores nothing."""
        return LoadResult(objects=self.objects, findings=self.errors, files=self.files)

    def with_findings(self, extra: Iterable[Finding]) -> LoadResult:
        """The result with `extra` findings (checks made against a fleet) after its own."""
        return LoadResult(objects=self.objects, findings=[*self.findings, *extra], files=self.files)

    def with_joined_clusters(self, joined: Collection[str]) -> LoadResult:
        """The result with a warning for each member named that `joined` (a server's
        Clusters) does not hold."""
        return LoadResult(
            objects=self.objects,
            findings=[*self.findings, *unjoined_clusters(self.objects, joined=joined)],
            files=self.files,
        )


def load_text(text: str, *, filename: str = "<input>") -> LoadResult:
    """Load the documents of one YAML text (e.g. a request body or a test string)."""
    result = LoadResult(files=[filename])
    _load_into(result, text, filename=filename)
    _check_set(result)
    return result


def load_paths(paths: Iterable[str | os.PathLike[str]]) -> LoadResult:
    """Load files and directories; a directory contributes its YAML files, sorted.

    `-` reads standard input (as `<stdin>`), so `kubectl get -o yaml … | fedctl validate -f -`
    works.
    """
    result = LoadResult()
    seen: set[Path] = set()
    for given in paths:
        if str(given) == "-":
            result.files.append(STDIN)
            _load_into(result, sys.stdin.read(MAX_FILE_BYTES), filename=STDIN)
            continue
        for file, problem in _expand(Path(given)):
            if problem is not None:
                result.findings.append(problem)
                continue
            resolved = file.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            result.files.append(str(file))
            _load_file(result, file)
    _check_set(result)
    return result


def _check_set(result: LoadResult) -> None:
    """The set-wide findings; a document one of their errors falls on (a duplicate) is no
    longer one of the valid objects, so `validate` does not count it as one."""
    found, refused = cross_check(result.objects)
    result.findings.extend(found)
    result.findings.extend(queue_checks.queue_findings(result.objects))
    result.findings.extend(arches.arch_conflicts(result.objects))
    result.objects = [o for o in result.objects if o.place not in refused]


def _expand(path: Path) -> list[tuple[Path, Finding | None]]:
    name = str(path)
    if path.is_dir():
        files = sorted(
            p
            for p in path.rglob("*")
            if p.suffix in _SUFFIXES and p.is_file() and not _hidden(p.relative_to(path))
        )
        if not files:
            return [(path, Finding(name, 0, 0, "", "no .yaml or .yml files in this directory"))]
        return [(p, None) for p in files]
    if not path.exists():
        return [(path, Finding(name, 0, 0, "", "no such file or directory"))]
    return [(path, None)]


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _load_file(result: LoadResult, path: Path) -> None:
    name = str(path)
    try:
        size = path.stat().st_size
        if size >= MAX_FILE_BYTES:
            result.findings.append(_too_large(name, size))
            return
        raw = path.read_bytes()
    except OSError as err:
        result.findings.append(Finding(name, 0, 0, "", f"cannot read: {err.strerror or err}"))
        return
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        result.findings.append(
            Finding(name, line, 1, "", f"not UTF-8 text (byte {err.start}: {err.reason})")
        )
        return
    _load_into(result, text, filename=name)


def _too_large(name: str, size: int) -> Finding:
    return Finding(
        name,
        0,
        0,
        "",
        f"file is too large: {size} bytes; policy files must be smaller than 10 MB"
        f" ({MAX_FILE_BYTES} bytes)",
    )


def _load_into(result: LoadResult, text: str, *, filename: str) -> None:
    size = len(text.encode("utf-8", errors="replace"))
    if size >= MAX_FILE_BYTES:
        result.findings.append(_too_large(filename, size))
        return
    docs, findings = parse_documents(text, filename=filename)
    result.findings.extend(findings)
    if not docs and not findings:
        result.findings.append(Finding(filename, 1, 1, "", "file is empty: no YAML documents"))
        return
    for doc in (item for parsed in docs for item in _items(parsed, result, filename=filename)):
        checked = validate_document(doc.data, source=doc.source, filename=filename)
        result.findings.extend(checked.findings)
        if checked.model is not None and checked.ok and doc.clean:
            result.objects.append(
                Loaded(
                    checked.model, filename, doc.line, doc.index, source=doc.source, item=doc.item
                )
            )


def _items(doc: ParsedDocument, result: LoadResult, *, filename: str) -> Iterator[ParsedDocument]:
    """The documents `doc` stands for: itself, or the items of a List (any kind ending in
    `List` with `items`: `kubectl get -o yaml`, the API's lists) or of a plain list
    (`fedctl get -o json`), each with its own place in the file, as kubectl apply takes
    them; a List whose items are not a list is a finding in `result`."""
    data = doc.data
    if isinstance(data, list):
        prefix: tuple[str, ...] = ()
    elif _is_list_kind(data):
        prefix = ("items",)
        data = data["items"]
        if not isinstance(data, list):
            line, col = doc.source.locate(prefix)
            message = f"a List holds its objects in items, a list; got {describe_value(data)}"
            result.findings.append(Finding(filename, line, col, "items", message))
            return
    else:
        yield doc
        return
    for index, item in enumerate(data):
        at: tuple[str | int, ...] = (*prefix, index)
        line, _ = doc.source.locate(at)
        inner = ParsedDocument(
            item, doc.source.within(at), doc.index, line, doc.clean, item=(*doc.item, index)
        )
        yield from _items(inner, result, filename=filename)


def _is_list_kind(data: Any) -> bool:
    """Whether `data` is a List: `v1 List`, or a kind's list (`PropagationPolicyList`)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    return isinstance(kind, str) and kind.endswith("List") and "items" in data
