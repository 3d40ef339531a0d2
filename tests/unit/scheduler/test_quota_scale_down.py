"""A queue's capability, an ancestor's, or a namespace's overall quota lowered below what
its workloads hold never refuses a change that holds less.

A Deployment of 2 pods in a queue whose capability was lowered to 1 CPU, scaled to 1,
was refused (`queue team at capability for cpu: …`): its Binding turned Pending and
the 2 pods ran on, where the scale-down was the very thing that would bring the queue
back under. A ResourceQuota never refuses a change that lowers usage, and Kueue keeps
admitted work admitted when a quota is lowered; only what a change adds is judged.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.cache import snapshot as snap
from federation.scheduler import cycle
from tests.unit.scheduler.fleet import cluster, frq, job, placed, queue, respec, run, workload

WEB = "team/Deployment.apps/web"


def _lowered_then(replicas: int, **limits: Any) -> cycle.CycleResult:
    """`web` (2 pods of 1 CPU) and 2 one-pod jobs admitted in queue `team` (4 CPUs in
    all); then the limits are lowered (`queues`, `quotas`) and `web` edited to
    `replicas`: the cycle places it again without its running copies' charge."""
    web = workload("web", kind="Deployment", replicas=2, queue="team")
    others = [job(workload(f"j{i}", queue="team"), seq=i + 1) for i in range(2)]
    first = run([cluster("a")], [job(web), *others], queues=[queue("team")])
    assert len(first.admitted) == 3
    snapshot = snap.build([cluster("a")], bindings=first.bindings, **limits)
    edited = job(respec(web, replicas=replicas), seq=9)
    return run([cluster("a")], [edited], usage=first.usage.copy(), snapshot=snapshot)


LOWERED = [
    pytest.param({"queues": [queue("team", capability={"cpu": "1"})]}, id="its capability"),
    pytest.param(
        {"queues": [queue("org", capability={"cpu": "1"}), queue("team", parent="org")]},
        id="a parent's capability",
    ),
    pytest.param(
        {"queues": [queue("team")], "quotas": [frq("team", cpu="1")]},
        id="its namespace's overall quota",
    ),
]


@pytest.mark.parametrize("limits", LOWERED)
@pytest.mark.parametrize(
    "replicas",
    [
        pytest.param(0, id="scaled to zero"),
        pytest.param(1, id="scaled down"),
        pytest.param(2, id="edited at the same size"),
    ],
)
def test_a_change_that_holds_no_more_passes_a_lowered_limit(
    limits: dict[str, Any], replicas: int
) -> None:
    result = _lowered_then(replicas, **limits)
    assert placed(result) == {"web": {"a": replicas}} if replicas else not result.reasons
    assert WEB not in result.reasons, result.reasons


@pytest.mark.parametrize("limits", LOWERED)
def test_a_lowered_limit_still_refuses_a_scale_up(limits: dict[str, Any]) -> None:
    result = _lowered_then(3, **limits)
    assert not result.admitted
    assert "cpu" in result.reasons[WEB], result.reasons
