"""`fedctl plan`: offline what-if placement from files against a simulator profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from federation.cli import main
from federation.scheduler import explain, offline, plan

PROFILE = """
clusters:
  - name: us-a100
    region: us-east
    zone: us-east-1a
    provider: aws
    nodePools:
      - {name: gpu, count: 1, arch: amd64, cpu: "96", memory: 1152Gi,
         accelerators: [{model: nvidia-a100-80gb, resourceName: nvidia.com/gpu, countPerNode: 8}]}
    prices:
      onDemand: {cpuCoreHour: 0.05, memoryGiBHour: 0.005, acceleratorHour: {nvidia-a100-80gb: 3.0}}
  - name: bj-npu-1
    region: cn-north
    nodePools:
      - {name: npu, count: 1, arch: arm64, cpu: "192", memory: 1536Gi,
         accelerators: [{model: ascend-910b, resourceName: huawei.com/Ascend910, countPerNode: 8}]}
    prices:
      onDemand: {cpuCoreHour: 0.03, memoryGiBHour: 0.004, acceleratorHour: {ascend-910b: 2.0}}
generate:
  - namePrefix: cpu
    count: 2
    regions: [{region: eu-west, zones: [eu-west-1a]}]
    templates:
      - nodePools: [{name: m, count: 2, arch: amd64, cpu: "16", memory: 64Gi}]
        prices: {onDemand: {cpuCoreHour: 0.04, memoryGiBHour: 0.005}}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  annotations: {fedctl.io/expected-duration: 2h}
spec:
  template:
    spec:
      containers:
        - name: t
          image: trainer
          resources: {requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "8"}}
"""

POLICY = """
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {name: train, namespace: ml}
spec:
  resourceSelectors: [{apiVersion: batch/v1, kind: Job, name: train}]
  placement:
    clusterAffinity: {exclude: [cpu-001]}
  fedctl:
    chips: [nvidia-a100-80gb, ascend-910b]
"""

TOO_BIG = JOB.replace("name: train", "name: huge").replace(
    'nvidia.com/gpu: "8"', 'nvidia.com/gpu: "16"'
)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {"profile": PROFILE, "job": JOB, "policy": POLICY, "huge": TOO_BIG}.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_text(text)
    return out


def test_profile_is_read_without_the_simulator(files: dict[str, Path]) -> None:
    clusters = offline.load(files["profile"])
    assert [c.name for c in clusters] == ["us-a100", "bj-npu-1", "cpu-000", "cpu-001"]
    gpu = clusters[0].status
    assert (
        gpu is not None and gpu.ready() and gpu.flavors[0].accelerator_model == "nvidia-a100-80gb"
    )
    assert clusters[2].spec.zone == "eu-west-1a"


def test_plan_text_lists_every_cluster_then_division_chip_and_cost(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main.main(
        [
            "plan",
            "-f",
            str(files["job"]),
            "-f",
            str(files["policy"]),
            "--clusters",
            str(files["profile"]),
            "-v",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "workload ml/Job.batch/train  policy: train"
    assert any(
        line.split()[:2] == ["cpu-001", "unschedulable"] and "affinity: excluded by name" in line
        for line in lines
    )
    assert any(
        line.split()[:2] == ["cpu-000", "unschedulable"] and "chips: no node flavor" in line
        for line in lines
    )
    assert any(line.split()[:2] == ["us-a100", "ok"] and "cost=" in line for line in lines)
    assert "place 1 replica(s) on" in out and "total cost" in out


def test_plan_text_lists_the_clusters_that_pass_and_counts_the_others_by_filter(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every cluster's row took 153 lines a workload at 144 members, most of them the same
    refusal: by default the rows are the clusters that pass, the rest one line, as
    `fedctl describe` counts them."""
    args = ["-f", str(files["job"]), "-f", str(files["policy"])]
    code = main.main(["plan", *args, "--clusters", str(files["profile"])])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert sorted(line.split()[0] for line in lines[2:4]) == ["bj-npu-1", "us-a100"]
    assert all(line.split()[1] == "ok" for line in lines[2:4])
    assert not any("unschedulable" in line for line in lines)
    assert "  Filtered: 2 more clusters (1 by affinity, 1 by chips); -v lists each" in lines


def test_a_note_every_selected_cluster_carries_is_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text(TWO_SMALL)
    service = tmp_path / "web.yaml"
    service.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\n"
        "spec:\n  replicas: 4\n  template:\n    spec:\n      containers:\n"
        "        - {name: c, image: nginx, resources: {requests: {cpu: '1'}}}\n"
        "---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata: {name: web, namespace: web}\n"
        "spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n"
        "  placement:\n    replicaScheduling: {replicaSchedulingType: Divided,"
        " replicaDivisionPreference: Weighted,"
        " weightPreference: {dynamicWeight: AvailableReplicas}}\n"
    )
    code = main.main(["plan", "-f", str(service), "--clusters", str(profile)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("dynamic weights: replicas shared") == 1
    assert f"  selected clusters: {explain.DYNAMIC}" in out.splitlines()
    assert out.count("<- selected") == 2


def test_plan_says_where_the_policy_names_a_member_the_profile_lacks(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Editing a policy, a misspelt member is what plan is run to catch: the exclusion of
    `cpu-01` (not `cpu-001`) excludes nothing, and plan says so on stderr, at the name."""
    files["policy"].write_text(POLICY.replace("exclude: [cpu-001]", "exclude: [cpu-01]"))
    args = ["-f", str(files["job"]), "-f", str(files["policy"])]
    code = main.main(["plan", *args, "--clusters", str(files["profile"])])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err.splitlines() == [
        f"{files['policy']}:8:33: spec.placement.clusterAffinity.exclude[0]: warning: cluster"
        " 'cpu-01' is not joined (did you mean 'cpu-001'?): nothing is placed there, or taken"
        " from there, until a cluster of that name joins"
    ]
    assert captured.out.startswith("workload ml/Job.batch/train  policy: train")


def test_plan_json_and_pending_exit_code(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main.main(
        ["plan", "-f", str(files["huge"]), "--clusters", str(files["profile"]), "-o", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == plan_cmd_pending()
    [entry] = doc
    assert entry["scheduled"] is False and entry["policy"] is None
    # The plan API's wire form (tests/e2e/test_plan_api.py), so scripts read both modes alike.
    assert set(entry) == {
        "workload",
        "policy",
        "scheduled",
        "placement",
        "chips",
        "costs",
        "totalCost",
        "expectedHours",
        "expectedCost",
        "reason",
        "preempts",
        "verdicts",
        "currency",
        "podCosts",
    }
    assert entry["reason"] == (
        "no eligible cluster has a node with 16 nvidia.com/gpu even when empty; the largest,"
        " on us-a100, has 8: shrink the request or add larger nodes"
    )
    assert {c["cluster"]: c["plugin"] for c in entry["verdicts"]}["us-a100"] == "capacity"


def test_plan_refuses_a_queue_that_takes_no_work_once_queues_are_given(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the cycle does; with no Queue file at all, where the work would go is still
    answered (the job names no queue that exists there either)."""
    typo = tmp_path / "typo.yaml"
    typo.write_text(JOB.replace("annotations: {", "annotations: {fedctl.io/queue: ml-prd, "))
    queues = tmp_path / "queues.yaml"
    queues.write_text(
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: ml}\n---\n"
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: ml-prod}\n"
        "spec: {parent: ml}\n"
    )
    args = ["plan", "-f", str(typo), "--clusters", str(files["profile"]), "-o", "json"]
    assert main.main(args) == 0
    assert json.loads(capsys.readouterr().out)[0]["scheduled"] is True
    assert main.main([*args, "-f", str(queues)]) == plan_cmd_pending()
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["reason"] == (
        "queue ml-prd is not defined (queues that take work: ml-prod): create it or correct"
        " the workload's fedctl.io/queue"
    )
    assert {c["cluster"] for c in entry["verdicts"]} == {
        "us-a100",
        "bj-npu-1",
        "cpu-000",
        "cpu-001",
    }


def plan_cmd_pending() -> int:
    from federation.cli import plan_cmd

    return plan_cmd.EXIT_PENDING


def test_plan_live_without_a_controller_is_one_clear_line(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from federation.registry.embedded import free_port

    server = f"http://127.0.0.1:{free_port()}"
    assert main.main(["plan", "-f", str(files["job"]), "--live", "--server", server]) == 1
    assert f"no fedctl controller at {server}" in capsys.readouterr().err


def test_claim_prefers_namespaced_then_priority_then_specific_selector() -> None:
    from policies.loading import load_text

    docs = load_text(
        JOB
        + "---"
        + POLICY
        + """---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everything}
spec:
  priority: 100
  resourceSelectors: [{apiVersion: batch/v1, kind: Job}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: all-jobs, namespace: ml}
spec:
  priority: 5
  resourceSelectors: [{apiVersion: batch/v1, kind: Job}]
"""
    )
    models = [o.model for o in docs.objects]
    workload, policies = models[0], models[1:]
    chosen = plan.claim(workload, policies)  # type: ignore[arg-type]
    assert chosen is not None and chosen.metadata.name == "all-jobs"  # namespaced, higher priority
    same_priority = [p for p in policies if p.metadata.name != "all-jobs"]
    chosen = plan.claim(workload, same_priority)  # type: ignore[arg-type]
    assert chosen is not None and chosen.metadata.name == "train"


def test_offline_plan_of_the_examples_against_the_demo_profile_finds_their_apis_served(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The demo fleet serves Volcano Jobs and PyTorchJobs; the offline profile must too, or
    `plan --clusters` would contradict `plan --live` for the research examples."""
    root = Path(__file__).resolve().parents[3]
    examples = root / "policies" / "examples"
    main.main(
        [
            "plan",
            *("-f", str(examples / "research-jobs.yaml")),
            *("-f", str(examples / "accelerators.yaml")),
            *("-f", str(examples / "queues.yaml")),
            *("--clusters", str(root / "clusters" / "sim" / "profiles" / "demo.yaml")),
            *("-o", "json"),
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc, "the examples hold workloads to plan"
    for entry in doc:
        for verdict in entry["verdicts"]:
            assert verdict.get("plugin") != "api-enablement", (entry["workload"], verdict)


def test_plan_names_the_chip_the_binding_records_on_a_member_of_two_arches() -> None:
    """A CPU service on a member with x86 and Arm nodes runs on the arch of the nodes its
    pods took, which its Binding records (and the propagator pins). `fedctl plan` said
    "chip any" for it while the controller wrote amd64."""
    from federation.cache import snapshot as snap
    from federation.quota.accounting import Usage
    from federation.scheduler import cycle
    from federation.settings import SchedulerSettings
    from tests.unit.scheduler import fleet

    mixed = fleet.cluster("mixed", fleet.flavor(arch="amd64"), fleet.flavor(arch="arm64"))
    other = fleet.cluster("other", fleet.flavor(arch="amd64"))
    weighted = {
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": [name]}, "weight": 1}
                    for name in ("mixed", "other")
                ]
            },
        }
    }
    web = fleet.job(fleet.workload("web", kind="Deployment", replicas=4), placement=weighted)
    result = fleet.run([mixed, other], [web])
    (binding,) = [b for b in result.bindings if b.spec.workload.name == "web"]
    written = {t.name: t.chip for t in binding.spec.clusters}
    assert written["mixed"] in {"amd64", "arm64"}
    scheduler = cycle.Scheduler(SchedulerSettings())
    planned = scheduler.plan(web, snap.build([mixed, other]), Usage())
    assert planned.chips == written


TWO_SMALL = """
generate:
  - namePrefix: small
    count: 2
    regions: [{region: eu-west, zones: [eu-west-1a]}]
    templates:
      - nodePools: [{name: m, count: 1, arch: amd64, cpu: "16", memory: 64Gi}]
"""


def _batch_job(name: str) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: ml}}
spec:
  template:
    spec:
      containers:
        - {{name: t, image: trainer, resources: {{requests: {{cpu: "12", memory: 8Gi}}}}}}
"""


def test_workloads_in_one_plan_count_what_the_ones_before_them_take(tmp_path: Path) -> None:
    """Three 12-CPU jobs on two 16-CPU clusters: one each, then the third waits, as the
    controller would admit them; planned each against the empty fleet, all three landed on
    the same cluster."""
    profile = tmp_path / "profile.yaml"
    profile.write_text(TWO_SMALL)
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("---".join(_batch_job(n) for n in ("first", "second", "third")))
    planned = plan.plan_files([jobs], profile=profile)
    placements = [dict(p.plan.placement) for p in planned]
    assert sorted(placements[0]) != sorted(placements[1])
    assert {*placements[0], *placements[1]} == {"small-000", "small-001"}
    assert placements[2] == {}
    assert "cpu" in planned[2].plan.reason
