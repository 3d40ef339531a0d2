"""Which status changes are news worth a registry write, and which wait for the heartbeat."""

from __future__ import annotations

import datetime as _dt

import pytest

from federation.monitor import capacity, status
from federation.resources import ResourceList
from policies.models.cluster import APIEnablement, ClusterStatus, Condition, Taint
from tests.unit.monitor.kube_objects import node, pod

T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
GPU8 = {"nvidia.com/gpu": "8"}


def observed(
    *,
    ready: str = "True",
    reason: str = "ClusterReady",
    gpus_used: int = 0,
    cpu_used: str = "0",
    nodes: int = 10,
    version: str = "v1.32.0",
    probed: int = 0,
) -> ClusterStatus:
    cap = capacity.summarize(
        [node(f"g{i}", devices=GPU8) for i in range(nodes)],
        [pod("a", node_name="g0", requests={"nvidia.com/gpu": str(gpus_used), "cpu": cpu_used})],
    )
    return ClusterStatus(
        conditions=[
            Condition(
                type="Ready",
                status=ready,  # type: ignore[arg-type]
                reason=reason,
                last_transition_time=T0,
                last_probe_time=T0 + _dt.timedelta(seconds=probed),
            )
        ],
        kubernetes_version=version,
        flavors=list(cap.flavors),
        totals=cap.totals,
    )


BASE = observed()


@pytest.mark.parametrize(
    ("new", "why"),
    [
        pytest.param(observed(probed=10), None, id="only the probe time moved"),
        pytest.param(observed(cpu_used="5"), None, id="cpu moved 5 of 160 cores: under 5%"),
        pytest.param(
            observed(gpus_used=8),
            "free nvidia.com/gpu moved by 8 of 80",
            id="8 of 80 GPUs taken: over 5%",
        ),
        pytest.param(
            observed(ready="False", reason="ConnectionRefused"),
            "Ready=False (ConnectionRefused)",
            id="Ready flipped",
        ),
        pytest.param(
            observed(ready="True", reason="Recovered"),
            "Ready=True (Recovered)",
            id="same status, new reason",
        ),
        pytest.param(
            observed(nodes=9), "amd64/nvidia-gpu nodes 10 -> 9", id="a node left its flavor"
        ),
        pytest.param(
            observed(version="v1.33.0"), "kubernetes version changed", id="member upgraded"
        ),
    ],
)
def test_news(new: ClusterStatus, why: str | None) -> None:
    assert status.news(BASE, new, fraction=0.05) == why


def test_first_status_is_news() -> None:
    assert status.news(None, BASE, fraction=0.05) == "first status"


def test_new_api_is_news() -> None:
    new = BASE.model_copy(update={"api_enablements": [APIEnablement(group_version="apps/v1")]})
    assert status.news(BASE, new, fraction=0.05) == "served APIs changed"


def test_zero_fraction_makes_any_capacity_change_news() -> None:
    assert status.news(BASE, observed(cpu_used="1"), fraction=0) is not None


def test_merge_keeps_taints_failover_wrote() -> None:
    taint = Taint(key="cluster.fedctl.io/unreachable", effect="NoSchedule")
    current = BASE.model_copy(update={"taints": [taint]})
    merged = status.merge_owned(current, observed(ready="False", reason="Timeout"))
    assert merged.taints == [taint]
    assert merged.condition("Ready") is not None
    assert not merged.ready()
    assert status.merge_owned(None, BASE) == BASE
    assert merged.totals.allocatable == BASE.totals.allocatable
    assert isinstance(merged.totals.free, ResourceList)


def test_node_groups_reported_for_the_first_time_are_news() -> None:
    """A status stored before the monitor reported how free room is split over nodes is
    rewritten at once, not at the heartbeat: the scheduler counts pods node by node only
    from a status that has the groups."""
    stored = BASE.model_copy(
        update={"flavors": [f.model_copy(update={"free_nodes": []}) for f in BASE.flavors]}
    )
    assert status.news(stored, BASE, fraction=0.05) == "free nodes reported"
