"""Overrides that cannot apply, end to end: real etcd, simulated members, one propagator.

An override that cannot be applied fails only the copies it renders, as Karmada fails
the one binding's Work: the rest of the federation goes on, the failure is shown where a
user looks (the Work, the workload's health, a Warning event naming the policy and rule),
and a workload moving to such a cluster keeps its old copy running. A finished job's copy
is left as it ran, whatever override now selects it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.propagation.controller import Propagator
from federation.registry import codec, embedded, events, keys
from policies.models.override import OverridePolicy
from policies.models.work import Event, WorkloadStatus
from policies.models.workload import Workload
from tests.integration.test_propagation import _phase, _report
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

IMAGE = "/spec/template/spec/containers/0/image"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def policy(name: str, overriders: dict[str, Any], **target: Any) -> OverridePolicy:
    rule: dict[str, Any] = {"overriders": overriders}
    if target:
        rule["targetCluster"] = target
    return OverridePolicy.model_validate(
        {
            "metadata": {"name": name, "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                       "name": "caf"}],
                "overrideRules": [rule],
            },
        }
    )  # fmt: skip


def tag_at(path: str) -> dict[str, Any]:
    edit = {"component": "Tag", "operator": "replace", "value": "2", "predicate": {"path": path}}
    return {"imageOverrider": [edit]}


async def image(fed: Federation, cluster: str, name: str = "caf") -> str | None:
    obj = await fed.member_object(cluster, "apps/v1", "Deployment", "web", name)
    return None if obj is None else str(obj["spec"]["template"]["spec"]["containers"][0]["image"])


async def row_error(fed: Federation, workload: Workload, cluster: str) -> WorkloadStatus | None:
    status = await fed.status(workload)
    rows = {r.cluster: r for r in status.clusters} if status else {}
    return status if cluster in rows and rows[cluster].error else None


async def warnings(fed: Federation, workload: Workload) -> list[str]:
    listed = await codec.TypedStore(fed.store, events.EVENTS).list(
        events.event_prefix(ref_of(workload))
    )
    return [e.obj.message for e in listed.items if e.obj.type == "Warning"]


async def test_a_bad_override_fails_only_its_copy_and_names_policy_rule_and_path(
    fed: Federation,
) -> None:
    """A typo in a predicate path raised out of the propagator and stopped the controller,
    again on every restart."""
    caf, other = deployment("caf", 2), deployment("other", 1)
    await fed.put(policy("pred", tag_at(IMAGE[:-1]), clusterNames=["eu-west-arm"]))
    for workload in (caf, other):
        await fed.put(workload)
    await fed.bind(caf, {"us-east-cpu": (1, None), "eu-west-arm": (1, None)})
    await fed.bind(other, {"us-east-cpu": (1, None)})
    fed.start()
    await wait_for(lambda: image(fed, "us-east-cpu"), timeout=15, message="caf on us-east-cpu")
    await wait_for(lambda: image(fed, "us-east-cpu", "other"), timeout=15, message="other")
    status = await wait_for(
        lambda: row_error(fed, caf, "eu-west-arm"), timeout=15, message="the render error"
    )
    error = {r.cluster: r.error for r in status.clusters}["eu-west-arm"]
    assert "OverridePolicy web/pred overrideRules[0].imageOverrider[0]" in error
    assert IMAGE[:-1] in error
    assert status.health != "Healthy"
    assert await image(fed, "eu-west-arm") is None
    said = await wait_for(lambda: warnings(fed, caf), timeout=10, message="a Warning event")
    assert any("OverridePolicy web/pred" in message for message in said)
    assert fed.task is not None and not fed.task.done()


async def test_a_copy_a_member_rejects_names_the_override_rules_that_made_it(
    fed: Federation,
) -> None:
    """An override set a value the member refuses (`imagePullPolicy: Sometimes`): the
    Work read only the member's error, naming a field the template does not even hold,
    and not the policy to fix. A copy no override shaped reads the member's error alone."""
    caf = deployment("caf", 1)
    bad = {"operator": "add", "path": f"{IMAGE}PullPolicy", "value": "Sometimes"}
    await fed.put(policy("badtype", {"plaintext": [bad]}, clusterNames=["eu-west-arm"]))
    await fed.put(caf)
    await fed.bind(caf, {"us-east-cpu": (1, None), "eu-west-arm": (1, None)})
    fed.start()
    status = await wait_for(
        lambda: row_error(fed, caf, "eu-west-arm"), timeout=15, message="the member's refusal"
    )
    error = {r.cluster: r.error for r in status.clusters}["eu-west-arm"]
    assert error.startswith("eu-west-arm rejected the object: "), error
    assert "Sometimes" in error
    assert error.endswith("(its manifest as edited by OverridePolicy web/badtype overrideRules[0])")
    said = await wait_for(lambda: warnings(fed, caf), timeout=10, message="a Warning event")
    assert any("OverridePolicy web/badtype" in message for message in said)
    assert await image(fed, "us-east-cpu") is not None


async def test_one_item_s_unexpected_failure_does_not_stop_the_propagator(
    fed: Federation,
) -> None:
    caf = deployment("caf", 1)
    await fed.put(caf)
    await fed.bind(caf, {"us-east-cpu": (1, None)})
    propagator: Propagator = fed.start()
    real = propagator.sync.sync
    failures: list[str] = []

    async def flaky(ref: Any) -> float | None:
        if not failures:
            failures.append(str(ref))
            raise RuntimeError("a fault nothing expected")
        return await real(ref)

    propagator.sync.sync = flaky  # type: ignore[method-assign]
    await wait_for(lambda: image(fed, "us-east-cpu"), timeout=20, message="applied on retry")
    assert failures and fed.task is not None and not fed.task.done()


async def test_an_edit_an_override_cannot_render_shows_as_not_healthy(fed: Federation) -> None:
    """The copy kept its old manifest while the workload read Healthy, with no event."""
    caf = deployment("caf", 1)
    await fed.put(caf)
    await fed.bind(caf, {"us-east-cpu": (1, None)})
    fed.start()
    await wait_for(lambda: image(fed, "us-east-cpu"), timeout=15, message="caf applied")
    bad = {"plaintext": [{"path": "/spec/template/spec/containers/1/args/0",
                          "operator": "replace", "value": "x"}]}  # fmt: skip
    await fed.put(policy("bad-op", bad))
    status = await wait_for(
        lambda: row_error(fed, caf, "us-east-cpu"), timeout=15, message="the render error"
    )
    assert status.health != "Healthy"
    assert "OverridePolicy web/bad-op overrideRules[0].plaintext[0]" in status.clusters[0].error


_UNRENDERABLE = {"plaintext": [{"path": "/spec/template/spec/tolerations/0/key",
                                 "operator": "replace", "value": "x"}]}  # fmt: skip
"""An override replacing a toleration the workload does not have."""


async def _moved_where_it_cannot_render(fed: Federation) -> Any:
    """caf running on us-east-cpu, then bound to eu-west-arm, where an OverridePolicy
    replaces a toleration it does not have: that target cannot be rendered."""
    caf = deployment("caf", 1)
    await fed.put(caf)
    await fed.bind(caf, {"us-east-cpu": (1, None)})
    fed.start()
    await wait_for(lambda: image(fed, "us-east-cpu"), timeout=15, message="caf applied")
    await fed.put(policy("eu-only", _UNRENDERABLE, clusterNames=["eu-west-arm"]))
    await fed.bind(caf, {"eu-west-arm": (1, None)})
    return caf


async def test_a_move_to_a_cluster_its_override_cannot_render_keeps_the_old_copy(
    fed: Federation,
) -> None:
    """The old copy was removed and the new one never created: no copy anywhere."""
    caf = await _moved_where_it_cannot_render(fed)
    status = await wait_for(
        lambda: row_error(fed, caf, "eu-west-arm"), timeout=15, message="the render error"
    )
    assert status.health != "Healthy"
    assert await image(fed, "us-east-cpu") is not None
    # Fixed, the move completes: the new copy is created and the old one goes.
    await fed.delete(policy("eu-only", _UNRENDERABLE))
    await wait_for(lambda: image(fed, "eu-west-arm"), timeout=15, message="the new copy")

    async def old_gone() -> bool:
        return await image(fed, "us-east-cpu") is None

    await wait_for(old_gone, timeout=15, message="the old copy removed")


async def test_a_finished_job_is_left_as_it_ran_when_an_override_selects_it(
    fed: Federation,
) -> None:
    """The propagator updated the finished Job's pod template, which the member refused:
    the job read Progressing with an error."""
    job, web = _report("done"), deployment("caf", 1)
    for workload in (job, web):
        await fed.put(workload)
        await fed.bind(workload, {"us-east-cpu": (1, None)})
    propagator = fed.start()
    await wait_for(lambda: _phase(fed, job, {"Succeeded"}), timeout=20, message="job done")
    await wait_for(lambda: image(fed, "us-east-cpu"), timeout=15, message="caf applied")
    edit = {"component": "Tag", "operator": "replace", "value": "9"}
    every = OverridePolicy.model_validate(
        {
            "metadata": {"name": "tags", "namespace": "web"},
            "spec": {"overrideRules": [{"overriders": {"imageOverrider": [edit]}}]},
        }
    )
    await fed.put(every)

    async def retagged() -> bool:
        return (await image(fed, "us-east-cpu") or "").endswith(":9")

    await wait_for(retagged, timeout=15, message="the override reaches the Deployment")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="nothing left to do")
    status = await fed.status(job)
    assert status is not None and status.phase == "Succeeded" and status.health == "Completed"
    assert [r.error for r in status.clusters] == [""]
    copy = await fed.member_object("us-east-cpu", "batch/v1", "Job", "web", "report")
    assert copy is not None and copy["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "busybox"
    )


async def test_a_copy_running_under_another_name_is_collected(fed: Federation) -> None:
    """A rename override (refused now) left a second copy, labelled and annotated as the
    workload's, that garbage collection took as wanted for as long as the workload ran."""
    caf = deployment("caf", 1)
    await fed.put(caf)
    await fed.bind(caf, {"us-east-cpu": (1, None)})
    fed.start()
    await wait_for(lambda: image(fed, "us-east-cpu"), timeout=15, message="caf applied")
    copy = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "caf")
    assert copy is not None
    meta = copy["metadata"]
    renamed = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "caf-renamed", "namespace": "web", "labels": meta["labels"],
                     "annotations": meta["annotations"]},
        "spec": copy["spec"],
    }  # fmt: skip
    conn = await fed.conn("us-east-cpu")
    await conn.apply(renamed)
    await fed.stop()
    fed.start()  # start-up collection looks at every copy of ours

    async def collected() -> bool:
        return await image(fed, "us-east-cpu", "caf-renamed") is None

    await wait_for(collected, timeout=15, message="the renamed copy collected")
    assert await image(fed, "us-east-cpu") is not None


async def test_a_held_copy_on_a_cluster_that_left_the_fleet_is_not_kept(fed: Federation) -> None:
    """Held for a target that cannot be rendered, the old copy's Work stayed even once
    its cluster was unjoined, where nothing can reach it again."""
    caf = await _moved_where_it_cannot_render(fed)
    await wait_for(lambda: row_error(fed, caf, "eu-west-arm"), timeout=15, message="held")
    await fed.objects.delete(keys.cluster_key("us-east-cpu"))  # `fedctl delete cluster`

    async def work_gone() -> bool:
        return await fed.works.get(keys.work_key("us-east-cpu", ref_of(caf))) is None

    await wait_for(work_gone, timeout=15, message="the unjoined cluster's Work removed")


async def test_a_rejection_met_again_counts_on_its_event(fed: Federation) -> None:
    """The member refused the copy at every retry (the error counter climbed to 18) and
    `fedctl get events` showed one ApplyFailed whose age kept growing, as if it were over:
    the retries now count on that event, as a Kubernetes event's count and lastTimestamp."""
    caf = deployment("caf", 1)
    bad = {"operator": "add", "path": f"{IMAGE}PullPolicy", "value": "Sometimes"}
    await fed.put(policy("badtype", {"plaintext": [bad]}, clusterNames=["eu-west-arm"]))
    await fed.put(caf)
    await fed.bind(caf, {"eu-west-arm": (1, None)})
    fed.start()

    async def counted() -> list[Event]:
        listed = await codec.TypedStore(fed.store, events.EVENTS).list(
            events.event_prefix(ref_of(caf))
        )
        failed = [e.obj for e in listed.items if e.obj.reason == "ApplyFailed"]
        return failed if any(e.count >= 2 for e in failed) else []

    (failed,) = await wait_for(counted, timeout=40, message="the refusal counted again")
    assert failed.last_time is not None and failed.last_time > failed.time
    assert "OverridePolicy web/badtype" in failed.message
