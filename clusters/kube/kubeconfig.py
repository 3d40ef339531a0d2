"""Kubeconfig (a file path or inline YAML, plus an optional context) to a client configuration.

Fed by a Cluster's `spec.connection`; feeds `connector.KubeConnector`, which builds one
ApiClient per member from the result. Loading goes through kubernetes_asyncio's own loader
so exec plugins, client certificates and tokens behave as kubectl's do. The file is never
written back (`persist_config=False`): the controller must not edit a user's kubeconfig.
A kubeconfig that cannot be read, is not YAML (named by file, line and column), is
empty, or lacks the context is a permanent `errors.Invalid` naming the problem, never a
library traceback: kubernetes_asyncio parses with PyYAML and raises its errors (or a
TypeError for an empty file) as they come, and one member's bad file escaping as those
stopped the whole cluster monitor. An inline kubeconfig sealed at rest
(`federation.secrets`) is opened here, in memory, just before the client is built.

A kubeconfig is parsed once per content (`_parsed`, libyaml when PyYAML has it, the
parser kubernetes_asyncio itself reads with) and handed to the library as a mapping.
Why: a fleet joined from one file (`fedctl up` writes one kubeconfig of every member's
context) had that file parsed again for every member at every connect and for every
Cluster at every join check, in pure Python on the event loop: 144 members took 26 s to
check one join, long enough for the controller to lose its lease.

A credential plugin (`exec`, `auth-provider`: `policies.models.kubeconfigs`) is refused
before the library sees the kubeconfig, for the library runs it while loading: always in
a Cluster's inline kubeconfig or its kubeconfigPath, which come through the API or the
registry (both writable by more people than the controller's host), and in the
controller's own kubeconfig file (`--kubeconfig`, for connections naming only a context)
unless the operator opted in (`MemberSettings.insecure_kubeconfig_exec`), as Flux's
`--insecure-kubeconfig-exec`.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import io
import os
import pathlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import yaml as pyyaml
from kubernetes_asyncio import client, config
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from federation import errors, secrets
from policies.models import kubeconfigs
from policies.models.cluster import Connection

__all__ = ["Endpoint", "endpoint", "load"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a connection leads, as far as its kubeconfig says: the file (None when
    inline), the context (the file's current one when the connection names none) and the
    API server URL (None when the kubeconfig cannot be read or does not say)."""

    file: str | None
    context: str | None
    server: str | None

    def same_as(self, other: Endpoint) -> str | None:
        """How `other` reaches the same Kubernetes API (a phrase), or None when it is not
        known to."""
        if self.server is not None and self.server == other.server:
            return f"server {self.server}"
        if self.file is not None and (self.file, self.context) == (other.file, other.context):
            return f"context {self.context or '(current)'} of kubeconfig {self.file}"
        return None


def endpoint(connection: Connection) -> Endpoint:
    """Where `connection` leads, read from its kubeconfig without connecting and without
    running a credential plugin (the API checks every Cluster written with it). Never
    raises: what cannot be read is left None."""
    file = None if connection.kubeconfig is not None else os.path.realpath(_default(connection))
    try:
        if connection.kubeconfig is not None:
            text = secrets.open_if_sealed(connection.kubeconfig)
        else:
            text = pathlib.Path(str(file)).read_text(encoding="utf-8")
        data: Any = _parsed(text, where="kubeconfig")
    except (OSError, UnicodeDecodeError, errors.FedctlError, ValueError):
        data = None
    if not isinstance(data, dict):
        return Endpoint(file, connection.context, None)
    context = connection.context or _text(data.get("current-context"))
    ctx = _entry(data.get("contexts"), context, "context")
    cluster = _entry(data.get("clusters"), _text(ctx.get("cluster")), "cluster")
    server = _text(cluster.get("server"))
    return Endpoint(file, context, server.rstrip("/").lower() if server else None)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _entry(listed: object, name: str | None, field: str) -> dict[str, Any]:
    """The `field` mapping of the entry called `name` in a kubeconfig list ({} if none)."""
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, dict) and item.get("name") == name:
            found = item.get(field)
            return found if isinstance(found, dict) else {}
    return {}


async def load(connection: Connection, *, allow_exec: bool = False) -> Any:
    """A kubernetes_asyncio Configuration for the connection (file, inline or default file).
    `allow_exec`: the controller's own kubeconfig file may run credential plugins."""
    cfg = type.__call__(client.Configuration)
    context = connection.context
    try:
        if connection.kubeconfig is not None:
            text = secrets.open_if_sealed(connection.kubeconfig)
            data = _parsed(text, where="inline kubeconfig")
            _no_plugin(data, where="spec.connection.kubeconfig")
            await config.load_kube_config_from_dict(
                copy.deepcopy(data), context=context, client_configuration=cfg
            )
        else:
            path = _path(connection)
            text = await asyncio.to_thread(pathlib.Path(path).read_text, encoding="utf-8")
            data = _parsed(text, where=f"kubeconfig {path}")
            if connection.kubeconfig_path is not None:
                _no_plugin(data, where=f"spec.connection.kubeconfigPath {path}")
            elif not allow_exec:
                _no_plugin(data, where=f"kubeconfig {path}", opt_in=True)
            if kubeconfigs.credential_plugin(data) is not None:  # the operator's opt-in
                await config.load_kube_config(
                    config_file=path,
                    context=context,
                    client_configuration=cfg,
                    persist_config=False,
                )
            else:
                await config.load_kube_config_from_dict(
                    _beside(data, path),
                    context=context,
                    client_configuration=cfg,
                )
    except errors.Invalid:
        raise
    except Exception as exc:  # the library's errors on bad input are of any type
        where = f" (context {context})" if context else ""
        raise errors.Invalid(f"cannot load kubeconfig{where}: {exc}") from exc
    return cfg


def _no_plugin(data: dict[str, Any], *, where: str, opt_in: bool = False) -> None:
    """Raise Invalid naming `where` and the user when the kubeconfig has a credential
    plugin; `opt_in`: say how the controller's own file may keep one."""
    plugin = kubeconfigs.credential_plugin(data)
    if plugin is None:
        return
    if opt_in:
        raise errors.Invalid(
            f"{where}: {plugin} runs a program on the controller to sign in: start the"
            " controller with --insecure-kubeconfig-exec (or"
            " FEDCTL_MEMBER__INSECURE_KUBECONFIG_EXEC=true) to allow it in its own"
            " kubeconfig file, or give the user a token or a client certificate"
        )
    raise errors.Invalid(f"{where}: {plugin} {kubeconfigs.REFUSED}")


_PARSED: OrderedDict[bytes, dict[str, Any]] = OrderedDict()
"""Kubeconfig contents parsed lately (by digest), the latest last; never handed out to
be changed (`load` gives the library a copy)."""
PARSED_KEPT = 64

_FILE_FIELDS = {
    "clusters": ("cluster", ("certificate-authority",)),
    "users": ("user", ("client-certificate", "client-key", "tokenFile")),
}
"""The file paths a kubeconfig may give, which kubectl reads relative to the file."""


def _parsed(text: str, *, where: str) -> dict[str, Any]:
    """The kubeconfig `text` as a mapping, parsed once however many members and checks
    read it (module doc). Raises Invalid as `_mapping` does."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    found = _PARSED.get(digest)
    if found is not None:
        _PARSED.move_to_end(digest)
        return found
    loader = getattr(pyyaml, "CSafeLoader", pyyaml.SafeLoader)
    try:
        data: Any = pyyaml.load(text, Loader=loader)
    except pyyaml.YAMLError:
        data = _mapping(text, where=where)  # for its message, naming line and column
    if not isinstance(data, dict):
        data = _mapping(text, where=where)  # raises, saying what the file is
    mapping: dict[str, Any] = data
    _PARSED[digest] = mapping
    while len(_PARSED) > PARSED_KEPT:
        _PARSED.popitem(last=False)
    return mapping


def _beside(data: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of `data` whose relative file paths lead where they do from the directory
    of its file `path`, as kubectl and the library's file loader read them."""
    base = os.path.dirname(os.path.abspath(path))
    out = copy.deepcopy(data)
    for listed, (field, paths) in _FILE_FIELDS.items():
        for item in out.get(listed) or []:
            inner = item.get(field) if isinstance(item, dict) else None
            if not isinstance(inner, dict):
                continue
            for key in paths:
                value = inner.get(key)
                if isinstance(value, str) and value and not os.path.isabs(value):
                    inner[key] = os.path.normpath(os.path.join(base, value))
    return out


def _mapping(text: str, *, where: str) -> dict[str, Any]:
    """The kubeconfig's YAML as a mapping; raises Invalid naming `where`, the line and the
    column of a syntax error, or saying the file is empty or not a mapping."""
    yaml = YAML(typ="safe", pure=True)
    yaml.allow_duplicate_keys = True  # as kubectl's loader reads them: the last one wins
    try:
        data = yaml.load(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise errors.Invalid(f"{where}{at}: not valid YAML: {what}") from exc
    except YAMLError as exc:
        raise errors.Invalid(f"{where}: not valid YAML: {exc}") from exc
    if data is None:
        raise errors.Invalid(f"{where} is empty: expected clusters, contexts and users")
    if not isinstance(data, dict):
        raise errors.Invalid(f"{where} is not a YAML mapping (clusters, contexts and users)")
    return data


def _default(connection: Connection) -> str:
    """The kubeconfig file: the connection's, else $KUBECONFIG's first, else ~/.kube/config."""
    path = connection.kubeconfig_path or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return os.path.expanduser(path or "~/.kube/config")


def _path(connection: Connection) -> str:
    """The kubeconfig file (`_default`), which must exist."""
    path = _default(connection)
    if not os.path.exists(path):
        raise errors.Invalid(f"kubeconfig {path} does not exist")
    return path
