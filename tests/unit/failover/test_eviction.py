"""Eviction: which targets a NoExecute taint removes and when; the rate limiter's pace."""

from __future__ import annotations

from decimal import Decimal

import pytest

from federation.failover import eviction
from policies.models.binding import TargetCluster
from policies.models.cluster import Taint
from policies.models.common import Toleration
from tests.unit.failover.builders import at, binding, taint

DOWN = "cluster.fedctl.io/not-ready"
UNREACHABLE = "cluster.fedctl.io/unreachable"


def tol(**fields: object) -> Toleration:
    return Toleration.model_validate(fields)


@pytest.mark.parametrize(
    ("cluster_taints", "tolerations", "expected"),
    [
        pytest.param({}, [], [], id="no taints: nothing to evict"),
        pytest.param({"a": [taint(DOWN, "NoSchedule")]}, [], [], id="NoSchedule never evicts"),
        pytest.param(
            {"a": [taint(DOWN, added=0)]},
            [],
            [("a", 100.0)],
            id="untolerated NoExecute: evict now",
        ),
        pytest.param(
            {"a": [taint(DOWN, added=0)]},
            [tol(key=DOWN, operator="Exists", effect="NoExecute", tolerationSeconds=300)],
            [("a", 300.0)],
            id="tolerated for 300s: evict 300s after the taint appeared",
        ),
        pytest.param(
            {"a": [taint(DOWN, added=0)]},
            [tol(key=DOWN, operator="Exists")],
            [],
            id="tolerated without seconds: stays for good",
        ),
        pytest.param(
            {"a": [taint(DOWN, added=0)]},
            [tol(key=DOWN, operator="Exists", effect="NoExecute", tolerationSeconds=2**63 - 1)],
            [],
            id="tolerated for int64 seconds, past the calendar's end: stays for good",
        ),
        pytest.param(
            {"a": [taint(DOWN, added=0)]},
            [tol(operator="Exists")],
            [],
            id="empty key with Exists tolerates everything",
        ),
        pytest.param(
            {"a": [taint(DOWN, added=0)]},
            [tol(key=DOWN, operator="Exists", effect="NoSchedule")],
            [("a", 100.0)],
            id="a toleration for another effect does not count",
        ),
        pytest.param(
            {"a": [taint(DOWN, added=0)], "c": [taint(DOWN, added=0)]},
            [],
            [("a", 100.0)],
            id="only clusters the binding targets are judged",
        ),
        pytest.param(
            {
                "b": [
                    taint(DOWN, added=0),
                    Taint(key="x", effect="NoExecute", time_added=at(0)),
                ]
            },
            [
                tol(key=DOWN, operator="Exists", tolerationSeconds=500),
                tol(key="x", value="", tolerationSeconds=60),
            ],
            [("b", 60.0)],
            id="two NoExecute taints: the earliest deadline wins",
        ),
        pytest.param(
            {"a": [taint(DOWN, added=0)]},
            [tol(key="cluster.karmada.io/not-ready", operator="Exists", effect="NoExecute",
                 tolerationSeconds=300)],
            [("a", 300.0)],
            id="Karmada's not-ready key tolerates fedctl's not-ready taint",
        ),
        pytest.param(
            {"a": [taint(UNREACHABLE, added=0)]},
            [tol(key="cluster.karmada.io/unreachable", operator="Exists")],
            [],
            id="Karmada's unreachable key tolerates fedctl's unreachable taint",
        ),
        pytest.param(
            {"a": [taint(UNREACHABLE, added=0)]},
            [tol(key="cluster.karmada.io/not-ready", operator="Exists")],
            [("a", 100.0)],
            id="Karmada's not-ready key does not tolerate being unreachable",
        ),
        pytest.param(
            {"a": [taint("cluster.karmada.io/not-ready", added=0)]},
            [tol(key=DOWN, operator="Exists")],
            [("a", 100.0)],
            id="fedctl's key tolerates no taint a user set under Karmada's key",
        ),
    ],
)  # fmt: skip
def test_judge(
    cluster_taints: dict[str, list[Taint]],
    tolerations: list[Toleration],
    expected: list[tuple[str, float]],
) -> None:
    b = binding(clusters={"a": 2, "b": 1})
    got = eviction.judge(b, cluster_taints, tolerations, now=at(100))
    assert [(d.cluster, (d.at - at(0)).total_seconds()) for d in got] == expected


@pytest.mark.parametrize(
    ("mode", "stored"),
    [
        pytest.param("Gracefully", "Gracefully", id="Gracefully kept"),
        pytest.param("Graciously", "Gracefully", id="old spelling Graciously normalised"),
        pytest.param("Immediately", "Directly", id="old spelling Immediately normalised"),
        pytest.param("Never", "Never", id="Never kept"),
    ],
)
def test_evict_moves_the_cluster_into_a_task_and_asks_for_re_placement(
    mode: str, stored: str
) -> None:
    b = binding(clusters={"a": 2, "b": 1})
    out = eviction.evict(b, "a", now=at(5), reason="untolerated taint", purge_mode=mode)
    assert out.placement() == {"b": 1}
    (t,) = out.spec.eviction_tasks
    assert (t.cluster, t.replicas, t.purge_mode, t.creation_time) == ("a", 2, stored, at(5))
    assert out.status.phase == "Pending" and "Evicted from a" in out.status.reason
    assert eviction.evict(out, "a", now=at(6), reason="again") == out  # idempotent


def test_evict_leaves_the_cost_of_the_targets_left() -> None:
    b = binding(clusters={})
    targets = [
        TargetCluster(name="a", replicas=2, hourly_cost=Decimal("0.20")),
        TargetCluster(name="b", replicas=1, hourly_cost=Decimal("0.05")),
    ]
    b = b.model_copy(
        update={
            "spec": b.spec.model_copy(update={"clusters": targets, "hourly_cost": Decimal("0.25")})
        }
    )

    out = eviction.evict(b, "a", now=at(5), reason="untolerated taint")

    assert out.spec.hourly_cost == Decimal("0.05")


class TestRateLimiter:
    def limiter(self) -> eviction.RateLimiter:
        return eviction.RateLimiter(rate=10, secondary_rate=0.5, unhealthy_threshold=0.55, now=0)

    @pytest.mark.parametrize(
        ("unhealthy", "total", "rate"),
        [
            pytest.param(1, 10, 10, id="one member of ten down: full rate"),
            pytest.param(5, 10, 10, id="half the fleet: still under the threshold"),
            pytest.param(6, 10, 0.5, id="most of the fleet down: likely our own network, slow"),
            pytest.param(0, 0, 10, id="empty fleet: full rate"),
        ],
    )
    def test_rate_follows_fleet_health(self, unhealthy: int, total: int, rate: float) -> None:
        assert self.limiter().set_health(unhealthy=unhealthy, total=total) == rate

    def test_full_rate_allows_a_burst_then_paces(self) -> None:
        lim = self.limiter()
        assert sum(lim.try_acquire(0.0) for _ in range(20)) == 10
        assert lim.wait_time(0.0) == pytest.approx(0.1)
        assert lim.try_acquire(0.1)

    def test_secondary_rate_allows_one_eviction_every_two_seconds(self) -> None:
        lim = self.limiter()
        lim.set_health(unhealthy=9, total=10)
        granted = [t / 10 for t in range(0, 61) if lim.try_acquire(t / 10)]
        assert granted == [0.0, 2.0, 4.0, 6.0]
