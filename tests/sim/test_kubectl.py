"""Golden tests: a real kubectl against one simulated cluster's API.

Skipped when no kubectl is on PATH. Each test writes its own kubeconfig and uses a private
HOME and `--cache-dir`, so discovery and OpenAPI caches never leak between runs. Tests that
need the workload controllers (`rollout status`, `wait --for=condition=Complete`) live with
the behaviour tests.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clusters.sim.clock import SimClock
from clusters.sim.resources import by_kind
from clusters.sim.server import ClusterInfo
from clusters.sim.store import ObjectStore
from tests.sim.conftest import NODES, node_object, serve

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")

DEPLOYMENTS = by_kind("apps/v1", "Deployment")

DEPLOYMENT_YAML = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: api
        image: {image}
        resources:
          requests: {{cpu: 100m}}
"""


@dataclass
class Kubectl:
    store: ObjectStore
    home: Path

    async def run(self, *args: str, check: bool = True) -> str:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "KUBECONFIG": str(self.home / "kubeconfig"),
        }
        proc = await asyncio.create_subprocess_exec(
            "kubectl",
            "--cache-dir",
            str(self.home / "cache"),
            *args,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(30):
            out, err = await proc.communicate()
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {err.decode()}"
        return out.decode() + ("" if check else err.decode())


@pytest.fixture
async def kubectl(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Kubectl]:
    """kubectl against a fresh cluster; indirect parametrization sets the reported minor."""
    minor = getattr(request, "param", "32")
    store = ObjectStore(clock=SimClock(speed=1.0))
    info = ClusterInfo(name="sim", git_version=f"v1.{minor}.0", minor=minor)
    runner, url = await serve(store, info=info)
    (tmp_path / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: sim\n  cluster: {{server: '{url}'}}\n"
        "contexts:\n- name: sim\n  context: {cluster: sim, user: sim}\n"
        "current-context: sim\nusers:\n- name: sim\n  user: {}\n"
    )
    try:
        yield Kubectl(store=store, home=tmp_path)
    finally:
        await runner.cleanup()


def _rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


async def test_get_nodes_shows_status_roles_and_version(kubectl: Kubectl) -> None:
    kubectl.store.create(NODES, node_object("gpu-1", gpus=4))
    kubectl.store.create(NODES, node_object("arm-1", arch="arm64", ready=False))
    rows = _rows(await kubectl.run("get", "nodes"))
    assert rows[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [r[:3] + r[4:] for r in rows[1:]] == [
        ["arm-1", "NotReady", "worker", "v1.32.0"],
        ["gpu-1", "Ready", "worker", "v1.32.0"],
    ]
    wide = await kubectl.run("get", "nodes", "-o", "wide", "-L", "kubernetes.io/arch")
    assert "INTERNAL-IP" in wide
    assert re.search(r"arm-1 .* arm64\s*$", wide, re.MULTILINE)


async def test_get_deployments_across_namespaces(kubectl: Kubectl) -> None:
    dep = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    created = kubectl.store.create(DEPLOYMENTS, dep)
    created["status"] = {
        "replicas": 2,
        "readyReplicas": 1,
        "updatedReplicas": 2,
        "availableReplicas": 1,
    }
    kubectl.store.update(DEPLOYMENTS, created, subresource="status")
    rows = _rows(await kubectl.run("get", "deploy", "-A"))
    assert rows[0] == ["NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[1][:5] == ["default", "web", "1/2", "2", "1"]


async def test_apply_three_times_creates_configures_then_leaves_unchanged(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT_YAML.format(replicas=2, image="nginx:1.26"))
    assert (await kubectl.run("apply", "-f", str(manifest))).strip() == (
        "deployment.apps/web created"
    )
    manifest.write_text(DEPLOYMENT_YAML.format(replicas=3, image="nginx:1.27"))
    assert (await kubectl.run("apply", "-f", str(manifest))).strip() == (
        "deployment.apps/web configured"
    )
    assert (await kubectl.run("apply", "-f", str(manifest))).strip() == (
        "deployment.apps/web unchanged"
    )
    stored = kubectl.store.get(DEPLOYMENTS, "default", "web")
    container = stored["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx:1.27"
    assert container["resources"] == {"requests": {"cpu": "100m"}}
    assert stored["spec"]["replicas"] == 3


async def test_server_side_apply_and_scale(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT_YAML.format(replicas=2, image="nginx:1.26"))
    out = await kubectl.run("apply", "--server-side", "-f", str(manifest))
    assert out.strip() == "deployment.apps/web serverside-applied"
    stored = kubectl.store.get(DEPLOYMENTS, "default", "web")
    assert [m["manager"] for m in stored["metadata"]["managedFields"]] == ["kubectl"]

    assert (await kubectl.run("scale", "deploy/web", "--replicas=5")).strip() == (
        "deployment.apps/web scaled"
    )
    assert kubectl.store.get(DEPLOYMENTS, "default", "web")["spec"]["replicas"] == 5

    conflict = await kubectl.run("apply", "--server-side", "-f", str(manifest), check=False)
    assert "Apply failed with 1 conflict" in conflict
    assert ".spec.replicas" in conflict
    await kubectl.run("apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert kubectl.store.get(DEPLOYMENTS, "default", "web")["spec"]["replicas"] == 2


async def test_describe_node_shows_gpus_under_capacity(kubectl: Kubectl) -> None:
    kubectl.store.create(NODES, node_object("gpu-1", gpus=8))
    out = await kubectl.run("describe", "node", "gpu-1")
    capacity = out.split("Capacity:")[1].split("Allocatable:")[0]
    assert re.search(r"nvidia\.com/gpu:\s+8", capacity)


async def test_delete_returns_once_the_object_is_gone(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT_YAML.format(replicas=1, image="nginx"))
    await kubectl.run("apply", "-f", str(manifest))
    assert (await kubectl.run("delete", "deploy", "web")).strip() == (
        'deployment.apps "web" deleted'
    )
    assert kubectl.store.try_get(DEPLOYMENTS, "default", "web") is None


async def test_api_resources_lists_every_kind(kubectl: Kubectl) -> None:
    out = await kubectl.run("api-resources", "-o", "name")
    assert set(out.split()) >= {
        "nodes",
        "pods",
        "deployments.apps",
        "jobs.batch",
        "resourcequotas",
        "jobs.batch.volcano.sh",
        "pytorchjobs.kubeflow.org",
    }


@pytest.mark.parametrize(
    ("kubectl", "flags"),
    [
        pytest.param("27", ["--validate=false"], id="1.27 needs validation off (no protobuf v2)"),
        pytest.param("29", [], id="1.29 validates through openapi v3"),
        pytest.param("31", [], id="1.31"),
        pytest.param("33", [], id="1.33"),
    ],
    indirect=["kubectl"],
)
async def test_apply_works_across_kubectl_versions(
    kubectl: Kubectl, tmp_path: Path, flags: list[str]
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT_YAML.format(replicas=1, image="nginx:1.26"))
    outputs = []
    for image in ("nginx:1.26", "nginx:1.27", "nginx:1.27"):
        manifest.write_text(DEPLOYMENT_YAML.format(replicas=1, image=image))
        outputs.append((await kubectl.run("apply", *flags, "-f", str(manifest))).strip())
    assert outputs == [
        "deployment.apps/web created",
        "deployment.apps/web configured",
        "deployment.apps/web unchanged",
    ]
    rows = _rows(await kubectl.run("get", "deploy"))
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]


PYTORCHJOB_YAML = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train
  namespace: default
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: {replicas}
"""


async def test_apply_and_get_an_opaque_custom_kind(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(PYTORCHJOB_YAML.format(replicas=2))
    assert (await kubectl.run("apply", "-f", str(manifest))).strip() == (
        "pytorchjob.kubeflow.org/train created"
    )
    manifest.write_text(PYTORCHJOB_YAML.format(replicas=4))
    assert (await kubectl.run("apply", "-f", str(manifest))).strip() == (
        "pytorchjob.kubeflow.org/train configured"
    )
    rows = _rows(await kubectl.run("get", "pytorchjobs"))
    assert rows[0] == ["NAME", "AGE"]
    assert rows[1][0] == "train"


async def test_apply_refuses_an_unknown_field_as_a_real_server_does(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    """kubectl validates on the server (`fieldValidation=Strict`) unless told otherwise."""
    manifest = tmp_path / "typo.yaml"
    typo = DEPLOYMENT_YAML.format(replicas=2, image="nginx").replace("replicas:", "replica:")
    manifest.write_text(typo)
    out = await kubectl.run("apply", "-f", str(manifest), check=False)
    assert (
        'Error from server (BadRequest): error when creating "' + str(manifest) + '": Deployment'
        ' in version "v1" cannot be handled as a Deployment: strict decoding error: unknown'
        ' field "spec.replica"'
    ) in out
    assert kubectl.store.try_get(DEPLOYMENTS, "default", "web") is None
    out = await kubectl.run("apply", "--validate=warn", "-f", str(manifest))
    assert out.strip() == "deployment.apps/web created"
    assert "replica" not in kubectl.store.get(DEPLOYMENTS, "default", "web")["spec"]


async def test_get_services_shows_type_cluster_ip_and_ports(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    manifest = tmp_path / "svc.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\n"
        "spec: {type: NodePort, selector: {app: web}, ports: [{port: 80, nodePort: 30080}]}\n"
    )
    assert (await kubectl.run("apply", "-f", str(manifest))).strip() == "service/web created"
    [header, row] = _rows(await kubectl.run("get", "svc"))
    assert header == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert row[:2] == ["web", "NodePort"]
    assert row[3:5] == ["<none>", "80:30080/TCP"]


async def test_delete_cascade_orphan_strips_the_owner_reference(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT_YAML.format(replicas=1, image="nginx"))
    await kubectl.run("apply", "-f", str(manifest))
    owner = kubectl.store.get(DEPLOYMENTS, "default", "web")["metadata"]
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": owner["uid"]}
    rs = {
        "metadata": {"name": "web-1", "namespace": "default", "ownerReferences": [ref]},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    replicasets = by_kind("apps/v1", "ReplicaSet")
    assert replicasets is not None
    kubectl.store.create(replicasets, rs)
    await kubectl.run("delete", "deploy", "web", "--cascade=orphan")
    kept = kubectl.store.get(replicasets, "default", "web-1")
    assert "ownerReferences" not in kept["metadata"]
