"""The tokens file: which bearer token is which user, in which groups, and which
namespaces a group owns.

Role: read once at start-up (`fedctl controller --tokens FILE`) into a `TokenTable`,
which `auth.Authenticator` looks callers up in. Fed by a YAML file (`tokens:` a list of
{token, user, groups}, or a map token → {user, groups}; `namespaces:` a map group →
[namespace, ...]) or a CSV one, Kubernetes' static token file (`token,user,uid,"g1,g2"`:
the groups are the fourth column, the third is a uid; `token,user` is a user of no
group).

Why a mistake stops the start-up, naming file, line and field: every one of them used to
be taken silently and changed who may do what. A string where a list of namespaces goes
(`dept-ml: ml-prod`) gave the group seven one-letter namespaces and not `ml-prod`; a
misspelt key (`grups:`) gave a user no groups; a token listed twice took the rights of
its last entry, whichever that was (Kubernetes at least warns). A token is never repeated
in a message: the entry is named by its place and line.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from federation import errors

__all__ = ["TENANT_PREFIX", "TokenTable"]

TENANT_PREFIX = "tenant:"
_TOP = ("namespaces", "tokens")
_ENTRY = ("groups", "token", "user")


@dataclass(frozen=True, slots=True)
class Entry:
    """What a token stands for."""

    user: str
    groups: frozenset[str]


@dataclass
class TokenTable:
    """Token digests → user and groups, plus group → namespaces for tenants."""

    entries: dict[str, Entry] = field(default_factory=dict)
    group_namespaces: dict[str, frozenset[str]] = field(default_factory=dict)

    def add(self, token: str, user: str, groups: Iterable[str]) -> None:
        """Add one token; refused when empty or already there (the caller says where)."""
        if not token or not user:
            raise errors.Invalid("every token needs a non-empty token and user")
        digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
        if digest in self.entries:
            raise errors.Invalid(
                "a token listed before again: each token must stand for one user and its"
                " groups; remove one of the two entries"
            )
        self.entries[digest] = Entry(user, frozenset(g for g in groups if g))

    def lookup(self, token: str) -> Entry | None:
        return self.entries.get(hashlib.sha256(token.encode("utf-8")).hexdigest())

    def namespaces_of(self, groups: Iterable[str]) -> frozenset[str]:
        owned: set[str] = set()
        for group in groups:
            if group.startswith(TENANT_PREFIX) and len(group) > len(TENANT_PREFIX):
                owned.add(group[len(TENANT_PREFIX) :])
            owned.update(self.group_namespaces.get(group, ()))
        return frozenset(owned)

    @classmethod
    def from_file(cls, path: str | Path) -> TokenTable:
        """Read a `.yaml`/`.yml` file, or any other as Kubernetes' static token file (CSV)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise errors.Invalid(f"cannot read tokens file {path}: {exc}") from exc
        if str(path).endswith((".yaml", ".yml")):
            return cls.from_yaml(text, source=str(path))
        return cls.from_csv(text, source=str(path))

    @classmethod
    def from_csv(cls, text: str, *, source: str = "<tokens>") -> TokenTable:
        """Kubernetes' static token file, `token,user,uid[,"g1,g2"]`, or `token,user`;
        blank lines and `#` comments are skipped.

        As in Kubernetes the third column is the user's uid and the groups come only from
        the fourth (comma-separated, quoted): a line `tokA,alice,admin` written for a
        Kubernetes API server names uid `admin`, and read as groups it made alice an
        admin here. The uid is not used."""
        table = cls()
        numbered = [
            (n, ln)
            for n, ln in enumerate(text.splitlines(), start=1)
            if ln.strip() and not ln.lstrip().startswith("#")
        ]
        rows = csv.reader(io.StringIO("\n".join(ln for _, ln in numbered)))
        for (line, _), row in zip(numbered, rows, strict=False):
            cells = [c.strip() for c in row]
            if len(cells) < 2:
                raise errors.Invalid(f'{source}:{line}: expected token,user[,uid[,"g1,g2"]]')
            groups = cells[3] if len(cells) >= 4 else ""
            try:
                table.add(cells[0], cells[1], groups.split(","))
            except errors.Invalid as exc:
                raise errors.Invalid(f"{source}:{line}: {exc}") from exc
        return table

    @classmethod
    def from_yaml(cls, text: str, *, source: str = "<tokens>") -> TokenTable:
        """`tokens:` a list of {token, user, groups} (or a map token → {user, groups}), and
        optionally `namespaces:` a map group → [namespace, ...]; anything else is refused
        at `FILE:LINE:COL: field: why`."""
        try:
            doc = YAML(typ="rt", pure=True).load(text) or CommentedMap()
        except YAMLError as exc:
            raise errors.Invalid(f"{source}: not valid YAML: {exc}") from exc
        if not isinstance(doc, CommentedMap):
            raise errors.Invalid(f"{source}: expected a mapping with `tokens:`")
        _known(doc, _TOP, source=source, path="")
        table = cls()
        for path, at, item in _entries(doc.get("tokens"), source=source):
            _known(item, _ENTRY, source=source, path=path)
            try:
                table.add(_text(item.get("token")), _text(item.get("user")), _groups(item))
            except errors.Invalid as exc:
                raise errors.Invalid(f"{at}: {path}: {exc}") from exc
        namespaces = doc.get("namespaces")
        if namespaces is None:
            return table
        if not isinstance(namespaces, CommentedMap):
            raise errors.Invalid(
                f"{_at(source, doc, 'namespaces')}: namespaces: expected a map of group to"
                " [namespace, ...]"
            )
        for group, owned in namespaces.items():
            if not isinstance(owned, CommentedSeq) or not all(isinstance(n, str) for n in owned):
                raise errors.Invalid(
                    f"{_at(source, namespaces, group)}: namespaces.{group}: expected a list of"
                    f" namespaces, as [{owned if isinstance(owned, str) else 'ns-a, ns-b'}]"
                )
            table.group_namespaces[str(group)] = frozenset(owned)
        return table


def _entries(raw: Any, *, source: str) -> list[tuple[str, str, CommentedMap]]:
    """Each token entry with its path (`tokens[1]`) and place (`FILE:LINE:COL`)."""
    if raw is None:
        return []
    if isinstance(raw, CommentedMap):  # token → {user, groups}
        found = []
        for token, value in raw.items():
            entry = CommentedMap(value) if isinstance(value, CommentedMap) else CommentedMap()
            entry.lc.line, entry.lc.col = raw.lc.key(token)
            entry["token"] = token
            found.append(("tokens.<token>", _at(source, raw, token), entry))
        return found
    if not isinstance(raw, CommentedSeq):
        raise errors.Invalid(f"{source}: tokens: expected a list of {{token, user, groups}}")
    found = []
    for n, item in enumerate(raw):
        where = _at(source, raw, n)
        if not isinstance(item, CommentedMap):
            raise errors.Invalid(
                f"{where}: tokens[{n}]: expected a mapping {{token, user, groups}}"
            )
        found.append((f"tokens[{n}]", where, item))
    return found


def _known(node: CommentedMap, known: tuple[str, ...], *, source: str, path: str) -> None:
    """Refuse a key the file format does not have (a misspelt `grups:` gave no groups)."""
    for key in node:
        if key not in known:
            named = f"{path}.{key}" if path else str(key)
            raise errors.Invalid(
                f"{_at(source, node, key)}: {named}: unknown field; known fields:"
                f" {', '.join(known)}"
            )


def _at(source: str, node: CommentedMap | CommentedSeq, key: Any) -> str:
    """`FILE:LINE:COL` of `key` (a map's key, or a list's index) in `node`."""
    try:
        line, col = node.lc.key(key) if isinstance(node, CommentedMap) else node.lc.item(key)
    except (KeyError, IndexError, TypeError):
        line, col = node.lc.line, node.lc.col
    return f"{source}:{line + 1}:{col + 1}"


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _groups(item: CommentedMap) -> list[str]:
    groups = item.get("groups") or []
    return [str(g) for g in (groups if isinstance(groups, list) else [groups])]
