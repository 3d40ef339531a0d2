"""How `fedctl` reports bad input: every finding of an `errors.Invalid` on its own line,
`FILE:LINE:COL: field: problem`, then the error itself; for every command, not only plan."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from federation import errors
from federation.cli import main, policy_cmd

DEMO = Path(__file__).resolve().parents[3] / "clusters" / "sim" / "profiles" / "demo.yaml"

BAD_CHIP = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  annotations:
    fedctl.io/expected-duration: 2h
    fedctl.io/chips: "Nvidia_A100"
spec:
  template:
    spec:
      containers:
        - {name: t, image: trainer, resources: {requests: {cpu: "8"}}}
"""


def test_plan_of_a_workload_with_a_bad_chip_prints_where_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit: this printed only `fedctl: invalid input`."""
    path = tmp_path / "unkchip.yaml"
    path.write_text(BAD_CHIP)
    code = main.main(["plan", "-f", str(path), "--clusters", str(DEMO)])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        f'{path}:8:22: metadata.annotations["fedctl.io/chips"]: annotation fedctl.io/chips:'
        " invalid chip model 'Nvidia_A100': use lower-case letters, digits, '-' and '.',"
        " e.g. nvidia-a100-80gb, ascend-910b, arm64",
        "fedctl: invalid input",
    ]


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        pytest.param(
            errors.Invalid("2 error(s) in the input", findings=["a.yaml:3:7: x: bad", "b.yaml: y"]),
            ["a.yaml:3:7: x: bad", "b.yaml: y", "fedctl: 2 error(s) in the input"],
            id="findings one a line, then the error",
        ),
        pytest.param(
            errors.Invalid("cluster join NAME needs --region"),
            ["fedctl: cluster join NAME needs --region"],
            id="an Invalid without findings is one line, not two",
        ),
        pytest.param(
            errors.Invalid("invalid settings: A: bad; B: worse", findings=["A: bad", "B: worse"]),
            ["fedctl: invalid settings: A: bad; B: worse"],
            id="findings the message already joins are not repeated",
        ),
    ],
)
def test_any_command_prints_the_findings_of_bad_input(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    raised: errors.Invalid,
    expected: list[str],
) -> None:
    def refuse(args: argparse.Namespace) -> int:
        raise raised

    monkeypatch.setattr(policy_cmd, "_validate", refuse)  # `validate`, a command besides plan
    assert main.main(["validate", "-f", "anything.yaml"]) == 1
    assert capsys.readouterr().err.splitlines() == expected


def test_rebalance_of_a_bare_workload_name_says_how_to_name_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said `not found: placed workload nope`, as if nothing by that name ran."""
    monkeypatch.setenv("FEDCTL_ETCD", "http://127.0.0.1:9")  # never reached: refused first
    assert main.main(["rebalance", "--workload", "shop", "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "--workload 'shop': give it as NS/NAME (or NS/Kind.group/NAME)" in err


MISNAMED_CONTAINER = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: nginx, resources: {requests: {cpu: 100m}}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: args, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
    - overriders:
        argsOverrider:
          - {containerName: web, operator: add, value: ["--verbose"]}
          - {containerName: wbe, operator: add, value: ["--debug"]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: other, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: api}]
  overriders:
    commandOverrider:
      - {containerName: wbe, operator: add, value: ["x"]}
"""


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_an_args_edit_naming_no_container_of_its_workload_is_warned_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """`fedctl apply` noted it (the API judges stored workloads); validate and the offline
    plan, which have only the files, said nothing. A policy selecting no workload in the
    files is not judged (its workload may be stored already)."""
    path = tmp_path / "ov.yaml"
    path.write_text(MISNAMED_CONTAINER)
    args = ["validate", "-f", str(path)]
    if command == "plan":
        args = ["plan", "-f", str(path), "--clusters", str(DEMO)]
    assert main.main(args) == 0
    out = capsys.readouterr()
    warned = [line for line in (out.out + out.err).splitlines() if "containerName" in line]
    assert warned == [
        f"{path}:22:29: spec.overrideRules[0].overriders.argsOverrider[1].containerName:"
        " warning: argsOverrider containerName 'wbe' matches no container of Deployment"
        " shop/web (its containers: web): the edit does nothing there"
    ]
