"""The API stamps a Cluster's NoExecute taints with a timeAdded, as Kubernetes does a Node's:
failover counts tolerationSeconds from it, and a taint without one never ran out."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from federation.api import objects
from policies.models.cluster import Cluster
from policies.models.queue import Queue

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
NOW = 100


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def cluster(*taints: tuple[str, str, str, float | None]) -> Cluster:
    """A Cluster with taints given as (key, value, effect, seconds after T0 or None)."""
    listed: list[dict[str, Any]] = [
        {"key": k, "value": v, "effect": e, **({"timeAdded": at(s)} if s is not None else {})}
        for k, v, e, s in taints
    ]
    return Cluster.model_validate(
        {"metadata": {"name": "edge"}, "spec": {"region": "r", "taints": listed}}
    )


def times(obj: Cluster) -> list[tuple[str, str, str, dt.datetime | None]]:
    return [(t.key, t.value, t.effect, t.time_added) for t in obj.spec.taints]


@pytest.mark.parametrize(
    ("stored", "given", "expected"),
    [
        pytest.param(
            None,
            cluster(("drain", "", "NoExecute", None)),
            [("drain", "", "NoExecute", NOW)],
            id="a new NoExecute taint is stamped now",
        ),
        pytest.param(
            None,
            cluster(("slow", "", "NoSchedule", None), ("soft", "", "PreferNoSchedule", None)),
            [("slow", "", "NoSchedule", None), ("soft", "", "PreferNoSchedule", None)],
            id="only NoExecute taints carry a time",
        ),
        pytest.param(
            cluster(("drain", "", "NoExecute", 40)),
            cluster(("drain", "", "NoExecute", 7)),
            [("drain", "", "NoExecute", 7)],
            id="a time given explicitly stays as given",
        ),
        pytest.param(
            cluster(("drain", "", "NoExecute", 40)),
            cluster(("drain", "", "NoExecute", None), ("new", "", "NoExecute", None)),
            [("drain", "", "NoExecute", 40), ("new", "", "NoExecute", NOW)],
            id="a stored taint keeps its time through an edit that leaves it out",
        ),
        pytest.param(
            cluster(("drain", "disk", "NoExecute", 40)),
            cluster(("drain", "net", "NoExecute", None)),
            [("drain", "net", "NoExecute", NOW)],
            id="another value is another taint, stamped now",
        ),
        pytest.param(
            cluster(("drain", "", "NoSchedule", None)),
            cluster(("drain", "", "NoExecute", None)),
            [("drain", "", "NoExecute", NOW)],
            id="a NoSchedule taint made NoExecute starts its time now",
        ),
        pytest.param(
            cluster(("drain", "", "NoExecute", None)),
            cluster(("drain", "", "NoExecute", None)),
            [("drain", "", "NoExecute", NOW)],
            id="one stored before stamping existed gets its time on the next write",
        ),
    ],
)
def test_noexecute_taints_are_stamped(
    stored: Cluster | None,
    given: Cluster,
    expected: list[tuple[str, str, str, float | None]],
) -> None:
    got = objects._stamp_taints(stored, given, now=at(NOW))
    assert isinstance(got, Cluster)
    assert times(got) == [(k, v, e, at(s) if s is not None else None) for k, v, e, s in expected]


def test_objects_without_noexecute_taints_pass_through_as_they_are() -> None:
    plain = cluster(("slow", "", "NoSchedule", None))
    assert objects._stamp_taints(None, plain, now=at(NOW)) is plain
    queue = Queue.model_validate({"metadata": {"name": "q"}, "spec": {}})
    assert objects._stamp_taints(None, queue, now=at(NOW)) is queue
