"""A tenant's rights through every route that reads or writes objects: the object API's
create and update judge an object by its own scope as `/apply` does, a plan is the write
it previews, and a list across namespaces is cut to the tenant's.

Real etcd and the real application, with the tokens of `test_api_security`: `mia` owns
`ml-research`, `wes` owns `web`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation.api import app as api_app
from federation.api import audit, auth
from federation.registry import codec, embedded, keys
from federation.registry import events as event_log
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.resources import ResourceList
from policies.models.binding import Binding, BindingSpec, BindingStatus, WorkloadReference
from policies.models.work import Event, QuotaStatus
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe
from tests.integration.test_api_security import ADMIN, OTHER, TENANT, TOKENS, Client, job, serving

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"


@pytest.fixture
async def store(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[EtcdStore]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    yield store
    await store.close()


@pytest.fixture
async def api(store: EtcdStore, tmp_path: Path) -> AsyncIterator[Client]:
    trail = audit.AuditLog(tmp_path / "audit.log")
    app = api_app.build_app(
        store, auth=auth.Authenticator(auth.TokenTable.from_yaml(TOKENS)), audit=trail
    )
    async with serving(app) as base, aiohttp.ClientSession() as session:
        yield Client(base, session)
    trail.close()


def obj(api_version: str, kind: str, name: str, namespace: str | None = None, **rest: Any) -> Any:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


SECRET = obj("v1", "Secret", "db-creds", "web", stringData={"password": "hunter2-SUPERSECRET"})
PP = obj(
    "policy.karmada.io/v1alpha1",
    "PropagationPolicy",
    "jobs",
    "ml-research",
    spec={"resourceSelectors": [{"apiVersion": "batch/v1", "kind": "Job"}]},
)


def policy(kind: str, name: str, spec: dict[str, Any], namespace: str = "ml-research") -> Any:
    return obj("policy.karmada.io/v1alpha1", kind, name, namespace, spec=spec)


QUOTA_SELECTOR = {"apiVersion": "v1", "kind": "ResourceQuota", "name": "limits"}
RAISE = {
    "targetCluster": {"clusterNames": ["eu-test"]},
    "overriders": {"plaintext": [{"path": "/spec/hard/cpu", "operator": "replace",
                                  "value": "100000"}]},
}  # fmt: skip
BECAUSE = (
    ": it would edit or move the namespace's limits in its members, which tenants may not"
    " raise; name the kinds it acts on in resourceSelectors, none of them ResourceQuota or"
    " LimitRange"
)


async def plan(api: Client, doc: Any, token: str) -> tuple[int, Any]:
    code, answer, _ = await api.call("POST", f"{API}/plan", doc, token=token)
    return code, answer


@pytest.mark.parametrize(
    ("doc", "refused"),
    [
        pytest.param(SECRET, "Secret web/db-creds: user 'mia' has no access to namespace 'web'",
                     id="another tenant's Secret, whose diff showed its stored value"),
        pytest.param(obj("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy", "grab",
                         spec={"resourceSelectors": [{"apiVersion": "batch/v1", "kind": "Job"}]}),
                     "ClusterPropagationPolicy grab: user 'mia' may not change cluster-scoped"
                     " clusterpropagationpolicies",
                     id="a cluster policy, whose claim notes named every tenant's workloads"),
        pytest.param({**PP, "metadata": {"name": "peek", "namespace": "web"}},
                     "PropagationPolicy web/peek: user 'mia' has no access to namespace 'web'",
                     id="a policy in another namespace, which planned its workloads"),
    ],
)  # fmt: skip
async def test_a_tenant_plans_only_what_it_may_write(
    api: Client, tmp_path: Path, doc: Any, refused: str
) -> None:
    assert (await api.call("POST", f"{API}/apply", {"items": [SECRET, job("web")]}))[0] == 200
    code, answer = await plan(api, doc, TENANT)
    assert code == 403 and answer["message"] == refused, answer
    assert "hunter2" not in json.dumps(answer)
    line = json.loads((tmp_path / "audit.log").read_text().splitlines()[-1])
    meta = doc["metadata"]
    assert (line["code"], line["objects"]) == (
        403,
        [{"kind": doc["kind"], "namespace": meta.get("namespace"), "name": meta["name"]}],
    ), "the trail says what was planned"
    code, answer = await plan(api, doc, ADMIN)
    assert code == 200, "an admin plans anything"


async def test_a_tenants_plan_shows_only_its_own_workloads(api: Client) -> None:
    body = {"items": [job("web"), job("ml-research")]}
    assert (await api.call("POST", f"{API}/apply", body))[0] == 200
    code, answer = await plan(api, PP, TENANT)
    assert code == 200, answer
    assert [p["key"] for p in answer["plans"]] == ["/fedctl/workloads/ml-research/Job.batch/train"]
    assert "web" not in json.dumps(answer["plans"]) + json.dumps(answer["notes"])


@pytest.mark.parametrize(
    ("method", "path", "doc", "refused"),
    [
        pytest.param("POST", "namespaces/ml-research/workloads",
                     obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "ml-admin"),
                     "ClusterRoleBinding ml-admin: user 'mia' may not change cluster-scoped"
                     " ClusterRoleBinding.rbac.authorization.k8s.io objects (admins only)",
                     id="a ClusterRoleBinding posted under the tenant's namespace"),
        pytest.param("POST", "namespaces/ml-research/workloads?dryRun=All",
                     obj("v1", "Namespace", "web"),
                     "Namespace web: user 'mia' has no access to namespace 'web'",
                     id="a dry run of another's Namespace, which said 409 if it existed"),
        pytest.param("POST", "namespaces/ml-research/workloads",
                     obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration",
                         "intercept", "ml-research"),
                     "MutatingWebhookConfiguration ml-research/intercept: user 'mia' may not"
                     " change cluster-scoped"
                     " MutatingWebhookConfiguration.admissionregistration.k8s.io objects"
                     " (admins only)",
                     id="a webhook configuration given a namespace: cluster-scoped all the same"),
        pytest.param("POST", "apply",
                     {"items": [job("ml-research"),
                                obj("v1", "ResourceQuota", "ml-research", "ml-research",
                                    spec={"hard": {"requests.cpu": "9999"}})]},
                     "ResourceQuota ml-research/ml-research: user 'mia' may not change"
                     " ResourceQuota templates: they set the limits of the namespace's members,"
                     " which tenants may not raise (read-only for tenants)",
                     id="its own namespace's quota, raised through a template"),
        pytest.param("POST", "namespaces/ml-research/workloads",
                     obj("v1", "LimitRange", "limits", "ml-research"),
                     "LimitRange ml-research/limits: user 'mia' may not change LimitRange"
                     " templates: they set the limits of the namespace's members, which tenants"
                     " may not raise (read-only for tenants)",
                     id="its own namespace's limit range"),
        pytest.param("POST", "apply",
                     {"items": [policy("OverridePolicy", "raise", {
                         "resourceSelectors": [QUOTA_SELECTOR], "overrideRules": [RAISE]})]},
                     "OverridePolicy ml-research/raise: user 'mia' may not change a policy that"
                     f" selects ResourceQuota templates{BECAUSE}",
                     id="an override raising the admin's quota in the members"),
        pytest.param("POST", "namespaces/ml-research/propagationpolicies",
                     policy("PropagationPolicy", "move", {
                         "resourceSelectors": [{**QUOTA_SELECTOR, "name": None, "labelSelector":
                                                {"matchLabels": {"team": "ml"}}}],
                         "placement": {"clusterAffinity": {"clusterNames": ["elsewhere"]}}}),
                     "PropagationPolicy ml-research/move: user 'mia' may not change a policy"
                     f" that selects ResourceQuota templates{BECAUSE}",
                     id="a placement moving the quota away from its workloads, by label"),
        pytest.param("POST", "apply",
                     {"items": [policy("OverridePolicy", "everything", {
                         "overrideRules": [RAISE]})]},
                     "OverridePolicy ml-research/everything: user 'mia' may not change a policy"
                     " that selects every template of its namespace, ResourceQuota and"
                     f" LimitRange ones too{BECAUSE}",
                     id="an override with no selectors, which edits every template"),
    ],
)  # fmt: skip
async def test_a_tenant_writes_no_object_acting_beyond_its_namespaces(
    api: Client, tmp_path: Path, *, method: str, path: str, doc: Any, refused: str
) -> None:
    assert (await api.call("POST", f"{API}/apply", {"items": [obj("v1", "Namespace", "web")]}))[
        0
    ] == 200
    code, status, _ = await api.call(method, f"{API}/{path}", doc, token=TENANT)
    assert code == 403 and status["message"] == refused, status
    _, listed, _ = await api.call("GET", f"{API}/workloads")
    assert [w["metadata"]["name"] for w in listed["items"]] == ["web"], "nothing was stored"
    line = json.loads((tmp_path / "audit.log").read_text().splitlines()[-1])
    written = doc.get("items", [doc])
    assert line["code"] == 403 and line["objects"] == [
        {
            "kind": d["kind"],
            "namespace": d["metadata"].get("namespace"),
            "name": d["metadata"]["name"],
        }
        for d in written
    ], "the trail says what was attempted"


async def test_an_admin_stores_a_webhook_configuration_as_cluster_scoped(api: Client) -> None:
    doc = obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "hook", "web")
    code, created, _ = await api.call("POST", f"{API}/namespaces/web/workloads", doc)
    assert code == 201, created
    path = f"{API}/namespaces/_/workloads/MutatingWebhookConfiguration.admissionregistration.k8s.io"
    assert (await api.call("GET", f"{path}/hook"))[0] == 200
    code, status, _ = await api.call("DELETE", f"{path}/hook", token=OTHER)
    assert code == 403 and "may not change cluster-scoped" in status["message"], status


async def test_a_tenant_lists_every_namespace_it_may_read(api: Client) -> None:
    """`fedctl get pp` (and `get workloads -o json`, `get namespaces`) list every
    namespace the token may read, as concepts.md says, instead of a 403."""
    theirs = {**PP, "metadata": {"name": "jobs", "namespace": "web"}}
    items = [PP, theirs, job("web"), job("ml-research"), obj("v1", "Namespace", "ml-research"),
             obj("v1", "Namespace", "web"), obj("v1", "Namespace", "ml-research-2")]  # fmt: skip
    assert (await api.call("POST", f"{API}/apply", {"items": items}))[0] == 200
    code, listed, _ = await api.call("GET", f"{API}/propagationpolicies", token=TENANT)
    assert code == 200 and [(p["metadata"]["namespace"]) for p in listed["items"]] == [
        "ml-research"
    ]
    code, listed, _ = await api.call("GET", f"{API}/workloads", token=TENANT)
    assert code == 200, listed
    assert sorted((w["kind"], w["metadata"]["name"]) for w in listed["items"]) == [
        ("Job", "train"),
        ("Namespace", "ml-research"),
    ]
    code, listed, _ = await api.call("GET", f"{API}/bindings", token=TENANT)
    assert code == 200 and listed["items"] == []


async def test_a_tenant_lists_the_works_of_its_namespaces_only(
    api: Client, store: EtcdStore
) -> None:
    """`fedctl get works NAME -n NS` of its own workload was `may not read cluster-scoped
    works`, though `describe workload` shows those same Works."""
    refs = [("ml-research", "Job.batch", "train"), ("web", "Job.batch", "train"),
            ("_", "Namespace", "ml-research"), ("_", "Namespace", "web")]  # fmt: skip
    for ref in refs:
        key = keys.work_key("eu-test", keys.WorkloadRef(*ref))
        await store.commit([st.Put(key, json.dumps({"kind": "Work", "ref": list(ref)}).encode())])
    code, listed, _ = await api.call("GET", f"{API}/works", token=TENANT)
    assert code == 200, listed
    assert [i["ref"] for i in listed["items"]] == [
        ["_", "Namespace", "ml-research"],
        ["ml-research", "Job.batch", "train"],
    ]
    code, listed, _ = await api.call("GET", f"{API}/works")
    assert code == 200 and len(listed["items"]) == len(refs), "an admin lists them all"


async def test_a_tenants_watch_across_namespaces_streams_its_own(api: Client) -> None:
    """`fedctl get jobs -w` without -n: the objects of its namespaces, not a 403."""
    items = [job("web"), job("ml-research"), obj("v1", "Namespace", "ml-research")]
    assert (await api.call("POST", f"{API}/apply", {"items": items}))[0] == 200
    headers = {"Authorization": f"Bearer {TENANT}"}
    seen: list[tuple[str, str]] = []
    url = f"{api.base}{API}/workloads?watch=true"
    async with api.session.get(url, headers=headers) as resp:
        assert resp.status == 200
        async for line in resp.content:
            event = json.loads(line)
            if event["type"] == "BOOKMARK":
                break
            meta = event["object"]["metadata"]
            seen.append((event["object"]["kind"], meta.get("namespace") or meta["name"]))
    assert sorted(seen) == [("Job", "ml-research"), ("Namespace", "ml-research")]


async def test_a_tenants_quota_watch_carries_status_changes_of_its_namespaces_only(
    api: Client, store: EtcdStore
) -> None:
    """Quota watches follow the status range too: a status change in another tenant's
    namespace must not reach this tenant's watch, and one in its own must."""
    quotas = [
        obj(
            "policy.karmada.io/v1alpha1",
            "FederatedResourceQuota",
            "team",
            ns,
            spec={"overall": {"cpu": "10"}},
        )
        for ns in ("ml-research", "web")
    ]
    assert (await api.call("POST", f"{API}/apply", {"items": quotas}))[0] == 200
    headers = {"Authorization": f"Bearer {TENANT}"}
    url = f"{api.base}{API}/federatedresourcequotas?watch=true"
    events: list[dict[str, Any]] = []
    async with api.session.get(url, headers=headers) as resp:
        assert resp.status == 200
        lines = resp.content.__aiter__()
        while (event := json.loads(await anext(lines)))["type"] != "BOOKMARK":
            events.append(event)
        statuses = codec.TypedStore(store, codec.Codec(QuotaStatus))
        for ns, cpu in (("web", "7"), ("ml-research", "3")):
            used = QuotaStatus(overall_used=ResourceList.from_wire({"cpu": cpu}))
            await statuses.put(keys.policy_status_key("FederatedResourceQuota", ns, "team"), used)
        events.append(json.loads(await asyncio.wait_for(anext(lines), timeout=10)))
    seen = [(e["type"], e["object"]["metadata"]["namespace"]) for e in events]
    assert seen == [("ADDED", "ml-research"), ("MODIFIED", "ml-research")]
    assert events[-1]["object"]["status"]["overallUsed"] == {"cpu": "3"}


async def test_a_tenant_neither_replaces_nor_deletes_the_policy_placing_its_quota(
    api: Client,
) -> None:
    """The admin's policy that sends the namespace's quota to its members: a tenant
    replacing it with one that selects something else, or deleting it, took the quota
    off the members as surely as a policy moving it would."""
    admins = policy("PropagationPolicy", "limits", {
        "resourceSelectors": [QUOTA_SELECTOR],
        "placement": {"clusterAffinity": {"clusterNames": ["eu-test"]}}})  # fmt: skip
    quota = obj("v1", "ResourceQuota", "limits", "ml-research", spec={"hard": {"cpu": "10"}})
    assert (await api.call("POST", f"{API}/apply", {"items": [quota, admins]}))[0] == 200
    path = f"{API}/namespaces/ml-research/propagationpolicies/limits"
    harmless = {**admins, "spec": {**admins["spec"], "resourceSelectors": [
        {"apiVersion": "batch/v1", "kind": "Job"}]}}  # fmt: skip
    refused = (
        "the stored PropagationPolicy ml-research/limits: user 'mia' may not change a policy"
        f" that selects ResourceQuota templates{BECAUSE}"
    )
    for method, body in (("PUT", harmless), ("POST", {"items": [harmless]}), ("DELETE", None)):
        where = f"{API}/apply" if method == "POST" else path
        code, status, _ = await api.call(method, where, body, token=TENANT)
        assert (code, status["message"]) == (403, refused), (method, status)
    _, stored, _ = await api.call("GET", path)
    assert stored["spec"]["resourceSelectors"] == [QUOTA_SELECTOR], "the admin's stands"
    harmless = {**harmless, "metadata": {"name": "jobs", "namespace": "ml-research"}}
    code, _, _ = await api.call("POST", f"{API}/apply", {"items": [harmless]}, token=TENANT)
    assert code == 200, "a tenant's own policy of its jobs is written as before"
    code, _, _ = await api.call("DELETE", path, token=ADMIN)
    assert code == 200, "an admin deletes it"


async def test_every_write_of_an_object_named_validate_is_audited(
    api: Client, tmp_path: Path
) -> None:
    """The trail skipped any path ending in /validate, meant for the endpoint: a PUT or a
    DELETE of an object named `validate` left no trace. Only the endpoint is skipped."""
    doc = obj("v1", "ConfigMap", "validate", "ml-research", data={"a": "b"})
    where = f"{API}/namespaces/ml-research/workloads"
    named = f"{where}/ConfigMap/validate"
    calls = [("POST", where, doc), ("PUT", named, doc), ("DELETE", named, None),
             ("POST", f"{API}/validate", doc)]  # fmt: skip
    for method, path, body in calls:
        code, answer, _ = await api.call(method, path, body, token=TENANT)
        assert code in (200, 201), answer
    lines = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    assert [(r["method"], r["name"], r["code"]) for r in lines] == [
        ("POST", "validate", 201),
        ("PUT", "validate", 200),
        ("DELETE", "validate", 200),
    ], "the three writes, not the endpoint that stores nothing"


HEAD = "web/Job.batch/confidential-project-x"
WAITING = f"waiting behind {HEAD} in queue ml-prod, which admits in strict FIFO order"


async def test_reasons_name_another_namespaces_workload_only_to_who_may_read_it(
    api: Client, store: EtcdStore
) -> None:
    """A StrictFIFO queue shared by two namespaces: the waiting workload's Binding named
    the head of the queue, another department's Job, to a tenant that gets 403 reading
    it; so did the event of a job preempted by another namespace's. The text is stored
    once; each reader sees what it may read."""
    ref = keys.WorkloadRef("ml-research", "Job.batch", "train")
    assert (await api.call("POST", f"{API}/apply", {"items": [job("ml-research")]}))[0] == 200
    binding = Binding(
        spec=BindingSpec(workload=WorkloadReference(
            api_version="batch/v1", kind="Job", namespace="ml-research", name="train")),
        status=BindingStatus(reason=f"{WAITING}; ml-research/Job.batch/first ran before it"),
        metadata={"name": "train", "namespace": "ml-research"},
    )  # fmt: skip
    await codec.TypedStore(store, codec.Codec(Binding)).put(keys.binding_key(ref), binding)
    preempted = Event(
        reason="Reclaimed",
        message=f"reclaimed by queue ml-prod for {HEAD}",
        object=str(ref),
        source="scheduler",
        time=dt.datetime.now(dt.UTC),  # after the Job's creation: describe shows it
    )
    event_key = event_log.event_prefix(ref) + "1"
    await codec.TypedStore(store, event_log.EVENTS).put(event_key, preempted)

    async def read(token: str) -> list[str]:
        texts = []
        _, listed, _ = await api.call("GET", f"{API}/bindings", token=token)
        texts.append(listed["items"][0]["status"]["reason"])
        one = f"{API}/namespaces/ml-research/bindings/Job.batch/train"
        texts.append((await api.call("GET", one, token=token))[1]["status"]["reason"])
        _, events, _ = await api.call("GET", f"{API}/namespaces/ml-research/events", token=token)
        texts.append(events["items"][0]["message"])
        views = "/apis/status.fedctl.io/v1alpha1"
        _, listed, _ = await api.call("GET", f"{views}/workloads", token=token)
        texts.append(listed["items"][0]["binding"]["status"]["reason"])
        where = f"{views}/namespaces/ml-research/workloads/Job.batch/train"
        _, described, _ = await api.call("GET", where, token=token)
        texts += [described["binding"]["status"]["reason"], described["events"][0]["message"]]
        headers = {"Authorization": f"Bearer {token}"}
        url = f"{api.base}{API}/watch?resources=bindings"
        async with api.session.get(url, headers=headers) as resp:
            texts.append(json.loads(await resp.content.readline())["object"]["status"]["reason"])
        return texts

    reason = f"{WAITING}; ml-research/Job.batch/first ran before it"
    message = f"reclaimed by queue ml-prod for {HEAD}"
    assert await read(ADMIN) == [reason, reason, message, reason, reason, message, reason]
    told = (
        "waiting behind a workload of another namespace in queue ml-prod, which admits in"
        " strict FIFO order; ml-research/Job.batch/first ran before it"
    )
    other = "reclaimed by queue ml-prod for a workload of another namespace"
    assert await read(TENANT) == [told, told, other, told, told, other, told]


async def test_a_secrets_string_data_is_folded_into_data_and_never_read_back(
    api: Client,
) -> None:
    """`stringData` was stored as written and returned by GET, lists and watches, the
    password in clear; Kubernetes merges it into `data` on write and never returns it."""
    given = {**SECRET, "data": {"user": "YWRtaW4=", "password": "b2xk"}}
    code, created, _ = await api.call("POST", f"{API}/namespaces/web/workloads", given)
    assert code == 201 and "stringData" not in created, created
    folded = {"user": "YWRtaW4=", "password": "aHVudGVyMi1TVVBFUlNFQ1JFVA=="}  # hunter2-...
    path = f"{API}/namespaces/web/workloads/Secret/db-creds"
    _, one, _ = await api.call("GET", path, token=OTHER)
    _, listed, _ = await api.call("GET", f"{API}/namespaces/web/workloads", token=OTHER)
    url = f"{api.base}{API}/workloads?watch=true"
    async with api.session.get(url, headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
        watched = json.loads(await resp.content.readline())["object"]
    for shown in (one, listed["items"][0], watched):
        assert shown["data"] == folded and "stringData" not in shown, shown
    code, again, _ = await api.call("POST", f"{API}/apply", {"items": [given]})
    assert code == 200 and again["results"][0]["result"] == "unchanged", again
