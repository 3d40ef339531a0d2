"""A member that recovers keeps the copies it ran through its absence wherever the
placement wants them there again, instead of losing them and starting them anew:

- a workload with nowhere else to go is placed back, running copy and all, instead of
  waiting out the graceful timeout;
- a service whose new placement covered for the member is placed back on it with its
  copy there kept (deleted and applied again, it left a capacity dip while the members
  that had covered for it shrank).

Real pieces: etcd, a `fedctl controller` process (monitor, scheduler, propagator and
failover, with the default graceful timeout of 600 s), simulated members faulted through
their `/_sim` fault API.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation.registry import codec, embedded, events, keys
from policies.models.base import KubeObject
from policies.models.binding import Binding
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
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

HOME, OTHER = NAMES[0], NAMES[2]
WEB = deployment("web", 2)
HALVED = deployment("halved", 4)


def policy(
    name: str, namespace: str, kind: tuple[str, str], clusters: list[str], scheduling: Any
) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "resourceSelectors": [{"apiVersion": kind[0], "kind": kind[1]}],
                "placement": {
                    "clusterAffinity": {"clusterNames": clusters},
                    "replicaScheduling": scheduling,
                },
            },
        }
    )


def only_home() -> PropagationPolicy:
    return policy(
        "web",
        "web",
        ("apps/v1", "Deployment"),
        [HOME],
        {"replicaSchedulingType": "Duplicated"},
    )


def halves() -> PropagationPolicy:
    """Static weights 1:1: the member that comes back gets its half again."""
    weights = [{"targetCluster": {"clusterNames": [c]}, "weight": 1} for c in (HOME, OTHER)]
    return policy(
        "halved",
        "web",
        ("apps/v1", "Deployment"),
        [HOME, OTHER],
        {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": weights},
        },
    )


@contextlib.asynccontextmanager
async def serving(
    etcd: embedded.EmbeddedEtcd, tmp_path: Path, objects: list[KubeObject]
) -> AsyncIterator[None]:
    """A `fedctl controller` (graceful timeout 600 s) that was given `objects`."""
    async with (
        controllers(etcd.url, tmp_path, 1, FEDCTL_FAILOVER__GRACEFUL_TIMEOUT="600") as group,
        aiohttp.ClientSession() as session,
    ):
        await submit(session, group.replicas[0].url, objects)
        yield


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def binding(fed: Federation) -> Binding | None:
    return await binding_of(fed, WEB)


async def copy(fed: Federation) -> dict[str, Any] | None:
    return await fed.member_object(HOME, "apps/v1", "Deployment", "web", "web")


async def test_a_member_back_before_the_graceful_timeout_keeps_its_running_copy(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    async with serving(own_etcd, tmp_path, [only_home(), WEB]):

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
        assert await told(fed, WEB) == [
            ("Evicted", HOME),
            ("NowhereToGo", HOME),
            ("PlacedBack", HOME),
        ]
        again = await copy(fed)
        assert again is not None, f"the copy on {HOME} was deleted"
        assert again["metadata"]["uid"] == first["metadata"]["uid"], "adopted, not recreated"


async def told(fed: Federation, workload: Workload) -> list[tuple[str, str | None]]:
    """(reason, cluster) of failover's events on `workload`, oldest first."""
    listed = await codec.TypedStore(fed.store, events.EVENTS).list(
        events.event_prefix(ref_of(workload))
    )
    return [(e.obj.reason, e.obj.cluster) for e in listed.items if e.obj.source == "failover"]


async def binding_of(fed: Federation, workload: Workload) -> Binding | None:
    stored = await fed.bindings.get(keys.binding_key(ref_of(workload)))
    return stored.obj if stored is not None else None


async def placed(fed: Federation, workload: Workload, placement: dict[str, int]) -> bool:
    b = await binding_of(fed, workload)
    return (
        b is not None
        and b.status.phase == "Scheduled"
        and b.placement() == placement
        and not b.spec.eviction_tasks
    )


async def test_a_service_placed_back_on_a_returning_member_keeps_its_running_copy(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    async with serving(own_etcd, tmp_path, [halves(), HALVED]):
        await wait_for(
            lambda: placed(fed, HALVED, {HOME: 2, OTHER: 2}), timeout=30, message="web halved"
        )

        async def running() -> dict[str, Any] | None:
            return await fed.member_object(HOME, "apps/v1", "Deployment", "web", "halved")

        first = await wait_for(running, timeout=30, message=f"web running on {HOME}")

        await fed.admin(HOME, "fault", {"mode": "down"})

        async def covered() -> bool:
            b = await binding_of(fed, HALVED)
            status = await fed.status(HALVED)
            rows = {r.cluster: r for r in status.clusters} if status is not None else {}
            other = rows.get(OTHER)
            return (
                b is not None
                and b.placement() == {OTHER: 4}
                and other is not None
                and other.up
                and status is not None
                and status.ready_replicas == 4
            )

        # The new placement is whole while the member is still away: that is when the old
        # copy's task ended, and its deletion waited for the member to answer again.
        await wait_for(covered, timeout=60, message=f"web 4/4 ready on {OTHER}")

        await fed.admin(HOME, "heal", {})
        await wait_for(
            lambda: placed(fed, HALVED, {HOME: 2, OTHER: 2}),
            timeout=60,
            message=f"web halved again, back on {HOME}",
        )
        again = await running()
        assert again is not None, f"the copy on {HOME} was deleted"
        assert again["metadata"]["uid"] == first["metadata"]["uid"], "kept, not recreated"
        # It found room on OTHER and ran there: "placed back before it found room
        # elsewhere" told the on-call engineer that failover had failed.
        assert await told(fed, HALVED) == [("Evicted", HOME), ("ShareReturned", HOME)]
