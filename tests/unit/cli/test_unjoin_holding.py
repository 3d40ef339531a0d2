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


def test_a_dependency_kept_for_a_copy_still_there_says_so() -> None:
    """A dependency has no Binding: its copy stays on purpose while a copy needing it is
    there, or while dispatching there is suspended for it. It was blamed on the member
    ("may be unreachable"), sending the user to debug a healthy member."""
    leaving = _binding(
        "Deployment",
        "edge-app",
        "edge",
        evictionTasks=[{"cluster": "cn", "purgeMode": "Gracefully"}],
    )

    def work(kind: str, ns: str, name: str, *, suspended: bool = False) -> dict[str, Any]:
        workload = {"kind": kind, "namespace": ns, "name": name}
        spec = {"cluster": "cn", "workload": workload, "suspendDispatching": suspended}
        return {"spec": spec}

    works = [
        work("Deployment", "edge", "edge-app"),
        work("Secret", "edge", "edge-s"),
        work("ConfigMap", "shop", "svc2-cm", suspended=True),
        work("ConfigMap", "shop", "lost"),
    ]
    statuses = {
        "edge/Secret/edge-s": {
            "requiredBy": ["edge/Deployment.apps/edge-app", "edge/Deployment.apps/elsewhere"]
        },
        "shop/ConfigMap/svc2-cm": {"requiredBy": ["shop/Deployment.apps/svc2"]},
    }
    said = cluster_cmd._holding([leaving], works, "cn", statuses=statuses)
    assert said[1:] == [
        "edge/Secret/edge-s: a dependency of edge/Deployment.apps/edge-app, kept while"
        " edge/Deployment.apps/edge-app's copy is there",
        "shop/ConfigMap/svc2-cm: a dependency of shop/Deployment.apps/svc2, kept while"
        " dispatching there is suspended for it",
        "shop/ConfigMap/lost: its copy is not removed yet (the member may be unreachable)",
    ]


def test_what_is_left_counts_works_without_contradicting_the_workloads_listed() -> None:
    """ "0 workload(s) and 6 Work(s)" beside workloads listed as still running there."""
    assert cluster_cmd._held(0, 6) == (
        "6 Work(s), copies of workloads no longer placed there not yet gone"
    )
    assert cluster_cmd._held(2, 3) == "2 workload(s) still placed there and 3 Work(s)"
