"""The kubectl round trip, `fedctl get KIND NAME -o yaml > f; fedctl apply -f f` (and `diff`
of it): the file `get` writes applies back unchanged for a workload too, although `get`
adds fedctl's own fields (health, phase, placement) under its `status`, and a status in a
document is never stored in the template, as the Kubernetes API server drops it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.registry import keys
from federation.registry.memory import MemoryStore
from tests.serving import api_server, fedctl

pytestmark = pytest.mark.integration

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"""


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, MemoryStore]]:
    store = MemoryStore()
    async with api_server(store) as url:
        yield url, store
    await store.close()


async def test_get_yaml_of_a_workload_applies_and_diffs_back_unchanged(
    served: tuple[str, MemoryStore], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, store = served
    source = tmp_path / "web.yaml"
    source.write_text(DEPLOYMENT)
    assert await fedctl(url, "apply", "-f", str(source)) == 0
    capsys.readouterr()
    assert await fedctl(url, "get", "deploy", "web", "-n", "shop", "-o", "yaml") == 0
    exported = tmp_path / "exported.yaml"
    exported.write_text(capsys.readouterr().out)
    assert "status:" in exported.read_text()
    assert await fedctl(url, "diff", "-f", str(exported)) == 0
    assert capsys.readouterr().out == ""
    assert await fedctl(url, "apply", "-f", str(exported)) == 0
    assert capsys.readouterr().out.strip() == "deployment.apps/web unchanged"
    # Applied as a new object (a restore), its status is dropped, not stored.
    assert await fedctl(url, "delete", "deploy", "web", "-n", "shop") == 0
    assert await fedctl(url, "apply", "-f", str(exported)) == 0
    (stored,) = (await store.list(keys.prefix("workloads"))).items
    doc = json.loads(stored.value)
    assert doc.get("object", doc)["spec"]["replicas"] == 2
    assert "status" not in doc.get("object", doc)
