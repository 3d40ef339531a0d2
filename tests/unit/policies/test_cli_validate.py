"""`fedctl validate` and `fedctl schema`, driven through the real entry point."""

from __future__ import annotations

import importlib.metadata
import io
import json
import time
from pathlib import Path

import pytest

import policies.loading  # noqa: F401  (imported up front: the timing below is the work itself)
from federation.cli import main as cli

EXAMPLES = Path(__file__).resolve().parents[3] / "policies" / "examples"

VALID = """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata:
  name: web
spec:
  weight: 2
"""

WARNS = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
  dependentOverrides: [op-a]
"""


@pytest.fixture(autouse=True)
def only_policy_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Build the parser with just this command group, independent of the others."""
    monkeypatch.setattr(cli, "_COMMAND_MODULES", ("federation.cli.policy_cmd",))
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_examples_validate_in_well_under_a_second(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.perf_counter()

    code, out, _ = run(capsys, "validate", "-f", str(EXAMPLES))

    assert time.perf_counter() - started < 1.0
    assert code == 0
    assert out == "valid: 33 valid objects in 8 files, 0 warnings\n"


def test_warnings_are_printed_but_the_files_are_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "pp.yaml"
    policy.write_text(WARNS)

    code, out, _ = run(capsys, "validate", "-f", str(policy))

    assert code == 0
    assert out.splitlines() == [
        f"{policy}:9:3: spec.dependentOverrides: warning: dependentOverrides is accepted but"
        " not acted on: fedctl does not wait for dependent overrides yet",
        "valid: 1 valid object in 1 file, 1 warning",
    ]


def test_an_invalid_file_exits_1_and_prints_each_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.yaml"
    bad = tmp_path / "bad.yaml"
    good.write_text(VALID)
    bad.write_text(VALID.replace("weight: 2", "wieght: 2"))

    code, out, _ = run(capsys, "validate", "-f", str(good), "-f", str(bad))

    assert code == 1
    assert out.splitlines() == [
        f"{bad}:6:3: spec.wieght: unknown field 'wieght' (did you mean 'weight'?)",
        "invalid: 1 error, 0 warnings; 1 valid object in 2 files",
    ]


def test_an_object_defined_twice_is_counted_once_and_placed_at_both_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary said `2 valid objects` beside the error, and the first one was placed
    at its document's line 1 while the second was at its name."""
    both = tmp_path / "both.yaml"
    both.write_text(VALID + "---\n" + VALID.replace("weight: 2", "weight: 3"))

    code, out, _ = run(capsys, "validate", "-f", str(both))

    assert code == 1
    assert out.splitlines() == [
        f"{both}:11:9: metadata.name: Queue web is defined twice (first at {both}:4)",
        "invalid: 1 error, 0 warnings; 1 valid object in 1 file",
    ]


def test_a_wrong_api_version_is_reported_at_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was reported at `kind`, on the line below, as if the kind were the mistake."""
    policy = tmp_path / "kind.yaml"
    policy.write_text(
        "# a Karmada policy\n"
        + WARNS.replace("v1alpha1", "v1alpha2").replace("  dependentOverrides: [op-a]\n", "")
    )

    code, out, _ = run(capsys, "validate", "-f", str(policy))

    assert code == 1
    assert out.splitlines() == [
        f"{policy}:2:13: apiVersion: unknown apiVersion 'policy.karmada.io/v1alpha2'; use"
        " policy.karmada.io/v1alpha1",
        "invalid: 1 error, 0 warnings; 0 valid objects in 1 file",
    ]


def test_a_missing_file_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path / "gone.yaml"))

    assert code == 1
    assert out.splitlines()[0] == f"{tmp_path / 'gone.yaml'}: no such file or directory"


def test_json_output_for_machines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "all.yaml"
    policy.write_text(VALID + "---\n" + VALID.replace("name: web", "name: ml").replace("2", "x"))

    code, out, _ = run(capsys, "validate", "-f", str(policy), "-o", "json")

    assert code == 1
    assert json.loads(out) == {
        "valid": False,
        "files": [str(policy)],
        "errors": 1,
        "warnings": 0,
        "objects": [
            {
                "file": str(policy),
                "line": 1,
                "docIndex": 0,
                "apiVersion": "fedctl.io/v1alpha1",
                "kind": "Queue",
                "namespace": None,
                "name": "web",
            }
        ],
        "findings": [
            {
                "file": str(policy),
                "line": 13,
                "col": 11,
                "path": "spec.weight",
                "message": "expected an integer, got string 'x'",
                "severity": "error",
            }
        ],
    }


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["validate"], id="validate without -f"),
        pytest.param(["validate", "-f", "x.yaml", "-o", "xml"], id="an unknown output format"),
        pytest.param(["validate", "-f"], id="-f without a path"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)

    assert exited.value.code == 2
    assert "usage: fedctl validate" in capsys.readouterr().err


def test_schema_of_one_kind(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema", "PropagationPolicy")

    schema = json.loads(out)
    assert code == 0
    assert schema["properties"]["apiVersion"]["const"] == "policy.karmada.io/v1alpha1"
    assert schema["properties"]["kind"]["const"] == "PropagationPolicy"
    assert {"apiVersion", "kind", "metadata", "spec"} <= set(schema["required"])
    assert schema["additionalProperties"] is False
    placement = schema["$defs"]["Placement"]["properties"]
    assert {"clusterAffinity", "clusterAffinities", "replicaScheduling"} <= set(placement)


def test_schema_of_fedctl_s_propagation_policy_has_the_extension(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "schema", "fedctl.io/v1alpha1/PropagationPolicy")

    assert code == 0
    assert "fedctl" in json.loads(out)["$defs"]["FedctlPropagationSpec"]["properties"]


def test_schema_of_every_kind_is_discriminated_by_api_version_and_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "fedctl.schema.json"

    code, out, _ = run(capsys, "schema", "-o", str(target))

    assert (code, out) == (0, "")
    schema = json.loads(target.read_text())
    branches = {
        (b["if"]["properties"]["apiVersion"]["const"], b["if"]["properties"]["kind"]["const"]): b[
            "then"
        ]["$ref"]
        for b in schema["allOf"]
    }
    assert branches[("policy.karmada.io/v1alpha1", "FederatedResourceQuota")] == (
        "#/$defs/FederatedResourceQuota"
    )
    assert branches[("fedctl.io/v1alpha1", "PropagationPolicy")] == (
        "#/$defs/FedctlPropagationPolicy"
    )
    assert branches[("apps/v1", "Deployment")] == "#/$defs/Workload"
    for ref in branches.values():
        assert ref.removeprefix("#/$defs/") in schema["$defs"]


def test_schema_of_an_unknown_kind_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "schema", "Widget")

    assert (code, out) == (2, "")
    assert err == (
        "fedctl schema: unknown kind 'Widget'; known kinds: AcceleratorProfile, Cluster,"
        " ClusterOverridePolicy, ClusterPropagationPolicy, FederatedResourceQuota,"
        " OverridePolicy, PropagationPolicy, Queue\n"
    )


def test_dash_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(VALID.replace("weight: 2", "weight: 0")))

    code, out, _ = run(capsys, "validate", "-f", "-")

    assert code == 1
    assert out.splitlines() == [
        "<stdin>:6:11: spec.weight: must be at least 1, got 0",
        "invalid: 1 error, 0 warnings; 0 valid objects in 1 file",
    ]
