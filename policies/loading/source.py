"""YAML text -> plain documents plus a map from every field path to its line and column.

Role: the only place that touches ruamel.yaml. It composes node trees (which keep the
position of every key and value) and builds plain dicts, lists and scalars from them, so
that model validation works on JSON-like data while every later finding can still point at
the offending value's own line. Fed by `policies.loading.files` (file text); feeds
`policies.loading.documents` (validation) with `ParsedDocument`s.

Why compose instead of load: the loader's duplicate-key error does not say where in the
document the key is; walking nodes ourselves reports `metadata.name: duplicate key` at the
second occurrence, refuses alias bombs, and keeps YAML 1.2 scalars (`yes` stays a string).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError

from policies.loading.findings import Finding, PathPart, format_path

try:  # libyaml through PyYAML, when built with it: only its parser's events are used
    import yaml as _libyaml_module

    _LIBYAML: Any = _libyaml_module if _libyaml_module.__with_libyaml__ else None
except ImportError:  # pragma: no cover - PyYAML comes with the Kubernetes client
    _LIBYAML = None

__all__ = [
    "MAX_FLOW_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "ParsedDocument",
    "SourceMap",
    "parse_documents",
    "too_long",
]

MAX_NODES = 100_000
"""Nodes one document may expand to (aliases included): a guard against alias bombs."""

MAX_FLOW_DEPTH = 64
"""Bracket runs deeper than this are refused up front: the parser's cost grows with the
square of flow depth, so `[[[[…` would otherwise take seconds before failing anyway."""

_DEEP_FLOW = re.compile(r"(?:[\[{][^\[\]{}]{0,8}){" + str(MAX_FLOW_DEPTH + 1) + "}")

Path = tuple[PathPart, ...]
_CONSTRUCTED_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null")
)


@dataclass
class SourceMap:
    """1-based (line, col) of each value and each mapping key, by field path."""

    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)
    collections: set[Path] = field(default_factory=set)

    def locate(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The place of `path`; of its key when `key`; else of the nearest ancestor that exists.

        A scalar points at its value; a mapping or list at its key (a block value starts on
        the next line, where the user would not look). A field that is missing has no place
        of its own, so it points at its parent mapping (the parent's key line, which is
        where a user would add it).
        """
        if (key or path in self.collections) and path in self.keys:
            return self.keys[path]
        if path in self.values:
            return self.values[path]
        probe = path
        while probe:
            probe = probe[:-1]
            if probe in self.keys:
                return self.keys[probe]
            if probe in self.values:
                return self.values[probe]
        return (0, 0)

    def within(self, prefix: Path) -> SourceMap:
        """The places under `prefix`, with paths relative to it: an item of a List is
        judged as a document of its own, and its findings point at its own lines."""
        size = len(prefix)

        def under(places: dict[Path, tuple[int, int]]) -> dict[Path, tuple[int, int]]:
            return {p[size:]: at for p, at in places.items() if p[:size] == prefix}

        return SourceMap(
            values=under(self.values),
            keys=under(self.keys),
            collections={p[size:] for p in self.collections if p[:size] == prefix},
        )


@dataclass
class ParsedDocument:
    """One YAML document: its data, where each part of it is, and its place in the file."""

    data: Any
    source: SourceMap
    index: int
    line: int
    clean: bool = True
    """False when reading the document already found an error (e.g. a duplicate key)."""
    item: tuple[int, ...] = ()
    """Its place among the items of the List (or list) document `index` is, if it is one."""


class _TooLarge(Exception):
    pass


class _TooLong(Exception):
    """An integer of more digits than Python turns into a number (`MAX_INT_DIGITS`)."""

    def __init__(self, path: Path, node: Node) -> None:
        super().__init__()
        self.path, self.node = path, node


MAX_INT_DIGITS = 4300
"""Python's limit on the digits of an integer read from text (`sys.int_info`): past it
the conversion raises ValueError, which reached the API as a 500 and `fedctl validate`
as a traceback. No Kubernetes field holds such a number (int64 has 19 digits)."""


def too_long(digits: int) -> str:
    """The finding's message for an integer of `digits` digits."""
    return (
        f"an integer of {digits} digits is longer than the {MAX_INT_DIGITS} digits a number"
        " may have here (a Kubernetes integer has at most 19)"
    )


class _Builder:
    """Turns one composed node tree into plain data, recording positions and duplicates."""

    def __init__(self, yaml: YAML, *, filename: str) -> None:
        self._constructor = yaml.constructor
        self._filename = filename
        self.source = SourceMap()
        self.findings: list[Finding] = []
        self._count = 0

    def build(self, node: Node, path: Path) -> Any:
        self._count += 1
        if self._count > MAX_NODES:
            raise _TooLarge
        self.source.values[path] = _pos(node)
        if isinstance(node, MappingNode):
            self.source.collections.add(path)
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            self.source.collections.add(path)
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node, path)

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            child = (*path, key)
            if key in result:
                line, col = _pos(key_node)
                first = self.source.keys[child][0]
                self.findings.append(
                    Finding(
                        self._filename,
                        line,
                        col,
                        format_path(child),
                        f"duplicate key {key!r} (first defined at line {first})",
                    )
                )
                continue
            self.source.keys[child] = _pos(key_node)
            result[key] = self.build(value_node, child)
        return result

    def _key(self, node: Node, path: Path) -> str:
        if isinstance(node, ScalarNode):
            value = self._scalar(node, path)
            return value if isinstance(value, str) else str(node.value)
        line, col = _pos(node)
        self.findings.append(
            Finding(self._filename, line, col, "", "a mapping key must be a plain scalar")
        )
        return f"<key at {line}:{col}>"

    def _scalar(self, node: Node, path: Path) -> Any:
        if node.tag in _CONSTRUCTED_TAGS:
            try:
                return self._constructor.construct_object(node)
            except ValueError:  # only an int past Python's digit limit raises it here
                raise _TooLong(path, node) from None
        return str(node.value)


def _pos(node: Node) -> tuple[int, int]:
    mark = node.start_mark
    return (mark.line + 1, mark.column + 1)


def _yaml() -> YAML:
    return YAML(typ="safe", pure=True)


def parse_documents(text: str, *, filename: str) -> tuple[list[ParsedDocument], list[Finding]]:
    """Every non-empty document of `text`, and the findings met while reading them.

    A syntax error stops reading the rest of the file (YAML cannot resynchronise), but the
    documents before it are still returned so their own problems get reported too.
    """
    yaml = _yaml()
    docs: list[ParsedDocument] = []
    findings: list[Finding] = []
    deep = _DEEP_FLOW.search(text)
    if deep is not None:
        line = text.count("\n", 0, deep.start()) + 1
        message = f"invalid YAML: brackets nested deeper than {MAX_FLOW_DEPTH} levels"
        return docs, [Finding(filename, line, 1, "", message)]
    try:
        for index, node in enumerate(_compose_all(yaml, text)):
            if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null":
                continue  # an empty document between `---` markers
            builder = _Builder(yaml, filename=filename)
            line, col = _pos(node)
            try:
                data = builder.build(node, ())
            except _TooLong as long:
                at, digits = _pos(long.node), sum(c.isdigit() for c in str(long.node.value))
                message = too_long(digits)
                findings.append(Finding(filename, *at, format_path(long.path), message))
                continue
            except _TooLarge:
                findings.append(
                    Finding(
                        filename,
                        line,
                        col,
                        "",
                        f"document expands to more than {MAX_NODES} nodes (aliases included)",
                    )
                )
                continue
            findings.extend(builder.findings)
            docs.append(
                ParsedDocument(data, builder.source, index, line, clean=not builder.findings)
            )
    except MarkedYAMLError as err:
        findings.append(_syntax_finding(err, filename=filename))
    except ReaderError as err:
        line = text.count("\n", 0, max(err.position, 0)) + 1
        message = f"invalid YAML: unacceptable character #x{err.character:04x}: {err.reason}"
        findings.append(Finding(filename, line, 1, "", message))
    except YAMLError as err:
        findings.append(Finding(filename, 0, 0, "", f"invalid YAML: {err}"))
    except RecursionError:
        findings.append(Finding(filename, 0, 0, "", "invalid YAML: nested too deeply"))
    return docs, findings


def _compose_all(yaml: YAML, text: str) -> Iterator[Node]:
    """Node trees of every document: through libyaml when it can, else ruamel's own composer.

    Why two: ruamel's pure-Python scanner and parser cost about 1.2 ms per small document
    (13 s before the first finding of a 10,000-Job file); libyaml's events come 30 times
    faster. Its events become the same ruamel nodes, resolved by ruamel's YAML 1.2
    resolver, so data and positions do not depend on which one read the file. Whatever
    libyaml refuses or this path does not take (a `%YAML` directive, an unknown alias) is
    read again by ruamel, whose error messages and places are the ones users see.
    """
    nodes = _fast_compose_all(yaml, text) if _LIBYAML is not None else None
    if nodes is None:
        yield from yaml.compose_all(text)
    else:
        yield from nodes


class _NotFast(Exception):
    """The input needs ruamel's own composer."""


def _fast_compose_all(yaml: YAML, text: str) -> list[Node] | None:
    assert _LIBYAML is not None
    composer = _Composer(yaml)
    try:
        for event in _LIBYAML.parse(text, Loader=_LIBYAML.CBaseLoader):
            composer.take(event)
    except (_LIBYAML.YAMLError, _NotFast):
        return None
    return composer.roots


class _Composer:
    """libyaml's events composed into ruamel nodes without recursion (deep input stays a
    finding of the builder, never a crash of a C composer)."""

    def __init__(self, yaml: YAML) -> None:
        self._resolver = yaml.resolver
        self._resolved: dict[tuple[Any, ...], Any] = {}
        self._anchors: dict[str, Node] = {}
        self._open: list[tuple[Node, list[Any]]] = []
        self._key: list[Node | None] = []
        self._root: Node | None = None
        self.roots: list[Node] = []
        events = _LIBYAML.events
        self._handlers: dict[type, Any] = {
            events.ScalarEvent: self._scalar,
            events.MappingStartEvent: self._start,
            events.SequenceStartEvent: self._start,
            events.MappingEndEvent: self._end,
            events.SequenceEndEvent: self._end,
            events.AliasEvent: self._alias,
            events.DocumentStartEvent: self._document,
            events.DocumentEndEvent: self._document_end,
        }

    def take(self, event: Any) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    def _resolve(self, kind: type[Node], value: str | None, event: Any) -> Any:
        if event.tag is not None and event.tag != "!":
            return event.tag
        # Keys and common values repeat in every document; ruamel's resolver asks for the
        # YAML version on each call, which is half of its cost.
        slot = (kind, value, event.implicit)
        tag = self._resolved.get(slot)
        if tag is None:
            tag = self._resolved[slot] = self._resolver.resolve(kind, value, event.implicit)
        return tag

    def _attach(self, node: Node, anchor: str | None) -> None:
        if anchor is not None:
            self._anchors[anchor] = node
        if not self._open:
            self._root = node
            return
        parent, items = self._open[-1]
        if not isinstance(parent, MappingNode):
            items.append(node)
        elif self._key[-1] is None:
            self._key[-1] = node
        else:
            items.append((self._key[-1], node))
            self._key[-1] = None

    def _scalar(self, event: Any) -> None:
        tag = self._resolve(ScalarNode, event.value, event)
        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark)
        self._attach(node, event.anchor)

    def _start(self, event: Any) -> None:
        cls = MappingNode if isinstance(event, _LIBYAML.events.MappingStartEvent) else SequenceNode
        items: list[Any] = []
        node = cls(self._resolve(cls, None, event), items, event.start_mark, None, event.flow_style)
        self._attach(node, event.anchor)
        self._open.append((node, items))
        self._key.append(None)

    def _end(self, event: Any) -> None:
        node, _ = self._open.pop()
        self._key.pop()
        node.end_mark = event.end_mark

    def _alias(self, event: Any) -> None:
        if event.anchor not in self._anchors:
            raise _NotFast  # ruamel names the undefined alias and its place
        self._attach(self._anchors[event.anchor], None)

    def _document(self, event: Any) -> None:
        if event.version is not None:
            raise _NotFast  # `%YAML 1.1` changes how scalars resolve: ruamel's to judge
        self._anchors, self._root = {}, None

    def _document_end(self, event: Any) -> None:
        if self._root is not None:
            self.roots.append(self._root)


def _syntax_finding(err: MarkedYAMLError, *, filename: str) -> Finding:
    mark = err.problem_mark or err.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    message = err.problem or err.context or str(err)
    context = err.context_mark
    if err.problem and err.context and context is not None:
        started = f"{context.line + 1}:{context.column + 1}"
        message = f"{err.problem} ({err.context} started at {started})"
    return Finding(filename, line, col, "", f"invalid YAML: {message}")
