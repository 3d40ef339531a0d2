"""What a drill sees for a service divided by static weights (or Duplicated) when one of its
members dies.

The rule docs/drills.md states: detection (Ready=False, a NoSchedule failover taint) makes
the scheduler reconsider the service, since its fingerprint counts the Ready clusters, but
the member still hosts it and so stays a candidate (with its weight): the placement comes
out the same and nothing moves. The member's share moves only when the taint turns
NoExecute after the eviction grace and failover evicts it; the scheduler then places the
replicas over the remaining clusters (by their weights). Driven through failover's own pure
rules (`taints.desired`, `eviction.judge`/`evict`) and one real scheduling cycle each.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from federation.cache import snapshot as snap
from federation.failover import eviction, taints
from federation.scheduler import fingerprint
from policies.models.cluster import Cluster, Condition
from tests.unit.scheduler.fleet import NOW, cluster, flavor, job, placed, run, workload

GRACE = 30.0
STATIC = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": ["a"]}, "weight": 2},
                {"targetCluster": {"clusterNames": ["b"]}, "weight": 1},
                {"targetCluster": {"clusterNames": ["c"]}, "weight": 1},
            ]
        },
    }
}
DUPLICATED = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


def down_for(seconds: float) -> tuple[list[Cluster], dt.datetime]:
    """The fleet `seconds` after the monitor declared `a` unreachable, with failover's taint."""
    now = NOW + dt.timedelta(seconds=seconds)
    healthy = [cluster(n, flavor(nodes=4)) for n in ("a", "b", "c")]
    assert healthy[0].status is not None
    lost = healthy[0].status.model_copy(
        update={
            "conditions": [
                Condition(
                    type="Ready", status="False", reason="ConnectionRefused",
                    last_transition_time=NOW,
                )
            ]
        }
    )  # fmt: skip
    plan = taints.desired(lost, now=now, grace=GRACE)
    lost = lost.model_copy(update={"taints": taints.reconcile([], plan.taints, now=now)})
    return [healthy[0].model_copy(update={"status": lost}), *healthy[1:]], now


@pytest.mark.parametrize(
    ("placement", "before", "after"),
    [
        pytest.param(
            STATIC, {"a": 6, "b": 3, "c": 3}, {"b": 6, "c": 6}, id="divided by static weights 2:1:1"
        ),
        pytest.param(DUPLICATED, {"a": 12, "b": 12, "c": 12}, {"b": 12, "c": 12}, id="duplicated"),
    ],
)
def test_a_service_on_a_dead_member_moves_at_the_eviction_grace_not_at_detection(
    placement: dict[str, Any], before: dict[str, int], after: dict[str, int]
) -> None:
    web = job(workload("web", kind="Deployment", replicas=12), placement=placement)
    healthy = [cluster(n, flavor(nodes=4)) for n in ("a", "b", "c")]
    first = run(healthy, [web])
    assert placed(first) == {"web": before}
    bound = first.bindings[0]

    detected, _ = down_for(1.0)
    status = detected[0].status
    assert status is not None and [t.effect for t in status.taints] == ["NoSchedule"]
    assert fingerprint.fingerprint(web, ready=["a", "b", "c"]) != fingerprint.fingerprint(
        web, ready=["b", "c"]
    ), "detection does make the scheduler reconsider it"
    again = run(detected, [web], snapshot=snap.build(detected, bindings=[bound]))
    assert placed(again) == {"web": before}, "the member keeps its share"
    assert [b.spec.clusters for b in again.bindings] in ([], [bound.spec.clusters])

    noexecute, now = down_for(GRACE)
    status = noexecute[0].status
    assert status is not None and [t.effect for t in status.taints] == ["NoExecute"]
    [decision] = eviction.judge(bound, {"a": status.taints}, (), now=now)
    assert decision.due(now)
    evicted = eviction.evict(bound, "a", now=now, reason=decision.reason)
    moved = run(noexecute, [web], snapshot=snap.build(noexecute, bindings=[evicted]))
    assert placed(moved) == {"web": after}, "placed again over the rest"
