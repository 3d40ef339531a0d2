"""The committed policy reference is the models, rendered: it names every field and never drifts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from policies import reference
from policies.models import kinds

COMMITTED = Path(__file__).resolve().parents[3] / "docs" / "policy-reference.md"


@pytest.fixture(scope="module")
def page() -> str:
    return reference.render()


def _section(page: str, heading: str) -> str:
    start = page.index(f"\n{heading}\n")
    end = page.find("\n### ", start + 1)
    return page[start : end if end != -1 else None]


def test_the_committed_reference_matches_the_models(page: str) -> None:
    committed = COMMITTED.read_text(encoding="utf-8") if COMMITTED.exists() else ""

    assert committed == page, (
        "docs/policy-reference.md is out of date with the models in policies/models/;"
        " regenerate it with: python -m policies.reference"
    )


def test_rendering_twice_gives_the_same_text(page: str) -> None:
    assert reference.render() == page


@pytest.mark.parametrize(
    ("heading", "field", "shown"),
    [
        pytest.param(
            "### Placement",
            "replicaScheduling",
            "[ReplicaSchedulingStrategy](#type-replicaschedulingstrategy)",
            id="spec.placement.replicaScheduling links to its strategy",
        ),
        pytest.param(
            "### ReplicaSchedulingStrategy",
            "replicaSchedulingType",
            '`Duplicated` \\| `Divided` | `"Divided"`',
            id="replicaSchedulingType lists its values and Karmada's default",
        ),
        pytest.param(
            "### FedctlPropagationSpec",
            "fedctl",
            "[FedctlPlacement](#type-fedctlplacement)",
            id="the fedctl extension hangs off spec.fedctl",
        ),
        pytest.param(
            "### FedctlPlacement",
            "expectedDuration",
            "[Duration](#value-duration)",
            id="durations are a named value type",
        ),
        pytest.param(
            "### QueueSpec",
            "weight",
            "integer | `1` | ≥ 1, ≤ 65535",
            id="a queue weight shows its default and bounds",
        ),
        pytest.param(
            "### ClusterSpec",
            "region",
            "string | required | min length 1",
            id="a required field says so",
        ),
    ],
)
def test_the_reference_names_known_fields_with_type_default_and_constraints(
    page: str, heading: str, field: str, shown: str
) -> None:
    row = next(
        line for line in _section(page, heading).splitlines() if line.startswith(f"| `{field}` |")
    )

    assert shown in row


def test_every_kind_fedctl_accepts_has_a_section(page: str) -> None:
    for api_version, kind in kinds.POLICY_KINDS:
        assert f"### `{api_version}` {kind}\n" in page


def test_every_link_points_at_an_anchor_on_the_page(page: str) -> None:
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', page))
    links = set(re.findall(r"\]\(#([^)]+)\)", page))

    assert links, "the page links nothing"
    assert links - anchors == set()


def test_check_fails_with_a_clear_message_on_a_stale_file_and_passes_once_regenerated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "policy-reference.md"
    target.write_text("# an old reference\n", encoding="utf-8")

    assert reference.main(["--check", "--output", str(target)]) == 1
    assert "out of date with the models" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "# an old reference\n"

    assert reference.main(["--output", str(target)]) == 0
    assert reference.main(["--check", "--output", str(target)]) == 0


def test_check_reports_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert reference.main(["--check", "--output", str(tmp_path / "absent.md")]) == 1
    assert "is missing" in capsys.readouterr().err


def test_every_field_validate_calls_not_acted_on_is_in_the_reference_table(page: str) -> None:
    """concepts said fieldOverrider edits work while validate warned they are not acted
    on; the reference's table, which a user checks, did not list it."""
    table = page[page.index("## Accepted but not acted on") :]

    assert (
        "| OverridePolicy, ClusterOverridePolicy | `spec.overrideRules[*].overriders"
        ".fieldOverrider` | editing a JSON or YAML document held in a string field is not"
        " implemented yet |"
    ) in table
    assert "| PropagationPolicy, ClusterPropagationPolicy | `spec.schedulerName` |" in table
