"""`fedctl diff` agrees with `apply` and prints no secret: a Cluster with an inline
kubeconfig (never read back) is unchanged when `apply` says so, where every run reported
drift and printed the member's credential; a Secret's changed values are masked as
`kubectl diff` masks them; and chips the server defines are not warned about (diff
judges against the server, as apply does)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.registry.memory import MemoryStore
from tests.serving import api_server, fedctl

pytestmark = pytest.mark.integration

TOKEN = "SUPER-SECRET-TOKEN-123"
CLUSTER = f"""\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata: {{name: fake-x}}
spec:
  region: nowhere
  chips: [{{model: nvidia-h100-80gb, arch: amd64, count: 8}}]
  connection:
    kubeconfig: |
      apiVersion: v1
      kind: Config
      users: [{{name: u, user: {{token: {TOKEN}}}}}]
"""
SECRET = """\
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: web}
stringData: {password: PASSWORD, user: app}
"""


@pytest.fixture
async def server() -> AsyncIterator[str]:
    store = MemoryStore()
    async with api_server(store) as url:
        yield url
    await store.close()


async def test_a_cluster_with_an_inline_kubeconfig_diffs_as_apply_judges_it(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    assert await fedctl(server, "apply", "-f", str(path)) == 0
    capsys.readouterr()
    assert await fedctl(server, "diff", "-f", str(path)) == 0
    assert capsys.readouterr().out == ""
    path.write_text(CLUSTER.replace("nowhere", "eu-west"))
    assert await fedctl(server, "diff", "-f", str(path)) == 1
    out = capsys.readouterr().out
    assert "+  region: eu-west" in out
    assert TOKEN not in out, "the member credential was printed"


async def test_changed_secret_values_are_masked(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(SECRET.replace("PASSWORD", "hunter2-topsecret"))
    assert await fedctl(server, "apply", "-f", str(path)) == 0
    path.write_text(SECRET.replace("PASSWORD", "newpass-456"))
    capsys.readouterr()
    assert await fedctl(server, "diff", "-f", str(path)) == 1
    captured = capsys.readouterr()
    assert "hunter2" not in captured.out and "newpass" not in captured.out
    assert "-  password: '*** (before)'" in captured.out
    assert "+  password: '*** (after)'" in captured.out
    assert "user: '***'" in captured.out
    # The chip the Cluster defines on the server is known, as apply knows it.
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    assert await fedctl(server, "apply", "-f", str(cluster)) == 0
    queues = tmp_path / "q.yaml"
    queues.write_text(
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: ml}\n"
        "spec: {guarantee: {fedctl.io/chip-nvidia-h100-80gb: 1}}\n"
    )
    capsys.readouterr()
    assert await fedctl(server, "diff", "-f", str(queues)) == 1
    assert "is not defined by any AcceleratorProfile" not in capsys.readouterr().err
