"""A FederatedResourceQuota's member quota stays the FRQ's: a workload template of kind
ResourceQuota of its name is refused there, and a quota that lost the FRQ's label is put
back.

The template's copy took the member quota over (the same object in the member), and the
status watch, which knew a member quota only by its FRQ label, went on reporting the
FRQ's copy as applied; deleting the template then deleted the member quota, and it was
never put back, so the member's API server no longer enforced the department's share.
Real etcd and simulated members, as `test_propagation`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as kube_client

from federation.propagation import quota
from federation.registry import embedded, keys
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
