"""Contract: Services are served and defaulted; bad list selectors are a 400.

Without `services` a member looked as if the kind were not enabled, so a federation never
placed a Service; an unsupported field selector or a malformed label selector answered an
empty list, which a client reads as "nothing there" rather than as its own mistake.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import ClientSession
from kubernetes_asyncio.client.exceptions import ApiException

from tests.sim.conftest import SimServer

PORTS = [{"name": "http", "port": 80}]


def _service(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"selector": {"app": name}, "ports": PORTS, **spec}}


async def test_a_service_is_listed_in_discovery(sim_server: SimServer) -> None:
    resources = await sim_server.core.get_api_resources()
    [svc] = [r for r in resources.resources if r.name == "services"]
    assert (svc.kind, svc.namespaced, svc.short_names) == ("Service", True, ["svc"])


async def test_a_service_gets_the_apiservers_defaults_and_its_own_cluster_ip(
    sim_server: SimServer,
) -> None:
    web = await sim_server.core.create_namespaced_service("default", _service("web"))
    api = await sim_server.core.create_namespaced_service("default", _service("api"))
    assert web.spec.type == "ClusterIP"
    assert web.spec.cluster_ip.startswith("10.")
    assert web.spec.cluster_ips == [web.spec.cluster_ip]
    assert api.spec.cluster_ip != web.spec.cluster_ip
    assert (web.spec.ip_families, web.spec.ip_family_policy) == (["IPv4"], "SingleStack")
    assert (web.spec.session_affinity, web.spec.internal_traffic_policy) == ("None", "Cluster")
    [port] = web.spec.ports
    assert (port.protocol, port.target_port, port.node_port) == ("TCP", 80, None)


async def test_a_node_port_service_gets_a_node_port_it_keeps_across_a_replace(
    sim_server: SimServer,
) -> None:
    created = await sim_server.core.create_namespaced_service(
        "default", _service("np", type="NodePort")
    )
    node_port = created.spec.ports[0].node_port
    assert 30000 <= node_port <= 32767
    assert created.spec.external_traffic_policy == "Cluster"
    replaced = await sim_server.core.replace_namespaced_service(
        "np", "default", {**_service("np", type="NodePort"), "metadata": {"name": "np"}}
    )
    assert replaced.spec.ports[0].node_port == node_port
    assert replaced.spec.cluster_ip == created.spec.cluster_ip


async def test_a_cluster_ip_may_not_change(sim_server: SimServer) -> None:
    await sim_server.core.create_namespaced_service("default", _service("web"))
    with pytest.raises(ApiException) as err:
        await sim_server.core.patch_namespaced_service(
            "web", "default", {"spec": {"clusterIP": "10.96.9.9"}}
        )
    body = json.loads(err.value.body)
    assert (err.value.status, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        'Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.9.9"}:'
        " may not change once set"
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param("fieldSelector=foo%3Dbar", "field label not supported: foo", id="field foo"),
        pytest.param(
            "fieldSelector=spec.replicas%3D1",
            "field label not supported: spec.replicas",
            id="a field pods do not index",
        ),
        pytest.param(
            "labelSelector=a%3D%3D%3D", "found '=', expected: identifier", id="label a==="
        ),
    ],
)
async def test_a_selector_the_server_cannot_use_is_a_400(
    sim_server: SimServer, query: str, message: str
) -> None:
    async with (
        ClientSession() as http,
        http.get(f"{sim_server.url}/api/v1/namespaces/default/pods?{query}") as resp,
    ):
        body = await resp.json()
    assert (resp.status, body["reason"], body["message"]) == (400, "BadRequest", message)


async def test_supported_field_selectors_still_filter(sim_server: SimServer) -> None:
    await sim_server.core.create_namespaced_service("default", _service("web"))
    await sim_server.core.create_namespaced_service("default", _service("api"))
    named = await sim_server.core.list_namespaced_service(
        "default", field_selector="metadata.name=web"
    )
    assert [s.metadata.name for s in named.items] == ["web"]
    typed = await sim_server.core.list_namespaced_service(
        "default", field_selector="spec.type!=ClusterIP"
    )
    assert typed.items == []


async def _apply_service(sim: SimServer, ports: list[dict[str, Any]]) -> dict[str, Any]:
    """Server-side apply of Service `api` with `ports`, as `kubectl apply --server-side`."""
    url = f"{sim.url}/api/v1/namespaces/default/services/api"
    body = {"apiVersion": "v1", "kind": "Service", **_service("api")}
    body["spec"]["ports"] = ports
    async with ClientSession() as http:
        resp = await http.patch(
            url,
            params={"fieldManager": "me"},
            data=json.dumps(body),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
        assert resp.status in (200, 201), await resp.text()
        got: dict[str, Any] = await resp.json()
        return got


async def test_a_service_port_changed_by_server_side_apply_replaces_the_old_one(
    sim_server: SimServer,
) -> None:
    """Kubernetes keys a Service's ports by `port` (and protocol): the port a manager no
    longer applies goes. Keyed by a container's `containerPort`, every Service port had
    the same key, so 80 stayed beside 81 and a restore added 81 a second time."""
    await _apply_service(sim_server, [{"name": "http", "port": 80, "targetPort": 8080}])
    changed = await _apply_service(sim_server, [{"name": "http", "port": 81, "targetPort": 8080}])
    assert [p["port"] for p in changed["spec"]["ports"]] == [81]
    both = await _apply_service(
        sim_server, [{"name": "http", "port": 81}, {"name": "dns", "port": 53, "protocol": "UDP"}]
    )
    assert sorted(p["port"] for p in both["spec"]["ports"]) == [53, 81]
    owned = json.dumps(both["metadata"]["managedFields"])
    assert 'k:{\\"port\\":81,\\"protocol\\":\\"TCP\\"}' in owned


async def test_a_strategic_merge_patch_merges_service_ports_by_port(
    sim_server: SimServer,
) -> None:
    await sim_server.core.create_namespaced_service("default", _service("smp"))
    patched = await sim_server.core.patch_namespaced_service(
        "smp", "default", {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}
    )
    [port] = patched.spec.ports
    assert (port.name, port.port, port.target_port) == ("http", 80, 9090)
