"""A NoExecute taint written by the user gets a timeAdded, as a Node's does from the
Kubernetes API server, and keeps it through later edits: a toleration's tolerationSeconds
count from it, and without one they never ran out.

The controller is the real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from federation.registry import codec, keys
from federation.registry.memory import MemoryStore
from policies.models.cluster import Cluster
from tests.serving import api_server, fedctl

pytestmark = pytest.mark.integration

CLUSTER = """\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata: {name: edge}
spec:
  region: eu-west
  connection: {kubeconfigPath: /nonexistent/kubeconfig}
  taints:
    - {key: maintenance, value: disk, effect: NoExecute}
    - {key: slow, effect: NoSchedule}
"""


async def taints(store: MemoryStore) -> dict[str, Any]:
    stored = await codec.TypedStore(store, codec.Codec(Cluster)).get(keys.cluster_key("edge"))
    assert stored is not None
    return {f"{t.key}:{t.effect}": t.time_added for t in stored.obj.spec.taints}


async def test_a_user_s_noexecute_taint_is_stamped_once_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = MemoryStore()
    path = tmp_path / "edge.yaml"
    path.write_text(CLUSTER)
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        first = await taints(store)
        assert first["maintenance:NoExecute"] is not None, "applied without one: stamped"
        assert first["slow:NoSchedule"] is None, "only NoExecute taints carry a time"

        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert "unchanged" in capsys.readouterr().out, "the stamp is not a change of the user's"
        assert await taints(store) == first

        assert await fedctl(server, "cluster", "taint", "edge", "drain=now:NoExecute") == 0
        second = await taints(store)
        assert second["drain:NoExecute"] is not None
        assert second["maintenance:NoExecute"] == first["maintenance:NoExecute"], (
            "another edit of the spec keeps the first taint's time"
        )

        assert await fedctl(server, "cluster", "taint", "edge", "maintenance-") == 0
        third = await taints(store)
        assert "maintenance:NoExecute" not in third
        assert third["drain:NoExecute"] == second["drain:NoExecute"]
    await store.close()
