"""Workloads coming and going for a leader's whole term: real etcd, simulated members.

The propagator keeps memories per workload (the last render per member, what the status
watches saw, when a policy was last read). A batch user's Jobs are uniquely named, one
per run, so a memory not dropped with its workload grew with every Job ever run, as long
as the controller kept the lease: each render alone held a whole manifest per member.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.registry import embedded, keys, objects
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    load,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

CLUSTERS = {"us-east-cpu": (1, None), "eu-west-arm": (1, None)}
ROUNDS, PER_ROUND = 3, 8


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def job(name: str, *, ttl: int | None) -> Workload:
    """A Job that runs for a moment; with `ttl`, one the member deletes once finished."""
    spec: dict[str, object] = {
        "template": {
            "metadata": {"annotations": {"sim.fedctl.io/duration": "100ms"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
                ],
            },
        }
    }
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "web"},
            "spec": spec,
        }
    )


def batch_of(round_: int) -> list[Workload]:
    """Services and Jobs, some of which the member deletes once they finished: all kinds
    a batch user's stream of uniquely named runs brings."""
    return [
        *(deployment(f"svc-{round_}-{i}", 1) for i in range(PER_ROUND // 2)),
        *(job(f"run-{round_}-{i}", ttl=0 if i % 2 else None) for i in range(PER_ROUND // 2)),
    ]


async def works(fed: Federation) -> int:
    return len((await fed.works.list(keys.prefix("works"))).items)


async def test_uniquely_named_workloads_created_and_deleted_leave_no_memory_behind(
    fed: Federation,
) -> None:
    """Rounds of uniquely named services and Jobs, each placed on two members, then
    deleted: once every copy and Work is gone, each per-workload memory is back to where
    it started."""
    stays = deployment("stays", 1)
    await fed.put(stays)
    await fed.bind(stays, CLUSTERS)
    propagator = fed.start()

    async def lasting() -> bool:
        return await works(fed) == len(CLUSTERS)

    await wait_for(lasting, timeout=20, message="the lasting workload's Works")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="settled")
    baseline = propagator.remembered()
    for round_ in range(ROUNDS):
        batch = batch_of(round_)
        for workload in batch:
            await fed.put(workload)
            await fed.bind(workload, CLUSTERS)
        await wait_for(
            lambda: propagator.remembered()["rendered"] >= (PER_ROUND + 1) * len(CLUSTERS),
            timeout=30,
            message=f"round {round_} applied and remembered",
        )
        for workload in batch:
            await fed.unbind(workload)
            await fed.delete(workload)

        async def cleared() -> bool:
            return await works(fed) == len(CLUSTERS) and propagator.pending == 0

        await wait_for(cleared, timeout=30, message=f"round {round_} removed")
    await wait_for(
        lambda: propagator.remembered() == baseline,
        timeout=10,
        message=f"memories back to {baseline}",
    )


async def test_a_policy_read_ahead_of_its_mirror_is_forgotten_once_it_is_deleted(
    fed: Federation,
) -> None:
    """A policy read from the registry ahead of its mirror is kept until the mirror has
    it, which it never does once the policy is deleted: kept for the leader's term."""
    (policy,) = load("web.yaml", kinds=("PropagationPolicy",))
    await fed.put(policy)
    propagator = fed.start()
    key = objects.key_for(policy)
    await wait_for(lambda: key in propagator.policies.items, timeout=15, message="mirrored")
    # As `_claiming_spec_now` keeps a newer copy it read while the mirror lagged.
    propagator.sync._newer_policies[key] = propagator.policies.items[key]
    await fed.delete(policy)
    await wait_for(
        lambda: propagator.remembered()["newer_policies"] == 0,
        timeout=10,
        message="the deleted policy's copy forgotten",
    )
