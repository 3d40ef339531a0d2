"""What a drill says about a member's share of a divided service once the fault is lifted.

A member back from a failure (`down`) gets its share again as soon as failover lifts its
own taints. One whose NoExecute taint a user lifts (a `taint` drill, or `fedctl cluster
taint NAME K:NoExecute-`) gets nothing back, as `kubectl uncordon` moves no pod back, and
stays empty until `fedctl rebalance` moves the work. The drill reported both as
`recovered`, and said nothing of the member left empty.

Real pieces: etcd, a `fedctl controller` process (monitor, scheduler, propagator,
failover), simulated members faulted through their `/_sim` fault API or tainted through
the registry as the drill does it; `fedctl rebalance` runs as the command does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from federation.cli import main
from federation.failover import drills, faults
from federation.registry import embedded, keys
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

DRILLED, OTHER = NAMES[0], NAMES[2]
WEB = deployment("web", 4)


def halves() -> PropagationPolicy:
    """web divided 1:1 by static weights over the two members."""
    weights = [
        {"targetCluster": {"clusterNames": [name]}, "weight": 1} for name in (DRILLED, OTHER)
    ]
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "web", "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": {
                    "clusterAffinity": {"clusterNames": [DRILLED, OTHER]},
                    "replicaScheduling": {
                        "replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"staticWeightList": weights},
                    },
                },
            },
        }
    )


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def placement(fed: Federation) -> dict[str, int]:
    stored = await fed.bindings.get(keys.binding_key(ref_of(WEB)))
    if stored is None or stored.obj.status.phase != "Scheduled":
        return {}
    return stored.obj.placement()


def placed_as(fed: Federation, wanted: dict[str, int]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        status = await fed.status(WEB)
        healthy = status is not None and status.health == "Healthy"
        return healthy and await placement(fed) == wanted

    return check


async def drill(
    fed: Federation,
    fault: str,
    *,
    break_it: Callable[[], Awaitable[object]],
    mend: Callable[[], Awaitable[object]],
) -> drills.Report:
    """A drill whose fault is held until web is placed on the other member alone, so the
    drill sees it move whatever the machine's speed."""

    async def inject() -> None:
        await break_it()
        await wait_for(placed_as(fed, {OTHER: 4}), timeout=30, message="web moved off")

    async def heal() -> None:
        await mend()

    return await drills.run(
        fed.store,
        report=drills.Report(fault, DRILLED, fault, "now", duration=0.2),
        inject=inject,
        heal=heal,
        settle=30 if fault == "down" else 3,
        poll=0.2,
    )


async def test_a_member_left_without_its_share_after_the_fault_is_named_in_the_report(
    fed: Federation,
    own_etcd: embedded.EmbeddedEtcd,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with controllers(own_etcd.url, tmp_path, 1) as group, aiohttp.ClientSession() as s:
        await submit(s, group.replicas[0].url, [halves(), WEB])
        await wait_for(placed_as(fed, {DRILLED: 2, OTHER: 2}), timeout=30, message="web halved")

        down = await drill(
            fed,
            "down",
            break_it=lambda: fed.admin(DRILLED, "fault", {"mode": "down"}),
            mend=lambda: fed.admin(DRILLED, "heal", {}),
        )
        # Back from failover's taints, the member got its half again: the drill watched
        # until it did, and nothing is missing.
        (line,) = down.workloads
        assert (line.workload, line.outcome) == (str(ref_of(WEB)), "recovered")
        assert down.not_back == []
        assert await placement(fed) == {DRILLED: 2, OTHER: 2}

        taint = await drill(
            fed,
            "taint",
            break_it=lambda: faults.set_taint(fed.store, DRILLED, on=True),
            mend=lambda: faults.set_taint(fed.store, DRILLED, on=False),
        )
        (line,) = taint.workloads
        assert line.outcome == "recovered"
        assert taint.not_back == [str(ref_of(WEB))]
        md = drills.markdown(taint)
        assert "| services not back on the member | 1 |" in md
        assert "Lifting a taint moves no divided service back" in md
        assert "`fedctl rebalance --all --dry-run`" in md
        assert await placement(fed) == {OTHER: 4}, "nothing moved back by itself"

        # What the report suggests does show the way back.
        argv = ["--etcd", fed.store.endpoint, "rebalance", "--all", "--dry-run", "-o", "json"]
        assert await asyncio.to_thread(main.main, argv) == 0
        verdicts = {v["workload"]: v for v in json.loads(capsys.readouterr().out)}
        assert verdicts[str(ref_of(WEB))]["result"] == "would move", verdicts
        assert f"{DRILLED}:2" in verdicts[str(ref_of(WEB))]["to"], verdicts
