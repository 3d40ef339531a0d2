"""Quota to members: the ResourceQuota a static assignment becomes, and the FRQ status."""

from __future__ import annotations

from typing import Any

import pytest

from federation.propagation import quota
from federation.resources import ResourceList
from policies.models.frq import FederatedResourceQuota


def frq(*assignments: tuple[str, dict[str, str]]) -> FederatedResourceQuota:
    return FederatedResourceQuota.model_validate(
        {
            "metadata": {"name": "ml", "namespace": "research"},
            "spec": {
                "overall": {"cpu": "100", "nvidia.com/gpu": "16", "huawei.com/Ascend910": "16"},
                "staticAssignments": [{"clusterName": c, "hard": h} for c, h in assignments],
            },
        }
    )


@pytest.mark.parametrize(
    ("hard", "expected"),
    [
        pytest.param(
            {"nvidia.com/gpu": "8"},
            {"requests.nvidia.com/gpu": "8"},
            id="an extended resource gets the requests. spelling members enforce",
        ),
        pytest.param(
            {"requests.huawei.com/Ascend910": "4"},
            {"requests.huawei.com/Ascend910": "4"},
            id="an already-prefixed name is kept, not doubled",
        ),
        pytest.param(
            {"cpu": "32"},
            {"requests.cpu": "32"},
            id="compute resources are spelled as requests too",
        ),
    ],
)
def test_member_quota_spelling(hard: dict[str, str], expected: dict[str, str]) -> None:
    policy = frq(("east", hard))
    manifest = quota.manifest(policy, policy.spec.static_assignments[0])
    assert manifest["spec"]["hard"] == expected
    assert manifest["metadata"]["namespace"] == "research"
    assert manifest["metadata"]["labels"][quota.LABEL_FRQ] == "ml"
    assert manifest["metadata"]["labels"]["fedctl.io/managed-by"] == "fedctl"


def test_status_sums_used_over_members_and_marks_missing_quotas() -> None:
    policy = frq(("east", {"nvidia.com/gpu": "8"}), ("north", {"huawei.com/Ascend910": "8"}))
    member: dict[str, Any] = {
        "status": {
            "hard": {"requests.nvidia.com/gpu": "8"},
            "used": {"requests.nvidia.com/gpu": "3"},
        }
    }
    status = quota.aggregate(policy, {"east": member, "north": None}, errors={"north": "down"})
    rows = {row.cluster: row for row in status.aggregated_status}
    assert rows["east"].applied and rows["east"].used == ResourceList({"nvidia.com/gpu": 3000})
    assert not rows["north"].applied and rows["north"].error == "down"
    assert status.overall_used == ResourceList({"nvidia.com/gpu": 3000})
    assert status.overall == policy.spec.overall


def _quota(hard: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "spec": {"hard": hard}}


@pytest.mark.parametrize(
    ("seen", "edited"),
    [
        pytest.param({"requests.cpu": "8", "requests.memory": "1Ti"}, False, id="as applied"),
        pytest.param(
            {"requests.cpu": "8000m", "requests.memory": "1024Gi"},
            False,
            id="the same quantities spelt otherwise",
        ),
        pytest.param(
            {"requests.cpu": "8", "requests.memory": "1Ti", "pods": "10"},
            False,
            id="a limit added beside ours is left to whoever added it",
        ),
        pytest.param({"requests.cpu": "64", "requests.memory": "1Ti"}, True, id="raised"),
        pytest.param({"requests.memory": "1Ti"}, True, id="one of ours removed"),
    ],
)
def test_a_member_quota_is_edited_when_a_limit_we_set_differs(
    seen: dict[str, str], edited: bool
) -> None:
    wanted = _quota({"requests.cpu": "8", "requests.memory": "1Ti"})
    assert quota.edited(wanted, _quota(seen)) is edited
