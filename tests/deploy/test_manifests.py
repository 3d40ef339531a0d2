"""The deploy manifests: every overlay renders, validates against the Kubernetes schemas
offline, and keeps the properties an operator relies on (non-root, probes, limits, HA in
prod, no placeholder Secret that `kubectl apply` would write over a real one).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
from kubernetes_validate import utils as kv_utils

from tests.deploy import manifests as mf
from tests.deploy import render

Obj = dict[str, Any]
KUBERNETES_VERSION = "1.32"
# Custom resources have no schema in kubernetes-validate; each is checked by a test below.
CUSTOM_KINDS = {"ServiceMonitor"}
PROD = ("prod", "prod-external-etcd")
README = render.DEPLOY / "README.md"
CONTROLLER = "fedctl-controller"


@functools.cache
def rendered(overlay: str) -> tuple[Obj, ...]:
    return tuple(render.render(overlay))


def objects(overlay: str) -> list[Obj]:
    return list(rendered(overlay))


def controller(overlay: str) -> Obj:
    return mf.find(objects(overlay), "Deployment", CONTROLLER)


def every_overlay() -> list[Any]:
    return [pytest.param(o, id=f"{o} overlay") for o in render.OVERLAYS]


@pytest.fixture(scope="module")
def _cached_schemas() -> Any:
    # kubernetes-validate re-reads its schema files per object; read each once.
    original = kv_utils.schema_contents
    kv_utils.schema_contents = functools.cache(original)
    yield
    kv_utils.schema_contents = original


@pytest.mark.parametrize("overlay", every_overlay())
def test_overlay_renders_and_every_object_matches_the_kubernetes_schema(
    overlay: str, _cached_schemas: None
) -> None:
    objs = objects(overlay)
    assert mf.of_kind(objs, "Deployment"), "an overlay without the controller"
    for obj in objs:
        where = f"{overlay}: {obj['kind']}/{obj['metadata']['name']}"
        if obj["kind"] in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{where} does not validate at {path}: {exc.message}")


def test_schema_validation_catches_a_misspelt_field(_cached_schemas: None) -> None:
    broken = dict(controller("dev"))
    broken["spec"] = {**broken["spec"], "replica": 2}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


@pytest.mark.skipif(render.kubectl() is None, reason="kubectl not on PATH")
@pytest.mark.parametrize("overlay", every_overlay())
def test_fallback_renderer_agrees_with_kubectl(overlay: str) -> None:
    assert render.canonical(render.render_fallback(overlay)) == render.canonical(objects(overlay))


@pytest.mark.parametrize("overlay", every_overlay())
def test_every_pod_runs_non_root_on_a_read_only_root(overlay: str) -> None:
    for workload in mf.workloads(objects(overlay)):
        name = workload["metadata"]["name"]
        pod = mf.pod_spec(workload)
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"].get("runAsUser", 0) != 0, name
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert pod.get("automountServiceAccountToken") is False, name
        for c in mf.containers(workload):
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, (name, c["name"])
            assert sc["readOnlyRootFilesystem"] is True, (name, c["name"])
            assert sc["capabilities"]["drop"] == ["ALL"], (name, c["name"])


@pytest.mark.parametrize("overlay", every_overlay())
def test_every_container_has_probes_requests_limits_and_a_pinned_image(overlay: str) -> None:
    for workload in mf.workloads(objects(overlay)):
        for c in mf.containers(workload):
            where = f"{overlay}: {workload['metadata']['name']}/{c['name']}"
            assert "livenessProbe" in c and "readinessProbe" in c, where
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c["resources"].get(kind, {})), (where, kind)
            image = c["image"]
            tag = image.rpartition("@")[2] if "@" in image else image.rpartition(":")[2]
            assert ":" in image and "/" not in tag, f"{where}: image {image} has no tag"
            assert tag != "latest", f"{where}: image {image} uses latest"


@pytest.mark.parametrize("overlay", every_overlay())
def test_controller_probes_health_and_readiness_on_its_api_port(overlay: str) -> None:
    c = mf.container(controller(overlay), "controller")
    port = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["readinessProbe"]["httpGet"]["port"] in ("http", port["http"])
    listen = c["args"][c["args"].index("--listen") + 1]
    assert listen == f"0.0.0.0:{port['http']}", "the API must listen where the probes look"
    scheme = c["readinessProbe"]["httpGet"].get("scheme", "HTTP")
    assert (scheme == "HTTPS") == ("--tls-cert" in c["args"]), "probe scheme vs API TLS"


FILE_FLAGS = ("--tokens", "--encryption-key-file", "--tls-cert", "--tls-key", "--client-ca")


@pytest.mark.parametrize("overlay", every_overlay())
def test_controller_secures_its_api_with_files_from_mounted_secrets(overlay: str) -> None:
    deployment = controller(overlay)
    c = mf.container(deployment, "controller")
    args = c["args"]
    assert "--tokens" in args and "--encryption-key-file" in args, "auth and sealing are on"
    volumes = {v["name"]: v for v in mf.pod_spec(deployment)["volumes"]}
    secret_mounts = [m["mountPath"] for m in c["volumeMounts"] if "secret" in volumes[m["name"]]]
    for flag in FILE_FLAGS:
        if flag in args:
            path = args[args.index(flag) + 1]
            assert any(path.startswith(m + "/") for m in secret_mounts), (flag, path)


@pytest.mark.parametrize("overlay", every_overlay())
def test_prometheus_annotations_point_at_the_api_port(overlay: str) -> None:
    deployment = controller(overlay)
    notes = deployment["spec"]["template"]["metadata"]["annotations"]
    c = mf.container(deployment, "controller")
    assert notes["prometheus.io/scrape"] == "true"
    assert notes["prometheus.io/path"] == "/metrics"
    assert int(notes["prometheus.io/port"]) in {p["containerPort"] for p in c["ports"]}


@pytest.mark.parametrize("overlay", every_overlay())
def test_services_select_pods_and_name_ports_they_have(overlay: str) -> None:
    objs = objects(overlay)
    for service in mf.of_kind(objs, "Service"):
        selector = {"matchLabels": service["spec"]["selector"]}
        chosen = [w for w in mf.workloads(objs) if mf.selects(selector, mf.pod_labels(w))]
        assert chosen, f"{overlay}: Service {service['metadata']['name']} selects no pods"
        names = {p.get("name") for w in chosen for c in mf.containers(w) for p in c["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in names, (service["metadata"]["name"], port)


@pytest.mark.parametrize("overlay", every_overlay())
def test_every_pod_is_covered_by_a_network_policy(overlay: str) -> None:
    objs = objects(overlay)
    policies = mf.of_kind(objs, "NetworkPolicy")
    for workload in mf.workloads(objs):
        labels = mf.pod_labels(workload)
        assert any(
            mf.selects(p["spec"]["podSelector"], labels)
            and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
            for p in policies
        ), f"{overlay}: no ingress+egress policy for {workload['metadata']['name']}"


@pytest.mark.parametrize("overlay", every_overlay())
def test_rbac_grants_nothing_cluster_wide_and_nothing_writable(overlay: str) -> None:
    objs = objects(overlay)
    assert not mf.of_kind(objs, "ClusterRole") and not mf.of_kind(objs, "ClusterRoleBinding")
    for role in mf.of_kind(objs, "Role"):
        for rule in role.get("rules") or []:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule
            assert "*" not in rule.get("resources", []) + rule["verbs"], rule
    account = mf.find(objs, "ServiceAccount", CONTROLLER)
    assert account["automountServiceAccountToken"] is False
    assert mf.pod_spec(controller(overlay))["serviceAccountName"] == CONTROLLER


def secrets_used(overlay: str) -> set[str]:
    names: set[str] = set()
    for workload in mf.workloads(objects(overlay)):
        for volume in mf.pod_spec(workload).get("volumes", []):
            if "secret" in volume:
                names.add(volume["secret"]["secretName"])
        for c in mf.containers(workload):
            for env in c.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    names.add(ref["name"])
    return names


@pytest.mark.parametrize("overlay", [pytest.param(o, id=f"{o} overlay") for o in PROD])
def test_prod_ships_no_secret_and_the_readme_says_how_to_make_each(overlay: str) -> None:
    assert not mf.of_kind(objects(overlay), "Secret"), "apply would overwrite real secrets"
    readme = README.read_text()
    for name in secrets_used(overlay):
        assert re.search(rf"create secret \S+ {re.escape(name)}\b", readme), name


def test_dev_secrets_are_placeholders_for_every_secret_the_pods_use() -> None:
    dev = objects("dev")
    shipped = {s["metadata"]["name"]: s for s in mf.of_kind(dev, "Secret")}
    assert set(shipped) == secrets_used("dev")
    for secret in shipped.values():
        values = " ".join(secret.get("stringData", {}).values())
        assert "PLACEHOLDER" in values or "REPLACE" in values, secret["metadata"]["name"]


@pytest.mark.parametrize("overlay", [pytest.param(o, id=f"{o} overlay") for o in PROD])
def test_prod_controller_is_highly_available(overlay: str) -> None:
    objs = objects(overlay)
    deployment = controller(overlay)
    assert deployment["spec"]["replicas"] == 3
    labels = mf.pod_labels(deployment)
    budgets = mf.of_kind(objs, "PodDisruptionBudget")
    mine = [p for p in budgets if mf.selects(p["spec"]["selector"], labels)]
    assert len(mine) == 1 and mine[0]["spec"]["minAvailable"] == 2
    anti = mf.pod_spec(deployment)["affinity"]["podAntiAffinity"]
    terms = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert any(
        t["topologyKey"] == "kubernetes.io/hostname" and mf.selects(t["labelSelector"], labels)
        for t in terms
    )
    env = {e["name"]: e for e in mf.container(deployment, "controller")["env"]}
    for name in ("FEDCTL_ETCD__CA_FILE", "FEDCTL_ETCD__CERT_FILE", "FEDCTL_ETCD__KEY_FILE"):
        assert env[name]["value"].startswith("/etc/fedctl/etcd-tls/"), name


def etcd_flags(statefulset: Obj) -> dict[str, str]:
    args = mf.container(statefulset, "etcd")["args"]
    return dict(a.removeprefix("--").partition("=")[::2] for a in args)


def test_prod_etcd_has_three_tls_members_with_volumes() -> None:
    objs = objects("prod")
    etcd = mf.find(objs, "StatefulSet", "etcd")
    assert etcd["spec"]["replicas"] == 3
    assert etcd["spec"]["podManagementPolicy"] == "Parallel"
    claims = etcd["spec"]["volumeClaimTemplates"]
    mounts = {m["name"] for m in mf.container(etcd, "etcd")["volumeMounts"]}
    assert [c["metadata"]["name"] for c in claims] == ["data"] and "data" in mounts
    flags = etcd_flags(etcd)
    members = flags["initial-cluster"].split(",")
    assert [m.partition("=")[0] for m in members] == ["etcd-0", "etcd-1", "etcd-2"]
    assert all(m.partition("=")[2].startswith("https://") for m in members)
    assert flags["client-cert-auth"] == flags["peer-client-cert-auth"] == "true"
    assert flags["listen-client-urls"].startswith("https://")
    for flag in ("trusted-ca-file", "cert-file", "key-file", "peer-cert-file", "peer-key-file"):
        assert flags[flag].startswith("/etc/etcd/tls/"), flag
    settings = mf.find(objs, "ConfigMap", "fedctl-settings")["data"]["FEDCTL_ETCD"].split(",")
    assert settings == [f"https://etcd-{i}.etcd.fedctl.svc:2379" for i in range(3)]
    budget = mf.find(objs, "PodDisruptionBudget", "etcd")
    assert budget["spec"]["minAvailable"] == 2


def test_external_etcd_variant_runs_no_etcd_and_reads_endpoints_from_a_secret() -> None:
    objs = objects("prod-external-etcd")
    assert not [w for w in mf.workloads(objs) if w["metadata"]["name"] == "etcd"]
    env = {
        e["name"]: e for e in mf.container(controller("prod-external-etcd"), "controller")["env"]
    }
    ref = env["FEDCTL_ETCD"]["valueFrom"]["secretKeyRef"]
    assert (ref["name"], ref["key"]) == ("fedctl-etcd-external", "endpoints")


@pytest.mark.parametrize("overlay", [pytest.param(o, id=f"{o} overlay") for o in PROD])
def test_service_monitor_scrapes_the_controller_service(overlay: str) -> None:
    objs = objects(overlay)
    monitor = mf.find(objs, "ServiceMonitor", CONTROLLER)
    service = mf.find(objs, "Service", "fedctl")
    assert mf.selects(monitor["spec"]["selector"], service["metadata"]["labels"])
    ports = {p["name"] for p in service["spec"]["ports"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in ports and endpoint["path"] == "/metrics"
    # /metrics needs a token of group metrics: the scrape sends one (deploy/README.md)
    credentials = endpoint["authorization"]["credentials"]
    assert (credentials["name"], credentials["key"]) == ("fedctl-metrics-token", "token")
    tls = "--tls-cert" in mf.container(controller(overlay), "controller")["args"]
    assert endpoint.get("scheme", "http") == ("https" if tls else "http")


def test_dockerfile_is_pinned_non_root_and_runs_the_controller() -> None:
    text = (render.DEPLOY / "Dockerfile").read_text()
    base = re.search(r"ARG PYTHON_IMAGE=(\S+)", text)
    assert base and re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base[1])
    user = mf.dockerfile_instruction("USER")[0].partition(":")[0]
    assert user.isdigit() and int(user) != 0
    assert "/healthz" in " ".join(mf.dockerfile_instruction("HEALTHCHECK"))
    assert mf.dockerfile_instruction("ENTRYPOINT") == ["fedctl", "controller"]
    pod_user = mf.pod_spec(controller("dev"))["securityContext"]["runAsUser"]
    assert pod_user == int(user), "the pod and the image should agree on the user"
