"""The registry's view of queues and a live plan count a workload waiting to be placed
again with its running copies as the controller does: their usage held, the workload
waiting, not admitted."""

from __future__ import annotations

from federation.api import queue_status
from federation.api.plan_routes import LiveState
from federation.registry import keys, objects
from policies.models.binding import BindingStatus
from tests.unit.failover.builders import binding
from tests.unit.scheduler.fleet import cluster, job, run, workload

WEB = workload("web", kind="Deployment", namespace="default", replicas=4, cpu="1")


def state(phase: str) -> LiveState:
    b = binding("web", clusters={"b": 2})
    b = b.model_copy(update={"status": BindingStatus(phase=phase, reason="waiting")})
    fleet = [cluster("a"), cluster("b")]
    found = {keys.cluster_key(c.name): c for c in fleet}
    found[objects.key_for(WEB)] = WEB
    pending = {"default": 1} if phase == "Pending" else {}
    return LiveState(
        found,
        {c.name: c.status for c in fleet if c.status is not None},
        {objects.key_for(WEB): b},
        pending,
    )


def test_a_waiting_workload_s_copies_hold_their_usage_and_it_counts_as_waiting() -> None:
    live = state("Pending")
    usage = live.usage(live.snapshot())
    assert [dict(a.placement) for a in usage.admissions()] == [{"b": 2}]
    (row,) = queue_status.summarise(live, default="default")
    assert (row["admitted"], row["pending"]) == (0, 1)


def test_a_scheduled_workload_counts_as_admitted() -> None:
    (row,) = queue_status.summarise(state("Scheduled"), default="default")
    assert (row["admitted"], row["pending"]) == (1, 0)


def test_a_waiting_binding_on_a_cluster_gone_is_not_taken_off_the_admitted() -> None:
    """Its copies' cluster left the fleet: its usage is not charged, so the one workload
    admitted stays counted as admitted."""
    live = state("Pending")
    other = workload("batch", kind="Deployment", namespace="default", replicas=1, cpu="1")
    live.objects[objects.key_for(other)] = other
    live.bindings[objects.key_for(other)] = binding("batch", clusters={"a": 1})
    del live.objects[keys.cluster_key("b")]

    (row,) = queue_status.summarise(live, default="default")

    assert (row["admitted"], row["pending"]) == (1, 1)


def test_a_scheduled_workload_whose_pods_were_resized_waits_with_its_copies_as_they_run() -> None:
    """The controller places it again and charges its copies in the pods they run (the
    Binding's `podRequests`); counted at the new size here, the queue read 8 CPU used by
    a workload running 4."""
    (placed,) = run([cluster("a")], [job(WEB)]).bindings
    bigger = workload("web", kind="Deployment", namespace="default", replicas=4, cpu="2")
    found = {keys.cluster_key("a"): cluster("a"), objects.key_for(bigger): bigger}
    live = LiveState(found, {"a": cluster("a").status}, {objects.key_for(bigger): placed}, {})

    (row,) = queue_status.summarise(live, default="default")

    assert (row["admitted"], row["pending"]) == (0, 1)
    assert row["used"]["cpu"] == "4"


def test_a_binding_with_a_target_gone_charges_the_copies_left_and_waits() -> None:
    """Its copies on b went with b; those on a still run and hold a's room, which a
    later job must not be given as free."""
    live = state("Scheduled")
    live.bindings[objects.key_for(WEB)] = binding("web", clusters={"a": 1, "b": 2})
    del live.objects[keys.cluster_key("b")]

    usage = live.usage(live.snapshot())

    assert [dict(a.placement) for a in usage.admissions()] == [{"a": 1}]
    (row,) = queue_status.summarise(live, default="default")
    assert (row["admitted"], row["pending"]) == (0, 1)
