"""A workload evicted from one member that cannot be placed again keeps its copy on the
member that never failed, as Karmada keeps a binding's clusters when scheduling fails.
Its status counts that copy alone: the one left on the dead member is listed, not counted.
A drill of that member reports it pending, not re-placed.

Real pieces: etcd, a `fedctl controller` process, simulated members faulted through their
`/_sim` fault API. The policy spreads the workload over two members (`minGroups: 2`), so
with one of them down there is no placement to find: the Binding waits, Pending, with the
clusters it still runs on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation.failover import drills
from federation.registry import codec, embedded, keys
from policies.models.binding import Binding
from policies.models.propagation import PropagationPolicy
from policies.models.work import WorkloadStatus
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

FAILS, STAYS = NAMES[0], NAMES[2]
WEB = deployment("web", 4)


def two_members() -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "web", "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": {
                    "clusterAffinity": {"clusterNames": [FAILS, STAYS]},
                    "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2}],
                    "replicaScheduling": {
                        "replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
                    },
                },
            },
        }
    )


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def stored(fed: Federation) -> codec.Stored[Binding] | None:
    return await fed.bindings.get(keys.binding_key(ref_of(WEB)))


async def copy(fed: Federation) -> dict[str, Any] | None:
    return await fed.member_object(STAYS, "apps/v1", "Deployment", "web", "web")


async def test_a_failed_re_placement_keeps_the_copy_on_the_member_that_never_failed(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    async with (
        controllers(own_etcd.url, tmp_path, 1, FEDCTL_FAILOVER__GRACEFUL_TIMEOUT="600") as group,
        aiohttp.ClientSession() as session,
    ):
        await submit(session, group.replicas[0].url, [two_members(), WEB])

        async def placed() -> bool:
            s = await stored(fed)
            return s is not None and s.obj.placement() == {FAILS: 2, STAYS: 2}

        await wait_for(placed, timeout=30, message="web placed on both members")
        first = await wait_for(lambda: copy(fed), timeout=30, message=f"web running on {STAYS}")

        await fed.admin(FAILS, "fault", {"mode": "down"})

        async def waiting() -> codec.Stored[Binding] | None:
            s = await stored(fed)
            kept = s is not None and "still running on" in s.obj.status.reason
            return s if kept else None

        held = await wait_for(waiting, timeout=30, message="web waiting to be placed again")
        assert held.obj.status.phase == "Pending"
        assert held.obj.placement() == {STAYS: 2}
        assert "at least 2" in held.obj.status.reason, held.obj.status.reason

        async def propagated() -> bool:
            status = await fed.status(WEB)
            return status is not None and status.binding_revision >= held.revision

        await wait_for(propagated, timeout=30, message="the waiting Binding propagated")
        still = await copy(fed)
        assert still is not None, f"the copy on {STAYS} was removed"
        assert still["metadata"]["uid"] == first["metadata"]["uid"]

        async def judged() -> WorkloadStatus | None:
            status = await fed.status(WEB)
            rows = {r.cluster: r for r in status.clusters} if status is not None else {}
            dead = rows.get(FAILS)
            return status if dead is not None and dead.leaving and dead.stale else None

        # The copy left on the dead member still has its Work, whose last report said 2/2:
        # listed, but READY counts only the kept copy's, not 4/4; and of the template's 4,
        # since the other 2 wait unplaced (as kubectl's READY would read): not Healthy.
        status = await wait_for(judged, timeout=30, message=f"the copy on {FAILS} set apart")
        assert (status.health, status.ready_replicas, status.replicas) == ("Progressing", 2, 4)
        assert not {r.cluster: r for r in status.clusters}[FAILS].up

        await fed.admin(FAILS, "heal", {})

        async def back() -> bool:
            s = await stored(fed)
            return s is not None and s.obj.placement() == {FAILS: 2, STAYS: 2}

        await wait_for(back, timeout=60, message="web placed on both members again")
        again = await copy(fed)
        assert again is not None and again["metadata"]["uid"] == first["metadata"]["uid"]

        async def whole() -> bool:
            status = await fed.status(WEB)
            return status is not None and (
                status.health,
                status.ready_replicas,
                status.replicas,
                [(r.leaving, r.stale) for r in status.clusters],
            ) == ("Healthy", 4, 4, [(False, False), (False, False)])

        await wait_for(whole, timeout=30, message="both copies counted again, 4/4")


async def test_a_drill_reports_the_workload_that_waited_as_pending_not_re_placed(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    """The user's drill, on real pieces: eviction takes the dead member out of the Binding
    at once, and with no second member to spread over the workload waits, Pending, with
    the copy it kept, until the member comes back and takes it again. The report called
    that `re-placed` and `recovered`, with no shortfall. The fault is held until the
    scheduler has said why it waits, so the drill sees the wait whatever the machine's
    speed."""
    async with (
        controllers(own_etcd.url, tmp_path, 1, FEDCTL_FAILOVER__GRACEFUL_TIMEOUT="600") as group,
        aiohttp.ClientSession() as session,
    ):
        await submit(session, group.replicas[0].url, [two_members(), WEB])

        async def whole() -> bool:
            status = await fed.status(WEB)
            return status is not None and (status.health, status.ready_replicas) == (
                "Healthy",
                4,
            )

        await wait_for(whole, timeout=30, message="web ready on both members")

        async def inject() -> None:
            await fed.admin(FAILS, "fault", {"mode": "down"})

            async def waits() -> bool:
                s = await stored(fed)
                return s is not None and "at least 2" in s.obj.status.reason

            await wait_for(waits, timeout=30, message="web waiting to be placed again")

        async def heal() -> None:
            await fed.admin(FAILS, "heal", {})

        report = await drills.run(
            fed.store,
            report=drills.Report("d", FAILS, "down", "now", duration=0.5),
            inject=inject,
            heal=heal,
            settle=60,
            poll=0.2,
        )

    (line,) = [w for w in report.workloads if w.workload == str(ref_of(WEB))]
    assert (line.replaced, line.ready, line.outcome) == (
        None,
        None,
        "pending until the member came back",
    )
    assert "at least 2" in report.shortfall[str(ref_of(WEB))], report.shortfall
    assert (report.affected, report.lost, report.replace, report.rto) == (1, 0, None, None)
