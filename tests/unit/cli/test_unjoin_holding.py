"""What an unjoin that times out says holds the cluster, and why."""

from __future__ import annotations

from typing import Any

from federation.cli import cluster_cmd


def _binding(kind: str, name: str, ns: str, **spec: Any) -> dict[str, Any]:
    workload = {"apiVersion": "v1", "kind": kind, "namespace": ns, "name": name}
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"workload": workload, **spec}}


def test_graceful_evictions_and_waiting_namespaces_are_told_apart() -> None:
    """It said "they may tolerate NoExecute taints, or the member may be unreachable" and
    named two Namespaces, while two Deployments leaving gracefully held the cluster."""
    bindings = [
        _binding("Namespace", "team-a", "", clusters=[{"name": "arm", "replicas": 0}]),
        _binding(
            "Deployment",
            "web",
            "team-a",
            clusters=[{"name": "cpu", "replicas": 1}],
            evictionTasks=[{"cluster": "arm", "purgeMode": "Gracefully"}],
        ),
        _binding("Deployment", "stays", "team-a", clusters=[{"name": "arm", "replicas": 1}]),
        _binding("Deployment", "elsewhere", "team-a", clusters=[{"name": "cpu", "replicas": 1}]),
    ]
    works = [
        {"spec": {"cluster": "arm", "workload": {"kind": "Job", "namespace": "b", "name": "j"}}},
        {"spec": {"cluster": "arm", "workload": bindings[1]["spec"]["workload"]}},
    ]
    said = cluster_cmd._holding(bindings, works, "arm")
    assert said == [
        "-/Namespace/team-a a Namespace, kept there while copies of its workloads remain",
        "team-a/Deployment/web leaving (Gracefully): its copy there stays until its new"
        " placement is ready, or the graceful eviction times out",
        "team-a/Deployment/stays still placed there: it tolerates the NoExecute taint, or is"
        " not moved yet",
        "b/Job/j: its copy is not removed yet (the member may be unreachable)",
    ]


def test_a_workload_with_nowhere_else_to_go_is_named_as_what_holds_the_unjoin() -> None:
    """Its copy is its last, kept past the graceful timeout: the unjoin waits on it, as a
    drain waits on a disruption budget, and says so while it waits, not only at the end."""
    reason = "0/10 clusters are available: 9 filtered by affinity, 1 filtered by taints"
    stuck = _binding(
        "Deployment",
        "tol-web",
        "plat",
        evictionTasks=[
            {"cluster": "me", "purgeMode": "Gracefully", "nowhereSince": "2026-01-01T00:00:00Z"}
        ],
    )
    stuck["status"] = {"phase": "Pending", "reason": reason}
    said = cluster_cmd._holding([stuck], [], "me")
    assert said == [
        f"plat/Deployment/tol-web has nowhere else to go ({reason}): its copy there, the last,"
        " keeps running until it can be placed elsewhere; make room for it, widen its"
        " placement, or delete it"
    ]
    assert cluster_cmd._stranded([stuck], "me") == said
