"""Application failover end to end: a copy a member refuses to run leaves that member, the
workload keeps running on the other, the refused copy is removed, and the member stays
barred to the workload after that.

Real pieces: etcd, a `fedctl controller` process (monitor, scheduler, propagator and
failover), simulated members. The member's own ResourceQuota (created on the member, not by
fedctl) refuses the pods, so its Deployment reports ReplicaFailure and fedctl reads the copy
as Unhealthy, while the member itself stays Ready: only application failover can move it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation.registry import embedded, keys
from policies.models.binding import Binding
from policies.models.propagation import PropagationPolicy
from tests.integration.test_ha import controllers, submit
from tests.integration.test_propagation_support import (
    NAMES,
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SICK, OTHER = NAMES[0], NAMES[2]  # both plain amd64 members
WEB = deployment("web", 2)
TOLERATION = 2


def policy() -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "web", "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "propagateDeps": True,
                "placement": {
                    "clusterAffinity": {"clusterNames": [SICK, OTHER]},
                    "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
                },
                "failover": {
                    "application": {
                        "decisionConditions": {"tolerationSeconds": TOLERATION},
                        "purgeMode": "Gracefully",
                        "gracePeriodSeconds": 60,
                    }
                },
            },
        }
    )


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def binding(fed: Federation) -> Binding | None:
    stored = await fed.bindings.get(keys.binding_key(ref_of(WEB)))
    return stored.obj if stored is not None else None


async def copy_on(fed: Federation, cluster: str) -> dict[str, Any] | None:
    return await fed.member_object(cluster, "apps/v1", "Deployment", "web", "web")


async def refuse_pods(fed: Federation, cluster: str) -> None:
    """The member's own quota: no pod may be created in namespace web."""
    conn = await fed.conn(cluster)
    await conn.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}})
    await conn.apply(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "no-pods", "namespace": "web"},
            "spec": {"hard": {"pods": "0"}},
        }
    )


async def test_a_copy_the_member_refuses_to_run_fails_over_to_the_other_member(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    await refuse_pods(fed, SICK)
    async with controllers(own_etcd.url, tmp_path, 1) as group, aiohttp.ClientSession() as session:
        await submit(session, group.replicas[0].url, [policy(), WEB])

        async def left_sick() -> Binding | None:
            b = await binding(fed)
            return b if b is not None and b.spec.eviction_tasks else None

        evicted = await wait_for(left_sick, timeout=60, message=f"web evicted from {SICK}")
        (task,) = evicted.spec.eviction_tasks
        assert (task.cluster, task.producer, task.grace_period_seconds) == (
            SICK,
            "ApplicationFailover",
            60,
        )
        assert task.reason.startswith(f"application unhealthy for {TOLERATION}s")

        async def settled() -> Binding | None:
            b = await binding(fed)
            done = (
                b is not None
                and b.status.phase == "Scheduled"
                and b.placement() == {OTHER: 2}
                and [t.purge_mode for t in b.spec.eviction_tasks] == ["Directly"]
            )
            return b if done else None

        # OTHER already runs its copy, so the old copy may go as soon as the scheduler
        # re-placed the workload there, long before the 60 s grace period; the task stays,
        # purging at once, to keep the workload off SICK for the graceful timeout.
        placed = await wait_for(settled, timeout=30, message=f"web on {OTHER} only, {SICK} barred")
        (bar,) = placed.spec.eviction_tasks
        assert (bar.cluster, bar.creation_time) == (SICK, task.creation_time)

        async def sick_copy_gone() -> bool:
            return await copy_on(fed, SICK) is None

        await wait_for(sick_copy_gone, timeout=30, message=f"the refused copy removed from {SICK}")
        running = await copy_on(fed, OTHER)
        assert running is not None
        assert (running.get("status") or {}).get("readyReplicas") == 2
