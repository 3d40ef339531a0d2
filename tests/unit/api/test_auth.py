"""Tokens files, identities and the tenant rules, without a server."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from federation import errors
from federation.api import auth

API = "/apis/fedctl.io/v1alpha1"

TOKENS_YAML = """
tokens:
  - {token: root-token, user: root, groups: [admin]}
  - {token: ml-token, user: mia, groups: ["tenant:ml-research"]}
  - {token: web-token, user: wes, groups: [web-team]}
namespaces:
  web-team: [web, web-staging]
"""


@pytest.fixture
def table() -> auth.TokenTable:
    return auth.TokenTable.from_yaml(TOKENS_YAML)


def _request(method: str, path: str, token: str | None, **match: str) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return make_mocked_request(method, path, headers=headers, match_info=match)


@pytest.mark.parametrize(
    ("token", "user", "namespaces"),
    [
        pytest.param("root-token", "root", set(), id="an admin owns no namespace, needs none"),
        pytest.param("ml-token", "mia", {"ml-research"}, id="tenant:NS group grants NS"),
        pytest.param("web-token", "wes", {"web", "web-staging"}, id="mapped group grants many"),
    ],
)
def test_tokens_yaml_maps_token_to_user_groups_and_namespaces(
    table: auth.TokenTable, token: str, user: str, namespaces: set[str]
) -> None:
    who = auth.Authenticator(table).authenticate(_request("GET", "/x", token))
    assert isinstance(who, auth.Principal)
    assert who.user == user and who.namespaces == namespaces
    assert who.via == auth.token_id(token) and token not in who.via


@pytest.mark.parametrize(
    ("text", "user", "groups"),
    [
        pytest.param("t1,alice,admin\n", "alice", set(),
                     id="token,user,uid: the uid admin makes no admin, as in Kubernetes"),
        pytest.param('t1,alice,uid-1,"admin,ops"\n', "alice", {"admin", "ops"},
                     id="Kubernetes static token file"),
        pytest.param("t1,alice,tenant:web,\n", "alice", set(), id="an empty groups column"),
        pytest.param("# comment\n\nt1,bob\n", "bob", set(), id="no groups, comments skipped"),
    ],
)  # fmt: skip
def test_tokens_csv_formats(text: str, user: str, groups: set[str]) -> None:
    entry = auth.TokenTable.from_csv(text).lookup("t1")
    assert entry is not None and entry.user == user and entry.groups == groups


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("tokens: [{user: x}]", id="a token without a token"),
        pytest.param("tokens: [oops]", id="an entry that is not a mapping"),
        pytest.param("tokens: [", id="not YAML at all"),
    ],
)
def test_bad_tokens_files_are_invalid(text: str) -> None:
    with pytest.raises(errors.Invalid):
        auth.TokenTable.from_yaml(text)


def test_tokens_are_kept_only_as_digests(table: auth.TokenTable) -> None:
    assert "root-token" not in repr(table.entries)
    assert table.lookup("root-token") is not None and table.lookup("root-tokenx") is None


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        pytest.param(None, "no credentials", id="nothing at all"),
        pytest.param("Bearer nope", "invalid", id="an unknown token"),
        pytest.param("Basic cm9vdDpyb290", "Bearer", id="another scheme"),
        pytest.param("Bearer ", "Bearer", id="an empty token"),
    ],
)
def test_missing_or_bad_credentials_say_why(
    table: auth.TokenTable, header: str | None, reason: str
) -> None:
    headers = {"Authorization": header} if header is not None else {}
    who = auth.Authenticator(table).authenticate(make_mocked_request("GET", "/x", headers=headers))
    assert isinstance(who, str) and reason in who


@pytest.mark.parametrize(
    ("method", "path", "match", "allowed"),
    [
        pytest.param("GET", f"{API}/clusters", {"plural": "clusters"}, True,
                     id="tenant reads clusters"),
        pytest.param("GET", f"{API}/queues/gpu", {"plural": "queues", "name": "gpu"}, True,
                     id="tenant reads queues"),
        pytest.param("POST", f"{API}/clusters", {"plural": "clusters"}, False,
                     id="tenant cannot register a cluster"),
        pytest.param("GET", f"{API}/works", {"plural": "works"}, True,
                     id="tenant lists works, cut to its namespaces' workloads"),
        pytest.param("GET", f"{API}/works?watch=true", {"plural": "works"}, True,
                     id="tenant watches works, cut to its namespaces' workloads"),
        pytest.param("GET", f"{API}/workloads", {"plural": "workloads"}, True,
                     id="tenant lists workloads across namespaces, cut to its own"),
        pytest.param("GET", f"{API}/workloads?watch=true", {"plural": "workloads"}, True,
                     id="tenant watches workloads across namespaces, cut to its own"),
        pytest.param("DELETE", f"{API}/namespaces/ml-research/workloads/ResourceQuota/q",
                     {"plural": "workloads", "ns": "ml-research", "kind": "ResourceQuota",
                      "name": "q"},
                     False, id="tenant cannot delete its own namespace's quota template"),
        pytest.param("POST", f"{API}/namespaces/ml-research/workloads",
                     {"plural": "workloads", "ns": "ml-research"}, True,
                     id="tenant creates a workload in its namespace"),
        pytest.param("DELETE", f"{API}/namespaces/ml-research/propagationpolicies/p",
                     {"plural": "propagationpolicies", "ns": "ml-research", "name": "p"}, True,
                     id="tenant manages its namespaced policies"),
        pytest.param("PUT", f"{API}/namespaces/ml-research/federatedresourcequotas/q",
                     {"plural": "federatedresourcequotas", "ns": "ml-research", "name": "q"},
                     False, id="tenant cannot raise its own quota"),
        pytest.param("GET", f"{API}/namespaces/ml-research/federatedresourcequotas",
                     {"plural": "federatedresourcequotas", "ns": "ml-research"}, True,
                     id="tenant reads its quota"),
        pytest.param("GET", f"{API}/namespaces/web/workloads",
                     {"plural": "workloads", "ns": "web"}, False,
                     id="tenant cannot read another namespace"),
        pytest.param("DELETE", f"{API}/namespaces/_/workloads/Namespace/ml-research",
                     {"plural": "workloads", "ns": "_", "kind": "Namespace",
                      "name": "ml-research"}, True,
                     id="tenant deletes the Namespace of its namespace"),
        pytest.param("DELETE", f"{API}/namespaces/_/workloads/Namespace/web",
                     {"plural": "workloads", "ns": "_", "kind": "Namespace", "name": "web"},
                     False, id="tenant cannot delete another namespace"),
        pytest.param("DELETE", f"{API}/namespaces/_/workloads/ClusterRole.rbac/ml-research",
                     {"plural": "workloads", "ns": "_", "kind": "ClusterRole.rbac",
                      "name": "ml-research"},
                     False, id="a cluster-scoped workload named like its namespace is not its"),
        pytest.param("POST", f"{API}/validate", {}, True, id="validate stores nothing"),
        pytest.param("POST", "/something/else", {}, False, id="unknown mutations need admin"),
        pytest.param("GET", "/", {}, True, id="dashboard page"),
    ],
)  # fmt: skip
def test_tenant_rules(
    table: auth.TokenTable, method: str, path: str, match: dict[str, str], allowed: bool
) -> None:
    authn = auth.Authenticator(table)
    request = _request(method, path, "ml-token", **match)
    who = authn.authenticate(request)
    assert isinstance(who, auth.Principal)
    assert (authn.decide(who, request) is None) is allowed
    admin = authn.authenticate(_request(method, path, "root-token", **match))
    assert isinstance(admin, auth.Principal) and authn.decide(admin, request) is None


@pytest.mark.parametrize(
    ("path", "public"),
    [
        pytest.param("/healthz", True, id="liveness"),
        pytest.param("/metrics", False, id="metrics: every namespace's cost"),
        pytest.param("/readyz", True, id="readiness"),
        pytest.param("/ui/app.js", True, id="dashboard asset"),
        pytest.param("/ui/../apis/fedctl.io/v1alpha1/clusters", False, id="no escape via .."),
        pytest.param(f"{API}/clusters", False, id="objects"),
    ],
)
def test_public_paths(table: auth.TokenTable, path: str, public: bool) -> None:
    assert auth.Authenticator(table).is_public(path) is public


def test_client_certificate_maps_cn_to_user_and_o_to_groups(table: auth.TokenTable) -> None:
    cert = {
        "subject": (
            (("organizationName", "tenant:ml-research"),),
            (("organizationName", "ops"),),
            (("commonName", "ci-bot"),),
        )
    }
    who = auth._cert_principal(cert, table)
    assert who is not None and who.user == "ci-bot"
    assert who.groups == {"tenant:ml-research", "ops"} and who.namespaces == {"ml-research"}
    assert auth._cert_principal({"subject": ()}, table) is None
