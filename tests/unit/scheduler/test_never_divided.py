"""A policy dividing by weight that claims a job never divided says so at apply and
validate, at the line of its replica scheduling.

Why: such a job (an Indexed Job, a job of several roles) goes whole to one member, which a
user reading a policy that divides would not guess; a PyTorchJob divided 1:1 once gave one
member workers with no master.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.cli import main
from federation.scheduler import claims
from policies.loading import load_text

POLICY = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: split, namespace: ml}
spec:
  resourceSelectors:
    - {apiVersion: batch/v1, kind: Job}
    - {apiVersion: kubeflow.org/v1, kind: PyTorchJob}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
"""
POD = "{spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}}"
PYTORCH = f"""\
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: ptd, namespace: ml}}
spec:
  pytorchReplicaSpecs:
    Master: {{replicas: 1, template: {POD}}}
    Worker: {{replicas: 4, template: {POD}}}
"""
INDEXED = f"""\
---
apiVersion: batch/v1
kind: Job
metadata: {{name: indexed, namespace: ml}}
spec: {{completionMode: Indexed, parallelism: 3, completions: 6, template: {POD}}}
"""
PLAIN = INDEXED.replace("indexed", "plain").replace("completionMode: Indexed, ", "")
AT = "k.yaml:9:5: spec.placement.replicaScheduling: warning: PropagationPolicy ml/split"


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        pytest.param(
            PYTORCH,
            [
                f"{AT} divides by weight, but PyTorchJob ml/ptd is a job of several roles"
                " (Master, Worker; a member's share could lack one of them): it is never"
                " divided, it goes whole to one cluster"
            ],
            id="a pytorchjob with a master",
        ),
        pytest.param(
            INDEXED,
            [
                f"{AT} divides by weight, but Job ml/indexed is an Indexed Job (each member's"
                " copy would number its indexes from 0): it is never divided, it goes whole"
                " to one cluster"
            ],
            id="an indexed job",
        ),
        pytest.param(PLAIN, [], id="a plain job is divided: nothing to say"),
    ],
)
def test_a_dividing_policy_warns_of_the_jobs_it_never_divides(
    docs: str, expected: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = load_text(POLICY + docs, filename="k.yaml")
    assert [str(f) for f in claims.division_findings(result)] == expected
    judged = [str(f) for f in claims.against(result, []).findings]  # apply, plan
    assert [f for f in judged if "never divided" in f] == expected
    path = tmp_path / "k.yaml"
    path.write_text(POLICY + docs, encoding="utf-8")
    main.main(["validate", "-f", str(path)])
    shown = capsys.readouterr().out
    assert all(f.replace("k.yaml", str(path)) in shown for f in expected)
