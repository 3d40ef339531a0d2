"""Namespaces the propagator creates in a member for a workload or a quota sent there
without a Namespace template, and what becomes of them: real etcd, simulated members.

Such a namespace was never removed: once the workload (or the FRQ share) left, it stayed
in the member for good, labelled as fedctl's, and no fedctl command could reach it (the
federation holds no Namespace of that name). Now garbage collection deletes it once
nothing of fedctl's is left in it and it holds nothing else; one holding a team's own
objects, or a namespace fedctl did not create, is never deleted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as kube_client

from federation.propagation import render
from federation.registry import embedded
from tests.integration.test_propagation import member_api
from tests.integration.test_propagation_namespace import share
from tests.integration.test_propagation_support import (
    PROPAGATION,
    Federation,
    deployment,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

MEMBER = "us-east-cpu"
SETTINGS = PROPAGATION.model_copy(update={"gc_interval": 0.2})


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def member_namespace(fed: Federation, name: str) -> dict[str, Any] | None:
    got = await fed.member_object(MEMBER, "v1", "Namespace", None, name)
    if got is None or (got.get("metadata") or {}).get("deletionTimestamp"):
        return None
    return got


async def test_an_implicit_namespace_goes_once_empty_and_one_holding_a_teams_objects_stays(
    fed: Federation,
) -> None:
    lone, shared = deployment("lone", 1, namespace="dept-c"), deployment("s", 1, namespace="dept-d")
    for workload in (lone, shared):
        await fed.put(workload)
        await fed.bind(workload, {MEMBER: (1, None)})
    propagator = fed.start(SETTINGS)
    for name in ("dept-c", "dept-d"):
        created = await wait_for(
            lambda name=name: member_namespace(fed, name), timeout=15, message=name
        )
        assert render.is_placeholder(created), "created by fedctl, for the workload"
    async with member_api(fed, MEMBER) as api:
        core = kube_client.CoreV1Api(api)
        await core.create_namespace({"metadata": {"name": "team-own"}})
        await core.create_namespaced_config_map(
            "dept-d", {"metadata": {"name": "notes"}, "data": {"k": "v"}}
        )
    await wait_for(
        lambda: fed.member_object(MEMBER, "apps/v1", "Deployment", "dept-c", "lone"),
        timeout=15,
        message="lone applied",
    )
    assert await member_namespace(fed, "dept-c") is not None, "kept while lone is in it"

    for workload in (lone, shared):
        await fed.unbind(workload)
        await fed.delete(workload)

    async def gone() -> bool:
        return await member_namespace(fed, "dept-c") is None

    await wait_for(gone, timeout=20, message="dept-c removed from the member")
    await wait_for(
        lambda: propagator.pending == 0 and not propagator.sync.works,
        timeout=15,
        message="every copy removed",
    )
    assert await fed.member_object(MEMBER, "apps/v1", "Deployment", "dept-d", "s") is None
    assert await member_namespace(fed, "dept-d") is not None, "it holds the team's notes"
    assert await fed.member_object(MEMBER, "v1", "ConfigMap", "dept-d", "notes") is not None
    assert await member_namespace(fed, "team-own") is not None, "not fedctl's"

    async with member_api(fed, MEMBER) as api:
        await kube_client.CoreV1Api(api).delete_namespaced_config_map("notes", "dept-d")

    async def emptied() -> bool:
        return await member_namespace(fed, "dept-d") is None

    await wait_for(emptied, timeout=20, message="dept-d removed once the team's notes went")
    assert await member_namespace(fed, "team-own") is not None


async def test_a_namespace_created_for_an_frq_share_stays_with_it_and_goes_after_it(
    fed: Federation,
) -> None:
    frq = share("dept-q", MEMBER)
    await fed.put(frq)
    fed.start(SETTINGS)
    await wait_for(
        lambda: fed.member_object(MEMBER, "v1", "ResourceQuota", "dept-q", "q"),
        timeout=15,
        message="the share's quota",
    )
    uid = (await member_namespace(fed, "dept-q") or {})["metadata"]["uid"]
    web = deployment("w", 1, namespace="dept-q")
    await fed.put(web)
    await fed.bind(web, {MEMBER: (1, None)})
    await wait_for(
        lambda: fed.member_object(MEMBER, "apps/v1", "Deployment", "dept-q", "w"),
        timeout=15,
        message="w applied",
    )
    await fed.unbind(web)
    await fed.delete(web)

    async def w_gone() -> bool:
        return await fed.member_object(MEMBER, "apps/v1", "Deployment", "dept-q", "w") is None

    await wait_for(w_gone, timeout=15, message="w removed")
    namespace = await member_namespace(fed, "dept-q")
    assert namespace is not None and namespace["metadata"]["uid"] == uid, "kept for the quota"

    await fed.delete(frq)

    async def gone() -> bool:
        return await member_namespace(fed, "dept-q") is None

    await wait_for(gone, timeout=20, message="dept-q removed after the FRQ")
