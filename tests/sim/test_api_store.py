"""The object store on its own: history floor, listeners, admission, cascades, finalizers."""

from __future__ import annotations

from typing import Any

import pytest

from clusters.sim.clock import ManualClock
from clusters.sim.resources import ResourceType, by_kind
from clusters.sim.server import ensure_system_namespaces
from clusters.sim.store import ApiError, ObjectStore

CONFIGMAPS = by_kind("v1", "ConfigMap")
DEPLOYMENTS = by_kind("apps/v1", "Deployment")
REPLICASETS = by_kind("apps/v1", "ReplicaSet")
PODS = by_kind("v1", "Pod")
NODES = by_kind("v1", "Node")


@pytest.fixture
def store() -> ObjectStore:
    s = ObjectStore(clock=ManualClock(), history_limit=5)
    ensure_system_namespaces(s)
    return s


def _cm(name: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", **meta}}


def test_watching_from_below_the_history_floor_is_expired(store: ObjectStore) -> None:
    start = store.resource_version
    for i in range(6):
        store.create(CONFIGMAPS, _cm(f"c{i}"))
    assert store.oldest_resource_version > start
    with pytest.raises(ApiError) as err:
        store.watch(CONFIGMAPS, resource_version=str(start))
    assert (err.value.code, err.value.reason) == (410, "Expired")
    store.watch(CONFIGMAPS, resource_version=str(store.oldest_resource_version)).close()


async def test_a_watch_replays_history_after_its_version(store: ObjectStore) -> None:
    store.create(CONFIGMAPS, _cm("a"))
    since = store.resource_version
    store.create(CONFIGMAPS, _cm("b"))
    store.delete(CONFIGMAPS, "default", "a")
    w = store.watch(CONFIGMAPS, "default", resource_version=str(since))
    w.close()
    assert [(t, o["metadata"]["name"]) async for t, o in w] == [("ADDED", "b"), ("DELETED", "a")]


def test_listeners_see_changes_in_commit_order_even_when_they_write(store: ObjectStore) -> None:
    seen: list[tuple[str, str]] = []

    def cascade(etype: str, rt: ResourceType, obj: dict[str, Any], old: Any) -> None:
        if rt is CONFIGMAPS and etype == "ADDED" and obj["metadata"]["name"] == "parent":
            store.create(CONFIGMAPS, _cm("child"))

    def record(etype: str, rt: ResourceType, obj: dict[str, Any], old: Any) -> None:
        seen.append((etype, obj["metadata"]["name"]))

    store.add_listener(cascade)
    store.add_listener(record)
    store.create(CONFIGMAPS, _cm("parent"))
    assert seen == [("ADDED", "parent"), ("ADDED", "child")]


def test_admission_can_reject_and_rewrite(store: ObjectStore) -> None:
    def admit(op: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> Any:
        if op == "CREATE" and new is not None:
            if new["metadata"]["name"] == "forbidden":
                raise ApiError(403, "Forbidden", 'configmaps "forbidden" is forbidden: no')
            return {**new, "data": {"stamped": "yes"}}
        return None

    store.add_admission(CONFIGMAPS, admit)
    assert store.create(CONFIGMAPS, _cm("ok"))["data"] == {"stamped": "yes"}
    with pytest.raises(ApiError) as err:
        store.create(CONFIGMAPS, _cm("forbidden"))
    assert err.value.code == 403
    assert store.try_get(CONFIGMAPS, "default", "forbidden") is None


def test_deleting_an_owner_deletes_its_dependents(store: ObjectStore) -> None:
    dep = store.create(
        DEPLOYMENTS, {"metadata": {"name": "web", "namespace": "default"}, "spec": {}}
    )
    ref = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": dep["metadata"]["uid"],
    }
    rs = store.create(
        REPLICASETS,
        {
            "metadata": {"name": "web-1", "namespace": "default", "ownerReferences": [ref]},
            "spec": {},
        },
    )
    rs_ref = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-1",
        "uid": rs["metadata"]["uid"],
    }
    store.create(
        PODS,
        {
            "metadata": {"name": "web-1-x", "namespace": "default", "ownerReferences": [rs_ref]},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    store.delete(DEPLOYMENTS, "default", "web")
    assert store.count(REPLICASETS) == 0
    assert store.count(PODS) == 0


def test_orphan_propagation_keeps_dependents(store: ObjectStore) -> None:
    dep = store.create(
        DEPLOYMENTS, {"metadata": {"name": "web", "namespace": "default"}, "spec": {}}
    )
    ref = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": dep["metadata"]["uid"],
    }
    store.create(
        REPLICASETS,
        {
            "metadata": {"name": "web-1", "namespace": "default", "ownerReferences": [ref]},
            "spec": {},
        },
    )
    store.delete(DEPLOYMENTS, "default", "web", propagation="Orphan")
    assert store.count(REPLICASETS) == 1


def test_finalizers_hold_deletion_until_removed(store: ObjectStore) -> None:
    store.create(CONFIGMAPS, _cm("held", finalizers=["example.com/hold"]))
    marked = store.delete(CONFIGMAPS, "default", "held")
    assert marked["metadata"]["deletionTimestamp"]
    assert store.try_get(CONFIGMAPS, "default", "held") is not None
    marked["metadata"]["finalizers"] = []
    store.update(CONFIGMAPS, marked)
    assert store.try_get(CONFIGMAPS, "default", "held") is None


def test_a_no_op_update_keeps_the_resource_version(store: ObjectStore) -> None:
    created = store.create(CONFIGMAPS, {**_cm("same"), "data": {"a": "1"}})
    again = store.update(CONFIGMAPS, created)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_status_survives_create_only_for_nodes(store: ObjectStore) -> None:
    node = store.create(NODES, {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}})
    assert node["status"] == {"capacity": {"cpu": "4"}}
    dep = store.create(
        DEPLOYMENTS,
        {"metadata": {"name": "d", "namespace": "default"}, "spec": {}, "status": {"replicas": 9}},
    )
    assert "status" not in dep


def test_dry_run_validates_without_storing(store: ObjectStore) -> None:
    store.create(CONFIGMAPS, _cm("probe"), dry_run=True)
    assert store.try_get(CONFIGMAPS, "default", "probe") is None
    with pytest.raises(ApiError):
        store.create(CONFIGMAPS, _cm("Not-Valid"), dry_run=True)


def test_generate_name_appends_a_random_suffix(store: ObjectStore) -> None:
    created = store.create(
        CONFIGMAPS, {"metadata": {"generateName": "web-", "namespace": "default"}}
    )
    name = created["metadata"]["name"]
    assert name.startswith("web-")
    assert len(name) == len("web-") + 5
