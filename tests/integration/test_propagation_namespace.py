"""A federated Namespace and the copies in it: real etcd, simulated members, a propagator.

A member's copy of a Namespace holds the copies of every workload in it, so deleting it
there deletes them all. The propagator deleted it as soon as the Namespace template went,
and applied again each copy whose template was still in the registry: every running Job
started over. Now deleting the Namespace through the API deletes what it holds, the
copies leave their members one by one, and the member's namespace goes last. A
FederatedResourceQuota's quota in it holds it there too: the namespace was deleted under
it, and created again bare (its labels and the member's own objects lost) to put the
quota back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.api import app as api_app
from federation.registry import codec, embedded, keys
from policies.models.frq import FederatedResourceQuota
from policies.models.work import Event
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.serving import fedctl, serving
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

MEMBER = "us-east-cpu"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def namespace(name: str, uid: str | None = None) -> Workload:
    meta = {"name": name, **({"uid": uid} if uid else {})}
    return Workload.model_validate({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})


def long_job(name: str, namespace: str) -> Workload:
    """A Job that runs for an hour of simulated time (over a minute of the test's)."""
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "template": {
                    "metadata": {"annotations": {"sim.fedctl.io/duration": "1h"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": "100m"}},
                            }
                        ],
                    },
                }
            },
        }
    )


async def placed(fed: Federation, *workloads: Workload) -> None:
    for workload in workloads:
        await fed.put(workload)
        await fed.bind(workload, {MEMBER: (1, None)})


async def copy_uid(fed: Federation, api_version: str, kind: str, ns: str | None, name: str) -> Any:
    """The uid of the member's copy, None when there is none."""
    got = await fed.member_object(MEMBER, api_version, kind, ns, name)
    return got["metadata"]["uid"] if got else None


async def running(fed: Federation, name: str, ns: str) -> Any:
    """The uid of the member's Job `name` once a pod of it runs there."""
    got = await fed.member_object(MEMBER, "batch/v1", "Job", ns, name)
    active = ((got or {}).get("status") or {}).get("active")
    return got["metadata"]["uid"] if got and active else None


async def events(fed: Federation) -> list[str]:
    listed = await codec.TypedStore(fed.store, codec.Codec(Event)).list(keys.prefix("events"))
    return [f"{item.obj.object}: {item.obj.message}" for item in listed.items]


async def test_deleting_a_namespace_deletes_its_running_job_in_the_member_and_runs_it_no_more(
    fed: Federation,
) -> None:
    """The user's `fedctl delete namespace hh`: the Job running in hh is deleted from its
    member with the Deployment beside it, nothing is applied again, then the namespace
    leaves the member and nothing of hh is left in the registry."""
    hh, train, web = namespace("hh"), long_job("train", "hh"), deployment("web", 1, namespace="hh")
    await placed(fed, hh, train, web)
    propagator = fed.start()
    await wait_for(lambda: running(fed, "train", "hh"), timeout=20, message="train running")
    await wait_for(
        lambda: copy_uid(fed, "v1", "Namespace", None, "hh"), timeout=15, message="hh there"
    )
    applied = propagator.applier.applied
    async with serving(api_app.build_app(fed.store)) as server:
        assert await fedctl(server, "delete", "namespace", "hh") == 0

    async def settled() -> bool:
        left = (await fed.works.list(keys.prefix("works"))).items
        return not left and propagator.pending == 0

    await wait_for(settled, timeout=20, message="every Work of hh removed")
    assert await copy_uid(fed, "batch/v1", "Job", "hh", "train") is None
    assert await copy_uid(fed, "apps/v1", "Deployment", "hh", "web") is None
    assert await copy_uid(fed, "v1", "Namespace", None, "hh") is None
    assert propagator.applier.applied == applied, "nothing was applied again"
    assert not [e for e in await events(fed) if "applied again" in e]
    assert (await fed.objects.list(keys.prefix("workloads"))).items == []


async def test_a_namespace_template_gone_while_its_workloads_stay_keeps_their_copies_running(
    fed: Federation,
) -> None:
    """The Namespace template deleted alone while a Job in it is still in the registry (a
    policy that no longer sends the namespace where its workloads go; a registry written
    by an older release): the member keeps the namespace, and the Job runs on untouched.
    The namespace leaves the member once the Job's copy has."""
    hh, train = namespace("hh"), long_job("train", "hh")
    await placed(fed, hh, train)
    propagator = fed.start()
    job_uid = await wait_for(lambda: running(fed, "train", "hh"), timeout=20, message="running")
    ns_uid = await wait_for(
        lambda: copy_uid(fed, "v1", "Namespace", None, "hh"), timeout=15, message="hh there"
    )
    applied = propagator.applier.applied
    await fed.delete(hh)
    gone = keys.workload_key(ref_of(hh))
    await wait_for(
        lambda: gone not in propagator.workloads.items and propagator.pending == 0,
        timeout=15,
        message="the Namespace's deletion seen and worked on",
    )
    assert await copy_uid(fed, "v1", "Namespace", None, "hh") == ns_uid
    assert await copy_uid(fed, "batch/v1", "Job", "hh", "train") == job_uid
    assert propagator.applier.applied == applied
    assert propagator.sync.holding == {"hh"}

    await fed.delete(train)

    async def namespace_gone() -> bool:
        return await copy_uid(fed, "v1", "Namespace", None, "hh") is None

    await wait_for(namespace_gone, timeout=20, message="hh gone from the member after train")
    assert await copy_uid(fed, "batch/v1", "Job", "hh", "train") is None
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="nothing left to do")
    assert (await fed.works.list(keys.prefix("works"))).items == []
    assert propagator.sync.holding == set()
    assert propagator.applier.applied == applied


async def test_a_namespace_created_again_is_applied_over_not_deleted_with_what_it_holds(
    fed: Federation,
) -> None:
    """A Namespace deleted and created again under its name (a new uid) while a service
    in it runs: a Job's copy is replaced (deleted, then created), but deleting a
    namespace's copy deletes everything in it, so the new Namespace adopts the copy."""
    web = deployment("web", 1, namespace="hh")
    await placed(fed, namespace("hh", uid="ns-1"), web)
    propagator = fed.start()
    web_uid = await wait_for(
        lambda: copy_uid(fed, "apps/v1", "Deployment", "hh", "web"), timeout=15, message="web"
    )
    ns_uid = await copy_uid(fed, "v1", "Namespace", None, "hh")
    await fed.put(namespace("hh", uid="ns-2"))
    work_key = keys.work_key(MEMBER, ref_of(namespace("hh")))

    async def adopted() -> bool:
        work = await fed.works.get(work_key)
        return work is not None and work.obj.spec.workload.uid == "ns-2"

    await wait_for(adopted, timeout=15, message="the Namespace's Work for the new object")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="nothing left to do")
    assert await copy_uid(fed, "v1", "Namespace", None, "hh") == ns_uid
    assert await copy_uid(fed, "apps/v1", "Deployment", "hh", "web") == web_uid


def share(namespace: str, cluster: str) -> FederatedResourceQuota:
    """An FRQ of `namespace` assigning `cluster` a share."""
    return FederatedResourceQuota.model_validate(
        {
            "metadata": {"name": "q", "namespace": namespace},
            "spec": {
                "overall": {"cpu": "4"},
                "staticAssignments": [{"clusterName": cluster, "hard": {"cpu": "2"}}],
            },
        }
    )


async def test_a_namespace_no_longer_sent_to_a_member_stays_while_an_frq_quota_is_in_it(
    fed: Federation,
) -> None:
    """A policy stops sending the Namespace to a member where its FRQ has a share: the
    member keeps the namespace (not deleted, then created again bare to put the quota
    back); it goes once the FRQ's quota has."""
    hh, frq = namespace("hh"), share("hh", MEMBER)
    await placed(fed, hh)
    await fed.put(frq)
    propagator = fed.start()
    ns_uid = await wait_for(
        lambda: copy_uid(fed, "v1", "Namespace", None, "hh"), timeout=15, message="hh there"
    )
    quota_uid = await wait_for(
        lambda: copy_uid(fed, "v1", "ResourceQuota", "hh", "q"), timeout=15, message="quota"
    )
    other = "eu-west-arm"
    await fed.bind(hh, {other: (1, None)})
    elsewhere = keys.work_key(other, ref_of(hh))

    async def moved() -> bool:
        return await fed.works.get(elsewhere) is not None and "hh" in propagator.sync.holding

    await wait_for(moved, timeout=15, message="the Namespace sent elsewhere, held here")
    assert await copy_uid(fed, "v1", "Namespace", None, "hh") == ns_uid
    assert await copy_uid(fed, "v1", "ResourceQuota", "hh", "q") == quota_uid

    await fed.delete(frq)

    async def namespace_gone() -> bool:
        return await copy_uid(fed, "v1", "Namespace", None, "hh") is None

    await wait_for(namespace_gone, timeout=20, message="hh gone from the member after q")
    assert propagator.sync.holding == set()
