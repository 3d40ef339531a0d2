"""`fedctl describe workload` text: what a user reads to learn why a workload is where it is."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from federation.cli import workloads_view
from federation.propagation import status as status_mod
from federation.propagation import works as works_mod
from federation.registry import keys
from policies.models.binding import Binding, WorkloadReference
from policies.models.work import Observed, WorkStatus

BINDING = Binding.model_validate(
    {
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "workload": {"apiVersion": "batch/v1", "kind": "Job", "namespace": "ml", "name": "t"},
            "clusters": [
                {
                    "name": "us-a100",
                    "replicas": 1,
                    "chip": "nvidia-a100-80gb",
                    "hourlyCost": "2.0054125",
                }
            ],
            "explanation": [
                {
                    "cluster": "us-a100",
                    "verdict": "ok",
                    "score": 91,
                    "selected": True,
                    "scores": {"cost": 100, "binpack": 3},
                },
                {"cluster": "eu-a100", "verdict": "ok", "score": 64},
            ],
            "filteredSummary": {"chips": 5, "taints": 1},
        },
        "status": {"phase": "Scheduled"},
    }
)


def doc(binding: Binding) -> dict[str, Any]:
    return {
        "workload": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "t"}},
        "binding": binding.model_dump(mode="json", by_alias=True, exclude_none=True),
        "status": {"health": "Healthy"},
        "bindingRevision": 7,
    }


def test_describe_shows_the_verdicts_kept_and_counts_the_filtered_clusters() -> None:
    text = workloads_view.describe(doc(BINDING))
    assert "us-a100" in text and "ok (selected)" in text and "eu-a100" in text
    assert "Filtered:    6 more clusters (5 by chips, 1 by taints)" in text
    explained = text.split("Explanation:")[1].split("Filtered:")[0].splitlines()
    assert explained[1].split() == ["CLUSTER", "VERDICT", "SCORE", "DETAILS"]
    assert explained[2].split() == ["us-a100", "ok", "(selected)", "91", "cost=100", "binpack=3"]
    placement = text.split("Placement:")[1].split("Explanation:")[0]
    assert placement.splitlines()[2].split()[-1] == "2.0054"  # as every cost is shown


def test_no_filtered_line_when_every_cluster_was_scored() -> None:
    spec = BINDING.spec.model_copy(update={"filtered_summary": {}})
    text = workloads_view.describe(doc(BINDING.model_copy(update={"spec": spec})))
    assert "Filtered:" not in text


def test_describe_says_how_often_an_event_happened_since_when() -> None:
    """A failure met at every retry read as one event at its first time, as if over."""
    failed = {
        "type": "Warning",
        "reason": "ApplyFailed",
        "cluster": "us-a100",
        "message": "us-a100 rejected the object",
        "time": "2026-12-07T13:23:48Z",
        "lastTime": "2026-12-07T13:29:40Z",
        "count": 18,
    }
    text = workloads_view.describe({**doc(BINDING), "events": [failed]})
    row = text.split("Events:")[1].splitlines()[2]
    assert row.strip().startswith(
        "2026-12-07T13:29:40Z (x18 since 2026-12-07T13:23:48Z)   Warning"
    ), row


PENDING = Binding.model_validate(
    {
        "metadata": {"name": "sa1", "namespace": "kt13"},
        "spec": {
            "workload": {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "namespace": "kt13",
                "name": "sa1",
            },
            "explanation": [
                {
                    "cluster": "eu-west-arm",
                    "verdict": "unschedulable",
                    "plugin": "api-enablement",
                    "reasons": ["ServiceAccount.v1 is not served"],
                },
                {
                    "cluster": "us-east-cpu",
                    "verdict": "unschedulable",
                    "plugin": "api-enablement",
                    "reasons": ["ServiceAccount.v1 is not served"],
                },
                {"cluster": "cn-north-cpu", "verdict": "unschedulable", "plugin": "affinity"},
            ],
            "filteredSummary": {"affinity": 6, "api-enablement": 2},
        },
        "status": {"phase": "Pending", "reason": "0/8 clusters are available"},
    }
)


def test_a_pending_workload_shows_which_filter_turned_each_cluster_down() -> None:
    """The Pending Binding lists the nearest clusters' verdicts: the Filtered line counts
    every cluster, and points at `plan` only for those not listed."""
    text = workloads_view.describe(doc(PENDING))
    explained = text.split("Explanation:")[1].split("Filtered:")[0].splitlines()
    assert explained[2].split() == [
        "eu-west-arm", "unschedulable", "-", "api-enablement:", "ServiceAccount.v1", "is", "not",
        "served",
    ]  # fmt: skip
    assert (
        "Filtered:    8 clusters (6 by affinity, 2 by api-enablement); 5 not listed above:"
        " `fedctl plan --live -f FILE` gives each one's reason"
    ) in text


def test_an_object_kept_in_the_federation_says_so_and_has_no_namespace() -> None:
    kept = {
        "workload": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "teams"}},
        "binding": None,
        "status": None,
        "bindingRevision": None,
        "federationOnly": True,
    }
    text = workloads_view.describe(kept)
    assert "Namespace:   - (cluster-scoped)" in text
    assert "Binding:     none (no propagation policy selects it: kept in the federation" in text
    assert "revision None" not in text
    waiting = {**kept, "federationOnly": False}
    assert "Binding:     none (not scheduled yet)" in workloads_view.describe(waiting)


def test_describe_lists_the_clusters_a_workload_is_leaving_and_why() -> None:
    task = {
        "cluster": "eu-a100",
        "replicas": 1,
        "creationTime": "2026-01-01T00:00:00Z",
        "purgeMode": "Gracefully",
        "gracePeriodSeconds": 90,
        "producer": "ApplicationFailover",
        "reason": "application unhealthy for 60s: pods refused",
    }
    spec = BINDING.spec.model_validate(
        {**BINDING.spec.model_dump(by_alias=True), "evictionTasks": [task]}
    )
    text = workloads_view.describe(doc(BINDING.model_copy(update={"spec": spec})))
    assert "Leaving:" in text
    leaving = text.split("Leaving:")[1].split("Explanation:")[0]
    (row,) = [line for line in leaving.splitlines() if line.strip().startswith("eu-a100")]
    assert "Gracefully (90s)" in row and "application unhealthy for 60s: pods refused" in row
    assert "Leaving:" not in workloads_view.describe(doc(BINDING))


def _listed(phase: str, reason: str) -> dict[str, Any]:
    return {
        "namespace": "team",
        "name": "web",
        "kind": "Deployment",
        "binding": {
            "spec": {"clusters": [{"name": "b", "replicas": 2}]},
            "status": {"phase": phase, "reason": reason},
        },
        "status": {"clusters": [{"cluster": "b", "readyReplicas": 2, "replicas": 2}]},
    }


def test_a_workload_waiting_with_copies_shows_them_and_that_it_waits() -> None:
    waiting = _listed("Pending", "spread needs 2 clusters, only 1 is feasible (still running on b)")
    assert workloads_view.placement_cell(waiting) == (
        "b 2/2; Pending: spread needs 2 clusters, only 1 is feasible"
    )
    assert workloads_view.placement_cell(_listed("Scheduled", "")) == "b 2/2"


def test_a_copy_left_gracefully_shows_while_nothing_else_is_targeted() -> None:
    """`0/0 Pending` hid the copy a graceful eviction keeps running until the workload is
    placed again, which `describe` showed leaving at 1/1."""
    moving = _listed("Pending", "no eligible cluster")
    moving["binding"]["spec"]["clusters"] = []
    moving["status"] = {
        "clusters": [{"cluster": "b", "readyReplicas": 1, "replicas": 1, "leaving": True}]
    }
    assert workloads_view.placement_cell(moving) == "Pending: no eligible cluster; leaving b 1/1"


def test_a_job_that_finished_on_a_member_since_unjoined_is_not_pending() -> None:
    """Unjoining a member takes it out of every Binding, finished jobs' too: 266 of them
    read `Pending: not scheduled yet` beside their Succeeded status."""
    done = _listed("Scheduled", "")
    done["binding"]["spec"]["clusters"] = []
    done["status"] = {"phase": "Succeeded", "clusters": []}
    assert workloads_view.placement_cell(done) == "- (Succeeded on a member that has left)"
    done["status"] = {"phase": "Running", "clusters": []}
    assert workloads_view.placement_cell(done) == "Pending: not scheduled yet"


def test_a_finished_copy_whose_member_refused_an_edit_shows_how_it_finished() -> None:
    """The member refused an edit of the Job's pod template while it ran; its copy then
    finished. The cell read `error` for good beside the job's Succeeded."""
    done = _listed("Scheduled", "")
    refused = {"cluster": "b", "applied": False, "error": "spec.template: field is immutable"}
    done["status"] = {"phase": "Succeeded", "clusters": [{**refused, "phase": "Succeeded"}]}
    assert workloads_view.placement_cell(done) == "b Succeeded"
    done["status"] = {"phase": "Running", "clusters": [{**refused, "phase": "Running"}]}
    assert workloads_view.placement_cell(done) == "b error"


def test_describe_names_the_policy_the_binding_records() -> None:
    def claimed(value: str | None) -> str:
        annotations = {} if value is None else {"fedctl.io/policy": value}
        meta = BINDING.metadata.model_copy(update={"annotations": annotations})
        return workloads_view.describe(doc(BINDING.model_copy(update={"metadata": meta})))

    assert "Policy:      PropagationPolicy ml/train-pp" in claimed("PropagationPolicy/ml/train-pp")
    assert "Policy:      ClusterPropagationPolicy all" in claimed("ClusterPropagationPolicy/all")
    assert "Policy:      none: the policy that claimed it is gone" in claimed("")
    assert "Policy:      none: no propagation policy claims it" in claimed(None)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("deploy", "Deployment.apps"),
        ("deployments", "Deployment.apps"),
        ("Deployment", "Deployment.apps"),
        ("jobs", "Job.batch"),
        ("vcjob", "Job.batch.volcano.sh"),
        ("svc", "Service"),
        ("ingresses", "Ingress.networking.k8s.io"),
        ("networkpolicies", "NetworkPolicy.networking.k8s.io"),
        ("pytorchjobs", "PyTorchJob.kubeflow.org"),
        ("deploymnet", None),
        ("clusters", None),
    ],
)
def test_kubectl_resource_names_of_workload_kinds(name: str, kind: str | None) -> None:
    assert workloads_view.kind_named(name) == kind


def test_a_name_is_narrowed_to_a_kind_in_each_address_form() -> None:
    assert workloads_view.with_kind("web", "Job") == "Job/web"
    assert workloads_view.with_kind("ns/web", "Job") == "ns/Job/web"
    assert workloads_view.with_kind("ns/Job.batch/web", "Job") == "ns/Job.batch/web"
    items = [
        {"kind": "Job.batch"},
        {"kind": "Job.batch.volcano.sh"},
        {"kind": "Job"},
        {"kind": "Deployment.apps"},
    ]
    assert workloads_view.of_kind(items, "Job.batch") == items[:1]
    assert workloads_view.of_kind(items, "Job") == items[2:3]
    assert workloads_view.of_kind(items, None) == items


def test_a_cluster_lists_the_workloads_placed_on_it_and_those_leaving() -> None:
    def item(name: str, clusters: list[dict[str, Any]], leaving: list[str]) -> dict[str, Any]:
        return {
            "namespace": "web",
            "kind": "Deployment.apps",
            "name": name,
            "binding": {
                "spec": {
                    "clusters": clusters,
                    "evictionTasks": [{"cluster": c, "replicas": 2} for c in leaving],
                }
            },
            "status": {"clusters": [{"cluster": "a", "readyReplicas": 1, "replicas": 3}]},
        }

    items = [
        item("shop", [{"name": "a", "replicas": 3, "chip": "amd64", "hourlyCost": "0.1"}], []),
        item("old", [{"name": "b", "replicas": 2}], ["a"]),
        item("elsewhere", [{"name": "b", "replicas": 1}], []),
    ]
    text = workloads_view.on_cluster(items, "a")
    lines = text.splitlines()
    assert lines[0] == "Workloads:   2 placed here"
    rows = [line.split() for line in lines[2:]]
    assert rows == [
        ["web/Deployment.apps/old", "2", "-", "-", "leaving"],
        ["web/Deployment.apps/shop", "3", "amd64", "0.1000", "1/3"],
    ]
    assert workloads_view.on_cluster(items, "c") == "Workloads:   <none>"


def test_get_workloads_counts_the_placement_and_shows_what_it_leaves_apart() -> None:
    """The user's drill: `api` waits to be placed again with copies on two regions, one of
    them unreachable, while its old copy is still being left. READY read 9/9 Healthy and
    the unreachable share 3/3; now only what is known ready of the placement counts."""
    observed = {"ap-southeast-cpu": 2, "eu-west-arm": 3, "us-east-cpu": 4}
    works = [
        works_mod.new_work(
            ref=keys.WorkloadRef("shop", "Deployment.apps", "api"),
            cluster=cluster,
            old=None,
            manifest={"apiVersion": "apps/v1", "kind": "Deployment"},
            revision=5,
            status=WorkStatus(
                applied=True, observed=Observed(health="Healthy", replicas=n, ready_replicas=n)
            ),
            uid=None,
        )
        for cluster, n in observed.items()
    ]
    reference = WorkloadReference(
        api_version="apps/v1", kind="Deployment", namespace="shop", name="api"
    )
    status = status_mod.aggregate(
        keys.WorkloadRef("shop", "Deployment.apps", "api"),
        reference,
        works,
        binding_revision=5,
        placed={"ap-southeast-cpu", "eu-west-arm"},
        unready={"eu-west-arm", "us-east-cpu"},
    )
    reason = "spread by region needs at least 3 regions"
    item = {
        "namespace": "shop",
        "name": "api",
        "kind": "Deployment.apps",
        "binding": {
            "spec": {
                "clusters": [
                    {"name": "ap-southeast-cpu", "replicas": 2},
                    {"name": "eu-west-arm", "replicas": 3},
                ]
            },
            "status": {
                "phase": "Pending",
                "reason": f"{reason} (still running on ap-southeast-cpu, eu-west-arm)",
            },
        },
        "status": status.model_dump(mode="json", by_alias=True, exclude_none=True),
    }

    (row,) = workloads_view.table([item], wide=False).splitlines()[1:]

    assert row.split()[3:5] == ["Unknown", "2/5"]
    assert row.endswith(
        "ap-southeast-cpu 2/2, eu-west-arm ?/3 (member not Ready);"
        " leaving us-east-cpu ?/4 (member not Ready); Pending: " + reason
    )
    assert workloads_view.status(item)["clusters"][1]["readyReplicas"] is None


def test_describe_gives_the_member_s_reason_for_an_unhealthy_copy() -> None:
    """A member quota refusing the pods showed `Unhealthy 2/3` with an empty ERROR cell,
    though the Work kept the member's message."""

    def work(cluster: str, observed: dict[str, Any], error: str | None = None) -> Any:
        status: dict[str, Any] = {"applied": error is None, "observed": observed}
        if error:
            status["error"] = error
        return {"spec": {"cluster": cluster, "bindingRevision": 7}, "status": status}

    refused = 'pods "qz-1" is forbidden: exceeded quota: tiny'
    works = [
        work("a", {"health": "Unhealthy", "replicas": 3, "readyReplicas": 2, "message": refused}),
        work("b", {"health": "Healthy", "replicas": 3, "readyReplicas": 3, "message": "3/3"}),
        work("c", {}, error="c rejected the object: invalid"),
    ]
    text = workloads_view.describe({**doc(BINDING), "works": works})
    rows = text.split("Works:")[1].splitlines()
    assert "MESSAGE" in rows[1]
    (a,) = [r for r in rows if r.strip().startswith("a ")]
    (b,) = [r for r in rows if r.strip().startswith("b ")]
    (c,) = [r for r in rows if r.strip().startswith("c ")]
    assert a.rstrip().endswith(refused) and b.rstrip().endswith("7")
    assert c.rstrip().endswith("c rejected the object: invalid")


def test_cluster_describe_costs_a_finished_job_nothing_and_rounds_as_elsewhere() -> None:
    """It showed a cost an hour for a finished job, which `fedctl cost` counts as nothing,
    and the Binding's exact figure (4.21578125) where every other view gives four places."""

    def item(name: str, phase: str) -> dict[str, Any]:
        target = {"name": "a", "replicas": 1, "chip": "amd64", "hourlyCost": "4.21578125"}
        return {
            "namespace": "team",
            "name": name,
            "kind": "Job.batch",
            "binding": {"spec": {"clusters": [target]}, "status": {"phase": "Scheduled"}},
            "status": {"phase": phase, "clusters": []},
        }

    text = workloads_view.on_cluster([item("done", "Succeeded"), item("runs", "Running")], "a")
    rows = {line.split()[0]: line.split() for line in text.splitlines()[2:]}
    assert rows["team/Job.batch/done"][3] == "-"
    assert rows["team/Job.batch/runs"][3] == "4.2158"


def test_describe_reads_a_copy_on_a_member_not_ready_as_unknown() -> None:
    """While its member was down, describe showed the copy Healthy 2/2 (its last report)
    where `fedctl get workloads` read `?/2 (member not Ready)`."""
    works = [
        {
            "spec": {"cluster": "a", "bindingRevision": 7},
            "status": {"applied": True, "observed": {"health": "Healthy", "replicas": 2,
                                                     "readyReplicas": 2}},
        }
    ]  # fmt: skip
    status = {"health": "Unknown", "clusters": [{"cluster": "a", "replicas": 2, "stale": True}]}
    text = workloads_view.describe({**doc(BINDING), "works": works, "status": status})
    (row,) = [r for r in text.split("Works:")[1].splitlines() if r.strip().startswith("a ")]
    assert row.split()[2:4] == ["Unknown", "?/2"]


def test_a_suspended_work_says_dispatching_is_suspended_in_describe_and_get() -> None:
    """A policy's `suspension` leaves a member's copy as it is: the copy may run an older
    manifest, or none at all, and a user reading `describe` or `get workloads` must see
    why it does not follow the template."""
    ref = keys.WorkloadRef("ml", "Job.batch", "t")
    suspended = works_mod.new_work(
        ref=ref,
        cluster="us-a100",
        old=None,
        manifest={"apiVersion": "batch/v1", "kind": "Job"},
        revision=7,
        status=WorkStatus(),
        uid=None,
        suspended=True,
    )
    story = doc(BINDING)
    story["works"] = [suspended.model_dump(mode="json", by_alias=True, exclude_none=True)]
    works = workloads_view.describe(story).split("Works:")[1].split("Events:")[0]
    (row,) = [line for line in works.splitlines() if line.strip().startswith("us-a100")]
    assert "dispatching suspended" in row
    assert "dispatching suspended" in workloads_view.works_table(
        story["works"], now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), wide=False
    )
    status = status_mod.aggregate(
        ref,
        WorkloadReference(api_version="batch/v1", kind="Job", namespace="ml", name="t"),
        [suspended],
        binding_revision=7,
        placed={"us-a100"},
    )
    assert status.clusters[0].suspended
    item = {
        "namespace": "ml",
        "name": "t",
        "kind": "Job.batch",
        "binding": BINDING.model_dump(mode="json", by_alias=True, exclude_none=True),
        "status": status.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    assert workloads_view.placement_cell(item) == "us-a100 0/0 (dispatching suspended)"


def test_a_dependency_shows_where_it_went_and_for_whom_and_missing_ones_are_named() -> None:
    """`propagateDeps`: a ConfigMap no policy selects still runs where its workload does,
    which `get workloads` must not call "kept in the federation only"; and a workload
    whose referenced ConfigMap the federation lacks says so, since its pods will not
    start on a member that lacks it too."""
    needer = "web/Deployment.apps/depsapp"
    dependency = {
        "namespace": "web",
        "name": "appcfg",
        "kind": "ConfigMap",
        "binding": None,
        "federationOnly": True,
        "status": {
            "health": "Healthy",
            "clusters": [{"cluster": "us-east-cpu", "applied": True, "health": "Healthy"}],
            "requiredBy": [needer],
        },
    }
    assert workloads_view.placement_cell(dependency) == (
        f"us-east-cpu 0/0 (a dependency of {needer})"
    )
    assert workloads_view.status(dependency)["federationOnly"] is False
    story = {
        "workload": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "appcfg"}},
        "binding": None,
        "status": dependency["status"],
        "bindingRevision": None,
        "federationOnly": True,
    }
    assert f"Binding:     none (a dependency of {needer})" in workloads_view.describe(story)

    needing = doc(BINDING)
    needing["status"] = {"health": "Healthy", "missingDependencies": ["ml/ConfigMap/absent"]}
    text = workloads_view.describe(needing)
    assert "Missing:     ml/ConfigMap/absent (not in the federation" in text


def test_describe_names_the_affinity_group_a_workload_was_placed_in() -> None:
    """A workload in its fallback group read like any other: which group held it had to be
    worked out from the clusters' labels."""
    plain = workloads_view.describe(doc(BINDING))
    assert "Affinity:" not in plain
    status = BINDING.status.model_copy(update={"scheduler_observing_affinity_name": "dr"})
    grouped = workloads_view.describe(doc(BINDING.model_copy(update={"status": status})))
    assert "Affinity:    group dr (its policy's clusterAffinities group" in grouped


def test_describe_costs_a_finished_job_nothing_more() -> None:
    """It showed the hourly cost a finished job was placed at, where every other view says
    it costs nothing more."""
    done = {**doc(BINDING), "status": {"health": "Healthy", "phase": "Succeeded"}}
    text = workloads_view.describe(done)
    placement = text.splitlines()[text.splitlines().index("Placement:") + 2]
    assert placement.split() == ["us-a100", "1", "nvidia-a100-80gb", "-"]
    assert "Cost:        succeeded: costs nothing more (it was placed at 2.0054/h)" in text
    assert "Cost:" not in workloads_view.describe(doc(BINDING))


def _job_item(name: str, status: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    """A batch/v1 Job's item of the workload view, placed on `a` unless suspended."""
    clusters = [] if extra.get("suspended") else [{"name": "a", "replicas": 2}]
    phase = "Pending" if extra.get("suspended") else "Scheduled"
    return {
        "namespace": "hb",
        "name": name,
        "kind": "Job.batch",
        "binding": {"spec": {"clusters": clusters}, "status": {"phase": phase}},
        "status": status,
        **extra,
    }


def test_get_jobs_shows_completions_and_a_suspended_job_as_kubectl_does() -> None:
    """`fedctl get jobs` showed READY Running where kubectl shows COMPLETIONS 2/4, and a
    suspended Job as HEALTH Unknown where kubectl shows Suspended."""
    running = {"health": "Progressing", "phase": "Running", "running": 2, "succeeded": 2}
    done = {"health": "Completed", "phase": "Succeeded", "succeeded": 1}
    items = [
        _job_item("sweep", running, completions=4, parallelism=2),
        _job_item("once", done, completions=None, parallelism=1),
        _job_item("wide", running, completions=None, parallelism=3),
        _job_item("held", None, completions=8, parallelism=2, suspended=True),
    ]
    header, *rows = workloads_view.table(items, wide=False).splitlines()
    assert header.split()[:5] == ["NAMESPACE", "NAME", "KIND", "HEALTH", "COMPLETIONS"]
    cells = {row.split()[1]: row.split()[3:5] for row in rows}
    assert cells == {
        "sweep": ["Progressing", "2/4"],
        "once": ["Completed", "1/1"],
        "wide": ["Progressing", "2/1"],
        "held": ["Suspended", "0/8"],
    }
    assert "2/1 of 3" in next(r for r in rows if " wide " in r)
    mixed = workloads_view.table([*items, {**items[0], "kind": "Deployment.apps"}], wide=False)
    assert mixed.splitlines()[0].split()[4] == "READY"  # not only Jobs: the usual column


def test_a_job_s_json_status_has_kubernetes_job_fields_beside_fedctl_s() -> None:
    """`fedctl get job failer -o json | jq .status` had no active, succeeded, failed,
    startTime or conditions, so `.status.succeeded` and a wait on condition Failed had
    nothing to read."""
    failed = {
        "type": "Failed",
        "status": "True",
        "reason": "BackoffLimitExceeded",
        "message": "Job has reached the specified backoff limit",
        "lastTransitionTime": "2026-01-01T10:01:00Z",
    }
    status = {
        "health": "Failed",
        "phase": "Failed",
        "running": 0,
        "succeeded": 0,
        "failed": 2,
        "startTime": "2026-01-01T10:00:00Z",
        "conditions": [failed],
    }
    shown = workloads_view.status(_job_item("failer", status, completions=1, parallelism=1))
    assert shown["health"] == "Failed" and shown["queue"] is None  # fedctl's own, kept
    assert {k: shown[k] for k in ("active", "succeeded", "failed", "startTime")} == {
        "active": 0,
        "succeeded": 0,
        "failed": 2,
        "startTime": "2026-01-01T10:00:00Z",
    }
    assert shown["completionTime"] is None
    assert shown["conditions"] == [failed]
    held = workloads_view.status(_job_item("held", None, completions=8, suspended=True))
    assert (held["health"], held["suspended"]) == ("Suspended", True)


def test_describe_gives_a_job_s_times_and_finishing_condition() -> None:
    """`describe` had no start or completion time, and no word of why a Job failed beyond
    its phase."""
    status = {
        "health": "Completed",
        "phase": "Succeeded",
        "succeeded": 4,
        "startTime": "2026-01-01T10:00:00Z",
        "completionTime": "2026-01-01T10:30:00Z",
        "conditions": [{"type": "Complete", "status": "True", "reason": "CompletionsReached"}],
    }
    doc = {"workload": {"kind": "Job", "metadata": {"name": "j"}}, "status": status}
    text = workloads_view.describe(doc)
    assert "Start Time:  2026-01-01T10:00:00Z" in text
    assert "Completed:   2026-01-01T10:30:00Z" in text
    assert "Condition:   Complete=True (CompletionsReached)" in text
    held = workloads_view.describe({**doc, "status": {}, "suspended": True})
    assert "Health:      Suspended" in held


def test_pods_placed_where_no_price_is_known_read_unpriced_not_as_a_finished_job() -> None:
    """An unpriced target's COST/H was `-`, the mark a finished job or a ConfigMap gets."""

    def item(name: str, kind: str, pods: dict[str, str]) -> dict[str, Any]:
        targets = [{"name": "a", "replicas": 2, "chip": "amd64"}]
        spec = {"clusters": targets, "podRequests": pods}
        return {
            "namespace": "team",
            "name": name,
            "kind": kind,
            "binding": {"spec": spec, "status": {"phase": "Scheduled"}},
            "status": {"phase": "Running", "clusters": []},
        }

    items = [item("runs", "Job.batch", {"cpu": "1"}), item("settings", "ConfigMap", {})]
    text = workloads_view.on_cluster(items, "a")
    rows = {line.split()[0]: line.split() for line in text.splitlines()[2:]}
    assert rows["team/Job.batch/runs"][3] == "unpriced"
    assert rows["team/ConfigMap/settings"][3] == "-"
    wide = workloads_view.table(items, wide=True)
    assert wide is not None
    assert [line.split()[-1] for line in wide.splitlines()[1:]] == ["unpriced", "-"]


def test_every_cost_column_names_the_federation_s_currency() -> None:
    """In a federation in EUR, `cluster describe` showed its USD prices beside unlabelled
    workload costs (0.1501, which is 0.1632 USD at 0.92: right, but unreadable as EUR)."""
    target = {"name": "a", "replicas": 6, "chip": "amd64", "hourlyCost": "0.150144"}
    item = {
        "namespace": "web",
        "name": "storefront",
        "kind": "Deployment.apps",
        "binding": {"spec": {"clusters": [target], "podRequests": {"cpu": "1"}}},
        "status": {"clusters": []},
        "currency": "EUR",
    }
    described = workloads_view.on_cluster([item], "a").splitlines()
    assert described[1].split() == ["WORKLOAD", "REPLICAS", "CHIP", "COST/H(EUR)", "READY"]
    assert described[2].split()[3] == "0.1501"
    assert workloads_view.table([item], wide=True).splitlines()[0].split()[-1] == "COST/H(EUR)"
    placement = workloads_view.describe({**doc(BINDING), "currency": "EUR"}).split("Placement")
    assert "COST/H(EUR)" in placement[1].splitlines()[1]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (119, "119s"),
        (150, "2m30s"),
        (540, "9m"),
        (600, "10m"),
        (10799, "179m"),
        (3 * 3600 + 1200, "3h20m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 3599, "47h"),
        (2 * 86400 + 5 * 3600, "2d5h"),
        (12 * 86400, "12d"),
        (800 * 86400, "2y70d"),
        (3000 * 86400, "8y"),
    ],
)
def test_durations_read_as_kubectl_s(seconds: int, shown: str) -> None:
    assert workloads_view.human_duration(seconds) == shown


def test_get_jobs_shows_each_job_s_duration_as_kubectl_does() -> None:
    """kubectl's DURATION: start to completion for a finished Job, start to now for one
    that runs, nothing before it starts; `fedctl get jobs` had no such column."""
    now = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
    done = {
        "health": "Completed",
        "phase": "Succeeded",
        "succeeded": 1,
        "startTime": "2026-05-01T10:00:00Z",
        "completionTime": "2026-05-01T10:02:30Z",
    }
    running = {"health": "Progressing", "phase": "Running", "startTime": "2026-05-01T11:15:00Z"}
    items = [
        _job_item("done", done, completions=1, parallelism=1),
        _job_item("runs", running, completions=4, parallelism=2),
        _job_item("held", None, completions=8, parallelism=2, suspended=True),
    ]
    header, *rows = workloads_view.table(items, wide=False, now=now).splitlines()
    assert header.split()[4:6] == ["COMPLETIONS", "DURATION"]
    assert {row.split()[1]: row.split()[5] for row in rows} == {
        "done": "2m30s",
        "runs": "45m",
        "held": "-",
    }


def _everywhere(members: int, *, failed: str | None = None) -> dict[str, Any]:
    """A Namespace a Duplicated policy sends to `members` clusters, each copy applied but
    `failed`'s."""
    names = [f"m{i:03}" for i in range(members)]
    return {
        "namespace": "_",
        "name": "web",
        "kind": "Namespace",
        "binding": {
            "spec": {"clusters": [{"name": n, "replicas": 0} for n in names]},
            "status": {"phase": "Scheduled"},
        },
        "status": {
            "clusters": [
                {"cluster": n, "applied": n != failed, "replicas": 0}
                | ({"error": "forbidden"} if n == failed else {})
                for n in names
            ]
        },
    }


def test_a_row_for_every_member_names_a_few_and_counts_the_rest() -> None:
    """A Namespace on all 144 members made `get workloads -A` rows of 3,186 characters,
    with `_` for its namespace where kubectl leaves the column empty."""
    header, row = workloads_view.table([_everywhere(144, failed="m100")], wide=False).splitlines()
    assert row.startswith(" " * len("NAMESPACE") + "   web"), row  # no `_`
    clusters = row[header.index("CLUSTERS") :]
    assert (
        clusters == "m000 0/0, m001 0/0, m002 0/0, +141 more (144 clusters, 143 applied, 1 error)"
    )
    wide = workloads_view.table([_everywhere(144)], wide=True)
    assert "m143 0/0" in wide and "more" not in wide, "-o wide names every member"


def test_a_row_within_the_cap_names_every_member() -> None:
    _, row = workloads_view.table([_everywhere(3)], wide=False).splitlines()
    assert row.endswith("m000 0/0, m001 0/0, m002 0/0"), row
