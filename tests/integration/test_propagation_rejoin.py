"""Status keeps flowing when a member's connector is replaced: unjoin and re-join, a new
connection, or a member that leaves for good.

Real etcd, simulated members over HTTP, one propagator. The propagator drops a member's
connector when the Cluster leaves or its connection changes; closing it does not end the
status watch stream open on it, so these tests pin that the watch is stopped, and started
again through the new connector, instead of waiting forever on the old one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.propagation.controller import Propagator
from federation.registry import embedded, keys
from policies.models.cluster import Cluster
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

MEMBER = "ap-southeast-cpu"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def ready_in_member(fed: Federation, workload: Workload, replicas: int) -> None:
    """Wait until the federation reports `replicas` ready for `workload` in MEMBER."""

    async def reported() -> bool:
        status = await fed.status(workload)
        rows = {row.cluster: row for row in status.clusters} if status else {}
        row = rows.get(MEMBER)
        return row is not None and row.replicas == replicas and row.ready_replicas == replicas

    await wait_for(
        reported, timeout=20, message=f"{workload.metadata.name} {replicas}/{replicas} in status"
    )


async def joined(fed: Federation) -> Cluster:
    stored = await fed.objects.get(keys.cluster_key(MEMBER))
    assert stored is not None and isinstance(stored.obj, Cluster)
    return stored.obj


async def unjoin(fed: Federation, propagator: Propagator) -> Cluster:
    """Delete MEMBER's Cluster and wait until the propagator has dropped its connector."""
    cluster = await joined(fed)
    before = await propagator.members.get(cluster)
    await fed.objects.delete(keys.cluster_key(MEMBER))

    async def dropped() -> bool:
        return await propagator.members.get(cluster) is not before

    await wait_for(dropped, message=f"the propagator to drop {MEMBER}'s connector")
    return cluster


def status_watches_of(cluster: str) -> list[asyncio.Task[object]]:
    """The propagator's running status watch tasks for `cluster` (named status-<cluster>-*)."""
    return [
        task
        for task in asyncio.all_tasks()
        if task.get_name().startswith(f"status-{cluster}-") and not task.done()
    ]


async def test_after_unjoin_and_rejoin_scaling_and_a_new_deployment_report_ready(
    fed: Federation,
) -> None:
    storefront = deployment("storefront", 3)
    await fed.put(storefront)
    await fed.bind(storefront, {MEMBER: (3, "amd64")})
    propagator = fed.start()
    await ready_in_member(fed, storefront, 3)

    cluster = await unjoin(fed, propagator)
    await fed.put(cluster)  # re-join, as `fedctl apply -f clusters.yaml` does

    await fed.bind(storefront, {MEMBER: (4, "amd64")})
    await ready_in_member(fed, storefront, 4)

    checkout = deployment("checkout", 2)
    await fed.put(checkout)
    await fed.bind(checkout, {MEMBER: (2, "amd64")})
    await ready_in_member(fed, checkout, 2)


async def test_a_new_connection_for_a_member_keeps_its_status_flowing(
    fed: Federation, tmp_path: Path
) -> None:
    storefront = deployment("storefront", 2)
    await fed.put(storefront)
    await fed.bind(storefront, {MEMBER: (2, "amd64")})
    fed.start()
    await ready_in_member(fed, storefront, 2)

    rotated = tmp_path / "rotated.kubeconfig"
    rotated.write_bytes(fed.kubeconfig.read_bytes())
    cluster = await joined(fed)
    connection = cluster.spec.connection.model_copy(update={"kubeconfig_path": str(rotated)})
    spec = cluster.spec.model_copy(update={"connection": connection})
    await fed.put(cluster.model_copy(update={"spec": spec}))

    await fed.bind(storefront, {MEMBER: (4, "amd64")})
    await ready_in_member(fed, storefront, 4)


async def test_the_status_watches_of_a_member_that_left_stop(fed: Federation) -> None:
    storefront = deployment("storefront", 2)
    await fed.put(storefront)
    await fed.bind(storefront, {MEMBER: (2, "amd64")})
    propagator = fed.start()
    await ready_in_member(fed, storefront, 2)
    assert status_watches_of(MEMBER)

    await unjoin(fed, propagator)

    await wait_for(
        lambda: not status_watches_of(MEMBER), message=f"{MEMBER}'s status watches to stop"
    )
