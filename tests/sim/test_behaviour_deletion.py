"""Deletion propagation as the garbage collector does it: orphan, background, foreground.

`kubectl delete --cascade=orphan` left the ReplicaSet pointing at a deleted Deployment; the
Deployment created again (a federation restoring its copy) then collided with it by name
forever and stayed at 0/3.
"""

from __future__ import annotations

from typing import Any

from tests.sim.behaviour_support import (
    DEPLOYMENT,
    POD,
    REPLICASET,
    ManualCluster,
    container,
    deployment_body,
)
from tests.sim.test_behaviour_workloads import CPU


def _replicasets(sim: ManualCluster) -> list[dict[str, Any]]:
    items, _ = sim.store.list(REPLICASET, "default")
    return items


def _pods(sim: ManualCluster) -> list[dict[str, Any]]:
    items, _ = sim.store.list(POD, "default", label_selector="app=web")
    return items


async def _running(sim: ManualCluster, body: dict[str, Any]) -> dict[str, Any]:
    sim.store.create(DEPLOYMENT, body)
    await sim.advance(3)
    dep = sim.get(DEPLOYMENT, "web")
    assert dep["status"]["availableReplicas"] == body["spec"]["replicas"]
    return dep


async def test_orphaned_replicasets_lose_their_owner_reference() -> None:
    async with ManualCluster(CPU) as sim:
        await _running(sim, deployment_body("web", 3))
        sim.store.delete(DEPLOYMENT, "default", "web", propagation="Orphan")
        await sim.advance(2)
        [rs] = _replicasets(sim)
        assert "ownerReferences" not in rs["metadata"]
        assert len(_pods(sim)) == 3


async def test_a_deployment_created_again_adopts_its_orphaned_replicaset() -> None:
    async with ManualCluster(CPU) as sim:
        await _running(sim, deployment_body("web", 3))
        [before] = _replicasets(sim)
        sim.store.delete(DEPLOYMENT, "default", "web", propagation="Orphan")
        await sim.settle()
        dep = await _running(sim, deployment_body("web", 3))
        [rs] = _replicasets(sim)
        assert rs["metadata"]["name"] == before["metadata"]["name"]
        assert [r["uid"] for r in rs["metadata"]["ownerReferences"]] == [dep["metadata"]["uid"]]
        assert len(_pods(sim)) == 3
        assert {p["metadata"]["uid"] for p in _pods(sim)} == {
            p["metadata"]["uid"] for p in sim.store.list(POD, "default")[0]
        }


async def test_an_adopted_replicaset_with_another_template_is_rolled_away() -> None:
    async with ManualCluster(CPU) as sim:
        await _running(sim, deployment_body("web", 3))
        sim.store.delete(DEPLOYMENT, "default", "web", propagation="Orphan")
        await sim.settle()
        changed = deployment_body("web", 3, container("web", image="nginx:1.28"))
        sim.store.create(DEPLOYMENT, changed)
        await sim.advance(20)
        assert sim.get(DEPLOYMENT, "web")["status"]["availableReplicas"] == 3
        images = [p["spec"]["containers"][0]["image"] for p in _pods(sim)]
        assert images == ["nginx:1.28"] * 3


async def test_foreground_deletion_removes_the_dependents_before_the_owner() -> None:
    async with ManualCluster(CPU) as sim:
        await _running(sim, deployment_body("web", 2))
        seen: list[tuple[str, str, str, list[str]]] = []

        def record(etype: str, rt: Any, obj: dict[str, Any], old: Any) -> None:
            meta = obj["metadata"]
            seen.append((etype, rt.kind, meta["name"], list(meta.get("finalizers") or ())))

        sim.store.add_listener(record)
        answer = sim.store.delete(DEPLOYMENT, "default", "web", propagation="Foreground")
        assert answer["metadata"]["deletionTimestamp"]
        assert answer["metadata"]["finalizers"] == ["foregroundDeletion"]
        owner = [(e, f) for e, kind, _, f in seen if kind == "Deployment"]
        assert owner == [("MODIFIED", ["foregroundDeletion"]), ("DELETED", [])]
        deleted = [kind for e, kind, _, _ in seen if e == "DELETED"]
        # each level in the foreground: the pods, then their ReplicaSet, then the owner
        assert deleted == ["Pod", "Pod", "ReplicaSet", "Deployment"]
        assert sim.store.try_get(DEPLOYMENT, "default", "web") is None
        assert not _pods(sim) and not _replicasets(sim)
