"""Telling a copy edited in its member from one as our apply left it."""

from __future__ import annotations

from typing import Any

import pytest

from federation.propagation import converge
from federation.propagation import status as status_mod
from policies.models.work import Observed, WorkStatus

MANIFEST: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "labels": {"app": "web", "fedctl.io/managed-by": "fedctl"},
        "annotations": {"fedctl.io/workload-ref": "web/Deployment.apps/web"},
    },
}
APPLIED = WorkStatus(applied=True, applied_hash="h", applied_generation=2)


def _seen(generation: int = 2, **labels: str) -> status_mod.Seen:
    meta = {
        "labels": {"app": "web", "fedctl.io/managed-by": "fedctl", **labels},
        "annotations": MANIFEST["metadata"]["annotations"],
    }
    return status_mod.Seen(
        Observed(), generation=generation, marks=status_mod.marks_of({"metadata": meta})
    )


def _baseline(**labels: str) -> converge.Marks:
    return converge._ours(_seen(**labels).marks or frozenset(), MANIFEST)


@pytest.mark.parametrize(
    ("seen", "baseline", "drift"),
    [
        pytest.param(_seen(), _baseline(), "", id="as applied"),
        pytest.param(_seen(team="payments"), _baseline(), "", id="a label added there"),
        pytest.param(_seen(3), _baseline(), "its copy was edited there", id="spec edited"),
        pytest.param(
            _seen(app="other"), _baseline(), "labels, annotations or data", id="our label changed"
        ),
        pytest.param(
            _seen(app="mutated"),
            _baseline(app="mutated"),
            "",
            id="a webhook rewrote it as we applied: not fought",
        ),
        pytest.param(_seen(app="other"), None, "", id="no baseline yet: nothing to tell"),
        pytest.param(
            status_mod.Seen(Observed(), stripped=True),
            _baseline(),
            "fedctl's labels were taken off",
            id="our labels taken off",
        ),
        pytest.param(status_mod.Seen(Observed(), gone=True), _baseline(), "", id="gone"),
    ],
)
def test_drift_is_what_changed_since_our_apply(
    seen: status_mod.Seen, baseline: converge.Marks | None, drift: str
) -> None:
    found = converge._drifted(APPLIED, seen, baseline)
    assert found.startswith(drift) if drift else found == ""


@pytest.mark.parametrize(
    ("obj", "fields"),
    [
        pytest.param(
            {"kind": "Service", "metadata": {}, "spec": {"ports": [{"port": 80}]}},
            {"spec"},
            id="a spec without a generation counts whole",
        ),
        pytest.param(
            {"kind": "Deployment", "metadata": {"generation": 4}, "spec": {"replicas": 2}},
            set(),
            id="a generation tells spec edits instead",
        ),
        pytest.param(
            {"kind": "ConfigMap", "metadata": {"labels": {"a": "b"}}, "data": {"k": "v"}},
            {"labels", "data"},
            id="a ConfigMap's data entries",
        ),
    ],
)
def test_marks_cover_what_no_generation_tells(obj: dict[str, Any], fields: set[str]) -> None:
    assert {field for field, _, _ in status_mod.marks_of(obj)} == fields
