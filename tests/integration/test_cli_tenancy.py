"""What `fedctl` tells a tenant the API refused: the API's 403, never "not found", and for
a refused document of an apply, the file and line it is at.

A tenant naming another team's workload (`get deploy storefront -n web`, `describe
workload web/storefront`, `delete`) was told `not found: workloads "Deployment/storefront"`,
which sent it hunting for a typo; kubectl says Forbidden. The API is the real one over a
real etcd, with tokens; the CLI is `main.main`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.api import app as api_app
from federation.api import auth
from federation.registry import embedded
from federation.registry.etcd import EtcdStore
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe
from tests.integration.test_api_security import ADMIN, TENANT, TOKENS, job
from tests.serving import fedctl, serving

pytestmark = pytest.mark.integration

FORBIDDEN = "fedctl: user 'mia' has no access to namespace 'web'"

MIXED = """\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml-research}
spec:
  template:
    spec:
      containers: [{name: c, image: x}]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: more, namespace: ml-research}
spec:
  hard: {requests.cpu: "9999"}
"""


@pytest.fixture
async def server(etcd_server: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[str]:
    """The API with `storefront`, a Job of namespace `web`, which `mia` may not read."""
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    authn = auth.Authenticator(auth.TokenTable.from_yaml(TOKENS))
    storefront = tmp_path / "storefront.json"
    storefront.write_text(json.dumps(job("web", "storefront")))
    async with serving(api_app.build_app(store, auth=authn)) as url:
        assert await fedctl_as(url, ADMIN, "apply", "-f", str(storefront)) == 0
        yield url
    await store.close()


async def fedctl_as(server: str, token: str, *args: str) -> int:
    return await fedctl(server, *args, "--token", token)


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["get", "jobs", "storefront", "-n", "web"], id="get KIND NAME -n NS"),
        pytest.param(["describe", "workload", "web/storefront"], id="describe NS/NAME"),
        pytest.param(["delete", "job", "storefront", "-n", "web"], id="delete KIND NAME -n NS"),
        pytest.param(["get", "workload", "web/Job.batch/storefront"], id="get NS/KIND/NAME"),
    ],
)
async def test_another_namespace_is_forbidden_not_missing(
    server: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert await fedctl_as(server, TENANT, *argv) == 1
    assert capsys.readouterr().err.splitlines()[-1] == FORBIDDEN
    assert await fedctl_as(server, ADMIN, "get", "jobs", "storefront", "-n", "web") == 0


async def test_a_missing_workload_of_its_own_namespace_is_not_found(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await fedctl_as(server, TENANT, "get", "jobs", "nope", "-n", "ml-research") == 1
    assert "not found" in capsys.readouterr().err


async def test_a_refused_document_is_named_at_its_file_and_line(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    assert await fedctl_as(server, TENANT, "apply", "-f", str(path)) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"fedctl: {path}:9: ResourceQuota ml-research/more: user 'mia' may not change"
        " ResourceQuota templates: they set the limits of the namespace's members, which"
        " tenants may not raise (read-only for tenants)"
    )


async def test_a_tenant_finds_the_namespace_it_owns(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`auth.py`: a Namespace template is its namespace's, whose tenant may read and delete
    it; `get namespaces` listed none and `get namespace NAME` said not found."""
    path = tmp_path / "ns.yaml"
    path.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: ml-research}\n")
    assert await fedctl_as(server, TENANT, "apply", "-f", str(path)) == 0
    capsys.readouterr()
    assert await fedctl_as(server, TENANT, "get", "namespaces", "-o", "json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [i["metadata"]["name"] for i in listed] == ["ml-research"]
    assert await fedctl_as(server, TENANT, "describe", "workload", "Namespace/ml-research") == 0
    assert "ml-research" in capsys.readouterr().out
    assert await fedctl_as(server, TENANT, "get", "namespace", "ml-research", "-o", "json") == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["name"] == "ml-research"


async def test_a_live_plan_of_another_namespace_is_refused_at_the_document(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan is the write it previews: planning another team's Secret showed its stored
    value in the diff. Refused, at the document's file and line."""
    path = tmp_path / "peek.yaml"
    path.write_text(
        MIXED.split("---\n", maxsplit=1)[0]
        + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: db-creds, namespace: web}\n"
        "stringData: {password: x}\n"
    )
    assert await fedctl_as(server, TENANT, "plan", "--live", "-f", str(path)) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"fedctl: {path}:9: Secret web/db-creds: user 'mia' has no access to namespace 'web'"
    )
