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


def test_an_apply_response_older_than_the_watch_s_events_does_not_replace_them() -> None:
    """A scale-down's apply returned 7 ready of 3 while the watch had brought the copy at
    3 of 3; recorded over it, `7/3` stood for good (no later event came), and a graceful
    move waiting on the copy never ended."""
    watches = status.StatusWatches(
        _Members(),  # type: ignore[arg-type]
        cluster=lambda name: None,
        notify=lambda item: None,
        spawn=lambda *a, **k: None,  # type: ignore[arg-type,return-value]
        clock=clock.real,
    )

    def at(version: str, ready: int) -> dict[str, Any]:
        copy = _copy(annotated=True)
        copy["metadata"]["resourceVersion"] = version
        copy["status"] = {"replicas": 3, "readyReplicas": ready}
        return copy

    watches.record("eu", at("2447", 3))  # the watch: settled
    watches.record("eu", at("2434", 7), quiet=True)  # the apply's response, read later
    assert watches.seen[("eu", str(REF))].resource_version == "2447"
    watches.record("eu", at("2450", 2))  # a newer event still counts
    assert watches.seen[("eu", str(REF))].resource_version == "2450"
