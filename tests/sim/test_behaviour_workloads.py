"""Workload controllers and the kubelet stand-in move objects through their real lifecycles."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.sim.behaviour_support import (
    DEPLOYMENT,
    JOB,
    POD,
    PYTORCHJOB,
    REPLICASET,
    STATEFULSET,
    VCJOB,
    ManualCluster,
    api_client,
    cluster_profile,
    container,
    deployment_body,
    eventually,
    job_body,
    pool,
    running_cluster,
)

CPU = cluster_profile("w", pool("cpu", count=3, cpu="16", memory="64Gi"))


def _conds(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", ())}


def _pods(sim: ManualCluster, **labels: str) -> list[dict[str, Any]]:
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    items, _ = sim.store.list(POD, "default", label_selector=selector)
    return items


async def test_deployment_becomes_available_after_the_pod_start_delay() -> None:
    async with ManualCluster(CPU) as sim:
        sim.store.create(DEPLOYMENT, deployment_body("web", 3))
        await sim.settle()
        dep = sim.get(DEPLOYMENT, "web")
        assert dep["status"]["replicas"] == 3
        assert dep["status"]["availableReplicas"] == 0
        assert _conds(dep)["Available"]["status"] == "False"
        await sim.advance(2)  # the default start-up delay
        dep = sim.get(DEPLOYMENT, "web")
        assert {
            k: dep["status"][k]
            for k in (
                "observedGeneration",
                "replicas",
                "updatedReplicas",
                "readyReplicas",
                "availableReplicas",
            )
        } == {
            "observedGeneration": 1,
            "replicas": 3,
            "updatedReplicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
        }
        assert _conds(dep)["Available"]["reason"] == "MinimumReplicasAvailable"
        assert _conds(dep)["Progressing"]["reason"] == "NewReplicaSetAvailable"
        [rs] = sim.store.list(REPLICASET, "default")[0]
        hash_label = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{hash_label}"
        for pod in _pods(sim, app="web"):
            assert pod["metadata"]["labels"]["pod-template-hash"] == hash_label
            assert pod["status"]["phase"] == "Running"
            assert pod["status"]["containerStatuses"][0]["ready"] is True


async def test_template_change_rolls_to_a_new_replicaset_within_surge_limits() -> None:
    async with ManualCluster(CPU) as sim:
        sim.store.create(DEPLOYMENT, deployment_body("web", 4))
        await sim.advance(3)
        dep = sim.get(DEPLOYMENT, "web")
        dep["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
        sim.store.update(DEPLOYMENT, dep)
        await sim.settle()
        # maxSurge 25% of 4 = 1 extra pod at most while rolling.
        assert len([p for p in _pods(sim, app="web")]) <= 5
        await sim.advance(20)
        dep = sim.get(DEPLOYMENT, "web")
        assert dep["metadata"]["generation"] == 2
        assert dep["status"]["observedGeneration"] == 2
        assert dep["status"]["updatedReplicas"] == dep["status"]["availableReplicas"] == 4
        assert dep["status"]["replicas"] == 4
        images = {p["spec"]["containers"][0]["image"] for p in _pods(sim, app="web")}
        assert images == {"nginx:1.28"}
        replicasets = sim.store.list(REPLICASET, "default")[0]
        assert sorted(r["spec"]["replicas"] for r in replicasets) == [0, 4]


async def test_scale_down_removes_pods() -> None:
    async with ManualCluster(CPU) as sim:
        sim.store.create(DEPLOYMENT, deployment_body("web", 5))
        await sim.advance(3)
        dep = sim.get(DEPLOYMENT, "web")
        dep["spec"]["replicas"] = 2
        sim.store.update(DEPLOYMENT, dep)
        await sim.advance(1)
        assert len(_pods(sim, app="web")) == 2
        assert sim.get(DEPLOYMENT, "web")["status"]["availableReplicas"] == 2


@pytest.mark.parametrize(
    ("body", "after", "expected"),
    [
        pytest.param(
            job_body("j", completions=3, parallelism=2, duration="30s"),
            100,
            {"succeeded": 3, "failed": 0, "active": 0, "condition": "Complete"},
            id="three completions, two at a time",
        ),
        pytest.param(
            job_body("j", duration="30s", fail=True, backoff_limit=2),
            200,
            {"succeeded": 0, "failed": 3, "active": 0, "condition": "Failed"},
            id="failing pods exhaust backoffLimit 2 after three failures",
        ),
    ],
)
async def test_job_runs_to_completion_or_failure_on_the_fake_clock(
    body: dict[str, Any], after: float, expected: dict[str, Any]
) -> None:
    async with ManualCluster(CPU) as sim:
        sim.store.create(JOB, body)
        await sim.advance(10)
        job = sim.get(JOB, "j")
        assert job["status"]["active"] >= 1
        assert "completionTime" not in job["status"]
        await sim.advance(after, step=5)
        job = sim.get(JOB, "j")
        status = job["status"]
        assert {k: status[k] for k in ("succeeded", "failed", "active")} == {
            k: expected[k] for k in ("succeeded", "failed", "active")
        }
        assert _conds(job)[expected["condition"]]["status"] == "True"
        assert status["startTime"]
        if expected["condition"] == "Complete":
            assert status["completionTime"]
            assert _conds(job)["SuccessCriteriaMet"]["status"] == "True"
        else:
            assert _conds(job)["Failed"]["reason"] == "BackoffLimitExceeded"


async def test_job_duration_is_taken_from_the_annotation() -> None:
    async with ManualCluster(CPU) as sim:
        sim.store.create(JOB, job_body("j", duration="2m"))
        await sim.advance(100, step=10)
        assert sim.get(JOB, "j")["status"]["succeeded"] == 0
        await sim.advance(30, step=10)
        assert sim.get(JOB, "j")["status"]["succeeded"] == 1


async def test_a_finished_job_with_a_ttl_is_deleted_that_long_after_with_its_pods() -> None:
    """The TTL-after-finished controller: the Job and its pods go `ttlSecondsAfterFinished`
    after it finished; a Job without one stays."""
    async with ManualCluster(CPU) as sim:
        timed = job_body("timed", duration="30s")
        timed["spec"]["ttlSecondsAfterFinished"] = 60
        sim.store.create(JOB, timed)
        sim.store.create(JOB, job_body("kept", duration="30s"))
        await sim.advance(40, step=5)
        assert sim.get(JOB, "timed")["status"]["succeeded"] == 1
        assert _pods(sim, **{"job-name": "timed"})
        await sim.advance(30, step=5)
        assert sim.store.try_get(JOB, "default", "timed") is not None
        await sim.advance(40, step=5)
        assert sim.store.try_get(JOB, "default", "timed") is None
        assert not _pods(sim, **{"job-name": "timed"})
        assert sim.get(JOB, "kept")["status"]["succeeded"] == 1


async def test_a_job_active_past_its_deadline_fails_with_deadline_exceeded() -> None:
    """Kubernetes' job controller fails a Job active longer than `activeDeadlineSeconds`
    (its pods deleted, FailureTarget and Failed with reason DeadlineExceeded), even while
    no pod changes; the members ran such a Job for its pods' full 120s and reported it
    Complete. A Job whose pods finish within its deadline completes."""
    async with ManualCluster(CPU) as sim:
        late = job_body("late", completions=2, parallelism=2, duration="120s")
        late["spec"]["activeDeadlineSeconds"] = 15
        prompt = job_body("prompt", duration="10s")
        prompt["spec"]["activeDeadlineSeconds"] = 60
        sim.store.create(JOB, late)
        sim.store.create(JOB, prompt)
        await sim.advance(10, step=5)
        assert sim.get(JOB, "late")["status"]["active"] == 2
        await sim.advance(10, step=5)
        job = sim.get(JOB, "late")
        for ctype in ("FailureTarget", "Failed"):
            cond = _conds(job)[ctype]
            assert (cond["status"], cond["reason"]) == ("True", "DeadlineExceeded")
            assert cond["message"] == "Job was active longer than specified deadline"
        assert job["status"]["active"] == 0
        assert "completionTime" not in job["status"]
        assert not [
            p for p in _pods(sim, **{"job-name": "late"}) if p["status"]["phase"] == "Running"
        ]
        await sim.advance(120, step=10)
        assert "Complete" not in _conds(sim.get(JOB, "late"))
        assert _conds(sim.get(JOB, "prompt"))["Complete"]["status"] == "True"
        assert "Failed" not in _conds(sim.get(JOB, "prompt"))


async def test_statefulset_creates_ordinal_pods_in_order() -> None:
    body = deployment_body("db", 3)
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = "db"
    async with ManualCluster(CPU) as sim:
        sim.store.create(STATEFULSET, body)
        await sim.settle()
        assert [p["metadata"]["name"] for p in _pods(sim, app="db")] == ["db-0"]
        await sim.advance(10)
        assert [p["metadata"]["name"] for p in _pods(sim, app="db")] == ["db-0", "db-1", "db-2"]
        status = sim.get(STATEFULSET, "db")["status"]
        assert (status["replicas"], status["readyReplicas"]) == (3, 3)
        assert status["currentRevision"] == status["updateRevision"]


def _pytorchjob(template: dict[str, Any], *, masters: int, workers: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "pt", "namespace": "default"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": masters, "template": template},
                "Worker": {"replicas": workers, "template": template},
            }
        },
    }


async def test_volcano_job_and_pytorchjob_get_pods_and_a_phase() -> None:
    template = {
        "metadata": {"annotations": {"sim.fedctl.io/duration": "20s"}},
        "spec": {"restartPolicy": "Never", "containers": [container()]},
    }
    vcjob = {
        "metadata": {"name": "vc", "namespace": "default"},
        "spec": {
            "minAvailable": 3,
            "schedulerName": "volcano",
            "tasks": [
                {"name": "master", "replicas": 1, "template": template},
                {"name": "worker", "replicas": 2, "template": template},
            ],
        },
    }
    ptjob = _pytorchjob(template, masters=1, workers=2)
    async with ManualCluster(CPU) as sim:
        sim.store.create(VCJOB, vcjob)
        sim.store.create(PYTORCHJOB, ptjob)
        await sim.settle()
        assert sim.get(VCJOB, "vc")["status"]["state"]["phase"] == "Pending"
        assert sorted(p["metadata"]["name"] for p in _pods(sim)) == [
            "pt-master-0",
            "pt-worker-0",
            "pt-worker-1",
            "vc-master-0",
            "vc-worker-0",
            "vc-worker-1",
        ]
        await sim.advance(5)
        assert sim.get(VCJOB, "vc")["status"]["state"]["phase"] == "Running"
        assert _conds(sim.get(PYTORCHJOB, "pt"))["Running"]["status"] == "True"
        await sim.advance(30)
        vc = sim.get(VCJOB, "vc")["status"]
        assert (vc["state"]["phase"], vc["succeeded"]) == ("Completed", 3)
        pt = sim.get(PYTORCHJOB, "pt")["status"]
        assert _conds({"status": pt})["Succeeded"]["status"] == "True"
        assert pt["replicaStatuses"]["Master"] == {"active": 0, "succeeded": 1, "failed": 0}


async def test_a_pytorchjob_with_no_master_pod_succeeds_when_its_workers_do() -> None:
    """A copy with `Master: replicas: 0` has no master to wait for: it read Succeeded at
    once while its workers still ran. Without a master pod its workers decide."""
    template = {
        "metadata": {"annotations": {"sim.fedctl.io/duration": "20s"}},
        "spec": {"restartPolicy": "Never", "containers": [container()]},
    }
    ptjob = _pytorchjob(template, masters=0, workers=2)
    async with ManualCluster(CPU) as sim:
        sim.store.create(PYTORCHJOB, ptjob)
        await sim.settle()
        await sim.advance(5)
        running = _conds(sim.get(PYTORCHJOB, "pt"))
        assert "Succeeded" not in running and running["Running"]["status"] == "True"
        await sim.advance(30)
        pt = sim.get(PYTORCHJOB, "pt")["status"]
        assert _conds({"status": pt})["Succeeded"]["status"] == "True"
        assert pt["replicaStatuses"]["Worker"] == {"active": 0, "succeeded": 2, "failed": 0}


async def test_deployment_gets_ready_over_http() -> None:
    async with running_cluster(CPU) as member, api_client(member.url) as api:
        apps = client.AppsV1Api(api)
        await apps.create_namespaced_deployment("default", deployment_body("web", 2))

        async def ready() -> Any:
            dep = await apps.read_namespaced_deployment("web", "default")
            return dep if dep.status.available_replicas == 2 else None

        dep = await eventually(ready)
        assert dep.status.ready_replicas == 2
        assert dep.status.observed_generation == dep.metadata.generation
        pods = await client.CoreV1Api(api).list_namespaced_pod("default", label_selector="app=web")
        assert all(p.status.phase == "Running" and p.status.pod_ip for p in pods.items)


async def test_stuck_rollout_reports_progress_deadline_exceeded() -> None:
    async with ManualCluster(CPU) as sim:
        body = deployment_body("big", 2, container(requests={"cpu": "64"}))
        body["spec"]["progressDeadlineSeconds"] = 120
        sim.store.create(DEPLOYMENT, body)
        await sim.advance(60, step=10)
        assert _conds(sim.get(DEPLOYMENT, "big"))["Progressing"]["status"] == "True"
        await sim.advance(90, step=10)
        progressing = _conds(sim.get(DEPLOYMENT, "big"))["Progressing"]
        assert (progressing["status"], progressing["reason"]) == (
            "False",
            "ProgressDeadlineExceeded",
        )
        assert progressing["message"].endswith("has timed out progressing.")


async def test_statefulset_template_change_replaces_pods_from_the_top() -> None:
    body = deployment_body("db", 2)
    body["kind"] = "StatefulSet"
    async with ManualCluster(CPU) as sim:
        sim.store.create(STATEFULSET, body)
        await sim.advance(10)
        sts = sim.get(STATEFULSET, "db")
        sts["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
        sim.store.update(STATEFULSET, sts)
        await sim.settle()
        assert [p["metadata"]["name"] for p in _pods(sim, app="db")] == ["db-0", "db-1"]
        images = {
            p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in _pods(sim, app="db")
        }
        assert images == {"db-0": "nginx:1.27", "db-1": "nginx:1.28"}
        await sim.advance(10)
        status = sim.get(STATEFULSET, "db")["status"]
        assert status["updatedReplicas"] == 2
        assert status["currentRevision"] == status["updateRevision"]
