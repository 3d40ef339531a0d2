"""The secured API on a real etcd: who may do what, bad input and attacks, the audit trail,
sealed kubeconfigs, rate limits, client certificates over TLS, and `/metrics`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yarl
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from clusters.kube import kubeconfig
from federation import clock, secrets
from federation.api import app as api_app
from federation.api import audit, auth
from federation.api import tls as tls_mod
from federation.cli import controller_cmd, main
from federation.registry import embedded, keys
from federation.registry import objects as reg_objects
from federation.registry.etcd import EtcdStore
from federation.settings import ApiSettings
from policies.models.cluster import Cluster
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
ADMIN, TENANT, OTHER = "admin-secret-0001", "tenant-secret-0002", "other-secret-0003"
SCRAPER = "scraper-secret-0004"
TOKENS = f"""
tokens:
  - {{token: {ADMIN}, user: root, groups: [admin]}}
  - {{token: {SCRAPER}, user: prometheus, groups: [metrics]}}
  - {{token: {TENANT}, user: mia, groups: ["tenant:ml-research"]}}
  - {{token: {OTHER}, user: wes, groups: [web-team]}}
namespaces:
  web-team: [web]
"""
MEMBER_SECRET = "member-bearer-token-do-not-leak"
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:6443"}}}}]
users: [{{name: u, user: {{token: {MEMBER_SECRET}}}}}]
contexts: [{{name: eu-test, context: {{cluster: c, user: u}}}}]
current-context: eu-test
"""
CLUSTER = {
    "apiVersion": "fedctl.io/v1alpha1",
    "kind": "Cluster",
    "metadata": {"name": "eu-test"},
    "spec": {
        "region": "eu-west",
        "chips": [{"model": "amd64", "count": 3}],
        "connection": {"kubeconfig": KUBECONFIG, "context": "eu-test"},
    },
}


def job(namespace: str, name: str = "train") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }


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
        raw: str | None = None,
        ctype: str = "application/json",
    ) -> tuple[int, Any, Mapping[str, str]]:
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        headers = {"Content-Type": ctype}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        url = yarl.URL(self.base + path, encoded=True)  # sent as written, dot-dots and all
        async with self.session.request(method, url, data=data, headers=headers) as r:
            text = await r.text()
            return r.status, (json.loads(text) if text.startswith("{") else text), r.headers


@contextlib.asynccontextmanager
async def serving(
    app: web.Application, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[str]:
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    port = embedded.free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=ssl_context).start()
    try:
        yield f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def store(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[EtcdStore]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    yield store
    await store.close()


@pytest.fixture
def key() -> str:
    return secrets.generate_key()


@pytest.fixture
def authn() -> auth.Authenticator:
    return auth.Authenticator(auth.TokenTable.from_yaml(TOKENS))


@pytest.fixture
async def api(
    store: EtcdStore, tmp_path: Path, key: str, authn: auth.Authenticator
) -> AsyncIterator[Client]:
    trail = audit.AuditLog(tmp_path / "audit.log")
    app = api_app.build_app(
        store,
        settings=ApiSettings(max_body_bytes=64 * 1024),
        auth=authn,
        audit=trail,
        cipher=secrets.Cipher([key]),
    )
    async with serving(app) as base, aiohttp.ClientSession() as session:
        yield Client(base, session)
    trail.close()


def audit_lines(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]


@pytest.mark.parametrize(
    ("method", "token"),
    [
        pytest.param("GET", None, id="read without a token"),
        pytest.param("POST", None, id="write without a token"),
        pytest.param("GET", "guessed-token", id="read with an unknown token"),
        pytest.param("POST", "guessed-token", id="write with an unknown token"),
    ],
)
async def test_no_or_invalid_token_is_401(api: Client, method: str, token: str | None) -> None:
    body = CLUSTER if method == "POST" else None
    code, status, headers = await api.call(method, f"{API}/clusters", body, token=token)
    assert code == 401 and status["reason"] == "Unauthorized", status
    assert headers["WWW-Authenticate"].startswith("Bearer")
    code, listed, _ = await api.call("GET", f"{API}/clusters")
    assert code == 200 and listed["items"] == [], "nothing was stored"


async def test_health_needs_no_token_and_metrics_a_scrapers(api: Client) -> None:
    """`/metrics` shows what every namespace's work costs (`fedctl_hourly_cost`), which a
    tenant may not read of another namespace: open, it told anyone who reached the port."""
    assert (await api.call("GET", "/healthz", token=None))[0] == 200
    assert (await api.call("GET", "/readyz", token=None))[0] == 200
    assert (await api.call("GET", "/metrics", token=None))[0] == 401
    code, status, _ = await api.call("GET", "/metrics", token=TENANT)
    assert code == 403 and "group admin or metrics" in status["message"], status
    assert (await api.call("GET", "/metrics", token=ADMIN))[0] == 200
    code, text, headers = await api.call("GET", "/metrics", token=SCRAPER)
    assert code == 200 and headers["Content-Type"].startswith("text/plain")
    for family in (
        "fedctl_scheduling_decision_seconds",
        "fedctl_queue_pending_workloads",
        "fedctl_queue_admitted_workloads",
        "fedctl_cluster_ready",
        "fedctl_cluster_capacity",
        "fedctl_propagation_errors_total",
        "fedctl_evictions_total",
        "fedctl_leader",
    ):
        assert f"# TYPE {family.removesuffix('_total')}" in text, family


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", f"{API}/namespaces/web/workloads", job("web"),
                     id="create a workload in another tenant's namespace"),
        pytest.param("GET", f"{API}/namespaces/web/workloads/Job.batch/train", None,
                     id="read another tenant's workload"),
        pytest.param("DELETE", f"{API}/namespaces/web/workloads/Job.batch/train", None,
                     id="delete another tenant's workload"),
        pytest.param("POST", f"{API}/apply", {"items": [job("ml-research"), job("web", "x")]},
                     id="apply smuggling one document into another namespace"),
        pytest.param("POST", f"{API}/clusters", CLUSTER, id="register a member cluster"),
    ],
)  # fmt: skip
async def test_tenant_outside_its_namespaces_is_403(
    api: Client, method: str, path: str, body: Any
) -> None:
    code, created, _ = await api.call("POST", f"{API}/namespaces/web/workloads", job("web"))
    assert code == 201, created
    code, status, _ = await api.call(method, path, body, token=TENANT)
    assert code == 403 and status["reason"] == "Forbidden", status
    assert "mia" in status["message"]
    _, mine, _ = await api.call("GET", f"{API}/namespaces/ml-research/workloads")
    _, theirs, _ = await api.call("GET", f"{API}/namespaces/web/workloads/Job.batch/train")
    assert mine["items"] == [] and theirs["metadata"]["name"] == "train", "nothing changed"


async def test_tenant_manages_its_namespace_and_reads_clusters_without_credentials(
    api: Client,
) -> None:
    assert (await api.call("POST", f"{API}/clusters", CLUSTER))[0] == 201
    code, created, _ = await api.call(
        "POST", f"{API}/namespaces/ml-research/workloads", job("ml-research"), token=TENANT
    )
    assert code == 201, created
    code, applied, _ = await api.call(
        "POST", f"{API}/apply", {"items": [job("ml-research", "eval")]}, token=TENANT
    )
    assert code == 200 and applied["results"][0]["result"] == "created"
    code, cluster, _ = await api.call("GET", f"{API}/clusters/eu-test", token=TENANT)
    assert code == 200 and cluster["spec"]["connection"]["kubeconfig"] == "<redacted>"
    code, listed, _ = await api.call("GET", f"{API}/clusters", token=OTHER)
    assert code == 200 and MEMBER_SECRET not in json.dumps(listed)


async def test_a_tenant_applies_and_reads_the_namespace_of_its_namespace_only(
    api: Client,
) -> None:
    """A Namespace template is cluster-scoped (`_` in its key) but is the namespace it
    names: judged as `default`, a tenant of `default` could create any Namespace, and no
    tenant its own."""

    def namespace(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}

    code, applied, _ = await api.call(
        "POST", f"{API}/apply", {"items": [namespace("ml-research")]}, token=TENANT
    )
    assert code == 200 and applied["results"][0]["result"] == "created", applied
    path = f"{API}/namespaces/_/workloads/Namespace"
    assert (await api.call("GET", f"{path}/ml-research", token=TENANT))[0] == 200
    code, status, _ = await api.call(
        "POST", f"{API}/apply", {"items": [namespace("web")]}, token=TENANT
    )
    assert code == 403 and status["message"] == (
        "Namespace web: user 'mia' has no access to namespace 'web'"
    )
    clusterrole = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "ml-research"},
    }
    code, status, _ = await api.call("POST", f"{API}/apply", {"items": [clusterrole]}, token=TENANT)
    assert code == 403 and status["message"] == (
        "ClusterRole ml-research: user 'mia' may not change cluster-scoped"
        " ClusterRole.rbac.authorization.k8s.io objects (admins only)"
    ), status


async def test_oversized_body_is_413(api: Client) -> None:
    code, status, _ = await api.call("POST", f"{API}/clusters", raw="x" * (100 * 1024))
    assert code == 413 and status["reason"] == "RequestEntityTooLarge"


@pytest.mark.parametrize(
    ("raw", "ctype", "needle"),
    [
        pytest.param('{"apiVersion": ', "application/json", "malformed JSON",
                     id="truncated JSON"),
        pytest.param("apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata:\n  name: [q\n",
                     "application/yaml", "<request>:5:1: invalid YAML", id="YAML syntax error"),
        pytest.param("apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata:\n  name: q\n"
                     "spec:\n  wieght: 2\n", "application/yaml", "<request>:6:3: spec.wieght",
                     id="YAML with an unknown field at its line"),
    ],
)  # fmt: skip
async def test_malformed_json_or_yaml_is_400_with_the_loader_message(
    api: Client, raw: str, ctype: str, needle: str
) -> None:
    code, status, _ = await api.call("POST", f"{API}/queues", raw=raw, ctype=ctype)
    assert code == 400, status
    assert needle in status["message"]


async def test_stale_resource_version_is_409(api: Client) -> None:
    _, created, _ = await api.call("POST", f"{API}/clusters", CLUSTER)
    stale = json.loads(json.dumps(created))
    created["spec"]["region"] = "eu-north"
    assert (await api.call("PUT", f"{API}/clusters/eu-test", created))[0] == 200
    stale["spec"]["region"] = "us-east"
    code, status, _ = await api.call("PUT", f"{API}/clusters/eu-test", stale)
    assert code == 409 and status["reason"] == "Conflict"
    _, now, _ = await api.call("GET", f"{API}/clusters/eu-test")
    assert now["spec"]["region"] == "eu-north", "the stale write changed nothing"


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", f"{API}/clusters",
                     {**CLUSTER, "metadata": {"name": "../leader"}}, id="body name climbing up"),
        pytest.param("GET", f"{API}/clusters/..%2Fleader", None, id="encoded slash in the URL"),
        pytest.param("PUT", f"{API}/clusters/..", CLUSTER, id="dot-dot as the name"),
        pytest.param("GET", f"{API}/clusters/%2E%2E", None, id="encoded dot-dot as the name"),
        pytest.param("POST", f"{API}/namespaces/../workloads", job(".."),
                     id="dot-dot as the namespace"),
        pytest.param("GET", f"{API}/namespaces/..%2F..%2Fclusters/workloads", None,
                     id="encoded climb in the namespace"),
    ],
)  # fmt: skip
async def test_names_with_path_traversal_are_400(
    api: Client, store: EtcdStore, method: str, path: str, body: Any
) -> None:
    code, status, _ = await api.call(method, path, body)
    assert code == 400, (code, status)
    assert (await store.list("/fedctl/")).items == [], "nothing was written anywhere"


async def test_audit_trail_records_mutations_and_never_tokens(
    api: Client, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await api.call("POST", f"{API}/clusters", CLUSTER)
    await api.call("POST", f"{API}/namespaces/web/workloads", job("web"), token=TENANT)
    await api.call("POST", f"{API}/namespaces/ml-research/workloads", job("ml-research"),
                   token=TENANT)  # fmt: skip
    await api.call("DELETE", f"{API}/clusters/eu-test", token="stolen-token-guess")
    await api.call("GET", f"{API}/clusters")
    await api.call("POST", f"{API}/validate", raw="kind: Queue\n", ctype="application/yaml")
    await api.call("POST", f"{API}/apply", {"items": [job("ml-research"), job("ml-research", "b")]})
    lines = audit_lines(tmp_path)
    got = [(r["user"], r["method"], r["kind"], r["namespace"], r["name"], r["code"])
           for r in lines]  # fmt: skip
    assert got == [
        ("root", "POST", "Cluster", None, "eu-test", 201),
        ("mia", "POST", "Workload", "web", None, 403),
        ("mia", "POST", "Job", "ml-research", "train", 201),
        (None, "DELETE", "Cluster", None, "eu-test", 401),
        ("root", "POST", None, None, None, 200),
    ], "reads and validations are not mutations"
    assert lines[-1]["objects"] == [
        {"kind": "Job", "namespace": "ml-research", "name": "train", "result": "unchanged"},
        {"kind": "Job", "namespace": "ml-research", "name": "b", "result": "created"},
    ]
    assert lines[0]["credential"] == auth.token_id(ADMIN) and lines[0]["time"]
    everything = (tmp_path / "audit.log").read_text() + caplog.text
    for secret in (ADMIN, TENANT, "stolen-token-guess", MEMBER_SECRET):
        assert secret not in everything


async def test_kubeconfig_is_sealed_in_etcd_and_opened_for_use(
    api: Client, store: EtcdStore, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await api.call("POST", f"{API}/clusters", CLUSTER))[0] == 201
    raw = await store.get(keys.cluster_key("eu-test"))
    assert raw is not None
    assert MEMBER_SECRET.encode() not in raw.value and b"kind: Config" not in raw.value
    sealed = json.loads(raw.value)["object"]["spec"]["connection"]["kubeconfig"]
    assert secrets.is_sealed(sealed)
    # What the member connector does with what it reads: open, then build a client config.
    as_stored = Cluster.model_validate(json.loads(raw.value)["object"])
    monkeypatch.setenv("FEDCTL_ENCRYPTION_KEY", key)
    cfg = await kubeconfig.load(as_stored.spec.connection)
    assert cfg.host == "https://127.0.0.1:6443" and MEMBER_SECRET in str(cfg.api_key)
    decoded = reg_objects.ObjectCodec(cipher=secrets.Cipher([key])).decode(raw.key, raw.value)
    assert isinstance(decoded, Cluster) and decoded.spec.connection.kubeconfig == KUBECONFIG
    # Applying the same object again is "unchanged", though every seal differs.
    code, again, _ = await api.call("POST", f"{API}/apply", {"items": [CLUSTER]})
    assert code == 200 and again["results"][0]["result"] == "unchanged"


async def test_rate_limit_answers_429_with_retry_after(
    store: EtcdStore, authn: auth.Authenticator
) -> None:
    app = api_app.build_app(store, settings=ApiSettings(rate_limit=0.5, rate_burst=3), auth=authn)
    async with serving(app) as base, aiohttp.ClientSession() as session:
        client = Client(base, session)
        codes = [(await client.call("GET", f"{API}/queues"))[0] for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        code, status, headers = await client.call("GET", f"{API}/queues")
        assert code == 429 and status["reason"] == "TooManyRequests"
        assert int(headers["Retry-After"]) == 2
        assert (await client.call("GET", f"{API}/queues", token=TENANT))[0] == 200, (
            "another client keeps its own budget"
        )
        assert (await client.call("GET", "/healthz", token=None))[0] == 200
        _, text, _ = await client.call("GET", "/metrics", token=SCRAPER)
        assert 'fedctl_api_rate_limited_requests_total{limiter="rate"} 2.0' in text
        assert 'fedctl_api_rate_limited_requests_total{limiter="failed_sign_in"} 0.0' in text


async def test_failed_sign_ins_are_limited_per_address_and_logged(
    store: EtcdStore, authn: auth.Authenticator, caplog: pytest.LogCaptureFixture
) -> None:
    """A 401 was answered before the per-client bucket, keyed by the caller it found, so
    one client tried thousands of tokens a second without a 429 or a log line above INFO.
    Now each failure costs its address a token; an address out of them is answered 429
    before any credential is looked at, a right one too, until the rate allows again.
    Those 429s were missing from the rate-limited counter, and a valid client refused was
    not told why: both now are."""
    fake = clock.FakeClock()
    settings = ApiSettings(auth_failure_rate=0.5, auth_failure_burst=3)
    app = api_app.build_app(store, settings=settings, auth=authn, clock=fake)
    async with serving(app) as base, aiohttp.ClientSession() as session:
        client = Client(base, session)
        guesses = [f"guess-{i}-0123456789" for i in range(4)]
        with caplog.at_level(logging.WARNING, logger="federation.api"):
            codes = [(await client.call("GET", f"{API}/queues", token=g))[0] for g in guesses]
            assert codes == [401, 401, 401, 429]
            code, status, headers = await client.call("GET", f"{API}/queues", token=ADMIN)
            assert (code, headers["Retry-After"]) == (429, "2"), "a right token waits too"
            assert status["message"] == (
                "too many failed sign-ins from this address (more than 3, then 0.5/s):"
                " every request from it is refused for 2s (Retry-After), one with a valid"
                " token too, as answering a right token while refusing wrong ones would"
                " tell a guesser which guess is right"
            )
            assert (await client.call("GET", "/healthz", token=None))[0] == 200
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert warned == [
            *(f"rejected unknown token {auth.token_id(g)} from 127.0.0.1" for g in guesses[:3]),
            "too many failed sign-ins from 127.0.0.1: refusing its requests for 2s",
        ]
        assert not any(g in caplog.text for g in guesses), "no token is logged"
        await fake.advance(2)
        assert (await client.call("GET", f"{API}/queues", token=ADMIN))[0] == 200
        _, text, _ = await client.call("GET", "/metrics", token=SCRAPER)
        assert 'fedctl_api_rate_limited_requests_total{limiter="failed_sign_in"} 2.0' in text
        assert 'fedctl_api_rate_limited_requests_total{limiter="rate"} 0.0' in text
        assert (await client.call("GET", f"{API}/queues", token=guesses[0]))[0] == 401


async def test_client_certificate_over_tls(
    store: EtcdStore, authn: auth.Authenticator, tmp_path: Path
) -> None:
    files = write_pki(tmp_path, client_cn="ci-bot", client_org="admin")
    server_ctx = tls_mod.server_context(files["server.crt"], files["server.key"],
                                        client_ca=files["ca.crt"])  # fmt: skip
    app = api_app.build_app(store, auth=authn)
    async with serving(app, server_ctx) as base:
        codes = await with_and_without_cert(base, files, "POST", f"{API}/clusters", CLUSTER)
        assert codes == (201, 401)


async def with_and_without_cert(
    base: str, files: Mapping[str, Path], method: str, path: str, body: Any = None
) -> tuple[int, int]:
    """The codes of one call made with the client certificate, then without any."""
    with_cert = tls_mod.client_context(ca=files["ca.crt"], cert=files["client.crt"],
                                       key=files["client.key"])  # fmt: skip
    codes = []
    for ctx in (with_cert, tls_mod.client_context(ca=files["ca.crt"])):
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
            codes.append((await Client(base, session).call(method, path, body, token=None))[0])
    return codes[0], codes[1]


async def test_client_ca_without_tokens_requires_a_certificate(
    store: EtcdStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fedctl controller --tls-cert --tls-key --client-ca` without `--tokens` built no
    authenticator, so a client presenting no certificate was trusted as an admin. As
    kube-apiserver's `--client-ca-file`, the CA turns authentication on by itself."""
    monkeypatch.delenv("FEDCTL_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("FEDCTL_ENCRYPTION_KEY_FILE", raising=False)
    files = write_pki(tmp_path, client_cn="ci-bot", client_org="admin")
    flags = controller_cmd.Security(
        tls_cert=str(files["server.crt"]),
        tls_key=str(files["server.key"]),
        client_ca=str(files["ca.crt"]),
    )
    extras = controller_cmd._api_security(flags)
    server_ctx = extras.pop("ssl_context")
    app = api_app.build_app(store, **extras)
    async with serving(app, server_ctx) as base:
        assert await with_and_without_cert(base, files, "GET", f"{API}/queues") == (200, 401)
    extras["audit"].close()


def write_pki(directory: Path, *, client_cn: str, client_org: str) -> dict[str, Path]:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fedctl test CA")])

    def issue(
        name: x509.Name, key: ec.EllipticCurvePrivateKey, *, ca: bool = False
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        return builder.sign(ca_key, hashes.SHA256())

    server_key = ec.generate_private_key(ec.SECP256R1())
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, client_org),
                             x509.NameAttribute(NameOID.COMMON_NAME, client_cn)])  # fmt: skip
    pem = serialization.Encoding.PEM
    made = {
        "ca.crt": issue(ca_name, ca_key, ca=True).public_bytes(pem),
        "server.crt": issue(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]), server_key
        ).public_bytes(pem),
        "client.crt": issue(client_name, client_key).public_bytes(pem),
    }
    for name, key in (("server.key", server_key), ("client.key", client_key)):
        made[name] = key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    paths = {}
    for name, data in made.items():
        paths[name] = directory / name
        paths[name].write_bytes(data)
    return paths


async def test_the_cli_without_a_token_says_where_to_give_one(
    api: Client, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("FEDCTL_TOKEN", raising=False)
    code = await asyncio.to_thread(main.main, ["get", "clusters", "--server", api.base])
    err = capsys.readouterr().err
    assert code == 1
    assert "no token given: pass --token or set FEDCTL_TOKEN" in err
    code = await asyncio.to_thread(
        main.main, ["get", "clusters", "--server", api.base, "--token", "guessed"]
    )
    assert code == 1 and "the token given was refused" in capsys.readouterr().err


async def test_requests_are_counted_by_method_route_and_code(
    store: EtcdStore, authn: auth.Authenticator
) -> None:
    """An SRE's error-rate alert needs every answer counted, refusals before any route
    too: a 401 for a wrong token, a 404 for a path nothing serves. The route is the
    pattern, so names in paths do not make new series; a watch is counted under WATCH and
    kept out of the latency histogram, which it would fill with its client's patience."""
    app = api_app.build_app(store, auth=authn)
    async with serving(app) as base, aiohttp.ClientSession() as session:
        client = Client(base, session)
        assert (await client.call("POST", f"{API}/clusters", CLUSTER))[0] == 201
        for name in ("eu-test", "nowhere"):
            await client.call("GET", f"{API}/clusters/{name}")
        assert (await client.call("GET", f"{API}/clusters", token="guess-0123456789"))[0] == 401
        assert (await client.call("GET", "/no/such/path"))[0] == 404
        watch = f"{base}{API}/clusters?watch=1&timeoutSeconds=1"
        async with session.get(watch, headers={"Authorization": f"Bearer {ADMIN}"}) as r:
            assert r.status == 200 and b"ADDED" in await r.read()
        _, text, _ = await client.call("GET", "/metrics", token=SCRAPER)
    counted = {
        (s.labels["method"], s.labels["route"], s.labels["code"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "fedctl_api_requests"
        for s in family.samples
        if s.name == "fedctl_api_requests_total"
    }
    one = f"{API}/{{plural}}/{{name}}"
    assert counted[("POST", f"{API}/{{plural}}", "201")] == 1
    assert counted[("GET", one, "200")] == 1 and counted[("GET", one, "404")] == 1
    assert counted[("GET", f"{API}/{{plural}}", "401")] == 1
    assert counted[("GET", "unmatched", "404")] == 1
    assert counted[("WATCH", f"{API}/{{plural}}", "200")] == 1
    timed = {
        (s.labels["method"], s.labels["route"])
        for family in text_string_to_metric_families(text)
        if family.name == "fedctl_api_request_duration_seconds"
        for s in family.samples
        if s.name.endswith("_count")
    }
    assert ("GET", one) in timed and ("POST", f"{API}/{{plural}}") in timed
    assert not any(method == "WATCH" for method, _ in timed)
