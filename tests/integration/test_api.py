"""The REST API on a real etcd: CRUD, optimistic concurrency, apply, watch, bad input."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from federation.api import app as api_app
from federation.registry import embedded
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.settings import ApiSettings
from policies import loading
from tests.conftest import etcd_settings
from tests.serving import serving
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"
API = "/apis/fedctl.io/v1alpha1"

CLUSTER = {
    "apiVersion": "fedctl.io/v1alpha1",
    "kind": "Cluster",
    "metadata": {"name": "eu-test"},
    "spec": {
        "region": "eu-west",
        "chips": [{"model": "amd64", "count": 3}],
        "connection": {"kubeconfig": "apiVersion: v1\nkind: Config\n", "context": "eu-test"},
    },
}


async def wipe(store: st.Store) -> None:
    listed = await store.list("/fedctl/")
    for start in range(0, len(listed.items), 100):
        await store.commit([st.Delete(kv.key) for kv in listed.items[start : start + 100]])


class Api:
    def __init__(self, base: str, session: aiohttp.ClientSession) -> None:
        self.base, self.session = base, session

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: str | None = None,
        ctype: str = "application/json",
    ) -> tuple[int, Any]:
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        async with self.session.request(
            method, self.base + path, data=data, headers={"Content-Type": ctype}
        ) as resp:
            text = await resp.text()
            return resp.status, (json.loads(text) if text.startswith("{") else text)


@pytest.fixture
async def api(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[Api]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    app = api_app.build_app(store, settings=ApiSettings(max_body_bytes=256 * 1024))
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    port = embedded.free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    async with aiohttp.ClientSession() as session:
        yield Api(f"http://127.0.0.1:{port}", session)
    await runner.cleanup()
    await store.close()


async def test_create_get_list_and_server_metadata(api: Api) -> None:
    code, created = await api.call("POST", f"{API}/clusters", CLUSTER)
    assert code == 201, created
    meta = created["metadata"]
    assert meta["uid"] and meta["generation"] == 1 and int(meta["resourceVersion"]) > 0
    code, got = await api.call("GET", f"{API}/clusters/eu-test")
    assert code == 200 and got["spec"]["region"] == "eu-west"
    code, listed = await api.call("GET", f"{API}/clusters")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["eu-test"]
    assert listed["kind"] == "ClusterList" and int(listed["metadata"]["resourceVersion"]) > 0


async def test_member_credentials_are_never_read_back(api: Api) -> None:
    await api.call("POST", f"{API}/clusters", CLUSTER)
    _, got = await api.call("GET", f"{API}/clusters/eu-test")
    assert got["spec"]["connection"]["kubeconfig"] == "<redacted>"
    got["spec"]["region"] = "eu-central"
    code, updated = await api.call("PUT", f"{API}/clusters/eu-test", got)
    assert code == 200, updated
    _, raw = await api.call("GET", f"{API}/clusters/eu-test")
    assert raw["spec"]["region"] == "eu-central"
    async with api.session.get(api.base + f"{API}/clusters?watch=true") as resp:
        line = await resp.content.readline()
    assert "Config" not in line.decode(), "inline kubeconfig leaked through the watch stream"


async def test_a_dry_run_stores_nothing_and_a_dry_run_it_does_not_know_is_refused(
    api: Api,
) -> None:
    """`?dryRun=true` was read as no dry run: the apply wrote and answered dryRun false.
    A create or update with `dryRun=All` wrote too."""
    body = {"items": [CLUSTER]}
    code, refused = await api.call("POST", f"{API}/apply?dryRun=true", body)
    assert code == 400 and refused["reason"] == "BadRequest"
    assert 'supported values: "All"' in refused["message"]
    code, checked = await api.call("POST", f"{API}/clusters?dryRun=All", CLUSTER)
    assert code == 201 and checked["metadata"]["name"] == "eu-test"
    code, _ = await api.call("GET", f"{API}/clusters/eu-test")
    assert code == 404, "a dry-run create stored the object"
    code, created = await api.call("POST", f"{API}/clusters", CLUSTER)
    assert code == 201
    code, again = await api.call("POST", f"{API}/clusters?dryRun=All", CLUSTER)
    assert code == 409 and again["reason"] == "AlreadyExists"
    created["spec"]["region"] = "eu-north"
    code, would = await api.call("PUT", f"{API}/clusters/eu-test?dryRun=All", created)
    assert code == 200 and would["spec"]["region"] == "eu-north"
    _, stored = await api.call("GET", f"{API}/clusters/eu-test")
    assert stored["spec"]["region"] == "eu-west", "a dry-run update stored the change"


async def test_stale_resource_version_is_409_and_generation_tracks_spec(api: Api) -> None:
    _, created = await api.call("POST", f"{API}/clusters", CLUSTER)
    first = json.loads(json.dumps(created))
    created["spec"]["region"] = "eu-north"
    code, updated = await api.call("PUT", f"{API}/clusters/eu-test", created)
    assert code == 200 and updated["metadata"]["generation"] == 2
    first["spec"]["region"] = "us-east"
    code, status = await api.call("PUT", f"{API}/clusters/eu-test", first)
    assert code == 409 and status["reason"] == "Conflict" and status["kind"] == "Status"
    assert "re-read" in status["message"]


@pytest.mark.parametrize(
    ("body", "code", "needle"),
    [
        pytest.param("{not json", 400, "malformed JSON", id="malformed JSON"),
        pytest.param(json.dumps({**CLUSTER, "metadata": {"name": "a/b"}}), 400, "invalid",
                     id="a name with a slash"),
        pytest.param(json.dumps({**CLUSTER, "metadata": {"name": "..x"}}), 400, "invalid",
                     id="a name with dot-dot"),
        pytest.param(json.dumps({**CLUSTER, "spec": {"regoin": "x", "chips": []}}), 400,
                     "regoin", id="unknown field"),
        pytest.param(json.dumps({"kind": "Cluster"}), 400, "apiVersion", id="no apiVersion"),
    ],
)  # fmt: skip
async def test_bad_input_is_400_with_a_clear_message(
    api: Api, body: str, code: int, needle: str
) -> None:
    got_code, status = await api.call("POST", f"{API}/clusters", raw=body)
    assert got_code == code, status
    assert needle in status["message"]
    _, listed = await api.call("GET", f"{API}/clusters")
    assert listed["items"] == []


async def test_yaml_errors_carry_the_line(api: Api) -> None:
    text = "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata:\n  name: q\nspec:\n  wieght: 2\n"
    code, status = await api.call("POST", f"{API}/queues", raw=text, ctype="application/yaml")
    assert code == 400
    assert "<request>:6:3: spec.wieght" in status["message"]
    assert "did you mean 'weight'" in status["message"]


async def test_oversized_body_is_413(api: Api) -> None:
    code, status = await api.call("POST", f"{API}/clusters", raw="x" * (300 * 1024))
    assert code == 413 and status["reason"] == "RequestEntityTooLarge"


async def test_apply_examples_then_unchanged(api: Api) -> None:
    loaded = loading.load_paths([EXAMPLES])
    assert not loaded.errors
    items = [o.model.to_wire() for o in loaded.objects]
    code, first = await api.call("POST", f"{API}/apply", {"items": items})
    assert code == 200, first
    assert {r["result"] for r in first["results"]} == {"created"}
    assert len(first["results"]) == len(items)
    _, second = await api.call("POST", f"{API}/apply", {"items": items})
    assert {r["result"] for r in second["results"]} == {"unchanged"}


class _Counted(EtcdStore):
    """The etcd store, counting transactions."""

    commits = 0

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        type(self).commits += 1
        return await super().commit(ops, guards=guards)


async def test_a_sweep_is_applied_in_few_transactions_and_again_as_unchanged(
    etcd_server: embedded.EmbeddedEtcd,
) -> None:
    """1,500 Jobs in one apply. Read then written one at a time, a sweep of 10,000 ran
    past the request's 30 s with a quarter stored, and the client could not tell which:
    now they are read at once and written 100 to a transaction. One edited and one new on
    the second apply: only those are written, and each says so."""
    store = _Counted(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    jobs = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": f"sweep-{i:04d}", "namespace": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "t", "image": "x"}]}}},
        }
        for i in range(1500)
    ]
    try:
        async with serving(api_app.build_app(store)) as base, aiohttp.ClientSession() as session:
            api = Api(base, session)
            before = _Counted.commits
            code, first = await api.call("POST", f"{API}/apply", {"items": jobs})
            assert code == 200, first
            assert [r["result"] for r in first["results"]] == ["created"] * 1500
            assert _Counted.commits - before <= 16
            listed = await store.list("/fedctl/workloads/web/")
            assert len(listed.items) == 1500
            jobs[7]["metadata"]["labels"] = {"lr": "0.1"}
            jobs.append({**jobs[0], "metadata": {"name": "sweep-extra", "namespace": "web"}})
            code, second = await api.call("POST", f"{API}/apply", {"items": jobs})
            results = {r["name"]: r["result"] for r in second["results"]}
            assert code == 200 and results.pop("sweep-0007") == "configured"
            assert results.pop("sweep-extra") == "created"
            assert set(results.values()) == {"unchanged"}
    finally:
        await wipe(store)
        await store.close()


async def test_apply_stores_nothing_when_one_document_is_invalid(api: Api) -> None:
    good = {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": "ok"},
            "spec": {"weight": 1}}  # fmt: skip
    bad = {**good, "metadata": {"name": "bad"}, "spec": {"weight": -1}}
    code, status = await api.call("POST", f"{API}/apply", {"items": [good, bad]})
    assert code == 400 and "spec.weight" in status["message"]
    _, listed = await api.call("GET", f"{API}/queues")
    assert listed["items"] == []


async def test_watch_streams_changes_as_json_lines(api: Api) -> None:
    _, listed = await api.call("GET", f"{API}/clusters")
    since = listed["metadata"]["resourceVersion"]
    events: list[dict[str, Any]] = []

    async def follow() -> None:
        url = f"{api.base}{API}/clusters?watch=true&resourceVersion={since}"
        async with api.session.get(url) as resp:
            async for line in resp.content:
                events.append(json.loads(line))

    task = asyncio.create_task(follow())
    await wait_for(lambda: events, message="the bookmark")
    _, created = await api.call("POST", f"{API}/clusters", CLUSTER)
    created["spec"]["zone"] = "eu-west-1a"
    await api.call("PUT", f"{API}/clusters/eu-test", created)
    await api.call("DELETE", f"{API}/clusters/eu-test")
    await wait_for(lambda: len(events) >= 4, message="three events after the bookmark")
    task.cancel()
    assert [e["type"] for e in events] == ["BOOKMARK", "ADDED", "MODIFIED", "DELETED"]
    assert events[2]["object"]["spec"]["zone"] == "eu-west-1a"


async def test_namespaced_policies_and_workloads_are_addressed_by_namespace(api: Api) -> None:
    pod_spec = {"containers": [{"name": "c", "image": "x"}]}
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "train", "namespace": "ml"},
           "spec": {"template": {"spec": pod_spec}}}  # fmt: skip
    code, created = await api.call("POST", f"{API}/namespaces/ml/workloads", job)
    assert code == 201, created
    code, got = await api.call("GET", f"{API}/namespaces/ml/workloads/Job.batch/train")
    assert code == 200 and got["metadata"]["namespace"] == "ml"
    code, _ = await api.call("GET", f"{API}/namespaces/other/workloads/Job.batch/train")
    assert code == 404
    code, status = await api.call("POST", f"{API}/namespaces/other/workloads", job)
    assert code == 400 and "does not match" in status["message"]


async def test_health_and_openapi(api: Api) -> None:
    assert (await api.call("GET", "/healthz"))[0] == 200
    assert (await api.call("GET", "/readyz"))[0] == 200
    code, doc = await api.call("GET", "/openapi.json")
    assert code == 200 and "fedctl.io.v1alpha1.Cluster" in doc["components"]["schemas"]
    assert f"{API}/clusters/{{name}}" in doc["paths"]


async def test_openapi_lists_the_routes_that_answer(api: Api) -> None:
    """Works and events have no single-name route (a GET of one is a 400), and the status
    views the CLI and the dashboard read are routes too."""
    _, doc = await api.call("GET", "/openapi.json")
    paths = doc["paths"]
    assert f"{API}/works/{{name}}" not in paths
    assert f"{API}/namespaces/{{ns}}/events/{{name}}" not in paths
    assert f"{API}/works" in paths and "?cluster=NAME" in paths[f"{API}/works"]["get"]["summary"]
    for view in ("workloads", "costs", "queues"):
        assert f"/apis/status.fedctl.io/v1alpha1/{view}" in paths
    code, _ = await api.call("GET", "/apis/status.fedctl.io/v1alpha1/costs")
    assert code == 200


async def test_a_cluster_scoped_kind_is_not_created_under_a_namespace(api: Api) -> None:
    code, doc = await api.call("POST", f"{API}/namespaces/foo/queues", queue_doc("nsq"))
    assert code == 400 and "queues are cluster-scoped" in doc["message"], doc
    code, _ = await api.call("GET", f"{API}/queues/nsq")
    assert code == 404, "the queue was created"


def queue_doc(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


async def test_queues_are_checked_against_the_stored_tree(api: Api) -> None:
    """A file holds part of the tree; the server knows all of it."""
    code, status = await api.call("POST", f"{API}/queues", queue_doc("orphan", parent="nope"))
    assert code == 400
    assert "Queue orphan: spec.parent: parent queue 'nope' is not defined" in status["message"]
    org = queue_doc("org", capability={"cpu": "10"}, guarantee={"cpu": "4"})
    code, _ = await api.call("POST", f"{API}/apply", {"items": [org]})
    assert code == 200
    # Stored in another request: the parent is found, and the child is held to it.
    code, status = await api.call(
        "POST", f"{API}/apply", {"items": [queue_doc("a", parent="org", capability={"cpu": "20"})]}
    )
    assert code == 400
    assert (
        "Queue a: spec.capability.cpu: capability of cpu (20) exceeds parent 'org'"
        in (status["message"])
    )
    for name in ("a", "b"):
        code, _ = await api.call(
            "POST", f"{API}/queues", queue_doc(name, parent="org", guarantee={"cpu": "2"})
        )
        assert code == 201
    code, status = await api.call(
        "POST", f"{API}/apply", {"items": [queue_doc("c", parent="org", guarantee={"cpu": "1"})]}
    )
    assert code == 400 and "children (a, b, c) are guaranteed 5" in status["message"]
    code, status = await api.call("POST", f"{API}/apply", {"items": [queue_doc("org", parent="a")]})
    assert code == 400 and "is its own ancestor" in status["message"]
    code, status = await api.call("DELETE", f"{API}/queues/org")
    assert code == 400
    assert status["message"] == (
        "queue org has child queues (a, b): delete them or set their spec.parent elsewhere first"
    )
    for name in ("a", "b", "org"):
        code, _ = await api.call("DELETE", f"{API}/queues/{name}")
        assert code == 200
    _, listed = await api.call("GET", f"{API}/queues")
    assert listed["items"] == []


async def test_a_flaw_stored_before_does_not_block_an_unrelated_queue_edit(
    api: Api, etcd_server: embedded.EmbeddedEtcd
) -> None:
    from federation.registry import codec, objects
    from policies.models.queue import Queue

    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    try:  # written around the API, as an older version could: a child under no parent
        stray = Queue.model_validate(queue_doc("stray", parent="gone"))
        await codec.TypedStore(store, objects.ObjectCodec()).put(objects.key_for(stray), stray)
    finally:
        await store.close()
    code, status = await api.call("POST", f"{API}/apply", {"items": [queue_doc("web")]})
    assert code == 200, status["message"]
    code, status = await api.call("POST", f"{API}/apply", {"items": [queue_doc("x", parent="y")]})
    assert code == 400
    assert "Queue x: spec.parent" in status["message"]
    assert "Queue stray" not in status["message"]


def propagation(group: str, name: str = "storefront") -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": "web"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "placement": {"clusterAffinity": {"clusterNames": ["a"]}},
        },
    }


async def test_a_policy_of_another_group_with_the_same_name_is_refused_not_replaced(
    api: Api,
) -> None:
    """Karmada's and fedctl.io's PropagationPolicy share a kind name and so a stored name:
    applying one where the other is used to replace it silently (and move its workloads)."""
    karmada = propagation("policy.karmada.io")
    code, first = await api.call("POST", f"{API}/apply", {"items": [karmada]})
    assert code == 200, first

    code, status = await api.call("POST", f"{API}/apply", {"items": [propagation("fedctl.io")]})
    assert code == 400
    assert "PropagationPolicy web/storefront: a policy.karmada.io/v1alpha1" in status["message"]
    code, status = await api.call(
        "POST", f"{API}/apply", {"items": [propagation("fedctl.io", "other"), {**karmada}]}
    )
    assert code == 200, status  # the same group again is an ordinary re-apply
    code, status = await api.call(
        "POST",
        f"{API}/apply",
        {"items": [propagation("fedctl.io", "both"), propagation("policy.karmada.io", "both")]},
    )
    assert code == 400 and "web/both" in status["message"]
    _, stored = await api.call("GET", f"{API}/namespaces/web/propagationpolicies/storefront")
    assert stored["apiVersion"] == "policy.karmada.io/v1alpha1"
    code, _ = await api.call("GET", f"{API}/namespaces/web/propagationpolicies/both")
    assert code == 404  # refused as a whole: neither was stored
