"""`fedctl plan --live` with bad or empty input: the files are checked here, each under its
own name, before anything is sent, so every finding names the real file and line; files
with nothing to plan say so, as the offline plan does. The controller is the real API over
an in-memory registry holding cluster a."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from federation.cli import main
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from federation.scheduler import offline
from policies.models.cluster import ClusterStatus
from tests.integration.test_scheduler_loop import registry_with_member
from tests.serving import api_server
from tests.unit.scheduler import fleet

pytestmark = pytest.mark.integration

DEMO = Path(__file__).resolve().parents[2] / "clusters" / "sim" / "profiles" / "demo.yaml"

BAD_CHIP = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team
  annotations:
    fedctl.io/expected-duration: 2h
    fedctl.io/chips: "Nvidia_A100"
spec:
  template:
    spec:
      containers:
        - {name: t, image: trainer, resources: {requests: {cpu: "8"}}}
"""
CHIP_FINDING = (
    ':8:22: metadata.annotations["fedctl.io/chips"]: annotation fedctl.io/chips: invalid chip'
    " model 'Nvidia_A100': use lower-case letters, digits, '-' and '.', e.g."
    " nvidia-a100-80gb, ascend-910b, arm64"
)
QUEUE_ONLY = "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: ops}\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def plan(*args: str) -> int:
    return await asyncio.to_thread(main.main, ["plan", *args])


async def test_a_finding_names_its_own_file_and_line_not_the_joined_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit: `-f huge.yaml -f unkchip.yaml` reported `<editor>:32:22`."""
    huge = write(tmp_path / "huge.yaml", json.dumps(fleet.workload("huge").to_wire(), indent=2))
    bad = write(tmp_path / "unkchip.yaml", BAD_CHIP)
    store, _ = await registry_with_member()
    async with api_server(store) as server:
        code = await plan("--live", "-f", str(huge), "-f", str(bad), "--server", server)
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{bad}{CHIP_FINDING}",
        "fedctl: 1 error(s) in the input; nothing was planned",
    ]


async def test_a_directory_reports_every_file_s_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Joined, the first file's YAML error hid everything after it."""
    broken = write(tmp_path / "jobs" / "a.yaml", "kind: Job\n  metadata: {name: x}\n")
    bad = write(tmp_path / "jobs" / "b.yaml", BAD_CHIP)
    store, _ = await registry_with_member()
    async with api_server(store) as server:
        code = await plan("--live", "-f", str(tmp_path / "jobs"), "--server", server)
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err[:-1]] == [str(broken), str(bad)]
    assert err[0].startswith(f"{broken}:2:11: invalid YAML:")
    assert err[1] == f"{bad}{CHIP_FINDING}"
    assert err[-1] == "fedctl: 2 error(s) in the input; nothing was planned"


@pytest.mark.parametrize("where", ["--live", "--clusters"])
async def test_files_without_a_workload_say_so_live_as_offline(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Live printed a blank plan and exit 3; offline says there is nothing to plan."""
    ops = write(tmp_path / "op.yaml", QUEUE_ONLY)
    store, _ = await registry_with_member()
    async with api_server(store) as server:
        fleet_args = ["--live", "--server", server] if where == "--live" else [where, str(DEMO)]
        code = await plan("-f", str(ops), *fleet_args)
    captured = capsys.readouterr()
    assert code == 1
    assert "workload" not in captured.out
    assert captured.err.splitlines()[-1] == (
        "fedctl: no workload with pods in the given files (Deployment, Job, ...)"
    )


async def test_a_policy_alone_still_plans_the_registry_workloads_it_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No workload in the files is not always nothing to plan: the controller plans the
    workloads a proposed policy would claim."""
    small = fleet.workload("small", cpu="2")
    store, _ = await registry_with_member()
    await codec.TypedStore(store, objects.ObjectCodec()).put(objects.key_for(small), small)
    policy = write(
        tmp_path / "policy.yaml",
        "apiVersion: fedctl.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata: {name: small, namespace: team}\n"
        "spec:\n  resourceSelectors: [{apiVersion: batch/v1, kind: Job, name: small}]\n"
        "  placement: {spreadConstraints: [{spreadByField: region, minGroups: 2}]}\n",
    )
    async with api_server(store) as server:
        code = await plan("--live", "-f", str(policy), "--server", server)
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, out
    # The loader's warnings are said live too (a Job goes whole to one region).
    assert "spreadConstraints[0].minGroups: warning: not applied to the Jobs" in captured.err
    assert "workload team/Job.batch/small  policy: small" in out
    assert "place 1 replica(s) on a" in out


def deployment(name: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: web}}
spec:
  replicas: 4
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def policy(name: str, placement: str) -> str:
    return f"""\
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: web}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: {name}}}]
  placement:
{placement}"""


def in_region(region: str) -> str:
    return (
        "    clusterAffinity:\n      fieldSelector:\n"
        f"        matchExpressions: [{{key: region, operator: In, values: [{region}]}}]\n"
    )


EAST = in_region("us-east")
FLEET_JUDGED = {
    # Region and label that no demo member has: nothing can place it.
    "ghost.yaml": deployment("ghost")
    + policy(
        "ghost",
        in_region("us-west") + "      labelSelector: {matchLabels: {tier: nonexistent}}\n",
    ),
    # Two regions wanted of the one region it may use.
    "east.yaml": deployment("east")
    + policy("east", EAST + "    spreadConstraints: [{spreadByField: region, minGroups: 2}]\n"),
    # The same spread, ignored: divided with no weightPreference (equal static weights).
    "divided.yaml": deployment("divided")
    + policy(
        "divided",
        EAST + "    replicaScheduling: {replicaSchedulingType: Divided}\n"
        "    spreadConstraints:\n"
        "      - {spreadByField: region, minGroups: 2}\n"
        "      - {spreadByField: cluster, minGroups: 5}\n",
    ),
}


async def registry_of(profile: Path) -> MemoryStore:
    """A registry holding every cluster of a simulator profile, joined and Ready."""
    store = MemoryStore()
    clusters = codec.TypedStore(store, objects.ObjectCodec())
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    for cluster in offline.load(profile):
        assert cluster.status is not None
        name = cluster.metadata.name
        await clusters.put(keys.cluster_key(name), cluster.model_copy(update={"status": None}))
        await statuses.put(keys.cluster_status_key(name), cluster.status)
    return store


@pytest.mark.parametrize("how", ["plan --live", "plan --clusters", "apply --dry-run"])
async def test_what_the_fleet_decides_is_warned_live_as_offline_and_at_apply(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The live plan printed only the loader's own warnings: an affinity no live member
    matches and a spread they cannot form, which the offline plan and `apply` judge from
    the fleet, went unsaid. Each path judges them against its fleet (the live one holds
    the demo profile's clusters) and says the same, at the same file and line; the spread
    the division ignores is said to be ignored, and nothing more."""
    paths = [write(tmp_path / name, text) for name, text in FLEET_JUDGED.items()]
    files = [arg for path in paths for arg in ("-f", str(path))]
    store = await registry_of(DEMO)
    async with api_server(store) as server:
        live = ["--server", server]
        args = {
            "plan --live": ["plan", *files, "--live", *live],
            "plan --clusters": ["plan", *files, "--clusters", str(DEMO)],
            "apply --dry-run": ["apply", "--dry-run", *files, *live],
        }[how]
        await asyncio.to_thread(main.main, args)
    warned = [line for line in capsys.readouterr().err.splitlines() if ": warning: " in line]
    regions = "ap-southeast, cn-north, eu-west, us-east"
    assert warned == [
        # The loader's own notice first, then what the fleet decides.
        f"{paths[2]}:22:5: spec.placement.spreadConstraints: warning: ignored: replicas are"
        " divided as Karmada divides without a weightPreference (equal static weights), which"
        " ignores spread constraints",
        f"{paths[0]}:18:5: spec.placement.clusterAffinity: warning: none of the 8 joined"
        f" clusters matches this affinity (regions here: {regions}; labels here: tier=general,"
        " tier=inference, tier=training): the workloads it claims stay Pending until one does",
        f"{paths[1]}:21:60: spec.placement.spreadConstraints[0].minGroups: warning: minGroups 2,"
        " but the joined clusters this policy may use span 1 regions (us-east): the workloads"
        " it claims stay Pending until more join",
    ]


PRICED_TO_MANY_DIGITS = """\
clusters:
  - name: east
    region: us-east
    nodePools: [{name: m, count: 2, arch: amd64, cpu: "16", memory: 64Gi}]
    prices: {onDemand: {cpuCoreHour: "0.02830", memoryGiBHour: "0.0064000"}}
  - name: eu-west-with-a-long-name
    region: eu-west
    nodePools: [{name: m, count: 1, arch: amd64, cpu: "4", memory: 16Gi}]
"""


async def test_a_live_plan_reads_as_the_offline_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Live text had no header row, its own column widths and policy label, and costs as
    the wire's exact strings (`0.0347000`), where the offline plan shows four decimals:
    the two modes now print the same lines for the same fleet, the live one after the
    line saying what it counts."""
    profile = write(tmp_path / "profile.yaml", PRICED_TO_MANY_DIGITS)
    jobs = [
        write(tmp_path / f"{w.metadata.name}.yaml", json.dumps(w.to_wire()))
        for w in (fleet.workload("small", cpu="1"), fleet.workload("huge", cpu="999"))
    ]
    files = [arg for path in jobs for arg in ("-f", str(path))]
    store = await registry_of(profile)
    async with api_server(store) as server:
        live = await plan(*files, "--live", "--server", server)
    live_out = capsys.readouterr().out
    offline = await plan(*files, "--clusters", str(profile))
    offline_out = capsys.readouterr().out
    assert live == offline == 3
    lead, blank, *rest = live_out.splitlines()
    assert lead.startswith("live: counting what 0 admitted workload(s) hold")
    assert blank == ""
    # The same plans, in the order each mode lists workloads (live: by registry key).
    assert sorted("\n".join(rest).split("\n\n")) == sorted(offline_out.rstrip().split("\n\n"))
    small = next(p for p in offline_out.split("\n\n") if "team/Job.batch/small" in p)
    assert small.splitlines() == [
        "workload team/Job.batch/small  policy: (none: best single cluster)",
        "  CLUSTER                   VERDICT        SCORE  DETAILS",
        "  east                      ok                57  cost=100 binpack=0 locality=0"
        " affinity=100  pod 0.0347 USD/h  <- selected",
        "  eu-west-with-a-long-name  ok                14  cost=0 binpack=0 locality=0"
        " affinity=100  unpriced",
        "  place 1 replica(s) on east  chip amd64  cost 0.0347 USD/h",
        "  total cost 0.0347 USD/h",
    ]


async def test_a_live_plan_shows_the_files_workloads_and_counts_the_others_it_replans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy file re-plans every stored workload it claims: for 520 of them a plan of
    two printed 79,000 lines. The files' workloads are shown, the others counted in one
    line; `--all-workloads` shows them, and `-o json` holds them all."""
    store, _ = await registry_with_member()
    stored = codec.TypedStore(store, objects.ObjectCodec())
    for name in ("other-1", "other-2"):
        other = fleet.workload(name, cpu="1")
        await stored.put(objects.key_for(other), other)
    mine = write(tmp_path / "mine.yaml", json.dumps(fleet.workload("mine", cpu="1").to_wire()))
    claims_all = write(
        tmp_path / "policy.yaml",
        "apiVersion: fedctl.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata: {name: every-job, namespace: team}\n"
        "spec:\n  resourceSelectors: [{apiVersion: batch/v1, kind: Job}]\n",
    )
    files = ["-f", str(claims_all), "-f", str(mine)]
    async with api_server(store) as server:
        code = await plan(*files, "--live", "--server", server)
        out = capsys.readouterr().out
        every = await plan(*files, "--live", "--server", server, "--all-workloads")
        every_out = capsys.readouterr().out
        await plan(*files, "--live", "--server", server, "-o", "json")
        doc = json.loads(capsys.readouterr().out)
    assert code == every == 0
    assert [line for line in out.splitlines() if line.startswith("workload ")] == [
        "workload team/Job.batch/mine  policy: every-job"
    ]
    assert out.rstrip().splitlines()[-1] == (
        "also re-planned: 2 other stored workload(s) the files' policies or queues claim"
        " (0 would change placement, 0 would wait); --all-workloads shows them"
    )
    assert sorted(line for line in every_out.splitlines() if line.startswith("workload ")) == [
        f"workload team/Job.batch/{name}  policy: every-job"
        for name in ("mine", "other-1", "other-2")
    ]
    assert "also re-planned" not in every_out
    assert sorted(p["workload"] for p in doc) == [
        f"team/Job.batch/{name}" for name in ("mine", "other-1", "other-2")
    ]
