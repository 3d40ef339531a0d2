"""Kubeconfig (a file path or inline YAML, plus an optional context) to a client configuration.

Fed by a Cluster's `spec.connection`; feeds `connector.KubeConnector`, which builds one
ApiClient per member from the result. Loading goes through kubernetes_asyncio's own loader
so exec plugins, client certificates and tokens behave as kubectl's do. The file is never
written back (`persist_config=False`): the controller must not edit a user's kubeconfig.
A kubeconfig that cannot be read or lacks the context is a permanent `errors.Invalid`
naming the problem, never a library traceback. An inline kubeconfig sealed at rest
(`federation.secrets`) is opened here, in memory, just before the client is built.
"""

from __future__ import annotations

import io
import os
from typing import Any

from kubernetes_asyncio import client, config
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from federation import errors, secrets
from policies.models.cluster import Connection

__all__ = ["load"]


async def load(connection: Connection) -> Any:
    """A kubernetes_asyncio Configuration for the connection (file, inline or default file)."""
    cfg = type.__call__(client.Configuration)
    context = connection.context
    try:
        if connection.kubeconfig is not None:
            text = secrets.open_if_sealed(connection.kubeconfig)
            data = YAML(typ="safe", pure=True).load(io.StringIO(text))
            if not isinstance(data, dict):
                raise errors.Invalid("inline kubeconfig is not a YAML mapping")
            await config.load_kube_config_from_dict(data, context=context, client_configuration=cfg)
        else:
            path = _path(connection)
            await config.load_kube_config(
                config_file=path, context=context, client_configuration=cfg, persist_config=False
            )
    except errors.Invalid:
        raise
    except (config.ConfigException, YAMLError, OSError, KeyError, ValueError) as exc:
        where = f" (context {context})" if context else ""
        raise errors.Invalid(f"cannot load kubeconfig{where}: {exc}") from exc
    return cfg


def _path(connection: Connection) -> str:
    """The kubeconfig file: the connection's, else $KUBECONFIG's first, else ~/.kube/config."""
    path = connection.kubeconfig_path or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    path = os.path.expanduser(path or "~/.kube/config")
    if not os.path.exists(path):
        raise errors.Invalid(f"kubeconfig {path} does not exist")
    return path
