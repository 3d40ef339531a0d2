"""Contract: discovery, version, OpenAPI stub, health and the Tables `kubectl get` prints."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import ClientSession
from kubernetes_asyncio import client

from clusters.sim import tables
from clusters.sim.resources import by_kind
from tests.sim.conftest import NODES, SimServer, node_object

TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
PODS = by_kind("v1", "Pod")
JOBS = by_kind("batch/v1", "Job")
QUOTAS = by_kind("v1", "ResourceQuota")


async def _get(sim: SimServer, path: str, accept: str = "application/json") -> tuple[int, Any]:
    async with (
        ClientSession() as http,
        http.get(f"{sim.url}{path}", headers={"Accept": accept}) as resp,
    ):
        return resp.status, await resp.json()


@pytest.mark.parametrize(
    "seconds, text",
    [
        pytest.param(45, "45s", id="seconds"),
        pytest.param(310, "5m10s", id="minutes and seconds"),
        pytest.param(3 * 3600, "3h", id="hours"),
        pytest.param(2 * 86400 + 5, "2d", id="days"),
        pytest.param(9 * 86400, "9d", id="more than a week"),
    ],
)
def test_ages_use_kubectls_human_durations(seconds: int, text: str) -> None:
    assert tables.human_duration(seconds) == text


async def test_version_reports_every_field_and_minor_32(sim_server: SimServer) -> None:
    info = await client.VersionApi(sim_server.api).get_code()
    assert (info.major, info.minor, info.git_version) == ("1", "32", "v1.32.0")
    assert info.platform == "linux/amd64"


async def test_discovery_lists_groups_resources_and_subresources(sim_server: SimServer) -> None:
    status, groups = await _get(sim_server, "/apis")
    assert status == 200
    assert {g["name"] for g in groups["groups"]} == {
        "apps",
        "autoscaling",
        "batch",
        "coordination.k8s.io",
        "batch.volcano.sh",
        "kubeflow.org",
    }
    status, apps = await _get(sim_server, "/apis/apps/v1")
    by_name = {r["name"]: r for r in apps["resources"]}
    assert by_name["deployments"]["shortNames"] == ["deploy"]
    assert by_name["deployments"]["namespaced"] is True
    assert "watch" in by_name["deployments"]["verbs"]
    assert by_name["deployments/scale"]["kind"] == "Scale"
    assert by_name["deployments/scale"]["group"] == "autoscaling"
    assert "deployments/status" in by_name
    resources = await client.CoreV1Api(sim_server.api).get_api_resources()
    nodes = next(r for r in resources.resources if r.name == "nodes")
    assert (nodes.kind, nodes.namespaced) == ("Node", False)


async def test_openapi_v3_lets_kubectl_validate_on_the_server(sim_server: SimServer) -> None:
    _, index = await _get(sim_server, "/openapi/v3")
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    _, doc = await _get(sim_server, url)
    patch_op = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch_op["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert {"name": "fieldValidation", "in": "query"}.items() <= patch_op["parameters"][2].items()


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
async def test_health_endpoints_answer_ok(sim_server: SimServer, path: str) -> None:
    async with ClientSession() as http, http.get(f"{sim_server.url}{path}") as resp:
        assert (resp.status, await resp.text()) == (200, "ok")


async def test_protobuf_first_accept_headers_get_json(sim_server: SimServer) -> None:
    status, body = await _get(
        sim_server,
        "/api/v1/namespaces/default",
        "application/vnd.kubernetes.protobuf,application/json",
    )
    assert (status, body["kind"]) == (200, "Namespace")


def _columns(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]


def _pod(name: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
        },
        "status": status,
    }


async def test_node_table(sim_server: SimServer) -> None:
    sim_server.store.create(NODES, node_object("n1", gpus=4))
    _, table = await _get(sim_server, "/api/v1/nodes", TABLE)
    assert table["kind"] == "Table"
    assert _columns(table) == ["Name", "Status", "Roles", "Age", "Version"]
    row = table["rows"][0]
    assert row["cells"][:3] == ["n1", "Ready", "worker"]
    assert row["cells"][4] == "v1.32.0"
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["labels"]["kubernetes.io/arch"] == "amd64"


async def test_pod_table_counts_ready_containers_and_restarts(sim_server: SimServer) -> None:
    pod = sim_server.store.create(PODS, _pod("p"))
    pod["status"] = {
        "phase": "Running",
        "podIP": "10.1.0.5",
        "containerStatuses": [
            {"name": "a", "ready": True, "restartCount": 2, "state": {"running": {}}},
            {"name": "b", "ready": False, "restartCount": 1, "state": {"running": {}}},
        ],
    }
    sim_server.store.update(PODS, pod, subresource="status")
    _, table = await _get(sim_server, "/api/v1/namespaces/default/pods?includeObject=Object", TABLE)
    assert _columns(table) == ["Name", "Ready", "Status", "Restarts", "Age"]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["p", "1/2", "Running", 3]
    assert cells[5:7] == ["10.1.0.5", "n1"]
    assert table["rows"][0]["object"]["kind"] == "Pod"


async def test_job_table_shows_status_and_completions(sim_server: SimServer) -> None:
    job = sim_server.store.create(
        JOBS,
        {
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {
                "completions": 3,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
            },
        },
    )
    job["status"] = {
        "succeeded": 3,
        "startTime": "2026-01-01T00:00:00Z",
        "completionTime": "2026-01-01T00:05:10Z",
        "conditions": [{"type": "Complete", "status": "True"}],
    }
    sim_server.store.update(JOBS, job, subresource="status")
    _, table = await _get(sim_server, "/apis/batch/v1/namespaces/default/jobs/train", TABLE)
    assert _columns(table) == ["Name", "Status", "Completions", "Duration", "Age"]
    assert table["rows"][0]["cells"][:4] == ["train", "Complete", "3/3", "5m10s"]


async def test_quota_table_splits_requests_and_limits(sim_server: SimServer) -> None:
    quota = sim_server.store.create(
        QUOTAS, {"metadata": {"name": "team-a", "namespace": "default"}, "spec": {"hard": {}}}
    )
    quota["status"] = {
        "hard": {"pods": "10", "requests.nvidia.com/gpu": "8", "limits.cpu": "4"},
        "used": {"pods": "1", "requests.nvidia.com/gpu": "2"},
    }
    sim_server.store.update(QUOTAS, quota, subresource="status")
    _, table = await _get(sim_server, "/api/v1/resourcequotas", TABLE)
    assert _columns(table) == ["Name", "Age", "Request", "Limit"]
    cells = table["rows"][0]["cells"]
    assert cells[2] == "pods: 1/10, requests.nvidia.com/gpu: 2/8"
    assert cells[3] == "limits.cpu: 0/4"


async def test_namespace_table_and_table_watch_events(sim_server: SimServer) -> None:
    _, table = await _get(sim_server, "/api/v1/namespaces", TABLE)
    assert _columns(table) == ["Name", "Status", "Age"]
    assert table["rows"][0]["cells"][:2] == ["default", "Active"]
    async with (
        ClientSession() as http,
        http.get(
            f"{sim_server.url}/api/v1/namespaces",
            params={"watch": "true", "timeoutSeconds": "1"},
            headers={"Accept": TABLE},
        ) as resp,
    ):
        first = json.loads(await resp.content.readline())
    assert first["type"] == "ADDED"
    assert first["object"]["kind"] == "Table"
    assert len(first["object"]["rows"]) == 1


async def test_event_table_reads_like_kubectl_get_events(sim_server: SimServer) -> None:
    sim_server.store.create(
        by_kind("v1", "Event"),
        {
            "metadata": {"name": "p.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "type": "Warning",
            "reason": "FailedScheduling",
            "message": "0/3 nodes are available",
        },
    )
    _, table = await _get(sim_server, "/api/v1/namespaces/default/events", TABLE)
    assert _columns(table) == ["Last Seen", "Type", "Reason", "Object", "Message"]
    cells = table["rows"][0]["cells"]
    assert [cells[1], cells[2], cells[3], cells[6]] == [
        "Warning",
        "FailedScheduling",
        "pod/p",
        "0/3 nodes are available",
    ]
