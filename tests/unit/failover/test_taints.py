"""Taints from health: the table of Ready conditions and times to the taints they imply."""

from __future__ import annotations

import pytest

from federation.failover import taints
from policies.models.cluster import ClusterStatus, Taint
from tests.unit.failover.builders import at, status, taint

GRACE = 30.0


@pytest.mark.parametrize(
    ("observed", "now", "expected", "recheck"),
    [
        pytest.param(status("True"), 100, [], None, id="ready member carries no taint"),
        pytest.param(
            None, 0, [(taints.NOT_READY, "NoSchedule")], None, id="no status yet: no new work"
        ),
        pytest.param(
            status("Unknown", reason="NotProbed"),
            500,
            [(taints.NOT_READY, "NoSchedule")],
            None,
            id="unknown never escalates: no evidence to move work on",
        ),
        pytest.param(
            status("False", since=0),
            0,
            [(taints.NOT_READY, "NoSchedule")],
            GRACE,
            id="not ready: NoSchedule at once, recheck when the grace ends",
        ),
        pytest.param(
            status("False", since=0),
            29.5,
            [(taints.NOT_READY, "NoSchedule")],
            0.5,
            id="half a second before the grace ends: still NoSchedule",
        ),
        pytest.param(
            status("False", since=0),
            30,
            [(taints.NOT_READY, "NoExecute")],
            None,
            id="still down when the grace ends: NoExecute",
        ),
        pytest.param(
            status("False", reason="ConnectionRefused", since=0),
            1,
            [(taints.UNREACHABLE, "NoSchedule")],
            29.0,
            id="connection refused is unreachable",
        ),
        pytest.param(
            status("False", reason="Timeout", since=10),
            45,
            [(taints.UNREACHABLE, "NoExecute")],
            None,
            id="timeouts past the grace: unreachable NoExecute, counted from the transition",
        ),
    ],
)
def test_desired_taints(
    observed: ClusterStatus | None,
    now: float,
    expected: list[tuple[str, str]],
    recheck: float | None,
) -> None:
    plan = taints.desired(observed, now=at(now), grace=GRACE)
    assert [(t.key, t.effect) for t in plan.taints] == expected
    assert plan.recheck_after == (pytest.approx(recheck) if recheck is not None else None)


def test_a_per_cluster_grace_overrides_the_global_one() -> None:
    from policies.models.cluster import Cluster

    quick = Cluster.model_validate(
        {"metadata": {"name": "a"}, "spec": {"region": "r", "evictionGraceSeconds": 5}}
    )
    plain = Cluster.model_validate({"metadata": {"name": "b"}, "spec": {"region": "r"}})
    assert taints.grace_for(quick, default=GRACE) == 5
    assert taints.grace_for(plain, default=GRACE) == GRACE
    assert taints.grace_for(None, default=GRACE) == GRACE
    plan = taints.desired(status("False"), now=at(6), grace=taints.grace_for(quick, default=GRACE))
    assert [t.effect for t in plan.taints] == ["NoExecute"]


@pytest.mark.parametrize(
    ("current", "wanted", "expected"),
    [
        pytest.param(
            [],
            [Taint(key=taints.NOT_READY, effect="NoSchedule")],
            [(taints.NOT_READY, "NoSchedule", 50)],
            id="a new taint is stamped now",
        ),
        pytest.param(
            [taint(taints.NOT_READY, "NoExecute", added=10)],
            [Taint(key=taints.NOT_READY, effect="NoExecute")],
            [(taints.NOT_READY, "NoExecute", 10)],
            id="a taint that stays keeps its time, so tolerationSeconds do not restart",
        ),
        pytest.param(
            [taint("team.example/drain", added=3), taint(taints.NOT_READY, "NoSchedule")],
            [],
            [("team.example/drain", "NoExecute", 3)],
            id="recovery removes ours and keeps foreign taints",
        ),
        pytest.param(
            [taint(taints.NOT_READY, "NoSchedule", added=0)],
            [Taint(key=taints.NOT_READY, effect="NoExecute")],
            [(taints.NOT_READY, "NoExecute", 50)],
            id="escalation to NoExecute is a new taint with its own time",
        ),
        pytest.param(
            [taint(taints.UNREACHABLE, "NoExecute", added=20)],
            [Taint(key=taints.NOT_READY, effect="NoExecute")],
            [(taints.NOT_READY, "NoExecute", 20)],
            id="a reason that flips while the member stays down keeps the NoExecute time",
        ),
        pytest.param(
            [taint(taints.UNREACHABLE, "NoSchedule", added=20)],
            [Taint(key=taints.NOT_READY, effect="NoExecute")],
            [(taints.NOT_READY, "NoExecute", 50)],
            id="a first NoExecute after a flip of NoSchedule taints is stamped now",
        ),
    ],
)
def test_reconcile(
    current: list[Taint], wanted: list[Taint], expected: list[tuple[str, str, float]]
) -> None:
    got = taints.reconcile(current, wanted, now=at(50))
    assert [(t.key, t.effect, t.time_added) for t in got] == [(k, e, at(s)) for k, e, s in expected]


def test_a_reason_that_flips_back_and_forth_keeps_the_first_noexecute_time() -> None:
    stored = [taint(taints.UNREACHABLE, "NoExecute", added=20)]
    for now, key in [(50, taints.NOT_READY), (80, taints.UNREACHABLE), (110, taints.NOT_READY)]:
        stored = taints.reconcile(stored, [Taint(key=key, effect="NoExecute")], now=at(now))
        assert [(t.key, t.time_added) for t in stored] == [(key, at(20))]


def test_a_foreign_noexecute_taint_lends_no_time_to_ours() -> None:
    got = taints.reconcile(
        [taint("team.example/drain", added=3), taint(taints.UNREACHABLE, "NoSchedule", added=20)],
        [Taint(key=taints.NOT_READY, effect="NoExecute")],
        now=at(50),
    )
    assert [(t.key, t.time_added) for t in got] == [
        ("team.example/drain", at(3)),
        (taints.NOT_READY, at(50)),
    ]
