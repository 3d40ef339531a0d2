"""One kubeconfig file of many contexts shared by a whole fleet (`fedctl up` writes one):
parsed once however many members connect through it and however many Clusters a join
checks, read again when it changes, and its relative file paths still read from the
file's own directory, as kubectl reads them.

Each member's connect and each Cluster of every join check used to parse the file again
in pure Python on the event loop: 144 members sharing a 22 KB kubeconfig took 26 s to
check one join, and the controller lost its lease meanwhile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusters.kube import kubeconfig
from policies.models.cluster import Connection


def fleet(n: int, *, ca: str | None = None) -> dict[str, Any]:
    """A kubeconfig of `n` members' contexts, each with its own server."""
    cluster: dict[str, Any] = {"certificate-authority": ca} if ca else {}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": f"m{i}", "cluster": {"server": f"https://10.0.0.{i}:6443", **cluster}}
            for i in range(n)
        ],
        "contexts": [
            {"name": f"m{i}", "context": {"cluster": f"m{i}", "user": "u"}} for i in range(n)
        ],
        "current-context": "m0",
        "users": [{"name": "u", "user": {"token": "t"}}],
    }


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every parse of a kubeconfig's text, by its length."""
    seen: list[int] = []
    real = yaml.load

    def counting(text: Any, Loader: Any) -> Any:
        seen.append(len(text))
        return real(text, Loader=Loader)

    monkeypatch.setattr(kubeconfig.pyyaml, "load", counting)
    return seen


async def test_members_sharing_one_file_parse_it_once(tmp_path: Path, parses: list[int]) -> None:
    path = tmp_path / "fleet.kubeconfig"
    path.write_text(json.dumps(fleet(40)))
    connections = [Connection(kubeconfig_path=str(path), context=f"m{i}") for i in range(40)]
    ends = [kubeconfig.endpoint(c) for c in connections]
    assert [e.server for e in ends] == [f"https://10.0.0.{i}:6443" for i in range(40)]
    configs = [await kubeconfig.load(c) for c in connections]
    assert [c.host for c in configs] == [f"https://10.0.0.{i}:6443" for i in range(40)]
    assert len(parses) == 1, "40 endpoints and 40 connects read one file's one content"
    # An edit (a member added, credentials rotated) is read, not served from memory.
    path.write_text(json.dumps(fleet(41)))
    cfg = await kubeconfig.load(Connection(kubeconfig_path=str(path), context="m40"))
    assert cfg.host == "https://10.0.0.40:6443"
    assert len(parses) == 2


async def test_a_relative_certificate_path_reads_from_the_kubeconfig_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "conf"
    (home / "pki").mkdir(parents=True)
    (home / "pki" / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    path = home / "fleet.kubeconfig"
    path.write_text(json.dumps(fleet(2, ca="pki/ca.crt")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # not where the file is
    cfg = await kubeconfig.load(Connection(kubeconfig_path=str(path), context="m1"))
    assert cfg.host == "https://10.0.0.1:6443"
    assert cfg.ssl_ca_cert == str(home / "pki" / "ca.crt")
    # The parsed content is never changed by a connect: another reads it whole again.
    again = await kubeconfig.load(Connection(kubeconfig_path=str(path), context="m0"))
    assert again.ssl_ca_cert == str(home / "pki" / "ca.crt")
