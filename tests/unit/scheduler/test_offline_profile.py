"""A bad simulator profile given to `fedctl plan --clusters`: every problem is a finding that
names the file, the line and the field, as policy findings do; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation import errors
from federation.cli import main
from federation.scheduler import offline

EXAMPLES = Path(__file__).resolve().parents[3] / "policies" / "examples"

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  template:
    spec:
      containers:
        - {name: t, image: trainer, resources: {requests: {cpu: "2"}}}
"""


def findings_of(tmp_path: Path, text: str) -> list[str]:
    """The findings `offline.load` reports for `text`, with the file name cut to `F`."""
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    with pytest.raises(errors.Invalid) as caught:
        offline.load(path)
    return [f.replace(str(path), "F") for f in caught.value.findings]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "clusters:\n  - name: a\n    region: r\n   nodePools: []\n",
            [
                "F:4:4: invalid YAML: expected <block end>, but found '<block mapping start>'"
                " (while parsing a block collection started at 2:3)"
            ],
            id="bad indentation is a YAML finding at its line, not a ComposerError",
        ),
        pytest.param(
            "clusters:\n  - name: a\n    region: r\n    nodePool:\n      - {name: m, count: 2}\n",
            ["F:4:5: clusters[0].nodePool: unknown field 'nodePool' (did you mean 'nodePools'?)"],
            id="a typo of nodePools is refused, not a cluster without nodes",
        ),
        pytest.param(
            "clusters:\n  - name: a\n    region: r\n    nodePools:\n      - name: g\n"
            "        count: 1\n        accelerators:\n          - {model: nvidia-a100-80gb,"
            " resourceName: nvidia.com/gpu, countPerNod: 8}\n",
            [
                "F:8:13: clusters[0].nodePools[0].accelerators[0].countPerNode:"
                " required field 'countPerNode' is missing",
                "F:8:69: clusters[0].nodePools[0].accelerators[0].countPerNod:"
                " unknown field 'countPerNod' (did you mean 'countPerNode'?)",
            ],
            id="a typo of countPerNode says both what is unknown and what is missing",
        ),
        pytest.param(
            "clusters:\n  - name: a\n    region: r\n    nodePools:\n      - name: m\n"
            '        count: 1\n        cpu: "-16"\n',
            ["F:7:14: clusters[0].nodePools[0].cpu: invalid quantity '-16': must not be negative"],
            id="a negative cpu is one readable line, not a pydantic dump",
        ),
        pytest.param(
            "clusters:\n  - {name: a, region: r, flavour: x}\n",
            [
                "F:2:26: clusters[0].flavour: unknown field 'flavour'; known fields:"
                " kubernetesVersion, labels, name, nodePools, prices, provider, region,"
                " taints, zone"
            ],
            id="an unknown key with no near miss lists the allowed ones",
        ),
        pytest.param(
            "generate:\n  - namePrefix: g\n    count: 1\n    regions: [{region: r}]\n"
            "    templates: [{nodePools: [{count: 1, memory: 12Q}],\n"
            "                 prices: {onDemand: {cpuCoreHour: -1, memoryGiBHour: 0}}}]\n",
            [
                "F:5:49: generate[0].templates[0].nodePools[0].memory: invalid quantity '12Q':"
                " unknown suffix 'Q' (expected n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi,"
                " Ei, or an exponent like e3)",
                "F:6:51: generate[0].templates[0].prices.onDemand.cpuCoreHour:"
                " must be at least 0, got -1",
            ],
            id="generate templates are checked as strictly as clusters",
        ),
        pytest.param(
            "clusters:\n  - {name: a, region: r}\n  - {name: a, region: s}\n",
            ["F:3:12: clusters[1].name: cluster 'a' is defined twice"],
            id="a cluster name given twice",
        ),
        pytest.param(
            "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\n",
            [
                "F:2:7: kind: a Queue document is not a cluster profile: give workload and"
                " policy files with -f, and a simulator profile (like"
                " clusters/sim/profiles/demo.yaml) with --clusters"
            ],
            id="a policy document given as the profile says so",
        ),
    ],
)
def test_every_profile_problem_names_file_line_and_field(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    assert findings_of(tmp_path, text) == expected


def test_a_multi_document_policy_file_as_the_profile_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit's natural mistake: the examples' clusters.yaml (Cluster objects, several
    documents) given as the simulator profile."""
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    profile = EXAMPLES / "clusters.yaml"
    code = main.main(["plan", "-f", str(job), "--clusters", str(profile)])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err and "ComposerError" not in err
    assert err.splitlines()[0].startswith(f"{profile}:")
    assert ": a cluster profile is one YAML document, this file has " in err
    assert err.splitlines()[-1] == f"fedctl: {profile}: invalid cluster profile"


def test_the_shipped_profiles_still_load() -> None:
    root = Path(__file__).resolve().parents[3] / "clusters" / "sim" / "profiles"
    assert len(offline.load(root / "demo.yaml")) == 8
    assert len(offline.load(root / "bench-100.yaml")) == 100
