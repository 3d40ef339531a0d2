"""A job whose pod templates differ is charged and costed for each template's own pods.

A Volcano Job of a CPU launcher and two 2-GPU workers was charged to its queue as three
2-GPU pods (6 GPUs for the 4 it uses, so a queue capped at 4 never admitted it) and costed
as three worker pods. Capacity still fits every pod to the largest template, which only
errs towards room.
"""

from __future__ import annotations

from decimal import Decimal

from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob
from federation.scheduler import bound_usage
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import GPU, cluster, flavor, job, placed, queue, run

A100 = "nvidia-a100-80gb"
FLEET = [
    cluster(
        "us-a100",
        flavor(chip=A100, devices=8, cpu="96", nodes=2),
        cpu_price="0.05",
        gpu_prices={A100: "2.00"},
    )
]


def _task(name: str, replicas: int, cpu: str, gpus: int = 0) -> dict[str, object]:
    requests: dict[str, str] = {"cpu": cpu, "memory": "2Gi"}
    if gpus:
        requests[GPU] = str(gpus)
    container = {"name": name, "image": "train", "resources": {"requests": requests}}
    return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [container]}}}


def _launcher_and_workers(name: str = "mpi", *, queue_name: str = "default") -> PendingJob:
    w = Workload.model_validate(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": "team",
                "annotations": {"fedctl.io/queue": queue_name, "fedctl.io/chips": A100},
            },
            "spec": {
                "minAvailable": 3,
                "tasks": [_task("launcher", 1, "1"), _task("worker", 2, "4", gpus=2)],
            },
        }
    )
    return job(w)


def test_a_queue_capped_at_the_gpus_used_admits_a_launcher_and_two_workers() -> None:
    capped = queue("ml", capability={GPU: "4"})
    result = run(
        FLEET, [_launcher_and_workers(queue_name="ml")], snapshot=snap.build(FLEET, queues=[capped])
    )
    assert placed(result) == {"mpi": {"us-a100": 3}}, result.reasons
    used = result.usage.queue_used("ml")
    assert used.amount(GPU) == 4_000  # not 6: the launcher holds none
    assert used.amount("cpu") == 9_000  # 1 + 2 x 4, not 3 x 4
    assert used.amount(f"accelerator/{A100}") == 4_000


def test_its_cost_is_what_each_template_s_pods_cost() -> None:
    [binding] = run(FLEET, [_launcher_and_workers()]).bindings
    memory = Decimal("0.005") * 2 * 3  # 2 GiB a pod, three pods
    expected = Decimal("0.05") * 9 + Decimal("2.00") * 4 + memory
    assert binding.spec.hourly_cost == expected
    assert binding.spec.replicas == 3  # recorded, as a ResourceBinding's spec.replicas
    assert binding.spec.clusters[0].hourly_cost == expected


def test_a_cost_cap_between_its_real_cost_and_three_workers_cost_lets_it_in() -> None:
    """Three worker pods would cost 12.63/h; the job costs 8.48/h, under a 10/h cap."""
    pending = job(_launcher_and_workers().workload, fedctl={"maxHourlyCost": "10"})
    result = run(FLEET, [pending])
    assert placed(result) == {"mpi": {"us-a100": 3}}, result.reasons


def test_the_charge_read_back_from_its_binding_is_the_one_admitted() -> None:
    """A new leader charges each Binding again from the registry before its first cycle."""
    snapshot = snap.build(FLEET)
    first = run(FLEET, [_launcher_and_workers()], snapshot=snapshot)
    [binding], [admitted] = first.bindings, first.admitted
    again = bound_usage.admission_of(
        _launcher_and_workers(),
        binding,
        device_resources=snapshot.device_resources,
        chip_devices=snapshot.chip_devices,
    )
    assert again.charge == admitted.charge
    assert again.charge.amount(GPU) == 4_000
