"""A pod starts only once what it reads from its namespace exists, as a kubelet sees it.

The simulator started every pod whatever it referenced: a Job whose `envFrom` ConfigMap
did not exist ran to Succeeded, so the failure propagating a workload's dependencies
prevents could not be seen on a simulated member.
"""

from __future__ import annotations

from typing import Any

import pytest

from clusters.sim.resources import by_kind
from tests.sim.behaviour_support import (
    DEPLOYMENT,
    JOB,
    POD,
    ManualCluster,
    cluster_profile,
    container,
    deployment_body,
    job_body,
    pod_body,
    pool,
)

CPU = cluster_profile("w", pool("cpu", count=1, cpu="16", memory="64Gi"))
CONFIGMAP = by_kind("v1", "ConfigMap")
SECRET = by_kind("v1", "Secret")
SERVICEACCOUNT = by_kind("v1", "ServiceAccount")
CLAIM = by_kind("v1", "PersistentVolumeClaim")


def _obj(kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "default"}}


def _claim(name: str) -> dict[str, Any]:
    return {
        **_obj("PersistentVolumeClaim", name),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def _with_env(c: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**c, **fields}


def _waiting(pod: dict[str, Any]) -> tuple[str, str, str]:
    """(phase, waiting reason, message) of a pod's first container."""
    status = pod.get("status") or {}
    waiting = ((status.get("containerStatuses") or [{}])[0].get("state") or {}).get("waiting", {})
    return status.get("phase", ""), waiting.get("reason", ""), waiting.get("message", "")


@pytest.mark.parametrize(
    ("spec", "needs", "reason", "message", "event"),
    [
        pytest.param(
            {"containers": [_with_env(container(), envFrom=[{"configMapRef": {"name": "cfg"}}])]},
            (CONFIGMAP, _obj("ConfigMap", "cfg")),
            "CreateContainerConfigError",
            'configmap "cfg" not found',
            "Failed",
            id="an envFrom ConfigMap: CreateContainerConfigError",
        ),
        pytest.param(
            {
                "containers": [container()],
                "initContainers": [
                    _with_env(
                        container("init"),
                        env=[
                            {
                                "name": "PW",
                                "valueFrom": {"secretKeyRef": {"name": "creds", "key": "pw"}},
                            }
                        ],
                    )
                ],
            },
            (SECRET, _obj("Secret", "creds")),
            "CreateContainerConfigError",
            'secret "creds" not found',
            "Failed",
            id="an init container's env Secret",
        ),
        pytest.param(
            {
                "containers": [container()],
                "volumes": [{"name": "tls", "secret": {"secretName": "tls"}}],
            },
            (SECRET, _obj("Secret", "tls")),
            "ContainerCreating",
            'volume "tls": secret "tls" not found',
            "FailedMount",
            id="a Secret volume: ContainerCreating, FailedMount",
        ),
        pytest.param(
            {
                "containers": [container()],
                "volumes": [
                    {"name": "all", "projected": {"sources": [{"configMap": {"name": "p"}}]}}
                ],
            },
            (CONFIGMAP, _obj("ConfigMap", "p")),
            "ContainerCreating",
            'volume "all": configmap "p" not found',
            "FailedMount",
            id="a projected ConfigMap",
        ),
        pytest.param(
            {"containers": [container()], "serviceAccountName": "api-sa"},
            (SERVICEACCOUNT, _obj("ServiceAccount", "api-sa")),
            "CreateContainerConfigError",
            'serviceaccount "api-sa" not found',
            "Failed",
            id="its ServiceAccount",
        ),
    ],
)
async def test_a_pod_waits_not_ready_for_what_it_reads_and_starts_once_it_exists(
    spec: dict[str, Any],
    needs: tuple[Any, dict[str, Any]],
    reason: str,
    message: str,
    event: str,
) -> None:
    async with ManualCluster(CPU) as sim:
        sim.store.create(POD, {**pod_body("p"), "spec": spec})
        await sim.advance(10)
        pod = sim.get(POD, "p")
        assert _waiting(pod) == ("Pending", reason, message)
        ready = {c["type"]: c for c in pod["status"]["conditions"]}["Ready"]
        assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")
        (said,) = sim.events(event)
        assert message.rsplit(": ", maxsplit=1)[-1] in said["message"]
        assert said["type"] == "Warning"

        sim.store.create(*needs)
        await sim.settle()
        pod = sim.get(POD, "p")
        assert pod["status"]["phase"] == "Running"
        assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
        assert len(sim.events(event)) == 1, "said once, not on every retry"


async def test_optional_references_and_the_default_service_account_never_hold_a_pod() -> None:
    optional = _with_env(
        container(),
        envFrom=[{"configMapRef": {"name": "maybe", "optional": True}}],
        env=[
            {
                "name": "X",
                "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}},
            }
        ],
    )
    spec = {
        "containers": [optional],
        "serviceAccountName": "default",
        "volumes": [{"name": "v", "configMap": {"name": "maybe", "optional": True}}],
    }
    async with ManualCluster(CPU) as sim:
        sim.store.create(POD, {**pod_body("p"), "spec": spec})
        await sim.advance(3)
        assert sim.get(POD, "p")["status"]["phase"] == "Running"


async def test_a_job_whose_config_map_is_missing_does_not_run_until_it_exists() -> None:
    """The tester's case: a Job with a non-optional `envFrom` ConfigMap ran to Succeeded
    before the ConfigMap was ever created."""
    body = job_body("migrate", duration="5s")
    pod_spec = body["spec"]["template"]["spec"]
    pod_spec["containers"] = [
        _with_env(c, envFrom=[{"configMapRef": {"name": "late-cm"}}])
        for c in pod_spec["containers"]
    ]
    async with ManualCluster(CPU) as sim:
        sim.store.create(JOB, body)
        await sim.advance(30, step=5)
        job = sim.get(JOB, "migrate")
        assert job["status"].get("succeeded", 0) == 0
        assert job["status"].get("ready", 0) == 0
        sim.store.create(CONFIGMAP, _obj("ConfigMap", "late-cm"))
        await sim.advance(10, step=5)
        assert sim.get(JOB, "migrate")["status"]["succeeded"] == 1


async def test_a_pod_whose_claim_is_missing_is_unschedulable_until_the_claim_exists() -> None:
    """As the scheduler's volume binding says; a claim is Bound as it is created, since
    the simulator has no volumes to wait for."""
    body = deployment_body("db", 1)
    body["spec"]["template"]["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "db-data"}}
    ]
    async with ManualCluster(CPU) as sim:
        sim.store.create(DEPLOYMENT, body)
        await sim.advance(5)
        items, _ = sim.store.list(POD, "default")
        (pod,) = items
        assert not pod["spec"].get("nodeName")
        scheduled = {c["type"]: c for c in pod["status"]["conditions"]}["PodScheduled"]
        assert scheduled["reason"] == "Unschedulable"
        assert scheduled["message"] == 'persistentvolumeclaim "db-data" not found'

        claim = sim.store.create(CLAIM, _claim("db-data"))
        assert claim["status"] == {
            "phase": "Bound",
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Gi"},
        }
        await sim.advance(3)
        assert sim.get(DEPLOYMENT, "db")["status"]["availableReplicas"] == 1
