"""`spec.fedctl.arches` holds when chips are listed too: a chip is accepted only on an
accepted arch. A policy with `chips: [ascend-910b, nvidia-a100-80gb], arches: [amd64]`
sent an amd64-only image to arm64 Ascend nodes, and `arches: [arm64]` with a workload
naming `fedctl.io/chips: amd64` placed CPU pods on amd64. `fedctl validate` (and apply,
against the server's profiles and clusters) warns of a listed chip no accepted arch
carries."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from federation.cache import snapshot as snap
from federation.cli import main
from federation.quota.accounting import Usage
from federation.scheduler import claims
from federation.scheduler import framework as fw
from federation.scheduler.plugins import chips
from federation.settings import SchedulerSettings
from policies.loading import load_text
from policies.models.accelerator import AcceleratorProfile
from policies.models.cluster import Cluster
from tests.unit.scheduler.fleet import cluster, flavor, job, placed, run, workload

NPU_AND_GPU = [
    cluster("cn-ascend", flavor(arch="arm64", chip="ascend-910b", devices=8, cpu="96")),
    cluster("us-a100", flavor(chip="nvidia-a100-80gb", devices=8, cpu="96")),
]
CPU_BOTH = [cluster("us-cpu", flavor()), cluster("eu-arm", flavor(arch="arm64"))]


@pytest.mark.parametrize(
    ("chips", "arches", "node", "accepted"),
    [
        pytest.param(("ascend-910b",), ("amd64",), ("ascend-910b", "arm64"), False,
                     id="a listed chip on an arch left out is refused"),
        pytest.param(("ascend-910b",), ("arm64",), ("ascend-910b", "arm64"), True,
                     id="a listed chip on an accepted arch is taken"),
        pytest.param(("ascend-910b",), (), ("ascend-910b", "arm64"), True,
                     id="no arches: any arch"),
        pytest.param(("amd64",), ("arm64",), (None, "amd64"), False,
                     id="a listed arch the policy's arches leave out is refused"),
        pytest.param(("amd64", "arm64"), ("arm64",), (None, "arm64"), True,
                     id="a listed arch among the arches is taken"),
    ],
)  # fmt: skip
def test_a_chip_must_also_be_on_an_accepted_arch(
    chips: tuple[str, ...], arches: tuple[str, ...], node: tuple[str | None, str], accepted: bool
) -> None:
    """`node`: a node flavor's chip (None: CPU nodes, for CPU pods) and arch."""
    chip, arch = node
    device = chip is not None
    devices = frozenset({"nvidia.com/gpu"}) if device else frozenset()
    assert fw.chip_suits(chips, arches, device, devices, chip=chip, arch=arch) is accepted


def test_a_gpu_job_limited_to_amd64_skips_the_arm64_ascend_nodes() -> None:
    fedctl: dict[str, Any] = {"chips": ["ascend-910b", "nvidia-a100-80gb"], "arches": ["amd64"]}
    result = run(NPU_AND_GPU, [job(workload("conflict", cpu="4", gpus=1), fedctl=fedctl)])
    assert placed(result) == {"conflict": {"us-a100": 1}}
    [binding] = result.bindings
    assert [t.chip for t in binding.spec.clusters] == ["nvidia-a100-80gb"]


def test_cpu_pods_whose_chips_and_arches_meet_nowhere_wait_and_say_why() -> None:
    w = workload("archann", cpu="2", chips="amd64")
    result = run(CPU_BOTH, [job(w, fedctl={"arches": ["arm64"]})])
    assert placed(result) == {}
    reason = result.reasons["team/Job.batch/archann"]
    assert "2 filtered by chips" in reason, reason


@pytest.mark.parametrize(
    ("c", "w", "fedctl", "reason"),
    [
        pytest.param(CPU_BOTH[0], workload("w", chips="amd64"), {"arches": ["arm64"]},
                     "no node flavor with amd64 on arm64 (has amd64)",
                     id="CPU pods: the chips and the arches are both named"),
        pytest.param(NPU_AND_GPU[0], workload("w", gpus=1),
                     {"chips": ["ascend-910b"], "arches": ["amd64"]},
                     "no node flavor with ascend-910b on amd64 (has ascend-910b on arm64)",
                     id="device pods: the chip's arch is shown"),
    ],
)  # fmt: skip
def test_a_cluster_turned_down_for_its_arch_says_so(
    c: Cluster, w: Any, fedctl: dict[str, Any], reason: str
) -> None:
    s = snap.build([c])
    state = fw.CycleState(s, Usage(), SchedulerSettings())
    request = fw.request_for(
        job(w, fedctl=fedctl), settings=SchedulerSettings(), device_resources=s.device_resources
    )
    assert chips.Chips().filter(request, s.clusters[0], state).reasons == (reason,)


def _findings(text: str) -> list[str]:
    return [str(f) for f in load_text(textwrap.dedent(text), filename="k.yaml").findings]


POLICY = """\
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {name: train, namespace: ml}
spec:
  resourceSelectors: [{apiVersion: batch/v1, kind: Job}]
  fedctl:
    chips: [ascend-910b, nvidia-a100-80gb, arm64]
    arches: [amd64]
"""
PROFILES = """\
---
apiVersion: fedctl.io/v1alpha1
kind: AcceleratorProfile
metadata: {name: nvidia-a100-80gb}
spec: {arch: amd64, resourceName: nvidia.com/gpu}
---
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata: {name: cn-north-ascend}
spec:
  region: cn-north
  chips: [{model: ascend-910b, arch: arm64, count: 8}]
"""


def test_validate_warns_of_a_chip_no_accepted_arch_carries() -> None:
    assert _findings(POLICY + PROFILES) == [
        "k.yaml:7:13: spec.fedctl.chips[0]: warning: chip 'ascend-910b' is on arm64 nodes"
        " (Cluster cn-north-ascend), and spec.fedctl.arches accepts only amd64: it is never"
        " chosen",
        "k.yaml:7:44: spec.fedctl.chips[2]: warning: chip 'arm64' is on arm64 nodes, and"
        " spec.fedctl.arches accepts only amd64: it is never chosen",
    ]


def test_apply_judges_the_chips_against_the_servers_profiles() -> None:
    result = load_text(POLICY.replace(", arm64]", "]"), filename="k.yaml")
    assert [str(f) for f in result.findings if "never chosen" in str(f)] == []
    fleet = [
        AcceleratorProfile.model_validate(
            {
                "metadata": {"name": "ascend-910b"},
                "spec": {"arch": "arm64", "resourceName": "huawei.com/Ascend910"},
            }
        ),
        Cluster.model_validate({"metadata": {"name": "x"}, "spec": {"region": "r"}}),
    ]
    judged = [str(f) for f in result.against_fleet(fleet).findings if "never chosen" in str(f)]
    assert judged == [
        "k.yaml:7:13: spec.fedctl.chips[0]: warning: chip 'ascend-910b' is on arm64 nodes"
        " (AcceleratorProfile ascend-910b), and spec.fedctl.arches accepts only amd64: it is"
        " never chosen"
    ]


ARCHANN = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: archann
  namespace: ml
  annotations: {fedctl.io/chips: amd64}
spec:
  template:
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
---
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {name: archann, namespace: ml}
spec:
  resourceSelectors: [{apiVersion: batch/v1, kind: Job, name: archann}]
  fedctl: {arches: [arm64]}
"""
ARCHANN_WARNING = (
    "k.yaml:6:34: metadata.annotations[\"fedctl.io/chips\"]: warning: chip 'amd64' is on"
    " amd64 nodes, and PropagationPolicy ml/archann, which claims this workload, accepts"
    " only arches arm64: it is never chosen"
)


def test_a_workloads_chip_its_policys_arches_leave_out_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = load_text(ARCHANN, filename="k.yaml")
    assert [str(f) for f in claims.chip_findings(result)] == [ARCHANN_WARNING]
    assert ARCHANN_WARNING in [str(f) for f in claims.against(result, []).findings]
    path = tmp_path / "k.yaml"
    path.write_text(ARCHANN, encoding="utf-8")
    main.main(["validate", "-f", str(path)])
    assert ARCHANN_WARNING.replace("k.yaml", str(path)) in capsys.readouterr().out
