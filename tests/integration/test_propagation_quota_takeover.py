"""A FederatedResourceQuota's member quota stays the FRQ's: a workload template of kind
ResourceQuota of its name is refused there, and a quota that lost the FRQ's label is put
back; and a team's own ResourceQuota of its name in a member is neither taken over nor
deleted with the FRQ.

The template's copy took the member quota over (the same object in the member), and the
status watch, which knew a member quota only by its FRQ label, went on reporting the
FRQ's copy as applied; deleting the template then deleted the member quota, and it was
never put back, so the member's API server no longer enforced the department's share.
A quota a team had made there by hand was overwritten with the FRQ's share and relabelled
as fedctl's, and deleting the FRQ deleted it: as Karmada's Works (Abort by default), an
FRQ now refuses it and its status says so.
Real etcd and simulated members, as `test_propagation`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as kube_client

from federation.propagation import quota
from federation.propagation.render import LABEL_MANAGED_BY
from federation.registry import embedded, keys
from policies.models.work import ClusterQuota
from policies.models.workload import Workload
from tests.integration.test_propagation import member_api
from tests.integration.test_propagation_support import (
    Federation,
    frq_for_test,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

MEMBER = "us-east-a100"
TEMPLATE = Workload.model_validate(
    {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "ml-research", "namespace": "ml-research"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "999"}},
    }
)


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        await federation.put(frq_for_test())
        federation.start()
        await wait_for(lambda: assigned(federation), timeout=15, message="the FRQ's quota")
        yield federation


@pytest.fixture
async def bare(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    """The fleet joined, no FRQ yet and no propagator running."""
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def quota_in_member(fed: Federation) -> dict[str, Any] | None:
    return await fed.member_object(MEMBER, "v1", "ResourceQuota", "ml-research", "ml-research")


async def assigned(fed: Federation) -> bool:
    """The member quota is the FRQ's, as it assigns it (16 A100s), with its label."""
    got = await quota_in_member(fed)
    if got is None:
        return False
    labels = got["metadata"].get("labels") or {}
    hard = got["spec"]["hard"]
    return (
        labels.get(quota.LABEL_FRQ) == "ml-research" and hard.get("requests.nvidia.com/gpu") == "16"
    )


async def test_a_template_named_like_the_frqs_member_quota_is_refused_there(
    fed: Federation,
) -> None:
    await fed.put(TEMPLATE)
    await fed.bind(TEMPLATE, {MEMBER: (1, None)})

    async def refused() -> str:
        work = await fed.works.get(keys.work_key(MEMBER, ref_of(TEMPLATE)))
        return work.obj.status.error if work is not None else ""

    error = await wait_for(refused, timeout=15, message="the template's Work refused")
    assert "FederatedResourceQuota ml-research/ml-research's static assignment" in error
    assert await assigned(fed), "the member quota is still the FRQ's"
    await fed.unbind(TEMPLATE)
    await fed.delete(TEMPLATE)
    await wait_for(lambda: assigned(fed), timeout=15, message="the FRQ's quota, kept")


async def test_a_member_quota_that_lost_the_frqs_label_is_put_back(fed: Federation) -> None:
    async with member_api(fed, MEMBER) as api:
        await kube_client.CoreV1Api(api).patch_namespaced_resource_quota(
            "ml-research",
            "ml-research",
            {
                "metadata": {"labels": {quota.LABEL_FRQ: None}},
                "spec": {"hard": {"requests.nvidia.com/gpu": "999"}},
            },
        )
    assert not await assigned(fed)
    await wait_for(lambda: assigned(fed), timeout=15, message="the FRQ's quota put back")


TEAMS_HARD = {"pods": "7", "requests.cpu": "9"}


async def teams_quota(fed: Federation) -> None:
    """A team's own ResourceQuota in the member, of the FRQ's name (`kubectl apply` there)."""
    async with member_api(fed, MEMBER) as api:
        core = kube_client.CoreV1Api(api)
        await core.create_namespace({"metadata": {"name": "ml-research"}})
        await core.create_namespaced_resource_quota(
            "ml-research", {"metadata": {"name": "ml-research"}, "spec": {"hard": TEAMS_HARD}}
        )


async def frq_row(fed: Federation, cluster: str) -> ClusterQuota | None:
    stored = await fed.quota_statuses.get(FRQ_STATUS)
    rows = {row.cluster: row for row in stored.obj.aggregated_status} if stored else {}
    return rows.get(cluster)


FRQ_STATUS = keys.policy_status_key("FederatedResourceQuota", "ml-research", "ml-research")


async def test_a_teams_own_quota_of_the_frqs_name_is_neither_taken_over_nor_deleted(
    bare: Federation,
) -> None:
    fed = bare
    await teams_quota(fed)
    await fed.put(frq_for_test())
    fed.start()

    async def refused() -> str:
        row = await frq_row(fed, MEMBER)
        return row.error if row is not None and not row.applied else ""

    error = await wait_for(refused, timeout=15, message="the FRQ's status saying why not")
    assert f"ResourceQuota ml-research/ml-research already exists in {MEMBER}" in error
    other = "cn-north-ascend"
    await wait_for(
        lambda: fed.member_object(other, "v1", "ResourceQuota", "ml-research", "ml-research"),
        timeout=15,
        message="the other member's share applied",
    )
    team = await quota_in_member(fed)
    assert team is not None
    assert team["spec"]["hard"] == TEAMS_HARD, "the team's limits are left as they were"
    assert not set(team["metadata"].get("labels") or {}) & {quota.LABEL_FRQ, LABEL_MANAGED_BY}

    await fed.delete(frq_for_test())

    async def status_gone() -> bool:
        return await fed.quota_statuses.get(FRQ_STATUS) is None

    await wait_for(status_gone, timeout=15, message="the FRQ's status removed")
    assert (
        await fed.member_object(other, "v1", "ResourceQuota", "ml-research", "ml-research") is None
    )
    team = await quota_in_member(fed)
    assert team is not None, "the team's quota is not deleted with the FRQ"
    assert team["spec"]["hard"] == TEAMS_HARD
