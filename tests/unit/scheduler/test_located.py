"""Where a workload whose Binding was lost still runs (`reconcile.located`): the copies
its status reports on known members, counted as room it holds when it is placed again.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.registry import codec, keys
from federation.scheduler import reconcile
from policies.models.binding import Binding
from policies.models.work import ClusterWorkloadStatus, WorkloadReference, WorkloadStatus
from tests.unit.scheduler.fleet import bound, job, workload


def _train() -> Any:
    w = workload("train", replicas=2)
    return job(w.model_copy(update={"metadata": w.metadata.model_copy(update={"uid": "u1"})}))


TRAIN = _train()


def _status(*rows: dict[str, Any], uid: str = "u1", phase: str | None = None) -> WorkloadStatus:
    return WorkloadStatus(
        workload=WorkloadReference(
            api_version="batch/v1", kind="Job", namespace="team", name="train", uid=uid
        ),
        phase=phase,
        clusters=[ClusterWorkloadStatus.model_validate(r) for r in rows],
    )


def _located(
    status: WorkloadStatus, bindings: dict[str, Binding] | None = None
) -> dict[str, dict[str, int]]:
    key = keys.workload_status_key(TRAIN.ref)
    return reconcile.located(
        {str(TRAIN.ref): TRAIN},
        bindings=bindings or {},
        results={key: codec.Stored(key, status, revision=2)},
        known={"a", "b"},
    )


@pytest.mark.parametrize(
    ("status", "bindings", "expected"),
    [
        pytest.param(
            _status({"cluster": "a", "replicas": 2}),
            None,
            {"team/Job.batch/train": {"a": 2}},
            id="no Binding, its copy runs on a: placed as if its Binding named a",
        ),
        pytest.param(
            _status({"cluster": "a", "replicas": 2}),
            {"team/Job.batch/train": bound("team", "train", cluster="b")},
            {},
            id="a Binding says where it goes: that Binding decides, not its copies",
        ),
        pytest.param(
            _status({"cluster": "a", "replicas": 2}, uid="u0"),
            None,
            {},
            id="copies of an earlier object of this name hold nothing for this one",
        ),
        pytest.param(
            _status({"cluster": "gone", "replicas": 2}, {"cluster": "b", "replicas": 1}),
            None,
            {"team/Job.batch/train": {"b": 1}},
            id="a copy on a member the registry no longer knows holds no room",
        ),
        pytest.param(
            _status({"cluster": "a", "replicas": 2, "leaving": True}),
            None,
            {},
            id="a copy being left is not where it runs",
        ),
        pytest.param(
            _status({"cluster": "a", "replicas": 2, "phase": "Succeeded"}, phase="Succeeded"),
            None,
            {},
            id="a finished job holds no room",
        ),
    ],
)
def test_where_a_workload_without_a_binding_runs(
    status: WorkloadStatus,
    bindings: dict[str, Binding] | None,
    expected: dict[str, dict[str, int]],
) -> None:
    assert _located(status, bindings) == expected
