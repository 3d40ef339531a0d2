"""One rule for the NAME every verb takes, kubectl's, from a user audit:

- a bare NAME is looked for in `-n NS`, or without it in `default`, by get, describe and
  delete alike (get searched every namespace, describe took the first of two matches,
  delete looked in `default`), and a name found only elsewhere says where;
- `-o json` with a NAME is one object, whatever else shares the name; a workload's works
  and events are a list, however many there are;
- the names fedctl prints can be typed back: `RESOURCE.GROUP` (`deployments.apps`,
  `deployment.apps`, `jobs.batch`, `propagationpolicy.policy.karmada.io`) and kubectl's
  one-word `KIND/NAME`.

The controller is the real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from federation.registry import keys
from federation.registry.memory import MemoryStore
from tests.integration.test_cli_addressing import DUP
from tests.serving import api_server, fedctl

pytestmark = pytest.mark.integration

POLICY = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: storefront, namespace: {ns}}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: storefront}}]
"""
ELSEWHERE = (
    'fedctl: not found: propagationpolicies "default/storefront"; there is one in namespace'
    " ml-prod, web: give -n NS or NS/NAME"
)


def policies(tmp_path: Path, *namespaces: str) -> str:
    path = tmp_path / "policies.yaml"
    path.write_text("---\n".join(POLICY.format(ns=ns) for ns in namespaces))
    return str(path)


@pytest.mark.parametrize(
    "verb",
    [
        pytest.param(["get", "pp", "storefront"], id="get"),
        pytest.param(["get", "pp", "storefront", "-o", "json"], id="get -o json"),
        pytest.param(["describe", "pp", "storefront"], id="describe"),
        pytest.param(["delete", "pp", "storefront"], id="delete"),
        pytest.param(["delete", "pp", "storefront", "--dry-run"], id="delete --dry-run"),
    ],
)
async def test_a_bare_name_is_looked_for_in_default_by_every_verb_and_says_where_else_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: list[str]
) -> None:
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", policies(tmp_path, "web", "ml-prod")) == 0
        capsys.readouterr()
        assert await fedctl(server, *verb) == 1
        assert capsys.readouterr().err.splitlines() == [ELSEWHERE]
        for ns in ("web", "ml-prod"):
            assert await store.get(keys.policy_key("PropagationPolicy", ns, "storefront"))


@pytest.mark.parametrize(
    "address",
    [
        pytest.param(["storefront", "-n", "ml-prod"], id="NAME -n"),
        pytest.param(["ml-prod/storefront"], id="NS/NAME"),
        pytest.param(["pp/storefront", "-n", "ml-prod"], id="KIND/NAME -n"),
    ],
)
async def test_a_name_in_a_namespace_is_that_one_object_for_every_verb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: list[str]
) -> None:
    store = MemoryStore()
    kind = [] if address[0].startswith("pp/") else ["pp"]
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", policies(tmp_path, "web", "ml-prod")) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", *kind, *address, "-o", "json") == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["metadata"]["namespace"] == "ml-prod"  # one object, not a list of one
        assert await fedctl(server, "describe", *kind, *address) == 0
        assert "Namespace:   ml-prod" in capsys.readouterr().out
        assert await fedctl(server, "delete", *kind, *address) == 0
        assert capsys.readouterr().out == "propagationpolicy ml-prod/storefront deleted\n"
        assert (
            await store.get(keys.policy_key("PropagationPolicy", "ml-prod", "storefront")) is None
        )
        assert await store.get(keys.policy_key("PropagationPolicy", "web", "storefront"))


async def test_a_name_in_default_is_found_there_though_other_namespaces_share_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with api_server(MemoryStore()) as server:
        assert await fedctl(server, "apply", "-f", policies(tmp_path, "web", "default")) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", "pp", "storefront") == 0
        (row,) = capsys.readouterr().out.splitlines()[1:]
        assert row.split()[:2] == ["default", "storefront"]


@pytest.mark.parametrize(
    ("flags", "refusal"),
    [
        pytest.param(["-A"], "give -n NS or NS/NAME, not -A", id="with -A"),
        pytest.param(["-l", "app=x"], "give a NAME or -l SELECTOR, not both", id="with -l"),
        pytest.param(
            ["-n", "web"],
            "'ml-prod/storefront' and -n web name two namespaces: give one",
            id="two namespaces",
        ),
    ],
)
async def test_a_name_that_cannot_address_one_object_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], refusal: str
) -> None:
    async with api_server(MemoryStore()) as server:
        assert await fedctl(server, "apply", "-f", policies(tmp_path, "web", "ml-prod")) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", "pp", "ml-prod/storefront", *flags) == 1
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith("fedctl: ") and line.endswith(refusal)


async def test_a_workload_name_found_only_in_another_namespace_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`get deploy storefront` said only `not found: workloads "Deployment/storefront"`
    while `get deploy` listed it in web."""
    files = tmp_path / "w.yaml"
    files.write_text(DUP)
    async with api_server(MemoryStore()) as server:
        assert await fedctl(server, "apply", "-f", str(files)) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", "deploy", "dup") == 1
        assert capsys.readouterr().err == (
            'fedctl: not found: workloads "Deployment.apps/dup"; there is one in namespace teams:'
            " give -n NS or NS/NAME\n"
        )


@pytest.mark.parametrize(
    ("resource", "kinds"),
    [
        pytest.param("deployments.apps", ["Deployment.apps"], id="deployments.apps"),
        pytest.param("deployment.apps", ["Deployment.apps"], id="deployment.apps, as apply prints"),
        pytest.param("Deployment.apps", ["Deployment.apps"], id="Deployment.apps, as KIND prints"),
        pytest.param("jobs.batch", ["Job.batch"], id="jobs.batch"),
        pytest.param("jobs.batch.volcano.sh", [], id="another group's Job"),
        pytest.param("jobs", ["Job.batch"], id="jobs, batch's as in kubectl"),
    ],
)
async def test_a_workload_kind_with_its_group_lists_that_kind_of_that_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], resource: str, kinds: list[str]
) -> None:
    """`get deployment.apps` and `get jobs.batch` were refused as unknown resources."""
    files = tmp_path / "w.yaml"
    files.write_text(DUP)
    async with api_server(MemoryStore()) as server:
        assert await fedctl(server, "apply", "-f", str(files)) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", resource, "-n", "teams") == 0
        rows = capsys.readouterr().out.splitlines()[1:]
        assert [row.split()[2] for row in rows] == kinds
        assert await fedctl(server, "get", resource, "-n", "teams", "-o", "json") == 0
        assert len(json.loads(capsys.readouterr().out)) == len(kinds)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        pytest.param(
            ["deployment.apps/dup", "-n", "teams"], "Deployment", id="deployment.apps/NAME"
        ),
        pytest.param(["deploy/dup", "-n", "teams"], "Deployment", id="deploy/NAME"),
        pytest.param(["jobs.batch/teams/dup"], "Job", id="jobs.batch/NS/NAME"),
    ],
)
async def test_the_names_apply_prints_address_one_workload_in_every_verb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: list[str], kind: str
) -> None:
    """`get deploy/storefront -n web` was refused as an unknown resource; the name of two
    kinds is settled by the one given."""
    files = tmp_path / "w.yaml"
    files.write_text(DUP)
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", str(files)) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", *address, "-o", "json") == 0
        assert json.loads(capsys.readouterr().out)["kind"] == kind
        assert await fedctl(server, "describe", *address) == 0
        assert f"Kind:        {kind} (" in capsys.readouterr().out
        assert await fedctl(server, "delete", *address) == 0
        assert capsys.readouterr().out.endswith(
            f"{kind.lower()}.{'apps' if kind == 'Deployment' else 'batch'}/dup deleted\n"
        )


async def test_a_policy_kind_with_its_group_is_that_resource(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with api_server(MemoryStore()) as server:
        assert await fedctl(server, "apply", "-f", policies(tmp_path, "web")) == 0
        assert capsys.readouterr().out == "propagationpolicy.policy.karmada.io/storefront created\n"
        name = "propagationpolicy.policy.karmada.io/storefront"
        assert await fedctl(server, "get", name, "-n", "web", "-o", "json") == 0
        assert json.loads(capsys.readouterr().out)["metadata"]["name"] == "storefront"
        assert await fedctl(server, "get", "propagationpolicies.policy.karmada.io", "-A") == 0
        assert capsys.readouterr().out.splitlines()[1].split()[:2] == ["web", "storefront"]
