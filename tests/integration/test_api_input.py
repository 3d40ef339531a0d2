"""The REST API's object routes on a real etcd, given input a client gets wrong: a
revision that is not a number, a body nested past any real object, several items one of
which is wrong, objects too large to store. Each is refused as a 400 (or 413) Status body
that names the field, the parameter or the item, before anything is written or streamed.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from ruamel.yaml import YAML

from federation.api import app as api_app
from federation.api import bodies
from federation.registry import embedded
from federation.registry.etcd import EtcdStore
from policies import loading
from tests.conftest import etcd_settings
from tests.integration.test_api import Api, wipe
from tests.serving import serving
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"


def queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


@pytest.fixture
async def client(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[Api]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    try:
        async with serving(api_app.build_app(store)) as base, aiohttp.ClientSession() as session:
            yield Api(base, session)
    finally:
        await wipe(store)
        await store.close()


async def stored_queues(client: Api) -> list[str]:
    _, listed = await client.call("GET", f"{API}/queues")
    return [i["metadata"]["name"] for i in listed["items"]]


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        pytest.param("PUT", "/queues/apiq", "metadata.resourceVersion",
                     id="PUT with a resourceVersion that is not a number"),
        pytest.param("PUT", "/queues/apiq", "metadata.resourceVersion",
                     id="PUT with a negative resourceVersion"),
        pytest.param("DELETE", "/queues/apiq?resourceVersion=abc", "resourceVersion",
                     id="DELETE with a resourceVersion that is not a number"),
        pytest.param("DELETE", "/queues/apiq?resourceVersion=-5", "resourceVersion",
                     id="DELETE with a negative resourceVersion"),
        pytest.param("DELETE", "/namespaces/_/workloads/Namespace/apins?resourceVersion=x1",
                     "resourceVersion", id="DELETE of a Namespace with a bad resourceVersion"),
    ],
)  # fmt: skip
async def test_a_revision_that_is_not_one_is_a_400_naming_it_and_changes_nothing(
    client: Api, request: pytest.FixtureRequest, method: str, path: str, field: str
) -> None:
    """It was a 500 (`int('abc')` in the handler), and the client could not tell a typo
    from a broken server."""
    code, created = await client.call("POST", f"{API}/queues", queue("apiq", weight=2))
    assert code == 201, created
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apins"}}
    assert (await client.call("POST", f"{API}/apply", {"items": [namespace]}))[0] == 200
    bad = "-3" if "negative" in request.node.callspec.id else "abc"
    body = {**created, "metadata": {**created["metadata"], "resourceVersion": bad}}
    body["spec"] = {"weight": 5}
    code, status = await client.call(method, API + path, body if method == "PUT" else None)
    assert code == 400, status
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    assert status["message"].startswith(f"{field}: Invalid value: ")
    assert "must be a resource version" in status["message"]
    _, got = await client.call("GET", f"{API}/queues/apiq")
    assert got["spec"]["weight"] == 2 and await stored_queues(client) == ["apiq"]
    code, _ = await client.call("GET", f"{API}/namespaces/_/workloads/Namespace/apins")
    assert code == 200


@pytest.mark.parametrize(
    "since",
    [pytest.param("abc", id="not a number"), pytest.param("-5", id="negative")],
)
@pytest.mark.parametrize(
    "path",
    [pytest.param("/queues?watch=1", id="a kind's watch"),
     pytest.param("/watch?resources=queues", id="the multiplexed watch")],
)  # fmt: skip
async def test_a_watch_from_a_revision_that_is_not_one_is_a_400_not_an_empty_stream(
    client: Api, since: str, path: str
) -> None:
    """The kind's watch prepared its stream before reading the revision: the client got
    200 and an empty body, or (negative) a bookmark at a revision that never was."""
    url = f"{client.base}{API}{path}&resourceVersion={since}"
    async with asyncio.timeout(10), client.session.get(url) as resp:  # a stream never ends
        assert resp.status == 400, await resp.content.readline()
        status = await resp.json()
    assert status["reason"] == "Invalid"
    assert status["message"].startswith("resourceVersion: Invalid value: ")


def nested(depth: int) -> str:
    """A Queue whose `extra` holds a string `depth` lists deep, as JSON text (the encoder
    itself gives up long before 5000 levels)."""
    return json.dumps(queue("deep"))[:-1] + ', "extra": ' + "[" * depth + '"x"' + "]" * depth + "}"


@pytest.mark.parametrize(
    "depth",
    [pytest.param(300, id="300 levels (the serializer gave up)"),
     pytest.param(5000, id="5000 levels (the JSON decoder's recursion gave up)")],
)  # fmt: skip
@pytest.mark.parametrize("route", ["/apply?dryRun=All", "/apply", "/queues"])
async def test_a_json_body_nested_past_the_yaml_limit_is_a_400_naming_where(
    client: Api, depth: int, route: str
) -> None:
    """YAML bodies are refused past 64 levels with a clean 400; JSON ones were a 500."""
    text = nested(depth)
    code, status = await client.call("POST", API + route, raw=text)
    assert code == 400, status
    assert status["reason"] == "Invalid"
    # 1-based: the 64th "[", which opens level 65 under the object's own "{".
    column = text.index("[") + 64
    assert status["message"] == (
        f"<request>:1:{column}: invalid JSON: nested deeper than 64 levels"
    )
    assert await stored_queues(client) == []


async def test_json_nested_as_deep_as_the_limit_is_still_read(client: Api) -> None:
    """The limit refuses nothing a real object holds: 60 levels reach the model, whose
    own finding (an unknown field) is what the client hears."""
    code, status = await client.call("POST", f"{API}/queues", raw=nested(60))
    assert code == 400 and "extra: unknown field" in status["message"], status


async def test_each_finding_of_a_json_list_names_its_item(client: Api) -> None:
    """Two items wrong the same way were two identical `<request>: spec.weight` lines: the
    client could not tell which to fix. Named by place and object, as Kubernetes names
    the item of a List; nothing is stored."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web-1", "namespace": "web"},
        "spec": {"replicas": -1, "template": {"spec": {"containers": []}}},
    }
    items = [queue("j1"), queue("j2", weight=0), queue("j3", weight=0), deployment, {"kind": 1}]
    code, status = await client.call("POST", f"{API}/apply", {"items": items})
    assert code == 400, status
    findings = status["details"]["findings"]
    assert findings[:2] == [
        "items[1] (Queue j2): spec.weight: must be at least 1, got 0",
        "items[2] (Queue j3): spec.weight: must be at least 1, got 0",
    ]
    assert any(f.startswith("items[3] (Deployment web/web-1): spec.replicas: ") for f in findings)
    assert findings[-1].startswith("items[4]: ")  # it says no kind and name to go by
    code, status = await client.call("POST", f"{API}/apply", [queue("j1"), queue("j2", weight=0)])
    assert status["details"]["findings"] == [
        "[1] (Queue j2): spec.weight: must be at least 1, got 0"
    ]
    code, status = await client.call("POST", f"{API}/queues", queue("j2", weight=0))
    assert status["details"]["findings"] == ["<request>: spec.weight: must be at least 1, got 0"]
    assert await stored_queues(client) == []


@pytest.mark.parametrize(
    ("method", "path", "code", "message"),
    [
        pytest.param("DELETE", "/queues/nope", 404, 'not found: queues "nope"', id="delete"),
        pytest.param("DELETE", "/queues/nope?dryRun=All", 404, 'not found: queues "nope"',
                     id="delete, dry run"),
        pytest.param("PUT", "/queues/nope", 404, 'not found: queues "nope"', id="update"),
        pytest.param("PUT", "/queues/nope?dryRun=All", 404, 'not found: queues "nope"',
                     id="update, dry run"),
        pytest.param("POST", "/queues", 409, 'already exists: queues "apiq"', id="create"),
        pytest.param("POST", "/queues?dryRun=All", 409, 'already exists: queues "apiq"',
                     id="create, dry run"),
        pytest.param("PUT", "/queues/apiq", 409, 'conflict on queues "apiq": expected revision 1,',
                     id="update from a stale revision"),
        pytest.param("DELETE", "/queues/apiq?resourceVersion=1", 409,
                     'conflict on queues "apiq": expected revision 1,',
                     id="delete from a stale revision"),
        pytest.param("DELETE", "/namespaces/web/propagationpolicies/nope", 404,
                     'not found: propagationpolicies "nope"', id="delete a namespaced policy"),
        pytest.param("GET", "/namespaces/web/workloads/Job.batch/nope", 404,
                     'not found: workloads "Job.batch/nope"', id="get a workload"),
        pytest.param("GET", "/namespaces/web/bindings/Job.batch/nope", 404,
                     'not found: bindings "Job.batch/nope"', id="get a binding"),
    ],
)  # fmt: skip
async def test_an_error_names_the_object_as_get_does_never_its_registry_key(
    client: Api, method: str, path: str, code: int, message: str
) -> None:
    """`DELETE /queues/nope` said `not found: /fedctl/policies/Queue/_/nope` where GET says
    `queues "nope"`; a second create said `already exists: /fedctl/policies/Queue/_/apiq`."""
    assert (await client.call("POST", f"{API}/queues", queue("apiq")))[0] == 201
    name = path.partition("?")[0].rpartition("/")[2]
    body = {**queue(name if method == "PUT" else "apiq", weight=3)}
    body["metadata"]["resourceVersion"] = "1"
    got, status = await client.call(method, API + path, body if method != "DELETE" else None)
    assert got == code, status
    assert status["message"].startswith(message), status["message"]
    assert "/fedctl/" not in status["message"]


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        pytest.param("GET", "/queues/nope", "queues", id="get"),
        pytest.param("DELETE", "/namespaces/web/propagationpolicies/nope", "propagationpolicies",
                     id="delete"),
        pytest.param("GET", "/namespaces/web/workloads/Job.batch/nope", "workloads",
                     id="a workload"),
    ],
)  # fmt: skip
async def test_not_found_names_the_object_in_its_details_as_kubernetes_does(
    client: Api, method: str, path: str, kind: str
) -> None:
    """A 404 carried no `details`: Kubernetes' names the object's name, group and kind
    (its resource), which clients read rather than parse the message."""
    code, status = await client.call(method, API + path, None)
    assert code == 404, status
    assert status["details"] == {"name": "nope", "group": "fedctl.io", "kind": kind}


async def test_a_workload_described_that_is_not_there_is_named(client: Api) -> None:
    code, status = await client.call(
        "GET", "/apis/status.fedctl.io/v1alpha1/namespaces/web/workloads/Job.batch/nope"
    )
    assert code == 404 and status["message"] == 'not found: workloads "Job.batch/nope"'


async def send_large(client: Api, path: str, body: Any, *, method: str = "POST") -> tuple[int, Any]:
    """Send a body of megabytes (as a stream: aiohttp warns of one sent as bytes)."""
    data = io.BytesIO(json.dumps(body).encode())
    headers = {"Content-Type": "application/json"}
    url = client.base + path
    async with client.session.request(method, url, data=data, headers=headers) as resp:
        return resp.status, await resp.json()


def job_with_env(name: str, size: int) -> dict[str, Any]:
    """A Job carrying `size` bytes in one environment value (Kubernetes sets no limit there,
    so only the registry's request size can refuse it)."""
    container = {"name": "c", "image": "x", "env": [{"name": "BLOB", "value": "x" * size}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "web"},
            "spec": {"template": {"spec": {"containers": [container]}}}}  # fmt: skip


@pytest.mark.parametrize(
    "dry", [pytest.param("", id="apply"), pytest.param("?dryRun=All", id="dry run")]
)
async def test_an_apply_holding_an_object_too_large_to_store_stores_nothing(
    client: Api, dry: str
) -> None:
    """A Queue, then a Job of 1.6 MiB: the Queue was stored, then etcd refused the Job as
    too large for one request, and the apply failed having changed the registry; its dry
    run said both would be created. Every object is judged first, in the dry run too."""
    items = [queue("partial-q1"), job_with_env("small", 10), job_with_env("huge", 1_700_000)]
    code, status = await send_large(client, f"{API}/apply{dry}", {"items": items})
    assert code == 413, status
    assert status["reason"] == "RequestEntityTooLarge"
    assert status["message"].startswith("Job web/huge is 1.6 MiB, more than the 1.5 MiB")
    assert status["message"].endswith("nothing was stored")
    assert await stored_queues(client) == []
    _, jobs = await client.call("GET", f"{API}/namespaces/web/workloads")
    assert jobs["items"] == []
    code, _ = await send_large(client, f"{API}/namespaces/web/workloads{dry}", items[2])
    assert code == 413  # created one at a time, as a dry run, too
    # Updated: a Deployment, as a Job's pod template cannot change once it is created.
    small, huge = (
        {**job_with_env("huge", size), "apiVersion": "apps/v1", "kind": "Deployment"}
        for size in (10, 1_700_000)
    )
    assert (await client.call("POST", f"{API}/namespaces/web/workloads", small))[0] == 201
    path = f"{API}/namespaces/web/workloads/Deployment.apps/huge{dry}"
    code, _ = await send_large(client, path, huge, method="PUT")
    assert code == 413


@pytest.mark.parametrize(
    "dry", [pytest.param("", id="apply"), pytest.param("?dryRun=All", id="dry run")]
)
async def test_an_apply_holding_a_configmap_past_1_mib_is_refused_as_kubernetes_does(
    client: Api, dry: str
) -> None:
    """The ConfigMap of the report: 1.9 MiB of data, which no member takes."""
    big = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "x" * 2_000_000},
           "metadata": {"name": "bigcm", "namespace": "web"}}  # fmt: skip
    code, status = await send_large(client, f"{API}/apply{dry}", {"items": [queue("q1"), big]})
    assert code == 400, status
    (finding,) = status["details"]["findings"]
    assert finding.startswith(
        "items[1] (ConfigMap web/bigcm): data: Too long: must have at most 1048576 bytes"
    )
    assert await stored_queues(client) == []


BIG = "9" * 5726
DEPLOYMENT = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: n, namespace: web}\nspec:\n"
    f"  replicas: {BIG}\n"
)
TOO_LONG = (
    "an integer of 5726 digits is longer than the 4300 digits a number may have here"
    " (a Kubernetes integer has at most 19)"
)


@pytest.mark.parametrize(
    ("path", "raw", "ctype", "refused", "field"),
    [
        pytest.param("/apply", DEPLOYMENT, "application/yaml",
                     f"<request>:5:13: spec.replicas: {TOO_LONG}", "spec.replicas",
                     id="YAML to /apply"),
        pytest.param("/apply", json.dumps({"items": [{
                         "apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "n", "namespace": "web"},
                         "spec": {"template": {"spec": {"containers": [
                             {"name": "c", "ports": [{"containerPort": "PORT"}]}]}}}}]}
                     ).replace('"PORT"', f"-{BIG}"),
                     "application/json",
                     "items[0] (Deployment web/n):"
                     f" spec.template.spec.containers[0].ports[0].containerPort: {TOO_LONG}",
                     "items[0].spec.template.spec.containers[0].ports[0].containerPort",
                     id="JSON to /apply, negative and deep"),
    ],
)  # fmt: skip
async def test_an_integer_too_long_to_read_is_a_400_naming_its_field(
    client: Api, *, path: str, raw: str, ctype: str, refused: str, field: str
) -> None:
    """Past Python's 4,300 digits the conversion raised ValueError: a 500 from the API and
    a traceback from `fedctl validate`."""
    code, status = await client.call("POST", API + path, raw=raw, ctype=ctype)
    assert code == 400 and status["message"] == refused, status
    _, listed = await client.call("GET", f"{API}/workloads")
    assert listed["items"] == [], "nothing was stored"
    code, found = await client.call("POST", f"{API}/validate", raw=raw, ctype=ctype)
    assert code == 200 and not found["valid"], found
    assert [(f["path"], f["message"]) for f in found["findings"]] == [(field, TOO_LONG)], (
        "and /validate says where"
    )


@pytest.mark.parametrize(
    ("path", "ctype"),
    [
        pytest.param("/validate", "application/yaml", id="/validate, open to any caller"),
        pytest.param("/apply?dryRun=All", "application/yaml", id="/apply of YAML"),
        pytest.param("/apply?dryRun=All", "application/json", id="/apply of JSON"),
        pytest.param("/plan", "application/yaml", id="/plan"),
    ],
)
async def test_a_body_being_parsed_does_not_hold_up_other_requests(
    client: Api, monkeypatch: pytest.MonkeyPatch, path: str, ctype: str
) -> None:
    """A body of 38,000 documents parsed on the event loop for 14 s, and /healthz waited
    11 s behind it. The parse is held here until /healthz has answered: on the loop, it
    would block /healthz (and this test) until the hold timed out."""
    started, release = threading.Event(), threading.Event()
    held: list[bool] = []

    def hold(parse: Any) -> Any:
        def parsing(*args: Any, **kwargs: Any) -> Any:
            started.set()
            held.append(release.wait(timeout=10))
            return parse(*args, **kwargs)

        return parsing

    monkeypatch.setattr(loading, "load_text", hold(loading.load_text))
    monkeypatch.setattr(bodies, "_json_documents", hold(bodies._json_documents))
    doc = queue("q", weight=1)
    raw = json.dumps(doc) if ctype == "application/json" else yaml_text(doc)
    call = asyncio.create_task(client.call("POST", API + path, raw=raw, ctype=ctype))
    await wait_for(started.is_set, message="the parse to start")
    assert (await client.call("GET", "/healthz"))[0] == 200
    assert held == [], "the parse ended (timed out) before /healthz could answer"
    release.set()
    code, answer = await call
    assert code == 200 and held == [True], answer


def yaml_text(doc: Any) -> str:
    out = io.StringIO()
    YAML(typ="safe").dump(doc, out)
    return out.getvalue()
