"""A member that recovers before its evicted workload found room elsewhere gets it back,
running copy and all, instead of waiting out the graceful timeout and starting it again.

Real pieces: etcd, a `fedctl controller` process (monitor, scheduler, propagator and
failover, with the default graceful timeout of 600 s), simulated members faulted through
their `/_sim` fault API. The workload's policy allows one member only, so when that member
goes down the workload has nowhere else to go.
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

HOME = NAMES[0]
WEB = deployment("web", 2)


def only_home() -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "web", "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": {
                    "clusterAffinity": {"clusterNames": [HOME]},
                    "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
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


async def copy(fed: Federation) -> dict[str, Any] | None:
    return await fed.member_object(HOME, "apps/v1", "Deployment", "web", "web")


async def test_a_member_back_before_the_graceful_timeout_keeps_its_running_copy(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    async with (
        controllers(own_etcd.url, tmp_path, 1, FEDCTL_FAILOVER__GRACEFUL_TIMEOUT="600") as group,
        aiohttp.ClientSession() as session,
    ):
        await submit(session, group.replicas[0].url, [only_home(), WEB])

        async def placed() -> bool:
            b = await binding(fed)
            return b is not None and b.placement() == {HOME: 2} and not b.spec.eviction_tasks

        await wait_for(placed, timeout=30, message=f"web placed on {HOME}")
        first = await wait_for(lambda: copy(fed), timeout=30, message=f"web running on {HOME}")

        await fed.admin(HOME, "fault", {"mode": "down"})

        async def evicted() -> Binding | None:
            b = await binding(fed)
            return b if b is not None and b.spec.eviction_tasks else None

        left = await wait_for(evicted, timeout=30, message=f"web evicted from {HOME}")
        assert left.placement() == {} and left.status.phase == "Pending"
        assert [(t.cluster, t.purge_mode) for t in left.spec.eviction_tasks] == [
            (HOME, "Gracefully")
        ]

        await fed.admin(HOME, "heal", {})

        async def back() -> Binding | None:
            b = await binding(fed)
            home = b is not None and b.placement() == {HOME: 2} and not b.spec.eviction_tasks
            return b if home else None

        # Kept barred, the workload would wait for the 600 s graceful timeout, lose the
        # copy it still runs on HOME, and start again there.
        returned = await wait_for(back, timeout=60, message=f"web placed back on {HOME}")
        assert returned.status.phase == "Scheduled"
        again = await copy(fed)
        assert again is not None, f"the copy on {HOME} was deleted"
        assert again["metadata"]["uid"] == first["metadata"]["uid"], "adopted, not recreated"
