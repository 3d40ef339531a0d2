"""The API refuses, as `fedctl validate` does, names and namespaces members refuse or keep
for themselves: a client writing JSON straight to it meets the same rules as a file."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from federation.api import app as api_app
from federation.registry import embedded
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from tests.conftest import etcd_settings
from tests.serving import serving

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"


class Api:
    def __init__(self, base: str, session: aiohttp.ClientSession) -> None:
        self.base, self.session = base, session

    async def call(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        async with self.session.request(
            method,
            self.base + path,
            data=json.dumps(body),
            headers={"Content-Type": "application/json"},
        ) as resp:
            text = await resp.text()
            return resp.status, (json.loads(text) if text.startswith("{") else text)


@pytest.fixture
async def api(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[tuple[Api, st.Store]]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    listed = await store.list("/fedctl/")
    await store.commit([st.Delete(kv.key) for kv in listed.items])
    try:
        async with serving(api_app.build_app(store)) as base, aiohttp.ClientSession() as session:
            yield Api(base, session), store
    finally:
        listed = await store.list("/fedctl/")
        await store.commit([st.Delete(kv.key) for kv in listed.items])
        await store.close()


QUOTA = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "FederatedResourceQuota",
    "metadata": {"name": "UPPER", "namespace": "web"},
    "spec": {"overall": {"cpu": "100"}},
}
OVERRIDE = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "OverridePolicy",
    "metadata": {"name": "Bad OP/with slash", "namespace": "web"},
    "spec": {"overrideRules": []},
}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", "namespaces/web/federatedresourcequotas", QUOTA,
                     id="a quota created as UPPER"),
        pytest.param("POST", "apply", {"items": [QUOTA]}, id="a quota applied as UPPER"),
        pytest.param("POST", "apply", {"items": [OVERRIDE]},
                     id="an override named with a space and a slash"),
    ],
)  # fmt: skip
async def test_a_name_members_refuse_is_a_400_naming_the_field(
    api: tuple[Api, st.Store], method: str, path: str, body: Any
) -> None:
    client, store = api
    code, status = await client.call(method, f"{API}/{path}", body)

    assert code == 400, status
    assert "metadata.name: name " in status["message"]
    assert "is not a DNS subdomain" in status["message"]
    assert (await store.list("/fedctl/")).items == []


CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param("apply", {"items": [{"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "kube-node-lease"}}]},
                     id="a Namespace template named kube-node-lease"),
        pytest.param("apply", {"items": [{**CONFIG_MAP, "metadata": {
                         "name": "c", "namespace": "kube-system"}}]},
                     id="a workload whose body names kube-system"),
        pytest.param("namespaces/kube-system/workloads", CONFIG_MAP,
                     id="a workload placed in kube-system by its URL"),
    ],
)  # fmt: skip
async def test_a_kube_namespace_is_refused_with_the_reason(
    api: tuple[Api, st.Store], path: str, body: Any
) -> None:
    client, store = api
    code, status = await client.call("POST", f"{API}/{path}", body)

    assert code == 400, status
    assert "is one Kubernetes keeps for itself (kube-*)" in status["message"]
    assert (await store.list("/fedctl/")).items == []


PP = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "pp"},
    "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]},
}


@pytest.mark.parametrize(
    ("method", "path", "body", "namespace"),
    [
        pytest.param("POST", "namespaces/_/workloads", CONFIG_MAP, "_",
                     id="a workload created in _, the cluster-scope placeholder"),
        pytest.param("POST", "namespaces/Bad_NS/propagationpolicies?dryRun=All", PP, "Bad_NS",
                     id="a policy created in Bad_NS, dry run"),
        pytest.param("PUT", "namespaces/_/workloads/ConfigMap/c", CONFIG_MAP, "_",
                     id="a workload replaced in _"),
        pytest.param("PUT", "namespaces/Web/propagationpolicies/pp", PP, "Web",
                     id="a policy replaced in Web"),
    ],
)  # fmt: skip
async def test_a_namespace_from_the_url_is_judged_as_one_in_the_body(
    api: tuple[Api, st.Store], method: str, path: str, body: Any, namespace: str
) -> None:
    """A ConfigMap POSTed to namespaces/_/workloads was stored in `_`, listed as if it
    were cluster-scoped, and every member refused its namespace; the same body naming `_`
    itself was refused. kube-apiserver judges the URL's namespace as the body's."""
    client, store = api
    code, status = await client.call(method, f"{API}/{path}", body)

    assert code == 400, status
    assert status["reason"] == "Invalid"
    assert f"metadata.namespace: namespace {namespace!r} is not a DNS label" in status["message"]
    assert (await store.list("/fedctl/")).items == []


async def test_a_workload_in_default_is_still_created(api: tuple[Api, st.Store]) -> None:
    client, _ = api
    code, status = await client.call("POST", f"{API}/namespaces/default/workloads", CONFIG_MAP)

    assert code == 201, status
    assert status["metadata"]["namespace"] == "default"


async def test_a_karmada_kind_fedctl_does_not_read_is_refused(api: tuple[Api, st.Store]) -> None:
    """A WorkloadRebalancer was stored as a workload and copied to members: its writer
    believed a rebalance had happened."""
    client, store = api
    rebalancer = {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo"},
        "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"}]},
    }

    code, status = await client.call("POST", f"{API}/apply", {"items": [rebalancer]})

    assert code == 400, status
    assert (
        "apiVersion: a Karmada WorkloadRebalancer (apps.karmada.io) is not read"
        in (status["message"])
    )
    assert (await store.list("/fedctl/")).items == []


async def test_a_yaml_list_body_is_applied_item_by_item(api: tuple[Api, st.Store]) -> None:
    """What `kubectl get -o yaml` writes was stored as one workload named after the List,
    its items ignored."""
    client, _ = api
    text = """\
apiVersion: v1
kind: List
items:
  - {apiVersion: fedctl.io/v1alpha1, kind: Queue, metadata: {name: from-list}, spec: {}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: web}, data: {}}
"""
    async with client.session.post(
        f"{client.base}{API}/apply", data=text, headers={"Content-Type": "application/yaml"}
    ) as resp:
        assert resp.status == 200, await resp.text()
        body = await resp.json()

    assert [(r["kind"], r["name"], r["result"]) for r in body["results"]] == [
        ("Queue", "from-list", "created"),
        ("ConfigMap", "c", "created"),
    ]
