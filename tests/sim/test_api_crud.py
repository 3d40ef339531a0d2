"""Contract: `kubernetes_asyncio` can create, read, list, patch and delete every kind."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientSession
from kubernetes_asyncio.client.exceptions import ApiException

from tests.sim.conftest import SimServer, node_object

POD_SPEC = {"containers": [{"name": "main", "image": "busybox:1.36"}]}
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": POD_SPEC}
SELECTED = {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE}

# api attribute, typed-method suffix (None: custom object), namespaced, body
KINDS = [
    pytest.param("core", "namespace", False, {"metadata": {}}, id="namespace"),
    pytest.param("core", "node", False, node_object("n"), id="node"),
    pytest.param("core", "pod", True, {"spec": POD_SPEC}, id="pod"),
    pytest.param("core", "config_map", True, {"data": {"k": "v"}}, id="configmap"),
    pytest.param("core", "secret", True, {"data": {"k": "dg=="}}, id="secret"),
    pytest.param("core", "resource_quota", True, {"spec": {"hard": {"pods": "10"}}}, id="quota"),
    pytest.param(
        "core",
        "event",
        True,
        {"involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Tested", "message": "m"},
        id="event",
    ),
    pytest.param("apps", "deployment", True, {"spec": SELECTED}, id="deployment"),
    pytest.param("apps", "replica_set", True, {"spec": SELECTED}, id="replicaset"),
    pytest.param(
        "apps", "stateful_set", True, {"spec": {**SELECTED, "serviceName": "x"}}, id="statefulset"
    ),
    pytest.param(
        "batch",
        "job",
        True,
        {"spec": {"template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}}},
        id="job",
    ),
    pytest.param(
        "coordination", "lease", True, {"spec": {"holderIdentity": "n1"}}, id="node lease"
    ),
]
CUSTOM = [
    pytest.param("batch.volcano.sh", "v1alpha1", "Job", "jobs", id="volcano job"),
    pytest.param("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs", id="pytorchjob"),
]


def _methods(api: Any, suffix: str, namespaced: bool) -> dict[str, Any]:
    scope = "namespaced_" if namespaced else ""
    return {
        verb: getattr(api, f"{verb}_{scope}{suffix}")
        for verb in ("create", "read", "list", "patch", "replace", "delete")
    }


@pytest.mark.parametrize(("api_name", "suffix", "namespaced", "body"), KINDS)
async def test_crud_round_trip_for_each_built_in_kind(
    sim_server: SimServer, api_name: str, suffix: str, namespaced: bool, body: dict[str, Any]
) -> None:
    api = getattr(sim_server, api_name)
    m = _methods(api, suffix, namespaced)
    ns_args: tuple[str, ...] = ("default",) if namespaced else ()
    name = "obj-1"
    body = {**body, "metadata": {**body.get("metadata", {}), "name": name}}

    created = await m["create"](*ns_args, body)
    assert created.metadata.name == name
    assert created.metadata.uid
    assert int(created.metadata.resource_version) > 0

    read = await m["read"](name, *ns_args)
    assert read.metadata.uid == created.metadata.uid

    listed = await m["list"](*ns_args)
    assert name in [item.metadata.name for item in listed.items]
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)

    patched = await m["patch"](name, *ns_args, {"metadata": {"labels": {"tier": "gold"}}})
    assert patched.metadata.labels["tier"] == "gold"

    read.metadata.annotations = {"note": "replaced"}
    read.metadata.resource_version = patched.metadata.resource_version
    replaced = await m["replace"](name, *ns_args, read)
    assert replaced.metadata.annotations == {"note": "replaced"}

    await m["delete"](name, *ns_args)
    with pytest.raises(ApiException) as err:
        await m["read"](name, *ns_args)
    assert err.value.status == 404


@pytest.mark.parametrize(("group", "version", "kind", "plural"), CUSTOM)
async def test_crud_round_trip_for_opaque_custom_kinds(
    sim_server: SimServer, group: str, version: str, kind: str, plural: str
) -> None:
    api = sim_server.custom
    body = {
        "apiVersion": f"{group}/{version}",
        "kind": kind,
        "metadata": {"name": "train"},
        "spec": {"anything": {"goes": [1, 2]}},
    }
    created = await api.create_namespaced_custom_object(group, version, "default", plural, body)
    assert created["spec"] == {"anything": {"goes": [1, 2]}}
    assert created["metadata"]["generation"] == 1
    patched = await api.patch_namespaced_custom_object(
        group, version, "default", plural, "train", {"spec": {"anything": {"more": True}}}
    )
    assert patched["spec"]["anything"] == {"goes": [1, 2], "more": True}
    assert patched["metadata"]["generation"] == 2
    listed = await api.list_namespaced_custom_object(group, version, "default", plural)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["train"]
    await api.delete_namespaced_custom_object(group, version, "default", plural, "train")
    listed = await api.list_namespaced_custom_object(group, version, "default", plural)
    assert listed["items"] == []


async def test_duplicate_create_is_already_exists_and_stale_update_is_conflict(
    sim_server: SimServer,
) -> None:
    core = sim_server.core
    cm = {"metadata": {"name": "settings"}, "data": {"a": "1"}}
    first = await core.create_namespaced_config_map("default", cm)
    with pytest.raises(ApiException) as dup:
        await core.create_namespaced_config_map("default", cm)
    assert dup.value.status == 409
    assert '"reason":"AlreadyExists"' in dup.value.body.replace(" ", "")
    assert 'configmaps \\"settings\\" already exists' in dup.value.body

    await core.patch_namespaced_config_map("settings", "default", {"data": {"a": "2"}})
    first.data = {"a": "3"}
    with pytest.raises(ApiException) as stale:
        await core.replace_namespaced_config_map("settings", "default", first)
    assert stale.value.status == 409
    assert '"reason":"Conflict"' in stale.value.body.replace(" ", "")
    assert (
        'Operation cannot be fulfilled on configmaps \\"settings\\": the object has been '
        "modified; please apply your changes to the latest version and try again"
    ) in stale.value.body


async def test_missing_object_is_a_404_status_with_the_upstream_message(
    sim_server: SimServer,
) -> None:
    async with ClientSession() as http:
        resp = await http.get(f"{sim_server.url}/apis/apps/v1/namespaces/default/deployments/x")
        body = await resp.json()
    assert resp.status == 404
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'deployments.apps "x" not found',
        "reason": "NotFound",
        "details": {"name": "x", "group": "apps", "kind": "deployments"},
        "code": 404,
    }


async def test_empty_lists_carry_an_empty_items_array(sim_server: SimServer) -> None:
    pods = await sim_server.core.list_pod_for_all_namespaces()
    assert pods.items == []
    assert pods.metadata.resource_version
    jobs = await sim_server.batch.list_namespaced_job("kube-system")
    assert jobs.items == []


async def test_the_server_starts_with_the_system_namespaces(sim_server: SimServer) -> None:
    names = {ns.metadata.name for ns in (await sim_server.core.list_namespace()).items}
    assert {"default", "kube-system", "kube-public"} <= names


async def test_namespaced_create_needs_an_existing_namespace(sim_server: SimServer) -> None:
    with pytest.raises(ApiException) as err:
        await sim_server.core.create_namespaced_config_map("nowhere", {"metadata": {"name": "c"}})
    assert err.value.status == 404
    assert 'namespaces \\"nowhere\\" not found' in err.value.body


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        pytest.param(
            {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}},
            'Pod "gpu" is invalid: spec.containers[0].resources.requests: Invalid value: '
            '"1": must be equal to nvidia.com/gpu limit of 2',
            id="request differs from limit",
        ),
        pytest.param(
            {"requests": {"nvidia.com/gpu": "1"}},
            'Pod "gpu" is invalid: spec.containers[0].resources.limits: Required value: '
            "Limit must be set for non overcommitable resources",
            id="request without a limit",
        ),
        pytest.param(
            {"limits": {"huawei.com/Ascend910": "500m"}},
            # the defaulted request repeats the error, so upstream lists both in brackets
            'Pod "gpu" is invalid: [spec.containers[0].resources.limits[huawei.com/Ascend910]: '
            'Invalid value: "500m": must be an integer',
            id="fractional accelerator",
        ),
    ],
)
async def test_extended_resources_are_validated_like_kubernetes(
    sim_server: SimServer, resources: dict[str, Any], message: str
) -> None:
    pod = {
        "metadata": {"name": "gpu"},
        "spec": {"containers": [{"name": "c", "image": "cuda", "resources": resources}]},
    }
    with pytest.raises(ApiException) as err:
        await sim_server.core.create_namespaced_pod("default", pod)
    assert err.value.status == 422
    assert message.replace('"', '\\"') in err.value.body


@pytest.mark.parametrize(
    ("replicas", "status", "message"),
    [
        pytest.param(
            "3",
            400,
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot'
            " unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            id="a string, as an override writing value: '3' gives",
        ),
        pytest.param(
            -1,
            422,
            'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be'
            " greater than or equal to 0",
            id="negative",
        ),
    ],
)
async def test_replicas_that_are_no_count_are_refused_like_kubernetes(
    sim_server: SimServer, replicas: object, status: int, message: str
) -> None:
    """Stored as given, `replicas: "3"` made the Deployment's controller read a string and
    a federation over the simulator show a copy a real member would have refused."""
    deployment = {"metadata": {"name": "web"}, "spec": {**SELECTED, "replicas": replicas}}
    with pytest.raises(ApiException) as err:
        await sim_server.apps.create_namespaced_deployment("default", deployment)
    assert err.value.status == status
    assert message.replace('"', '\\"') in err.value.body


async def test_a_gpu_limit_alone_defaults_the_request(sim_server: SimServer) -> None:
    pod = {
        "metadata": {"name": "gpu"},
        "spec": {
            "containers": [
                {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
            ]
        },
    }
    created = await sim_server.core.create_namespaced_pod("default", pod)
    assert created.spec.containers[0].resources.requests == {"nvidia.com/gpu": "2"}
    assert created.status.phase == "Pending"


async def test_invalid_names_are_rejected(sim_server: SimServer) -> None:
    with pytest.raises(ApiException) as err:
        await sim_server.core.create_namespaced_config_map(
            "default", {"metadata": {"name": "Bad_"}}
        )
    assert err.value.status == 422
    assert 'ConfigMap \\"Bad_\\" is invalid: metadata.name: Invalid value: \\"Bad_\\"' in (
        err.value.body
    )


async def test_generation_moves_with_spec_and_status_is_split(sim_server: SimServer) -> None:
    apps = sim_server.apps
    dep = {"metadata": {"name": "web"}, "spec": {**SELECTED, "replicas": 1}}
    created = await apps.create_namespaced_deployment("default", dep)
    assert created.metadata.generation == 1
    relabeled = await apps.patch_namespaced_deployment(
        "web", "default", {"metadata": {"labels": {"a": "b"}}}
    )
    assert relabeled.metadata.generation == 1
    scaled = await apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2
    ignored = await apps.patch_namespaced_deployment("web", "default", {"status": {"replicas": 7}})
    assert ignored.status is None or ignored.status.replicas is None
    status = await apps.patch_namespaced_deployment_status(
        "web", "default", {"status": {"observedGeneration": 2, "replicas": 3}}
    )
    assert status.status.observed_generation == 2
    assert status.metadata.generation == 2
    assert status.spec.replicas == 3


async def test_scale_subresource_reads_and_writes_replicas(sim_server: SimServer) -> None:
    apps = sim_server.apps
    await apps.create_namespaced_deployment(
        "default", {"metadata": {"name": "web"}, "spec": {**SELECTED, "replicas": 2}}
    )
    scale = await apps.read_namespaced_deployment_scale("web", "default")
    assert scale.kind == "Scale"
    assert scale.api_version == "autoscaling/v1"
    assert scale.spec.replicas == 2
    assert scale.status.selector == "app=x"
    patched = await apps.patch_namespaced_deployment_scale(
        "web", "default", {"spec": {"replicas": 5}}
    )
    assert patched.spec.replicas == 5
    assert (await apps.read_namespaced_deployment("web", "default")).spec.replicas == 5


async def test_deleting_a_namespace_deletes_its_contents(sim_server: SimServer) -> None:
    core = sim_server.core
    await core.create_namespace({"metadata": {"name": "team-a"}})
    await core.create_namespaced_config_map("team-a", {"metadata": {"name": "c"}})
    await core.delete_namespace("team-a")
    assert (await core.list_config_map_for_all_namespaces()).items == []


async def test_statefulset_scale_can_be_replaced(sim_server: SimServer) -> None:
    apps = sim_server.apps
    await apps.create_namespaced_stateful_set(
        "default", {"metadata": {"name": "db"}, "spec": {**SELECTED, "serviceName": "db"}}
    )
    scale = await apps.read_namespaced_stateful_set_scale("db", "default")
    scale.spec.replicas = 3
    replaced = await apps.replace_namespaced_stateful_set_scale("db", "default", scale)
    assert replaced.spec.replicas == 3
    scale.spec.replicas = 4
    with pytest.raises(ApiException) as stale:
        await apps.replace_namespaced_stateful_set_scale("db", "default", scale)
    assert stale.value.status == 409
    assert (await apps.read_namespaced_stateful_set("db", "default")).spec.replicas == 3


async def test_delete_collection_removes_only_the_selected_objects(sim_server: SimServer) -> None:
    core = sim_server.core
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        await core.create_namespaced_config_map(
            "default", {"metadata": {"name": name, "labels": {"tier": tier}}}
        )
    await core.delete_collection_namespaced_config_map("default", label_selector="tier=web")
    left = await core.list_namespaced_config_map("default")
    assert [cm.metadata.name for cm in left.items] == ["c"]
