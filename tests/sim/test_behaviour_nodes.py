"""Node lifecycle on the simulated clock: heartbeats, NotReady taints, toleration windows."""

from __future__ import annotations

from typing import Any

from tests.sim.behaviour_support import (
    DEPLOYMENT,
    NODE,
    POD,
    ManualCluster,
    cluster_profile,
    deployment_body,
    pod_body,
    pool,
)

PROFILE = cluster_profile("n", pool("cpu", count=2, cpu="8", memory="32Gi"))


def _ready(node: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


async def test_pods_are_evicted_when_the_default_300s_toleration_runs_out() -> None:
    async with ManualCluster(PROFILE) as sim:
        sim.store.create(POD, pod_body("a", nodeSelector={"kubernetes.io/hostname": "n-cpu-0"}))
        patient = pod_body(
            "b",
            nodeSelector={"kubernetes.io/hostname": "n-cpu-0"},
            tolerations=[
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
        )
        sim.store.create(POD, patient)
        await sim.advance(5)
        assert sim.controllers.set_nodes_ready(["n-cpu-0"], ready=False) == ["n-cpu-0"]
        await sim.advance(10)
        assert _ready(sim.get(NODE, "n-cpu-0", None))["status"] == "False"
        pod = sim.get(POD, "a")
        assert pod["status"]["phase"] == "Running"
        assert (
            next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")["status"]
            == "False"
        )
        await sim.advance(280, step=10)  # 290 s after the taint: still tolerated
        assert sim.store.try_get(POD, "default", "a") is not None
        await sim.advance(20, step=5)
        assert sim.store.try_get(POD, "default", "a") is None
        assert sim.store.try_get(POD, "default", "b") is not None  # tolerates forever
        [event] = sim.events("TaintManagerEviction")
        assert event["message"] == "Marking for deletion Pod default/a"


async def test_replacements_avoid_the_not_ready_node_and_return_after_heal() -> None:
    async with ManualCluster(PROFILE) as sim:
        sim.controllers.set_nodes_ready(["n-cpu-1"], ready=False)
        sim.store.create(POD, pod_body("p"))
        sim.store.create(DEPLOYMENT, deployment_body("web", 4))
        await sim.advance(5)
        items, _ = sim.store.list(POD, "default")
        assert {p["spec"]["nodeName"] for p in items} == {"n-cpu-0"}
        sim.controllers.set_nodes_ready(["n-cpu-1"], ready=True)
        await sim.advance(2)
        node = sim.get(NODE, "n-cpu-1", None)
        assert _ready(node)["status"] == "True"
        assert not node["spec"]["taints"]


async def test_heartbeats_refresh_ready_nodes() -> None:
    async with ManualCluster(PROFILE) as sim:
        before = _ready(sim.get(NODE, "n-cpu-0", None))["lastHeartbeatTime"]
        await sim.advance(61, step=10)
        after = _ready(sim.get(NODE, "n-cpu-0", None))
        assert after["lastHeartbeatTime"] > before
        assert after["lastTransitionTime"] == before
