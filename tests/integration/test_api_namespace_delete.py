"""Deleting a federated Namespace deletes what the federation holds in it, as Kubernetes'
namespace controller does in Karmada's control plane: its workload templates and its
namespaced policies, never another namespace's objects nor cluster-scoped ones.

Before, only the Namespace template went: the namespace was deleted in every member with
every copy in it, the templates stayed, and the propagator applied them all again (each
Job from the start). The real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation import errors
from federation.api import app as api_app
from federation.api import auth
from federation.registry import keys
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from tests.serving import fedctl, serving

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
NAMESPACE_PATH = f"{API}/namespaces/_/workloads/Namespace"
ADMIN, TENANT = "admin-secret-0001", "tenant-secret-0002"
TOKENS = f"""
tokens:
  - {{token: {ADMIN}, user: root, groups: [admin]}}
  - {{token: {TENANT}, user: hana, groups: ["tenant:hh"]}}
"""


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def deployment(ns: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def job(ns: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }


def policy(kind: str, ns: str | None, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": meta,
        "spec": spec,
    }


SELECTS_DEPLOYMENTS = {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}
TEAM_NAMESPACES = policy(
    "ClusterPropagationPolicy",
    None,
    "team-namespaces",
    {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}]},
)


def team(ns: str, *, quota: bool = True) -> list[dict[str, Any]]:
    """The user's `ns.yaml` and `work.yaml`: a Namespace, 8 Deployments, 8 Jobs and the
    namespace's policies (a FederatedResourceQuota when `quota`)."""
    docs = [namespace(ns)]
    docs += [deployment(ns, f"web-{i}") for i in range(8)]
    docs += [job(ns, f"train-{i}") for i in range(8)]
    docs.append(policy("PropagationPolicy", ns, "web", SELECTS_DEPLOYMENTS))
    overrides = {**SELECTS_DEPLOYMENTS, "overrideRules": []}
    docs.append(policy("OverridePolicy", ns, "mirrors", overrides))
    if quota:
        docs.append(policy("FederatedResourceQuota", ns, ns, {"overall": {"cpu": "10"}}))
    return docs


class Client:
    def __init__(self, base: str, session: aiohttp.ClientSession) -> None:
        self.base, self.session = base, session

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = ADMIN,
        params: dict[str, str] | None = None,
    ) -> tuple[int, Any, list[str]]:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = json.dumps(body) if body is not None else None
        async with self.session.request(
            method, self.base + path, data=data, headers=headers, params=params
        ) as resp:
            text = await resp.text()
            doc = json.loads(text) if text.startswith("{") else text
            return resp.status, doc, resp.headers.getall("Warning", [])

    async def apply(self, docs: Sequence[dict[str, Any]], *, token: str = ADMIN) -> None:
        code, answer, _ = await self.call(
            "POST", f"{API}/apply", {"items": list(docs)}, token=token
        )
        assert code == 200, answer


@pytest.fixture
async def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
async def api(store: MemoryStore) -> AsyncIterator[Client]:
    authn = auth.Authenticator(auth.TokenTable.from_yaml(TOKENS))
    async with (
        serving(api_app.build_app(store, auth=authn)) as base,
        aiohttp.ClientSession() as session,
    ):
        yield Client(base, session)


async def stored(store: st.Store) -> set[str]:
    """Every user object's key, shortened: `workloads/hh/Job.batch/train-0`."""
    found = set()
    for kind in ("workloads", "policies"):
        for kv in (await store.list(keys.prefix(kind))).items:
            found.add(kv.key.removeprefix(f"{keys.ROOT}/"))
    return found


async def test_a_dry_run_says_what_would_go_and_the_delete_takes_exactly_that(
    api: Client, store: MemoryStore
) -> None:
    await api.apply([TEAM_NAMESPACES, *team("hh"), *team("other")])
    before = await stored(store)
    code, status, warnings = await api.call(
        "DELETE", f"{NAMESPACE_PATH}/hh", params={"dryRun": "All"}
    )
    assert code == 200, status
    held = {
        "Deployment.apps": 8,
        "Job.batch": 8,
        "PropagationPolicy": 1,
        "OverridePolicy": 1,
        "FederatedResourceQuota": 1,
    }
    assert status["details"] == {"name": "hh", "kind": "namespaces", "held": held}
    (warning,) = warnings
    assert warning.startswith('299 - "would be deleted with namespace hh: 8 Deployment.apps,')
    assert "8 Job.batch" in warning and "1 FederatedResourceQuota" in warning
    assert "(Deployment.apps web-0, Deployment.apps web-1," in warning
    assert "and 14 more)" in warning, "five named, the rest counted"
    assert await stored(store) == before, "a dry run deletes nothing"

    code, status, warnings = await api.call("DELETE", f"{NAMESPACE_PATH}/hh")
    assert code == 200, status
    assert status["details"]["held"] == held
    assert warnings[0].startswith('299 - "deleted with namespace hh: 8 Deployment.apps,')
    gone = {k for k in before if "/hh/" in k or k.endswith("/Namespace/hh")}
    assert len(gone) == 1 + 16 + 3
    assert await stored(store) == before - gone, "other namespaces and the CPP stay"
    code, status, _ = await api.call("DELETE", f"{NAMESPACE_PATH}/hh")
    assert code == 404 and 'namespaces "hh"' in status["message"], status


async def test_the_cli_dry_run_names_what_goes_with_the_namespace(
    store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    async with serving(api_app.build_app(store)) as server, aiohttp.ClientSession() as session:
        await Client(server, session).apply(team("hh"))
        capsys.readouterr()
        assert await fedctl(server, "delete", "namespace", "hh", "--dry-run") == 0
        out, err = capsys.readouterr()
        assert out == "namespace/hh deleted (server dry run)\n"
        assert err.startswith(
            "Warning: would be deleted with namespace hh: 8 Deployment.apps, 8 Job.batch,"
            " 1 PropagationPolicy, 1 OverridePolicy, 1 FederatedResourceQuota"
            " (Deployment.apps web-0,"
        ), err
        assert len(await stored(store)) == 20
        assert await fedctl(server, "delete", "ns", "hh") == 0
        assert await stored(store) == set()
        assert await fedctl(server, "delete", "namespace", "hh") == 1
        assert 'namespaces "hh"' in capsys.readouterr().err


async def test_a_tenant_deletes_its_namespace_from_the_cli(
    store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workload view shows a tenant what is in its namespaces, not the Namespace
    that is one of them: the CLI addresses a Namespace by its name, not through it."""
    authn = auth.Authenticator(auth.TokenTable.from_yaml(TOKENS))
    async with (
        serving(api_app.build_app(store, auth=authn)) as server,
        aiohttp.ClientSession() as session,
    ):
        await Client(server, session).apply(team("hh", quota=False))
        capsys.readouterr()
        assert await fedctl(server, "delete", "namespace", "hh", "--token", TENANT) == 0
        assert capsys.readouterr().out == "namespace/hh deleted\n"
        assert await stored(store) == set()


async def test_delete_of_files_holding_a_namespace_and_its_objects_deletes_each_once(
    store: MemoryStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fedctl delete -f ns.yaml -f work.yaml`, the Namespace first: deleted at once
    with the rest, it took them along and each was then reported not found (exit 1).
    The Namespace goes last, and each object is reported deleted once."""
    docs = team("hh", quota=False)
    (tmp_path / "ns.yaml").write_text(json.dumps(docs[0]))
    work = "\n---\n".join(json.dumps(d) for d in docs[1:])
    (tmp_path / "work.yaml").write_text(work)
    files = ["-f", str(tmp_path / "ns.yaml"), "-f", str(tmp_path / "work.yaml")]
    async with serving(api_app.build_app(store)) as server, aiohttp.ClientSession() as session:
        await Client(server, session).apply(docs)
        capsys.readouterr()
        assert await fedctl(server, "delete", *files) == 0
        out, err = capsys.readouterr()
        assert "not found" not in err, err
        lines = out.splitlines()
        assert len(lines) == len(docs) and lines[-1] == "namespace/hh deleted", lines
        assert await stored(store) == set()


class _CutOff(MemoryStore):
    """Refuses the `fail_at`-th commit from when it is armed, as a registry lost midway."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_at = 0

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        if self.fail_at:
            self.fail_at -= 1
            if not self.fail_at:
                raise errors.Unavailable("etcd: connection lost")
        return await super().commit(ops, guards=guards)


async def test_a_cascade_cut_off_midway_keeps_the_namespace_and_deleting_again_finishes() -> None:
    """250 Jobs take three transactions with the namespace's policies and the Namespace.
    The second refused: the Namespace and the namespace's policies are still there (so
    the members keep the namespace, and the copies of what is left keep running), and
    the same delete again takes the rest."""
    store = _CutOff()
    docs = [namespace("hh"), *(job("hh", f"sweep-{i:03d}") for i in range(250))]
    docs.append(policy("PropagationPolicy", "hh", "web", SELECTS_DEPLOYMENTS))
    async with serving(api_app.build_app(store)) as server, aiohttp.ClientSession() as session:
        api = Client(server, session)
        await api.apply(docs)
        store.fail_at = 2
        code, status, _ = await api.call("DELETE", f"{NAMESPACE_PATH}/hh")
        assert code == 503, status
        assert status["message"].startswith(
            "namespace hh: 100 of the 251 objects it holds deleted when the registry failed"
        )
        assert status["message"].endswith("delete it again to finish"), status
        left = await stored(store)
        assert "workloads/_/Namespace/hh" in left
        assert "policies/PropagationPolicy/hh/web" in left, "workloads go first"
        assert len([k for k in left if k.startswith("workloads/hh/")]) == 150
        code, status, _ = await api.call("DELETE", f"{NAMESPACE_PATH}/hh")
        assert code == 200, status
        assert status["details"]["held"] == {"Job.batch": 150, "PropagationPolicy": 1}
        assert await stored(store) == set()


async def test_a_stale_resource_version_deletes_nothing(api: Client, store: MemoryStore) -> None:
    await api.apply(team("hh"))
    _, got, _ = await api.call("GET", f"{NAMESPACE_PATH}/hh")
    await api.apply([{**namespace("hh"), "metadata": {"name": "hh", "labels": {"a": "b"}}}])
    before = await stored(store)
    since = {"resourceVersion": got["metadata"]["resourceVersion"]}
    code, status, _ = await api.call("DELETE", f"{NAMESPACE_PATH}/hh", params=since)
    assert code == 409, status
    assert await stored(store) == before


async def test_namespaces_kubernetes_keeps_are_not_deleted(api: Client, store: MemoryStore) -> None:
    await api.apply([namespace("default"), deployment("default", "web")])
    code, status, _ = await api.call("DELETE", f"{NAMESPACE_PATH}/default")
    assert code == 403, status
    assert status["message"].startswith("namespace default may not be deleted")
    assert await stored(store) == {
        "workloads/_/Namespace/default",
        "workloads/default/Deployment.apps/web",
    }


async def test_a_tenant_deletes_its_namespace_only_with_nothing_it_may_not_write(
    api: Client, store: MemoryStore
) -> None:
    """A tenant of hh may delete hh's Namespace, and with it hh's workloads and policies:
    all it may write. Not while hh holds its FederatedResourceQuota, which tenants may not
    change (removing it would lift their own limit): refused whole, dry run included. Nor
    another namespace's, and it may not create one either."""
    await api.apply([*team("hh"), *team("other", quota=False)])
    before = await stored(store)
    for params in ({"dryRun": "All"}, None):
        code, status, _ = await api.call(
            "DELETE", f"{NAMESPACE_PATH}/hh", token=TENANT, params=params
        )
        assert code == 403, status
        assert status["message"] == (
            "user 'hana' may not change federatedresourcequotas (read-only for tenants):"
            " namespace hh holds 1 FederatedResourceQuota (FederatedResourceQuota hh),"
            " which deleting it would delete; nothing was deleted"
        )
    code, status, _ = await api.call("DELETE", f"{NAMESPACE_PATH}/other", token=TENANT)
    assert code == 403 and "no access to namespace 'other'" in status["message"], status
    code, status, _ = await api.call(
        "POST", f"{API}/apply", {"items": [namespace("elsewhere")]}, token=TENANT
    )
    assert code == 403 and "no access to namespace 'elsewhere'" in status["message"], status
    assert await stored(store) == before, "nothing changed"

    quota = f"{API}/namespaces/hh/federatedresourcequotas/hh"
    assert (await api.call("DELETE", quota))[0] == 200  # an admin lifts it
    code, status, _ = await api.call("DELETE", f"{NAMESPACE_PATH}/hh", token=TENANT)
    assert code == 200, status
    assert await stored(store) == {k for k in before if "/hh/" not in k and "/hh" not in k}
    await api.apply([namespace("hh")], token=TENANT)  # its own again
