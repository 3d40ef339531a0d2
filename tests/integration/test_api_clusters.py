"""Writing and deleting Clusters through the REST API, on a real etcd.

A Cluster whose connection leads where another's does is refused, however it is written
(`fedctl cluster join --no-verify` and `fedctl apply` do not connect first); deleting a
Cluster that still runs fedctl's copies says what it leaves running there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from federation.api import app as api_app
from federation.registry import codec, embedded, keys, objects
from federation.registry.etcd import EtcdStore
from federation.settings import ApiSettings
from policies.models.binding import Binding
from policies.models.cluster import Cluster
from policies.models.work import Work, WorkloadStatus
from tests.conftest import etcd_settings
from tests.integration.test_api import API, wipe

pytestmark = pytest.mark.integration

KUBECONFIG = """apiVersion: v1
kind: Config
current-context: east
clusters:
- {name: east, cluster: {server: "http://127.0.0.1:40831/"}}
- {name: west, cluster: {server: "http://127.0.0.1:40832"}}
contexts:
- {name: east, context: {cluster: east, user: u}}
- {name: east-admin, context: {cluster: east, user: admin}}
- {name: west, context: {cluster: west, user: u}}
users:
- {name: u, user: {token: t}}
- {name: admin, user: {token: a}}
"""


class Api:
    def __init__(self, base: str, session: aiohttp.ClientSession, store: EtcdStore) -> None:
        self.base, self.session, self.store = base, session, store

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, list[str]]:
        async with self.session.request(method, self.base + path, json=body) as resp:
            return resp.status, await resp.json(), resp.headers.getall("Warning", [])


@pytest.fixture
async def api(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[Api]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    runner = web.AppRunner(api_app.build_app(store, settings=ApiSettings()))
    await runner.setup()
    port = embedded.free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    async with aiohttp.ClientSession() as session:
        yield Api(f"http://127.0.0.1:{port}", session, store)
    await runner.cleanup()
    await store.close()


def cluster(name: str, **connection: str) -> dict[str, Any]:
    return {
        "apiVersion": "fedctl.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"region": "us-east", "connection": connection},
    }


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "fleet.kubeconfig"
    path.write_text(KUBECONFIG)
    return str(path)


@pytest.mark.parametrize(
    ("first", "second", "how"),
    [
        pytest.param(
            {"context": "east"},
            {"context": "east"},
            "server http://127.0.0.1:40831",
            id="same file and context",
        ),
        pytest.param(
            {"kubeconfigPath": "/nonexistent/kubeconfig", "context": "east"},
            {"kubeconfigPath": "/nonexistent/kubeconfig", "context": "east"},
            "context east of kubeconfig /nonexistent/kubeconfig",
            id="same file and context, the file not readable here",
        ),
        pytest.param(
            {"context": "east"}, {}, "server http://127.0.0.1:40831", id="the current context"
        ),
        pytest.param(
            {"context": "east"},
            {"context": "east-admin"},
            "server http://127.0.0.1:40831",
            id="as another user",
        ),
        pytest.param(
            {"context": "east"},
            {"kubeconfig": KUBECONFIG, "context": "east"},
            "server http://127.0.0.1:40831",
            id="inline",
        ),
    ],
)
async def test_a_second_cluster_reaching_a_joined_api_is_refused(
    api: Api, kubeconfig: str, first: dict[str, str], second: dict[str, str], how: str
) -> None:
    body = cluster("east", **{"kubeconfigPath": kubeconfig, **first})
    code, _, _ = await api.call("POST", f"{API}/clusters", body)
    assert code == 201
    given = second if "kubeconfig" in second else {"kubeconfigPath": kubeconfig, **second}
    again = cluster("east-again", **given)
    wanted = (
        "Cluster east-again: spec.connection: reaches the same Kubernetes API as cluster east"
        f" ({how}): joined twice"
    )
    for method, path, body in (
        ("POST", f"{API}/apply", {"items": [again]}),
        ("POST", f"{API}/apply?dryRun=All", {"items": [again]}),
        ("POST", f"{API}/clusters", again),
    ):
        code, answer, _ = await api.call(method, path, body)
        assert code == 400, (path, answer)
        assert wanted in answer["message"], answer
    code, _, _ = await api.call("GET", f"{API}/clusters/east-again")
    assert code == 404
    # Another member of the same file joins, and `east` may point at it instead.
    code, _, _ = await api.call(
        "POST",
        f"{API}/apply",
        {"items": [cluster("west", kubeconfigPath=kubeconfig, context="west")]},
    )
    assert code == 200


async def test_two_clusters_of_one_apply_reaching_one_api_are_refused(
    api: Api, kubeconfig: str
) -> None:
    inline = cluster("inline", kubeconfig=KUBECONFIG, context="west")
    code, answer, _ = await api.call(
        "POST",
        f"{API}/apply",
        {"items": [cluster("west", kubeconfigPath=kubeconfig, context="west"), inline]},
    )
    assert code == 400
    assert (
        "Cluster inline: spec.connection: reaches the same Kubernetes API as cluster west"
        in (answer["message"])
    )
    code, listed, _ = await api.call("GET", f"{API}/clusters")
    assert listed["items"] == [], "nothing of the apply is stored"


async def test_a_pair_stored_before_the_check_can_still_be_edited(
    api: Api, kubeconfig: str
) -> None:
    store = codec.TypedStore(api.store, objects.ObjectCodec())
    for name in ("east", "east-again"):
        model = Cluster.model_validate(cluster(name, kubeconfigPath=kubeconfig, context="east"))
        await store.put(keys.cluster_key(name), model)
    edited = cluster("east-again", kubeconfigPath=kubeconfig, context="east")
    edited["metadata"]["labels"] = {"tier": "old"}
    code, answer, _ = await api.call("POST", f"{API}/apply", {"items": [edited]})
    assert code == 200, answer
    assert answer["results"][0]["result"] == "configured"


async def _place(api: Api, workload: str, cluster_name: str) -> None:
    binding = Binding.model_validate(
        {
            "metadata": {"name": workload, "namespace": "web"},
            "spec": {
                "workload": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": "web",
                    "name": workload,
                },
                "clusters": [{"name": cluster_name, "replicas": 2}],
            },
            "status": {"phase": "Scheduled"},
        }
    )
    ref = keys.WorkloadRef("web", "Deployment.apps", workload)
    await codec.TypedStore(api.store, codec.Codec(Binding)).put(keys.binding_key(ref), binding)


async def test_deleting_a_cluster_says_what_keeps_running_on_it(api: Api, kubeconfig: str) -> None:
    """`fedctl delete cluster` took the `unjoin --now` path in silence: no drain, and the
    copies kept running on the member, no longer managed."""
    for name in ("east", "west"):
        body = cluster(name, kubeconfigPath=kubeconfig, context=name)
        assert (await api.call("POST", f"{API}/clusters", body))[0] == 201
    await _place(api, "storefront", "east")
    await _place(api, "cart", "east")
    await _place(api, "nightly", "east")  # a job that finished there: nothing left to move
    done = WorkloadStatus.model_validate(
        {
            "workload": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "web",
                         "name": "nightly"},
            "phase": "Succeeded",
        }
    )  # fmt: skip
    await codec.TypedStore(api.store, codec.Codec(WorkloadStatus)).put(
        keys.workload_status_key(keys.WorkloadRef("web", "Deployment.apps", "nightly")), done
    )
    work = Work.model_validate(
        {
            "metadata": {"name": "web"},
            "spec": {
                "cluster": "east",
                "bindingRevision": 1,
                "workload": {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "namespace": "_",
                    "name": "web",
                },
                "manifest": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}},
            },
        }
    )
    ref = keys.WorkloadRef("_", "Namespace", "web")
    await codec.TypedStore(api.store, codec.Codec(Work)).put(keys.work_key("east", ref), work)

    code, _, warned = await api.call("DELETE", f"{API}/clusters/east?dryRun=All")
    assert code == 200
    assert len(warned) == 1 and (
        "cluster east would be removed without a drain: what fedctl runs there keeps running"
        " on it, no longer managed (2 workload(s) placed there (web/cart, web/storefront); 1"
        " copy applied there)" in warned[0]
    ), warned
    assert "fedctl cluster unjoin east" in warned[0]
    assert (await api.call("GET", f"{API}/clusters/east"))[0] == 200, "a dry run deleted it"

    code, _, warned = await api.call("DELETE", f"{API}/clusters/east")
    assert code == 200 and len(warned) == 1
    assert "cluster east removed without a drain: what fedctl runs there" in warned[0], warned
    code, _, warned = await api.call("DELETE", f"{API}/clusters/west")
    assert code == 200 and warned == [], "nothing placed there: nothing to say"
