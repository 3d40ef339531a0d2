"""Kubeconfigs that would run a program on the controller to sign in (`exec`,
`auth-provider`): refused at their line when a Cluster is written, refused by the
connector whatever the registry holds, and run only from the controller's own file when
the operator opted in (`MemberSettings.insecure_kubeconfig_exec`)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from clusters.kube import kubeconfig
from federation import errors
from policies import loading
from policies.models.cluster import Connection

REFUSED = (
    "runs a program on the controller to sign in, which a kubeconfig stored in the registry"
    " or given through the API may not (it would run with the controller's rights): give the"
    " user a token or a client certificate instead"
)


def config(user: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
        "users": [{"name": "ok", "user": {"token": "t"}}, {"name": "u", "user": user}],
    }


EXEC = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "/bin/sh"}}
PROVIDER = {"auth-provider": {"name": "oidc", "config": {"idp-issuer-url": "https://x"}}}


@pytest.mark.parametrize(
    ("user", "where"),
    [
        pytest.param(EXEC, "users[1].user.exec (user u)", id="an exec credential plugin"),
        pytest.param(PROVIDER, "users[1].user.auth-provider (user u)", id="an auth provider"),
    ],
)
def test_a_cluster_written_with_a_credential_plugin_is_refused_at_its_line(
    user: dict[str, Any], where: str
) -> None:
    inline = textwrap.indent(json.dumps(config(user)), "      ")
    text = (
        "apiVersion: fedctl.io/v1alpha1\nkind: Cluster\nmetadata: {name: execy}\nspec:\n"
        f"  region: xx\n  connection:\n    kubeconfig: |\n{inline}\n"
    )
    result = loading.load_text(text, filename="c.yaml")
    assert [str(f) for f in result.findings if f.is_error] == [
        f"c.yaml:7:17: spec.connection.kubeconfig: {where} {REFUSED}"
    ]


def test_a_sealed_or_plain_kubeconfig_is_written_as_before() -> None:
    assert Connection(kubeconfig=json.dumps(config({"token": "t"}))).kubeconfig
    assert Connection(kubeconfig="fedctl:sealed:v1:abc").kubeconfig, "not YAML: not judged"


async def test_the_controllers_own_file_runs_a_plugin_only_when_opted_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "ran"
    credential = (
        '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
        '"status":{"token":"x"}}'
    )
    plugin = {**EXEC["exec"], "args": ["-c", f"touch {ran}; echo '{credential}'"]}
    own = tmp_path / "own.kubeconfig"
    own.write_text(json.dumps(config({"exec": plugin})))
    monkeypatch.setenv("KUBECONFIG", str(own))
    with pytest.raises(errors.Invalid) as refused:
        await kubeconfig.load(Connection(context="c"))
    assert str(refused.value).startswith(
        f"kubeconfig {own}: users[1].user.exec (user u) runs a program on the controller to"
        " sign in: start the controller with --insecure-kubeconfig-exec"
    )
    with pytest.raises(errors.Invalid, match=r"kubeconfigPath .*users\[1\]\.user\.exec"):
        await kubeconfig.load(Connection(kubeconfig_path=str(own)), allow_exec=True)
    assert not ran.exists(), "refused before the library saw it"
    cfg = await kubeconfig.load(Connection(context="c"), allow_exec=True)
    assert cfg.host == "https://127.0.0.1:6443" and ran.exists(), "the opt-in runs it"
