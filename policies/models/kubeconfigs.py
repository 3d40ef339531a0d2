"""Which kubeconfigs may run a program to sign in: credential plugins and where they are.

A kubeconfig user with `exec` (a client-go credential plugin) or `auth-provider` makes
whoever loads it run a command, or an in-process provider that may, with the loader's
rights. For the controller those are the keys that seal member kubeconfigs, the tokens
file and the registry's credentials, so a kubeconfig that arrived through the API or the
registry (a Cluster's inline kubeconfig or its kubeconfigPath) must not carry one: that
would hand anyone able to write a Cluster, or the registry, a shell on the controller.
Flux refused them the same way (CVE-2022-24817), and Karmada keeps only a token and a CA
per member.

Fed by a parsed kubeconfig (a Cluster's inline one when it is written,
`cluster.Connection`; and every kubeconfig the member connector loads,
`clusters.kube.kubeconfig`); feeds them the place of the first plugin, to refuse it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["PLUGIN_FIELDS", "REFUSED", "credential_plugin"]

PLUGIN_FIELDS: Final = ("exec", "auth-provider")
"""The `users[].user` fields that run something to obtain a credential."""

REFUSED: Final = (
    "runs a program on the controller to sign in, which a kubeconfig stored in the"
    " registry or given through the API may not (it would run with the controller's"
    " rights): give the user a token or a client certificate instead"
)
"""Why a plugin is refused, the end of a sentence opening with where it is."""


def credential_plugin(config: object) -> str | None:
    """Where the first credential plugin of a parsed kubeconfig is
    (`users[0].user.exec (user ci)`), or None when it has none. Every user is judged,
    not only the current context's: the context a connection names may change, and a
    plugin nobody uses is one nobody needs."""
    users = config.get("users") if isinstance(config, Mapping) else None
    for i, entry in enumerate(users if isinstance(users, list) else []):
        user = entry.get("user") if isinstance(entry, Mapping) else None
        if not isinstance(user, Mapping):
            continue
        for field in PLUGIN_FIELDS:
            if user.get(field) is not None:
                name = entry.get("name")
                called = f" (user {name})" if isinstance(name, str) and name else ""
                return f"users[{i}].user.{field}{called}"
    return None
