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


def _baseline(**labels: str) -> str:
    """The Work's `appliedState` had the apply's response shown these labels."""
    return converge._state(_seen(**labels).marks or frozenset(), None, MANIFEST)


@pytest.mark.parametrize(
    ("seen", "baseline", "drift"),
    [
        pytest.param(_seen(), _baseline(), "", id="as applied"),
        pytest.param(_seen(team="payments"), _baseline(), "", id="a label added there"),
        pytest.param(_seen(3), _baseline(), "its copy was edited there", id="spec edited"),
        pytest.param(
            _seen(1),
            _baseline(),
            "its copy was created again there",
            id="kubectl replace --force: a generation that went back (was never restored)",
        ),
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
            "fedctl's labels or annotation were missing from its copy there",
            id="our labels missing: told without saying who took them",
        ),
        pytest.param(status_mod.Seen(Observed(), gone=True), _baseline(), "", id="gone"),
    ],
)
def test_drift_is_what_changed_since_our_apply(
    seen: status_mod.Seen, baseline: str | None, drift: str
) -> None:
    applied = APPLIED.model_copy(update={"applied_state": baseline})
    found = converge._drifted(applied, seen, MANIFEST)
    assert found.startswith(drift) if drift else found == ""


@pytest.mark.parametrize(
    ("obj", "fields"),
    [
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


SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}
AS_APPLIED = {  # what the member returned: defaults filled in, no generation
    "selector": {"app": "web"},
    "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
    "clusterIP": "10.0.0.7",
    "type": "ClusterIP",
}


@pytest.mark.parametrize(
    ("spec", "drift"),
    [
        pytest.param(AS_APPLIED, "", id="as the apply left it"),
        pytest.param(
            {**AS_APPLIED, "sessionAffinity": "ClientIP", "clusterIP": "10.0.0.7"},
            "",
            id="a field we do not set, written there",
        ),
        pytest.param(
            {**AS_APPLIED, "ports": [{"port": 8080, "protocol": "TCP", "targetPort": 80}]},
            "its spec was edited there",
            id="our port changed",
        ),
        pytest.param(
            {**AS_APPLIED, "selector": {"app": "other"}},
            "its spec was edited there",
            id="our selector changed",
        ),
    ],
)
def test_a_kind_without_generation_is_told_edited_by_the_spec_fields_we_set(
    spec: dict[str, Any], drift: str
) -> None:
    """A Service keeps no generation: its spec is compared on the fields our manifest
    sets, against what the apply left, so defaults and fields others own do not count."""
    applied = APPLIED.model_copy(
        update={
            "applied_generation": None,
            "applied_state": converge._state(frozenset(), AS_APPLIED, SERVICE),
        }
    )
    seen = status_mod.Seen(Observed(), marks=frozenset(), spec=spec)
    assert converge._drifted(applied, seen, SERVICE) == drift
