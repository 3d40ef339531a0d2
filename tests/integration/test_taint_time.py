"""A NoExecute taint written by the user gets a timeAdded, as a Node's does from the
Kubernetes API server, and keeps it through later edits: a toleration's tolerationSeconds
count from it, and without one they never ran out.

The controller is the real API over an in-memory registry, or over etcd with a fake clock
so each stamp can be named exactly; the CLI is `main.main`.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from federation.api import app as api_app
from federation.clock import FakeClock
from federation.registry import codec, keys
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from policies.models.cluster import Cluster
from tests.serving import api_server, fedctl, serving

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


async def taints(store: st.Store, name: str = "edge") -> dict[str, Any]:
    stored = await codec.TypedStore(store, codec.Codec(Cluster)).get(keys.cluster_key(name))
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


async def test_each_write_path_stamps_with_the_api_s_clock_and_keeps_the_time(
    store: st.Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cluster taint` (GET, edit, PUT), a second edit, and `apply` twice, on memory and etcd."""
    clock = FakeClock()
    name = f"edge-{uuid.uuid4().hex[:8]}"
    bare = tmp_path / "bare.yaml"
    bare.write_text(CLUSTER.replace("name: edge", f"name: {name}").split("  taints:")[0])
    tainted = tmp_path / "tainted.yaml"
    tainted.write_text(CLUSTER.replace("name: edge", f"name: {name}"))
    async with serving(api_app.build_app(store, clock=clock)) as server:
        assert await fedctl(server, "apply", "-f", str(bare)) == 0
        t0 = clock.now()

        assert await fedctl(server, "cluster", "taint", name, "drain=now:NoExecute") == 0
        assert await taints(store, name) == {"drain:NoExecute": t0}, "stamped by the API"

        await clock.advance(40)
        assert await fedctl(server, "cluster", "taint", name, "zone=b:NoSchedule") == 0
        assert await fedctl(server, "cluster", "taint", name, "drain=now:NoExecute") == 0
        assert await taints(store, name) == {"drain:NoExecute": t0, "zone:NoSchedule": None}, (
            "another edit, and the same taint given again, keep the first time"
        )
        assert await fedctl(server, "cluster", "taint", name, "drain=later:NoExecute") == 0
        assert (await taints(store, name))["drain:NoExecute"] == clock.now(), (
            "another value is another taint"
        )

        await clock.advance(20)
        t1 = clock.now()
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(tainted)) == 0
        assert "configured" in capsys.readouterr().out
        applied = await taints(store, name)
        assert applied == {"maintenance:NoExecute": t1, "slow:NoSchedule": None}

        await clock.advance(30)
        assert await fedctl(server, "apply", "-f", str(tainted)) == 0
        assert "unchanged" in capsys.readouterr().out, "the stamp is not a change of the user's"
        assert await taints(store, name) == applied
        await store.commit([st.Delete(keys.cluster_key(name))])
