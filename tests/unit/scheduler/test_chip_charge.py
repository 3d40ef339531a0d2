"""A job is charged in the device resource the member runs it with: that of the chip its
Binding chose, as that chip's AcceleratorProfile names it (the propagator renames the
template's device to it). A job written for `nvidia.com/gpu` and placed on Ascend was
charged to its queue, its namespace's FederatedResourceQuota and the borrowing rules as
NVIDIA GPUs: Ascend caps were never enforced for it, and NVIDIA caps were used up by NPU
work, refusing a 1-GPU A100 job in a queue that ran no NVIDIA GPU."""

from __future__ import annotations

from typing import Any

from federation.api import queue_status
from federation.api.plan_routes import LiveState
from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob
from federation.quota.accounting import Admission, Usage
from federation.registry import keys, objects
from federation.scheduler import bound_usage, reconcile
from federation.settings import SchedulerSettings
from policies.models.accelerator import NO_DEVICE_RENAMES, AcceleratorProfile, ChipDevices
from policies.models.binding import Binding
from policies.models.frq import FederatedResourceQuota
from tests.unit.scheduler.fleet import (
    GPU,
    NPU,
    cluster,
    flavor,
    job,
    placed,
    queue,
    run,
    workload,
)

PROFILES = [
    AcceleratorProfile.model_validate(
        {"metadata": {"name": name}, "spec": {"arch": arch, "resourceName": resource}}
    )
    for name, arch, resource in (
        ("ascend-910b", "arm64", NPU),
        ("nvidia-a100-80gb", "amd64", GPU),
    )
]
FLEET = [
    cluster("cn-ascend", flavor(arch="arm64", chip="ascend-910b", devices=8, cpu="96", nodes=2)),
    cluster("us-a100", flavor(chip="nvidia-a100-80gb", devices=8, cpu="96", nodes=2)),
]
RESEARCH = queue("ml-research", capability={GPU: "16", NPU: "16"})


def _training(name: str = "ft", *, seq: int = 0) -> PendingJob:
    """The shipped training example: 2 pods x 8 `nvidia.com/gpu`, Ascend preferred."""
    w = workload(
        name, gpus=8, replicas=2, chips="ascend-910b,nvidia-a100-80gb", queue="ml-research"
    )
    return job(w, seq=seq)


def _snapshot(**kw: Any) -> snap.Snapshot:
    return snap.build(FLEET, profiles=PROFILES, **kw)


def test_a_gpu_job_placed_on_ascend_is_charged_ascend_chips_not_gpus() -> None:
    small = job(workload("small", gpus=1, chips="nvidia-a100-80gb", queue="ml-research"), seq=1)
    result = run(FLEET, [_training(), small], snapshot=_snapshot(queues=[RESEARCH]))
    assert placed(result) == {"ft": {"cn-ascend": 2}, "small": {"us-a100": 1}}
    used = result.usage.queue_used("ml-research")
    assert used.amount(NPU) == 16_000
    assert used.amount(GPU) == 1_000  # the A100 job's alone
    assert used.amount("accelerator/ascend-910b") == 16_000


def test_the_ascend_cap_binds_a_gpu_job_placed_on_ascend() -> None:
    capped = queue("ml-research", capability={NPU: "8"})
    result = run(FLEET, [_training()], snapshot=_snapshot(queues=[capped]))
    # 16 Ascend chips do not fit a cap of 8: it goes to the A100s, charged as GPUs there
    assert placed(result) == {"ft": {"us-a100": 2}}
    assert result.usage.queue_used("ml-research").amount(GPU) == 16_000
    assert result.usage.queue_used("ml-research").amount(NPU) == 0


def test_a_namespace_quota_on_ascend_chips_binds_a_gpu_job_placed_there() -> None:
    frq = FederatedResourceQuota.model_validate(
        {
            "metadata": {"name": "quota", "namespace": "team"},
            "spec": {"overall": {f"requests.{NPU}": "8", f"requests.{GPU}": "0"}},
        }
    )
    result = run(FLEET, [_training()], snapshot=_snapshot(queues=[RESEARCH], quotas=[frq]))
    assert placed(result) == {}
    reason = result.reasons["team/Job.batch/ft"]
    assert f"overall for {NPU}" in reason, reason


def test_the_charge_read_back_from_the_binding_is_the_one_admitted() -> None:
    """A restart (or a new leader) charges a Binding again from the registry: the same
    Ascend chips, in the ledger's pass over every workload and in a lone read."""
    snapshot = _snapshot(queues=[RESEARCH])
    first = run(FLEET, [_training()], snapshot=snapshot)
    [binding] = first.bindings
    [admitted] = first.admitted
    again = bound_usage.admission_of(
        _training(),
        binding,
        device_resources=snapshot.device_resources,
        chip_devices=snapshot.chip_devices,
    )
    assert again.charge == admitted.charge
    assert again.charge.amount(NPU) == 16_000 and again.charge.amount(GPU) == 0
    w = _training().workload
    key = str(reconcile.ref_of(w))
    work = reconcile.reconcile(
        workloads={key: reconcile.Entry(w, 0)},
        bindings={key: binding},
        phases={},
        policies=[],
        clusters=[c.name for c in FLEET],
        fingerprints={},
        settings=SchedulerSettings(),
        device_resources=snapshot.device_resources,
        chip_devices=snapshot.chip_devices,
    )
    assert [a.charge for a in work.admitted] == [admitted.charge]
    assert Usage(work.admitted).queue_used("ml-research").amount(GPU) == 0


def _static(share: str) -> FederatedResourceQuota:
    return FederatedResourceQuota.model_validate(
        {
            "metadata": {"name": "quota", "namespace": "team"},
            "spec": {
                "overall": {f"requests.{NPU}": "16", f"requests.{GPU}": "16"},
                "staticAssignments": [
                    {"clusterName": "cn-ascend", "hard": {f"requests.{NPU}": share}}
                ],
            },
        }
    )


def test_a_members_static_share_of_ascend_chips_holds_a_gpu_job_placed_there() -> None:
    """The member's ResourceQuota counts the Ascend chips the rendered pods request: a
    share of 8 cannot take two 8-chip pods, so the job goes where it fits."""
    result = run(FLEET, [_training()], snapshot=_snapshot(queues=[RESEARCH], quotas=[_static("8")]))
    assert placed(result) == {"ft": {"us-a100": 2}}


def test_the_static_share_in_use_is_counted_in_the_members_resource() -> None:
    result = run(
        FLEET, [_training()], snapshot=_snapshot(queues=[RESEARCH], quotas=[_static("16")])
    )
    assert placed(result) == {"ft": {"cn-ascend": 2}}
    used = result.usage.placed_totals("team", "cn-ascend")
    assert (used.get(NPU, 0), used.get(GPU, 0)) == (16_000, 0)


def test_the_registry_view_of_the_queue_shows_the_ascend_chips() -> None:
    """What `fedctl describe queue` and /metrics read on a replica that does not lead."""
    snapshot = _snapshot(queues=[RESEARCH])
    (placed_on_ascend,) = run(FLEET, [_training()], snapshot=snapshot).bindings
    w = _training().workload
    found: dict[str, Any] = {keys.cluster_key(c.name): c for c in FLEET}
    found |= {objects.key_for(p): p for p in (*PROFILES, RESEARCH)}
    found[objects.key_for(w)] = w
    statuses = {c.name: c.status for c in FLEET if c.status is not None}
    live = LiveState(found, statuses, {objects.key_for(w): placed_on_ascend}, {})
    [row] = [
        r for r in queue_status.summarise(live, default="default") if r["name"] == "ml-research"
    ]
    assert (row["used"].get(NPU), row["used"].get(GPU, "0")) == ("16", "0")


def test_a_ledger_charges_its_admissions_again_when_the_profiles_change() -> None:
    """A controller keeps what it charged for a Binding across cycles (`memo`); a profile
    applied since (say, the Ascend one) changes what the same Binding charges."""
    snapshot = _snapshot(queues=[RESEARCH])
    [binding] = run(FLEET, [_training()], snapshot=snapshot).bindings
    w = _training().workload
    key = str(reconcile.ref_of(w))
    ledger = reconcile.Ledger()
    memo: dict[str, tuple[Binding, str, Admission]] = {}

    def charged(chip_devices: ChipDevices) -> int:
        ledger.update(
            None,
            workloads={key: reconcile.Entry(w, 0)},
            bindings={key: binding},
            phases={},
            policies=[],
            clusters=[c.name for c in FLEET],
            fingerprints={},
            settings=SchedulerSettings(),
            device_resources=snapshot.device_resources,
            chip_devices=chip_devices,
            memo=memo,
        )
        return ledger.admitted[key].charge.amount(NPU)

    assert charged(NO_DEVICE_RENAMES) == 0
    assert charged(snapshot.chip_devices) == 16_000
