"""A Job with `spec.suspend: true` runs no pods (Kubernetes deletes any that run), so it
is not admitted: it holds no quota, budget or room, waits in its queue saying it is
suspended, and its copies are removed from the members. Resumed, it is admitted through
its queue like any other job (Kueue treats a suspended Job as not admitted)."""

from __future__ import annotations

import pytest

from federation.quota.accounting import Usage
from federation.scheduler import binder, reconcile
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import (
    cluster,
    flavor,
    job,
    placed,
    queue,
    respec,
    run,
    workload,
)

SUSPENDED = (
    "suspended (spec.suspend: true): it runs no pods and holds no quota; set spec.suspend"
    " to false to queue it for admission again"
)
FLEET = [cluster("a", flavor(chip="nvidia-a100-80gb", devices=8, nodes=2))]
HQ = queue("hq", capability={"nvidia.com/gpu": "8"})


def _gpu_job(name: str, replicas: int, *, suspend: bool | None = None) -> Workload:
    """A Job of `replicas` 2-GPU pods in queue hq; `suspend` sets its `spec.suspend`."""
    w = workload(name, gpus=2, replicas=replicas, queue="hq")
    return w if suspend is None else respec(w, suspend=suspend)


@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param("BestEffortFIFO", id="best-effort queue"),
        pytest.param("StrictFIFO", id="strict queue: a suspended head holds no one back"),
    ],
)
def test_a_suspended_job_is_not_admitted_and_holds_nothing(strategy: str) -> None:
    """jwait (8 GPUs, suspended) was admitted and charged, and jblocked behind it waited at
    `capability for nvidia.com/gpu: 8/8` while nothing ran."""
    hq = queue("hq", capability={"nvidia.com/gpu": "8"}, dequeueStrategy=strategy)
    jobs = [
        job(_gpu_job("jwait", 4, suspend=True), seq=1),
        job(_gpu_job("jblocked", 2), seq=2),
    ]
    result = run(FLEET, jobs, queues=[hq])
    assert placed(result) == {"jblocked": {"a": 2}}
    assert result.reasons["team/Job.batch/jwait"] == SUSPENDED
    [binding] = [b for b in result.bindings if b.metadata.name == "jwait"]
    assert (binding.status.phase, binding.status.reason) == ("Pending", SUSPENDED)
    assert binding.spec.clusters == []
    [waiting] = [j for j in result.pending.jobs() if j.ref.name == "jwait"]
    assert waiting.reason == SUSPENDED


def test_suspending_a_running_job_releases_its_share_and_removes_its_copy() -> None:
    """Its Binding named the member, so its copy counted as still running (`reconcile`'s
    waiting rule) and the queue stayed full; Kubernetes has deleted its pods."""
    first = run(FLEET, [job(_gpu_job("jwait", 4), seq=1)], queues=[HQ])
    assert placed(first) == {"jwait": {"a": 4}}
    [stored] = first.bindings
    suspended = job(_gpu_job("jwait", 4, suspend=True), seq=1)
    key = str(suspended.ref)
    work = reconcile.reconcile(
        workloads={key: reconcile.Entry(suspended.workload, 1)},
        bindings={key: stored},
        phases={},
        policies=[],
        clusters=["a"],
        fingerprints={key: "admitted before it was suspended"},
        settings=SchedulerSettings(),
    )
    assert [str(j.ref) for j in work.pending] == [key]
    assert work.admitted == [] and work.waiting == []

    again = run(
        FLEET,
        [*work.pending, job(_gpu_job("jblocked", 2), seq=2)],
        queues=[HQ],
        usage=Usage(work.waiting),
    )
    assert placed(again) == {"jblocked": {"a": 2}}
    [out] = [b for b in again.bindings if b.metadata.name == "jwait"]
    written: Binding = binder._merged(stored, out)
    assert written.status.phase == "Pending" and written.placement() == {}
    assert written.status.reason == SUSPENDED


def test_a_resumed_job_is_admitted_through_its_queue_never_over_it() -> None:
    """Resuming is an admission like any other: with the queue full it waits at capability."""
    full = run(FLEET, [job(_gpu_job("other", 4), seq=1)], queues=[HQ])
    resumed = job(_gpu_job("jwait", 2, suspend=False), seq=2)
    result = run(FLEET, [resumed], queues=[HQ], usage=full.usage)
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/jwait"].startswith(
        "queue hq at capability for nvidia.com/gpu: 8/8"
    )
    assert placed(run(FLEET, [resumed], queues=[HQ])) == {"jwait": {"a": 2}}


def test_a_suspended_job_behind_a_stalled_strict_head_says_it_is_suspended() -> None:
    """Workloads behind a StrictFIFO head that waits are told they wait behind it; a
    suspended one waits for its resume, not for that head, and keeps no copy meanwhile."""
    strict = queue("hq", capability={"nvidia.com/gpu": "8"}, dequeueStrategy="StrictFIFO")
    jobs = [
        job(workload("huge", cpu="64", queue="hq"), seq=1),
        job(_gpu_job("jwait", 1, suspend=True), seq=2),
        job(_gpu_job("small", 1), seq=3),
    ]
    result = run(FLEET, jobs, queues=[strict])
    assert placed(result) == {}
    assert result.reasons["team/Job.batch/small"].startswith("waiting behind team/Job.batch/huge")
    assert result.reasons["team/Job.batch/jwait"] == SUSPENDED
    [binding] = [b for b in result.bindings if b.metadata.name == "jwait"]
    assert (binding.status.reason, binding.spec.clusters) == (SUSPENDED, [])


def _pytorch(name: str, *, suspend: bool | None) -> Workload:
    """A PyTorchJob in queue hq: a CPU Master and 2 Workers of 2 GPUs; `suspend` sets its
    `spec.runPolicy.suspend` (the Kubeflow training operator's field)."""
    gpu = {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]}
    cpu = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    spec: dict[str, object] = {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": {"spec": cpu}},
            "Worker": {"replicas": 2, "template": {"spec": gpu}},
        }
    }
    if suspend is not None:
        spec["runPolicy"] = {"suspend": suspend}
    return Workload.model_validate(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {
                "name": name,
                "namespace": "team",
                "annotations": {"fedctl.io/queue": "hq"},
            },
            "spec": spec,
        }
    )


@pytest.mark.parametrize(
    ("suspend", "admitted"),
    [
        pytest.param(True, False, id="runPolicy.suspend true: not admitted, holds nothing"),
        pytest.param(False, True, id="runPolicy.suspend false: admitted as any job"),
        pytest.param(None, True, id="no runPolicy: admitted as any job"),
    ],
)
def test_a_suspended_pytorchjob_is_not_admitted_like_a_suspended_job(
    suspend: bool | None, admitted: bool
) -> None:
    """A PyTorchJob with `runPolicy.suspend: true` was admitted, charged its 4 GPUs and
    propagated, though the training operator starts none of its pods (Kueue treats it as
    not admitted): the Job behind it waited at capability while nothing ran."""
    jobs = [job(_pytorch("pt", suspend=suspend), seq=1), job(_gpu_job("jblocked", 4), seq=2)]
    result = run(FLEET, jobs, queues=[HQ])
    reason = result.reasons.get("team/PyTorchJob.kubeflow.org/pt", "")
    if admitted:
        assert placed(result)["pt"] == {"a": 3}
        assert "jblocked" not in placed(result)
        return
    assert placed(result) == {"jblocked": {"a": 4}}
    assert reason == (
        "suspended (spec.runPolicy.suspend: true): it runs no pods and holds no quota; set"
        " spec.runPolicy.suspend to false to queue it for admission again"
    )
