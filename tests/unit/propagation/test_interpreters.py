"""Resource interpreters: replicas in and out, health from status, aggregation across members."""

from __future__ import annotations

from typing import Any

import pytest

from federation.propagation import interpreter
from federation.propagation.interpreter import base, generic
from policies.models.work import Observed


def obj(
    api_version: str,
    kind: str,
    spec: dict[str, Any],
    status: dict[str, Any] | None = None,
    generation: int = 1,
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x", "namespace": "n", "generation": generation},
        "spec": spec,
        "status": status or {},
    }


def deploy(status: dict[str, Any], replicas: int = 4, generation: int = 1) -> dict[str, Any]:
    return obj("apps/v1", "Deployment", {"replicas": replicas}, status, generation)


OBSERVED = [
    pytest.param(
        deploy({"readyReplicas": 4, "updatedReplicas": 4, "observedGeneration": 1}),
        {"health": "Healthy", "replicas": 4, "ready_replicas": 4},
        id="deployment with every replica ready and updated is healthy",
    ),
    pytest.param(
        deploy({"readyReplicas": 2, "updatedReplicas": 4, "observedGeneration": 1}),
        {"health": "Progressing", "ready_replicas": 2, "message": "2/4 ready"},
        id="deployment with half its replicas ready is progressing",
    ),
    pytest.param(
        deploy({"readyReplicas": 4, "updatedReplicas": 4, "observedGeneration": 1}, generation=2),
        {"health": "Progressing"},
        id="deployment whose new generation is not observed yet is progressing",
    ),
    pytest.param(
        deploy(
            {
                "readyReplicas": 1,
                "conditions": [
                    {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
                ],
            }
        ),
        {"health": "Unhealthy", "message": "ProgressDeadlineExceeded"},
        id="deployment past its progress deadline is unhealthy",
    ),
    pytest.param(
        obj(
            "apps/v1",
            "StatefulSet",
            {"replicas": 3},
            {"readyReplicas": 3, "updatedReplicas": 3, "observedGeneration": 1},
        ),
        {"health": "Healthy", "ready_replicas": 3},
        id="statefulset with all replicas ready is healthy",
    ),
    pytest.param(
        obj(
            "apps/v1", "ReplicaSet", {"replicas": 2}, {"readyReplicas": 2, "observedGeneration": 1}
        ),
        {"health": "Healthy"},
        id="replicaset is healthy on ready replicas alone",
    ),
    pytest.param(
        obj("batch/v1", "Job", {"parallelism": 2}, {"active": 2}),
        {"health": "Progressing", "phase": "Running", "running": 2},
        id="job with active pods is running",
    ),
    pytest.param(
        obj(
            "batch/v1",
            "Job",
            {"parallelism": 2},
            {"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]},
        ),
        {"health": "Completed", "phase": "Succeeded", "succeeded": 2},
        id="job with Complete=True has succeeded",
    ),
    pytest.param(
        obj(
            "batch/v1",
            "Job",
            {"parallelism": 2},
            {
                "failed": 3,
                "conditions": [
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
                ],
            },
        ),
        {"health": "Failed", "phase": "Failed", "failed": 3, "message": "BackoffLimitExceeded"},
        id="job past its backoff limit has failed and says why",
    ),
    pytest.param(
        obj(
            "batch.volcano.sh/v1alpha1",
            "Job",
            {"tasks": [{"replicas": 2}, {"replicas": 1}]},
            {"state": {"phase": "Running"}, "running": 3},
        ),
        {"health": "Progressing", "phase": "Running", "running": 3, "replicas": 3},
        id="volcano job in phase Running counts its running pods",
    ),
    pytest.param(
        obj(
            "batch.volcano.sh/v1alpha1",
            "Job",
            {"tasks": [{"replicas": 1}]},
            {"state": {"phase": "Aborted"}},
        ),
        {"health": "Failed", "phase": "Failed"},
        id="an aborted volcano job counts as failed",
    ),
    pytest.param(
        obj(
            "kubeflow.org/v1",
            "PyTorchJob",
            {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 3}}},
            {
                "conditions": [{"type": "Succeeded", "status": "True"}],
                "replicaStatuses": {"Master": {"succeeded": 1}, "Worker": {"succeeded": 3}},
            },
        ),
        {"health": "Completed", "phase": "Succeeded", "succeeded": 4, "replicas": 4},
        id="pytorchjob with Succeeded=True has succeeded with every replica type counted",
    ),
    pytest.param(
        obj(
            "v1",
            "Pod",
            {},
            {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        ),
        {"health": "Healthy", "phase": "Running", "ready_replicas": 1},
        id="a ready running pod is healthy",
    ),
    pytest.param(
        obj("v1", "ConfigMap", {}),
        {"health": "Healthy"},
        id="an object without conditions is healthy once it exists",
    ),
    pytest.param(
        obj(
            "example.io/v1",
            "Widget",
            {},
            {"conditions": [{"type": "Ready", "status": "False", "message": "no backend"}]},
        ),
        {"health": "Unhealthy", "message": "no backend"},
        id="an unknown kind with Ready=False is unhealthy",
    ),
]


@pytest.mark.parametrize(("member_obj", "expected"), OBSERVED)
def test_observe(member_obj: dict[str, Any], expected: dict[str, Any]) -> None:
    seen = interpreter.for_kind(member_obj["apiVersion"], member_obj["kind"]).observe(member_obj)
    assert {k: getattr(seen, k) for k in expected} == expected


SHARES = [
    pytest.param(
        obj(
            "batch.volcano.sh/v1alpha1",
            "Job",
            {"minAvailable": 6, "tasks": [{"replicas": 4}, {"replicas": 2}]},
        ),
        3,
        lambda o: (
            [t["replicas"] for t in o["spec"]["tasks"]] == [2, 1] and o["spec"]["minAvailable"] == 3
        ),
        id="half a volcano job halves each task and caps the gang size",
    ),
    pytest.param(
        obj(
            "batch.volcano.sh/v1alpha1",
            "Job",
            {"minAvailable": 4, "tasks": [{"replicas": 4, "minAvailable": 4}]},
        ),
        2,
        lambda o: (
            (o["spec"]["minAvailable"], o["spec"]["tasks"][0]["replicas"])
            == (2, o["spec"]["tasks"][0]["minAvailable"])
        ),
        id="half a volcano gang caps its task's gang size too (Volcano refuses one above"
        " the task's replicas)",
    ),
    pytest.param(
        obj(
            "batch.volcano.sh/v1alpha1",
            "Job",
            {"tasks": [{"replicas": 4, "minAvailable": 1}, {"replicas": 4}]},
        ),
        4,
        lambda o: [t.get("minAvailable") for t in o["spec"]["tasks"]] == [1, None],
        id="a task gang size within the share, or none, is left as written",
    ),
    pytest.param(
        obj(
            "kubeflow.org/v1",
            "PyTorchJob",
            {
                "runPolicy": {"schedulingPolicy": {"minAvailable": 4}},
                "pytorchReplicaSpecs": {"Worker": {"replicas": 4}},
            },
        ),
        2,
        lambda o: (
            (
                o["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"],
                o["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"],
            )
            == (2, 2)
        ),
        id="half a pytorchjob gang caps its pod group's minAvailable at the share",
    ),
    pytest.param(
        obj(
            "kubeflow.org/v1",
            "PyTorchJob",
            {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 4}}},
        ),
        5,
        lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 4,
        id="a whole pytorchjob share is left as written",
    ),
    pytest.param(
        obj(
            "kubeflow.org/v1",
            "PyTorchJob",
            {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 16}}},
        ),
        5,
        lambda o: [s["replicas"] for s in o["spec"]["pytorchReplicaSpecs"].values()] == [1, 4],
        id="a pytorchjob kept at fewer pods than it asks keeps its master",
    ),
    pytest.param(
        obj(
            "batch.volcano.sh/v1alpha1",
            "Job",
            {"tasks": [{"replicas": 1}, {"replicas": 1}, {"replicas": 30}]},
        ),
        4,
        lambda o: [t["replicas"] for t in o["spec"]["tasks"]] == [1, 1, 2],
        id="a volcano job kept at fewer pods keeps a pod in every task",
    ),
    pytest.param(
        obj("v1", "Pod", {"containers": []}),
        1,
        lambda o: "replicas" not in o["spec"],
        id="a pod is never divided",
    ),
]


@pytest.mark.parametrize(("template", "replicas", "check"), SHARES)
def test_with_replicas(template: dict[str, Any], replicas: int, check: Any) -> None:
    plugin = interpreter.for_kind(template["apiVersion"], template["kind"])
    total = plugin.replicas(template) or 1
    assert check(plugin.with_replicas(template, replicas=replicas, total=total))


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        pytest.param(["Succeeded", "Succeeded"], "Succeeded", id="every share done: succeeded"),
        pytest.param(["Succeeded", "Running"], "Running", id="one share still running: running"),
        pytest.param(["Running", "Failed"], "Failed", id="any share failed: failed"),
        pytest.param(["Pending", "Pending"], "Pending", id="nothing started: pending"),
    ],
)
def test_job_shares_aggregate(phases: list[str], expected: str) -> None:
    parts = [Observed(phase=p, health="Progressing") for p in phases]
    assert base.aggregate_jobs(parts).phase == expected


def test_replicated_aggregate_sums_and_is_only_healthy_when_every_member_is() -> None:
    parts = [
        Observed(health="Healthy", replicas=4, ready_replicas=4),
        Observed(health="Progressing", replicas=2, ready_replicas=1),
    ]
    total = base.aggregate_replicated(parts)
    assert (total.health, total.replicas, total.ready_replicas) == ("Progressing", 6, 5)


def test_every_workload_kind_has_its_own_plugin_and_others_fall_back_to_generic() -> None:
    assert set(interpreter.known_kinds()) == {
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "ReplicaSet"),
        ("batch/v1", "Job"),
        ("batch.volcano.sh/v1alpha1", "Job"),
        ("kubeflow.org/v1", "PyTorchJob"),
        ("v1", "Pod"),
    }
    assert isinstance(interpreter.for_kind("v1", "ConfigMap"), generic.Generic)


def test_a_second_plugin_for_a_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="two interpreters"):
        interpreter.Registry(
            [interpreter.deployment.Deployment(), interpreter.deployment.Deployment()],
            fallback=generic.Generic(),
        )


def test_per_pod_requests_count_init_containers_and_overhead() -> None:
    template = obj(
        "apps/v1",
        "Deployment",
        {
            "replicas": 2,
            "template": {
                "spec": {
                    "overhead": {"cpu": "100m"},
                    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
                }
            },
        },
    )
    assert base.pod_requests(template).amount("cpu") == 2100


def _job_copy(status: dict[str, Any], completions: int = 2) -> dict[str, Any]:
    return obj("batch/v1", "Job", {"parallelism": 2, "completions": completions}, status)


START_A, START_B = "2026-01-01T10:00:00Z", "2026-01-01T10:05:00Z"
DONE_A, DONE_B = "2026-01-01T10:20:00Z", "2026-01-01T10:30:00Z"


def _complete(start: str, done: str) -> dict[str, Any]:
    return {
        "succeeded": 2,
        "startTime": start,
        "completionTime": done,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
            {
                "type": "Complete",
                "status": "True",
                "reason": "CompletionsReached",
                "message": "Reached expected number of succeeded pods",
                "lastTransitionTime": done,
            },
        ],
    }


def _aggregated(*members: dict[str, Any]) -> Observed:
    plugin = interpreter.for_kind(members[0]["apiVersion"], members[0]["kind"])
    return plugin.aggregate([plugin.observe(m) for m in members])


def test_a_divided_job_aggregates_kubernetes_job_status_as_karmada_does() -> None:
    """Karmada's default interpreter puts a Job's active, succeeded and failed counts, the
    earliest startTime, the latest completionTime once every copy completed, and a
    Complete or Failed condition onto the template; fedctl kept only its own counts, so
    `.status.succeeded` and `kubectl wait --for=condition=Complete` had nothing to read."""
    running = _aggregated(
        _job_copy(_complete(START_B, DONE_B)),
        _job_copy({"active": 2, "succeeded": 1, "startTime": START_A}),
    )
    assert (running.running, running.succeeded, running.failed) == (2, 3, 0)
    assert running.start_time is not None and running.start_time.isoformat() == (
        "2026-01-01T10:00:00+00:00"
    )
    assert running.completion_time is None  # one copy still runs
    assert running.conditions == []

    done = _aggregated(_job_copy(_complete(START_B, DONE_B)), _job_copy(_complete(START_A, DONE_A)))
    assert done.completion_time is not None and done.completion_time.isoformat() == (
        "2026-01-01T10:30:00+00:00"
    )
    [complete] = done.conditions
    assert (complete.type, complete.status, complete.reason) == (
        "Complete",
        "True",
        "CompletionsReached",
    )
    assert complete.last_transition_time == done.completion_time


@pytest.mark.parametrize(
    ("reasons", "reason"),
    [
        pytest.param(["BackoffLimitExceeded"], "BackoffLimitExceeded", id="past its backoff"),
        pytest.param(["DeadlineExceeded"], "DeadlineExceeded", id="past its deadline"),
        pytest.param(
            ["DeadlineExceeded", "BackoffLimitExceeded"],
            "JobFailed",
            id="failed for different reasons in two members: Karmada's JobFailed",
        ),
    ],
)
def test_a_failed_job_copy_gives_the_template_a_failed_condition_with_its_reason(
    reasons: list[str], reason: str
) -> None:
    members = [
        _job_copy(
            {
                "failed": 2,
                "startTime": START_A,
                "conditions": [
                    {"type": "FailureTarget", "status": "True", "reason": why},
                    {"type": "Failed", "status": "True", "reason": why, "message": f"{why}!"},
                ],
            }
        )
        for why in reasons
    ]
    members.append(_job_copy(_complete(START_B, DONE_B)))
    total = _aggregated(*members)
    assert total.phase == "Failed"
    assert total.completion_time is None  # not every copy completed, as Karmada has it
    [failed] = total.conditions
    assert (failed.type, failed.status, failed.reason) == ("Failed", "True", reason)


def test_a_pytorchjob_aggregates_its_times_and_succeeded_condition() -> None:
    member = obj(
        "kubeflow.org/v1",
        "PyTorchJob",
        {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}},
        {
            "startTime": START_A,
            "completionTime": DONE_A,
            "conditions": [
                {"type": "Created", "status": "True"},
                {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded"},
            ],
            "replicaStatuses": {"Worker": {"succeeded": 2}},
        },
    )
    total = _aggregated(member)
    assert total.start_time is not None and total.completion_time is not None
    assert [(c.type, c.reason) for c in total.conditions] == [("Succeeded", "PyTorchJobSucceeded")]


def test_odd_job_times_are_left_out_never_raised_on() -> None:
    seen = interpreter.for_kind("batch/v1", "Job").observe(
        _job_copy({"startTime": "yesterday", "completionTime": 5, "conditions": ["x"]})
    )
    assert (seen.start_time, seen.completion_time, seen.conditions) == (None, None, [])
