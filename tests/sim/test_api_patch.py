"""Contract: JSON, merge, strategic merge patch and server-side apply behave as upstream."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import ClientSession
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from clusters.sim import patch
from clusters.sim.clock import ManualClock
from clusters.sim.store import ObjectStore
from tests.sim.conftest import SimServer, serve


def _deployment(image: str = "nginx:1.26", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "api",
                            "image": image,
                            "resources": {"requests": {"cpu": "500m"}},
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        },
                        {"name": "sidecar", "image": "envoy:1"},
                    ]
                },
            },
            **spec,
        },
    }


@pytest.mark.parametrize(
    ("original", "patch_body", "expected"),
    [
        pytest.param(
            {"c": [{"name": "a", "image": "1", "r": {"x": 1}}]},
            {"c": [{"name": "a", "image": "2"}]},
            {"c": [{"name": "a", "image": "2"}]},
            id="lists without a merge key are replaced",
        ),
        pytest.param(
            {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
            {"containers": [{"name": "b", "$patch": "delete"}]},
            {"containers": [{"name": "a", "image": "1"}]},
            id="$patch delete removes one keyed entry",
        ),
        pytest.param(
            {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
            {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "2"}],
            },
            {"containers": [{"name": "b", "image": "1"}, {"name": "a", "image": "2"}]},
            id="$setElementOrder reorders a keyed list",
        ),
        pytest.param(
            {"spec": {"volumes": [{"name": "v", "emptyDir": {}}], "x": 1}},
            {"spec": {"$patch": "replace", "y": 2}},
            {"spec": {"y": 2}},
            id="$patch replace on a map replaces it",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a"]}},
            {"metadata": {"finalizers": ["b"]}},
            {"metadata": {"finalizers": ["a", "b"]}},
            id="finalizers merge as a set",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a", "b"]}},
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
            {"metadata": {"finalizers": ["b"]}},
            id="$deleteFromPrimitiveList drops values",
        ),
        pytest.param(
            {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
            {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}},
            {"strategy": {"type": "Recreate"}},
            id="$retainKeys drops unlisted keys",
        ),
        pytest.param(
            {"labels": {"a": "1", "b": "2"}},
            {"labels": {"a": None}},
            {"labels": {"b": "2"}},
            id="null deletes a key",
        ),
    ],
)
def test_strategic_merge_patch_directives(
    original: dict[str, Any], patch_body: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert patch.strategic_merge_patch(original, patch_body) == expected


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        pytest.param(
            [{"op": "add", "path": "/a/-", "value": 3}], {"a": [1, 2, 3], "b": {"c": "x"}}, id="add"
        ),
        pytest.param([{"op": "remove", "path": "/b/c"}], {"a": [1, 2], "b": {}}, id="remove"),
        pytest.param(
            [{"op": "replace", "path": "/a/0", "value": 9}],
            {"a": [9, 2], "b": {"c": "x"}},
            id="replace",
        ),
        pytest.param(
            [{"op": "move", "from": "/b/c", "path": "/d"}],
            {"a": [1, 2], "b": {}, "d": "x"},
            id="move",
        ),
        pytest.param(
            [
                {"op": "test", "path": "/b/c", "value": "x"},
                {"op": "copy", "from": "/b", "path": "/e"},
            ],
            {"a": [1, 2], "b": {"c": "x"}, "e": {"c": "x"}},
            id="test then copy",
        ),
    ],
)
def test_json_patch_operations(ops: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert patch.json_patch({"a": [1, 2], "b": {"c": "x"}}, ops) == expected


async def test_strategic_merge_of_an_image_keeps_the_container_resources(
    sim_server: SimServer,
) -> None:
    apps = sim_server.apps
    await apps.create_namespaced_deployment("default", _deployment())
    patched = await apps.patch_namespaced_deployment(
        "web",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "api", "image": "nginx:1.27"}]}}}},
    )
    api, sidecar = patched.spec.template.spec.containers
    assert (api.name, api.image) == ("api", "nginx:1.27")
    assert api.resources.requests == {"cpu": "500m"}
    assert [e.name for e in api.env] == ["A", "B"]
    assert (sidecar.name, sidecar.image) == ("sidecar", "envoy:1")
    assert patched.metadata.generation == 2


async def test_merge_patch_null_deletes_and_replaces_lists(sim_server: SimServer) -> None:
    apps = sim_server.apps
    await apps.create_namespaced_deployment("default", _deployment())
    patched = await apps.patch_namespaced_deployment(
        "web",
        "default",
        {"metadata": {"labels": {"app": None, "new": "yes"}}},
        _content_type="application/merge-patch+json",
    )
    assert patched.metadata.labels == {"new": "yes"}
    replaced = await apps.patch_namespaced_deployment(
        "web",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "x"}]}}}},
        _content_type="application/merge-patch+json",
    )
    assert [c.name for c in replaced.spec.template.spec.containers] == ["only"]
    assert replaced.spec.template.spec.containers[0].resources is None


async def test_a_failing_json_patch_test_is_rejected(sim_server: SimServer) -> None:
    core = sim_server.core
    await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c"}, "data": {"a": "1"}}
    )
    with pytest.raises(ApiException) as err:
        await core.patch_namespaced_config_map(
            "c", "default", [{"op": "test", "path": "/data/a", "value": "2"}]
        )
    assert err.value.status == 422
    ok = await core.patch_namespaced_config_map(
        "c",
        "default",
        [
            {"op": "test", "path": "/data/a", "value": "1"},
            {"op": "add", "path": "/data/b", "value": "2"},
        ],
    )
    assert ok.data == {"a": "1", "b": "2"}


async def test_a_stale_resource_version_in_a_patch_is_a_conflict(sim_server: SimServer) -> None:
    core = sim_server.core
    created = await core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    await core.patch_namespaced_config_map("c", "default", {"data": {"a": "1"}})
    with pytest.raises(ApiException) as err:
        await core.patch_namespaced_config_map(
            "c",
            "default",
            {
                "metadata": {"resourceVersion": created.metadata.resource_version},
                "data": {"b": "2"},
            },
        )
    assert err.value.status == 409
    assert '"reason": "Conflict"' in err.value.body


async def _apply(
    sim: SimServer, body: dict[str, Any], *, manager: str = "deployer", force: bool = False
) -> tuple[int, dict[str, Any]]:
    url = f"{sim.url}/apis/apps/v1/namespaces/default/deployments/{body['metadata']['name']}"
    params = {"fieldManager": manager, "force": "true" if force else "false"}
    async with ClientSession() as http:
        resp = await http.patch(
            url,
            params=params,
            data=json.dumps(body),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
        return resp.status, await resp.json()


async def test_server_side_apply_creates_updates_and_drops_removed_fields(
    sim_server: SimServer,
) -> None:
    first = _deployment()
    first["metadata"]["annotations"] = {"owner": "team-a", "ticket": "T-1"}
    status, created = await _apply(sim_server, first)
    assert status == 201
    assert created["metadata"]["managedFields"][0]["manager"] == "deployer"
    assert created["metadata"]["managedFields"][0]["operation"] == "Apply"

    second = _deployment(image="nginx:1.27")
    second["metadata"]["annotations"] = {"owner": "team-a"}
    del second["spec"]["template"]["spec"]["containers"][1]
    status, updated = await _apply(sim_server, second)
    assert status == 200
    assert updated["metadata"]["annotations"] == {"owner": "team-a"}
    containers = updated["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["api"]
    assert containers[0]["image"] == "nginx:1.27"
    assert updated["metadata"]["generation"] == 2

    status, again = await _apply(sim_server, second)
    assert status == 200
    assert again["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]


async def test_a_no_op_apply_a_second_later_writes_nothing() -> None:
    """Only the managedFields time would differ; upstream keeps the old one and skips the write.

    Without that, every re-apply by a controller (fedctl re-applies each copy it keeps) bumps
    the object's resourceVersion and wakes every watcher of it once a second.
    """
    clock = ManualClock()
    store = ObjectStore(clock=clock)
    runner, url = await serve(store)
    api = client.ApiClient(client.Configuration(host=url))
    try:
        sim = SimServer(store=store, url=url, api=api)
        status, created = await _apply(sim, _deployment())
        assert status == 201
        await clock.advance(2.0)
        status, again = await _apply(sim, _deployment())
        assert status == 200
        assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert again["metadata"]["managedFields"] == created["metadata"]["managedFields"]
        await clock.advance(2.0)
        status, changed = await _apply(sim, _deployment(image="nginx:1.27"))
        assert status == 200
        assert changed["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
        assert (
            changed["metadata"]["managedFields"][0]["time"]
            != (created["metadata"]["managedFields"][0]["time"])
        )
    finally:
        await api.close()
        await runner.cleanup()


async def test_server_side_apply_conflicts_with_another_owner_unless_forced(
    sim_server: SimServer,
) -> None:
    status, _ = await _apply(sim_server, _deployment())
    assert status == 201
    await sim_server.apps.patch_namespaced_deployment_scale(
        "web", "default", {"spec": {"replicas": 5}}, field_manager="autoscaler"
    )
    await sim_server.apps.patch_namespaced_deployment(
        "web", "default", {"spec": {"replicas": 5}}, field_manager="autoscaler"
    )
    status, body = await _apply(sim_server, _deployment())
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Apply failed with 1 conflict: conflict with "autoscaler" using apps/v1: .spec.replicas'
    )
    assert body["details"]["causes"][0]["reason"] == "FieldManagerConflict"

    status, forced = await _apply(sim_server, _deployment(), force=True)
    assert status == 200
    assert forced["spec"]["replicas"] == 2
    owners = {m["manager"] for m in forced["metadata"]["managedFields"]}
    assert "deployer" in owners


async def test_apply_without_a_field_manager_is_a_bad_request(sim_server: SimServer) -> None:
    async with ClientSession() as http:
        resp = await http.patch(
            f"{sim_server.url}/apis/apps/v1/namespaces/default/deployments/web",
            data=json.dumps(_deployment()),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
        body = await resp.json()
    assert resp.status == 400
    assert body["reason"] == "BadRequest"


async def test_an_unknown_patch_type_is_unsupported_media(sim_server: SimServer) -> None:
    await sim_server.core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    async with ClientSession() as http:
        resp = await http.patch(
            f"{sim_server.url}/api/v1/namespaces/default/configmaps/c",
            data="{}",
            headers={"Content-Type": "application/xml"},
        )
    assert resp.status == 415


async def test_server_side_apply_keys_container_ports_by_container_port(
    sim_server: SimServer,
) -> None:
    """A container's ports stay keyed by `containerPort` (and protocol), as a Service's are
    by `port`: one port changed replaces the old, a UDP port beside it stays apart."""

    def with_ports(*ports: dict[str, Any]) -> dict[str, Any]:
        body = _deployment()
        body["spec"]["template"]["spec"]["containers"][0]["ports"] = list(ports)
        return body

    await _apply(sim_server, with_ports({"containerPort": 8080}))
    status, changed = await _apply(
        sim_server, with_ports({"containerPort": 8081}, {"containerPort": 8081, "protocol": "UDP"})
    )
    assert status == 200
    ports = changed["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert sorted((p["containerPort"], p.get("protocol", "TCP")) for p in ports) == [
        (8081, "TCP"),
        (8081, "UDP"),
    ]
