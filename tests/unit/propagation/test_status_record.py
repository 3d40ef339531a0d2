"""What the member watches take in: a copy whose workload annotation is taken off there is
still ours to put right, not a stranger."""

from __future__ import annotations

from typing import Any

from federation import clock
from federation.propagation import render, status
from federation.registry import keys

REF = keys.WorkloadRef("web", "Deployment.apps", "storefront")


class _Members:
    def on_retire(self, hook: Any) -> None:
        pass


def _copy(*, annotated: bool) -> dict[str, Any]:
    notes = {render.REF_ANNOTATION: str(REF)} if annotated else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "storefront",
            "namespace": "web",
            "resourceVersion": "7" if annotated else "8",
            "generation": 2,
            "labels": {render.LABEL_MANAGED_BY: render.MANAGED_BY},
            "annotations": notes,
        },
        "spec": {"replicas": 3},
        "status": {"replicas": 3, "readyReplicas": 3},
    }


def test_a_copy_whose_workload_annotation_is_taken_off_is_put_right() -> None:
    """`kubectl annotate deploy storefront fedctl.io/workload-ref-` there: the copy was
    no longer followed (no pass queued, edits never restored, the status frozen)."""
    told: list[str] = []
    watches = status.StatusWatches(
        _Members(),  # type: ignore[arg-type]
        cluster=lambda name: None,
        notify=told.append,
        spawn=lambda *a, **k: None,  # type: ignore[arg-type,return-value]
        clock=clock.real,
    )
    watches.record("eu", _copy(annotated=True))
    assert told == [status.workload_item(REF)]
    told.clear()
    watches.record("eu", _copy(annotated=False))
    assert told == [status.workload_item(REF)], "its workload's pass puts the annotation back"
    assert watches.seen[("eu", str(REF))].stripped
    watches._synced.add(("eu", "apps/v1", "Deployment"))  # the watch has listed
    # Still ours: an Abort policy does not refuse to take back its own copy.
    assert watches.owner("eu", _copy(annotated=False)) == (True, str(REF))


def test_a_released_copy_is_no_longer_ours() -> None:
    """A release takes off our labels and the annotation: a stranger's object now."""
    told: list[str] = []
    watches = status.StatusWatches(
        _Members(),  # type: ignore[arg-type]
        cluster=lambda name: None,
        notify=told.append,
        spawn=lambda *a, **k: None,  # type: ignore[arg-type,return-value]
        clock=clock.real,
    )
    watches.record("eu", _copy(annotated=True))
    told.clear()
    released = _copy(annotated=False)
    released["metadata"]["labels"] = {}
    watches.record("eu", released)
    assert told == []
    assert watches.copies(REF) == {}
