"""Propagation end to end: real etcd, five simulated members over HTTP, one propagator.

Bindings are written into the registry as the scheduler would; the propagator must render
per member (static-weight shares, per-region registry mirrors, chip translation), apply,
report readiness back, follow rescaling and rebinding, write FederatedResourceQuota static
assignments as member ResourceQuotas that members enforce, and remove everything when the
workload goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web as web_server
from kubernetes_asyncio import client as kube_client
from kubernetes_asyncio import config as kube_config

from clusters import member
from federation.api import app as api_app
from federation.registry import codec, embedded, events, keys
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    NAMES,
    Federation,
    deployment,
    frq_for_test,
    load,
    ref_of,
    started_federation,
)
from tests.unit.scheduler.fleet import evicted
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

WEB = ("us-east-cpu", "eu-west-arm", "ap-southeast-cpu")


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def storefront(replicas: int) -> Workload:
    (web,) = load("web.yaml", kinds=("Deployment",))
    assert isinstance(web, Workload)
    spec = {**web.spec, "replicas": replicas}
    return web.model_copy(update={"spec": spec})


async def replicas_in(fed: Federation, name: str, namespace: str = "web") -> dict[str, Any]:
    found = {}
    for cluster in WEB:
        obj = await fed.member_object(cluster, "apps/v1", "Deployment", namespace, name)
        found[cluster] = obj["spec"]["replicas"] if obj else None
    return found


async def test_static_weights_2_1_1_land_4_2_2_become_ready_and_rescale_to_12(
    fed: Federation,
) -> None:
    for policy in load("web.yaml", kinds=("PropagationPolicy", "OverridePolicy")):
        await fed.put(policy)
    web = storefront(8)
    await fed.put(web)
    await fed.bind(
        web,
        {
            "us-east-cpu": (4, "amd64"),
            "eu-west-arm": (2, "arm64"),
            "ap-southeast-cpu": (2, "amd64"),
        },
    )
    fed.start()

    async def ready(total: int) -> Any:
        status = await fed.status(web)
        if status and status.health == "Healthy" and status.ready_replicas == total:
            return status
        return None

    async def shares(expected: dict[str, int]) -> bool:
        return await replicas_in(fed, "storefront") == expected

    await wait_for(
        lambda: shares({"us-east-cpu": 4, "eu-west-arm": 2, "ap-southeast-cpu": 2}),
        timeout=15,
        message="4:2:2 in the members",
    )
    status = await wait_for(lambda: ready(8), timeout=20, message="8 ready replicas")
    assert {row.cluster: row.ready_replicas for row in status.clusters} == {
        "us-east-cpu": 4,
        "eu-west-arm": 2,
        "ap-southeast-cpu": 2,
    }
    east = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "storefront")
    assert east is not None
    labels = east["metadata"]["labels"]
    assert labels["fedctl.io/managed-by"] == "fedctl"
    assert labels["fedctl.io/workload"] == "storefront"
    # The Binding written again with the same shares (re-placed where it was): the Works
    # and status follow the new revision, and no member is called. A label carrying the
    # Binding's revision had re-applied every copy on every such write.
    before = {
        c: await fed.member_object(c, "apps/v1", "Deployment", "web", "storefront") for c in WEB
    }
    revision = (await fed.status(web)).binding_revision  # type: ignore[union-attr]
    await fed.bind(
        web,
        {
            "us-east-cpu": (4, "amd64"),
            "eu-west-arm": (2, "arm64"),
            "ap-southeast-cpu": (2, "amd64"),
        },
    )

    async def caught_up() -> bool:
        status = await fed.status(web)
        return status is not None and status.binding_revision > revision

    await wait_for(caught_up, timeout=15, message="the status at the new Binding revision")
    after = {
        c: await fed.member_object(c, "apps/v1", "Deployment", "web", "storefront") for c in WEB
    }
    assert {c: o["metadata"]["resourceVersion"] for c, o in after.items() if o} == {
        c: o["metadata"]["resourceVersion"] for c, o in before.items() if o
    }

    async def rescale(east: int, rest: int) -> None:
        """Bound as the scheduler binds a 2:1:1 rescale; wait for the members' shares."""
        await fed.put(storefront(east + 2 * rest))
        split = {"us-east-cpu": east, "eu-west-arm": rest, "ap-southeast-cpu": rest}
        chips = {"us-east-cpu": "amd64", "eu-west-arm": "arm64", "ap-southeast-cpu": "amd64"}
        await fed.bind(web, {name: (n, chips[name]) for name, n in split.items()})
        await wait_for(
            lambda: shares(split), timeout=15, message=f"{east}:{rest}:{rest} in the members"
        )

    await rescale(6, 3)
    await wait_for(lambda: ready(12), timeout=20, message="12 ready replicas")

    # Scaled to zero (as the scheduler binds it): each member keeps its copy, running no
    # pods, instead of losing it and what it carries there.
    await rescale(0, 0)
    await wait_for(lambda: ready(0), timeout=20, message="healthy at zero replicas")


async def test_override_policy_rewrites_the_image_registry_per_region(fed: Federation) -> None:
    for policy in load("web.yaml", kinds=("OverridePolicy",)):
        await fed.put(policy)
    web = storefront(3)
    await fed.put(web)
    await fed.bind(
        web,
        {
            "us-east-cpu": (1, "amd64"),
            "eu-west-arm": (1, "arm64"),
            "ap-southeast-cpu": (1, "amd64"),
        },
    )
    fed.start()
    expected = {
        "us-east-cpu": "registry.example.com/web/storefront:1.8.2",
        "eu-west-arm": "eu.mirror.example.com/web/storefront:1.8.2",
        "ap-southeast-cpu": "ap.mirror.example.com/web/storefront:1.8.2",
    }

    async def images() -> dict[str, str | None]:
        seen: dict[str, str | None] = {}
        for cluster in WEB:
            obj = await fed.member_object(cluster, "apps/v1", "Deployment", "web", "storefront")
            pod = obj["spec"]["template"]["spec"] if obj else None
            seen[cluster] = pod["containers"][0]["image"] if pod else None
        return seen

    await wait_for(lambda: _equal(images(), expected), timeout=15, message="mirrored images")
    ap = await fed.member_object("ap-southeast-cpu", "apps/v1", "Deployment", "web", "storefront")
    assert ap is not None and ap["metadata"]["labels"]["mirror"] == "ap-southeast"
    arm = await fed.member_object("eu-west-arm", "apps/v1", "Deployment", "web", "storefront")
    assert arm is not None
    assert arm["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/arch"] == "arm64"


async def _equal(probe: Any, expected: Any) -> bool:
    return await probe == expected


async def test_training_job_gets_the_device_and_image_of_the_chip_it_lands_on(
    fed: Federation,
) -> None:
    (job,) = load("training.yaml", kinds=("Job",))
    assert isinstance(job, Workload)
    for policy in load("training.yaml", kinds=("OverridePolicy",)):
        await fed.put(policy)
    await fed.put(job)
    await fed.bind(job, {"us-east-a100": (2, "nvidia-a100-80gb")})
    fed.start()

    async def trainer(cluster: str) -> dict[str, Any] | None:
        obj = await fed.member_object(cluster, "batch/v1", "Job", "ml-research", "llm-finetune")
        return obj["spec"]["template"]["spec"] if obj else None

    pod = await wait_for(lambda: trainer("us-east-a100"), timeout=15, message="job on A100")
    container = pod["containers"][0]
    assert container["image"] == "registry.example.com/ml/llm-train:2.3"
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "8"
    assert pod["nodeSelector"]["fedctl.io/accelerator"] == "nvidia-a100-80gb"
    assert "--backend=hccl" not in container["args"]
    status = await wait_for(
        lambda: _phase(fed, job, {"Running", "Succeeded"}), timeout=20, message="job running"
    )
    assert status.clusters[0].cluster == "us-east-a100"

    # Re-placed on the Ascend cluster: the A100 copy goes, the NPU build arrives.
    await fed.bind(job, {"cn-north-ascend": (2, "ascend-910b")})
    pod = await wait_for(lambda: trainer("cn-north-ascend"), timeout=15, message="job on 910B")
    container = pod["containers"][0]
    assert container["image"] == "swr.cn-north-4.myhuaweicloud.com/ml/llm-train:2.3-cann8"
    assert container["resources"]["requests"]["huawei.com/Ascend910"] == "8"
    assert container["resources"]["limits"] == {"huawei.com/Ascend910": "8"}
    assert "nvidia.com/gpu" not in container["resources"]["requests"]
    assert pod["nodeSelector"]["kubernetes.io/arch"] == "arm64"
    assert container["args"][-1] == "--backend=hccl"
    await wait_for(
        lambda: _absent(trainer("us-east-a100")), timeout=15, message="A100 copy removed"
    )


def _report(uid: str, *, gpus: int = 0) -> Workload:
    """A short Job; with `gpus`, one an accelerator-only member can run (a pod that asks
    for no device is kept off accelerator nodes)."""
    devices = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "report", "namespace": "web", "uid": uid},
            "spec": {
                "template": {
                    "metadata": {"annotations": {"sim.fedctl.io/duration": "200ms"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": "100m", **devices}},
                            }
                        ],
                    },
                }
            },
        }
    )


async def test_a_finished_job_stays_finished_when_an_eviction_removes_its_copy(
    fed: Federation,
) -> None:
    """A job preempted a moment after it finished (the decision was made before its status
    arrived): its Binding goes Pending and its copy is purged at once. Its status must
    still say Succeeded, or the scheduler would read it unfinished and run it again; a job
    created again under the same name starts afresh."""
    job = _report("first")
    await fed.put(job)
    await fed.bind(job, {"us-east-cpu": (1, None)})
    fed.start()
    await wait_for(lambda: _phase(fed, job, {"Succeeded"}), timeout=20, message="job done")
    key = keys.binding_key(ref_of(job))
    stored = await fed.bindings.get(key)
    assert stored is not None
    await fed.bindings.update(key, evicted(stored.obj), revision=stored.revision)
    prefix = events.event_prefix(ref_of(job))

    async def removed() -> bool:  # written with the status, in the pass's one transaction
        listed = await codec.TypedStore(fed.store, events.EVENTS).list(prefix)
        return any(e.obj.reason == "Removed" for e in listed.items)

    await wait_for(removed, timeout=15, message="the copy removed from us-east-cpu")
    status = await fed.status(job)
    assert status is not None and status.phase == "Succeeded"
    now = await fed.bindings.get(key)
    assert now is not None  # no copy left, for this revision: failover ends the task
    assert (status.clusters, status.binding_revision) == ([], now.revision)

    again = _report("second")  # deleted and created again: not finished
    await fed.put(again)
    await wait_for(
        lambda: _equal(_uid_and_phase(fed, again), ("second", None)),
        timeout=15,
        message="a fresh status for the new job",
    )


async def test_a_copy_of_an_earlier_object_of_the_same_name_is_replaced_not_applied_over(
    fed: Federation,
) -> None:
    """A Job finished on us-east-cpu is deleted and created again under its name while
    its Binding stays: applying the new Job over the finished one would run nothing (its
    template cannot change). The earlier copy is removed first, then the new one created."""
    first = _report("first")
    await fed.put(first)
    await fed.bind(first, {"us-east-cpu": (1, None)})
    fed.start()
    await wait_for(lambda: _phase(fed, first, {"Succeeded"}), timeout=20, message="first done")
    ran = await fed.member_object("us-east-cpu", "batch/v1", "Job", "web", "report")
    assert ran is not None
    await fed.put(_report("second"))

    async def new_copy() -> dict[str, Any] | None:
        obj = await fed.member_object("us-east-cpu", "batch/v1", "Job", "web", "report")
        return obj if obj and obj["metadata"]["uid"] != ran["metadata"]["uid"] else None

    await wait_for(new_copy, timeout=15, message="a new copy on us-east-cpu")
    await wait_for(
        lambda: _equal(_uid_and_phase(fed, first), ("second", "Succeeded")),
        timeout=20,
        message="the second object ran",
    )


async def _uid_and_phase(fed: Federation, job: Workload) -> tuple[str | None, str | None] | None:
    status = await fed.status(job)
    return (status.workload.uid, status.phase) if status is not None else None


async def _absent(probe: Any) -> bool:
    return await probe is None


async def _phase(fed: Federation, workload: Workload, phases: set[str]) -> Any:
    status = await fed.status(workload)
    return status if status is not None and status.phase in phases else None


async def test_quota_static_assignments_become_member_quotas_that_members_enforce(
    fed: Federation,
) -> None:
    frq = frq_for_test()
    await fed.put(frq)
    fed.start()

    async def quota(cluster: str) -> dict[str, Any] | None:
        return await fed.member_object(cluster, "v1", "ResourceQuota", "ml-research", "ml-research")

    gpu = await wait_for(lambda: quota("us-east-a100"), timeout=15, message="quota in A100")
    assert gpu["spec"]["hard"] == {
        "requests.cpu": "128",
        "requests.memory": "1Ti",
        "requests.nvidia.com/gpu": "16",
    }
    npu = await wait_for(lambda: quota("cn-north-ascend"), timeout=15, message="quota in 910B")
    assert npu["spec"]["hard"]["requests.huawei.com/Ascend910"] == "16"
    assert await quota("us-east-cpu") is None

    conn = await fed.conn("us-east-a100")
    greedy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "greedy", "namespace": "ml-research"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "17"},
                        "limits": {"nvidia.com/gpu": "17"},
                    },
                }
            ]
        },
    }
    with pytest.raises(member.MemberRejected, match="exceeded quota"):
        await conn.apply(greedy)

    key = keys.policy_status_key("FederatedResourceQuota", "ml-research", "ml-research")

    async def aggregated() -> Any:
        stored = await fed.quota_statuses.get(key)
        rows = stored.obj.aggregated_status if stored else []
        return stored if len(rows) == 2 and all(r.applied for r in rows) else None

    stored = await wait_for(aggregated, timeout=15, message="FRQ status")
    assert {r.cluster for r in stored.obj.aggregated_status} == {"us-east-a100", "cn-north-ascend"}

    # Dropping an assignment removes that member's quota; deleting the FRQ removes the rest.
    spec = frq.spec.model_copy(update={"static_assignments": frq.spec.static_assignments[:1]})
    await fed.put(frq.model_copy(update={"spec": spec}))
    await wait_for(lambda: _absent(quota("cn-north-ascend")), timeout=15, message="910B quota gone")
    await fed.delete(frq)
    await wait_for(lambda: _absent(quota("us-east-a100")), timeout=15, message="A100 quota gone")


async def test_deleting_the_workload_removes_it_from_every_member(fed: Federation) -> None:
    web = deployment("cart", 3)
    await fed.put(web)
    await fed.bind(web, {c: (1, None) for c in WEB})
    fed.start()
    await wait_for(
        lambda: _counts(fed, "cart", {c: 1 for c in WEB}), timeout=15, message="cart everywhere"
    )
    await fed.delete(web)
    await fed.unbind(web)
    await wait_for(
        lambda: _counts(fed, "cart", {c: None for c in WEB}), timeout=15, message="cart gone"
    )
    await wait_for(lambda: _no_status(fed, web), timeout=10, message="status removed")
    assert (await fed.works.list(keys.prefix("works"))).items == []


async def test_preserve_resources_on_deletion_keeps_the_copies_released_from_fedctl(
    fed: Federation,
) -> None:
    """Karmada's `preserveResourcesOnDeletion: true` (a migration's way back): deleting the
    template leaves its copies running in the members, without fedctl's labels, so nothing
    collects them later; a workload its policy does not preserve is deleted as before."""
    kept, gone = deployment("kept", 2), deployment("gone", 2)
    policy = PropagationPolicy.model_validate(
        {
            "metadata": {"name": "kept", "namespace": "web"},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "kept"}
                ],
                "preserveResourcesOnDeletion": True,
            },
        }
    )
    await fed.put(policy)
    for web in (kept, gone):
        await fed.put(web)
        await fed.bind(web, {"us-east-cpu": (1, None), "eu-west-arm": (1, None)})
    fed.start()
    both = {"us-east-cpu": 1, "eu-west-arm": 1, "ap-southeast-cpu": None}
    for web in (kept, gone):
        name = web.metadata.name
        await wait_for(lambda n=name: _counts(fed, n, both), timeout=15, message=f"{name} placed")
    for web in (kept, gone):
        await fed.delete(web)
        await fed.unbind(web)
    none = {c: None for c in WEB}
    await wait_for(lambda: _counts(fed, "gone", none), timeout=15, message="gone removed")
    await wait_for(lambda: _no_status(fed, kept), timeout=10, message="kept's status removed")
    assert (await fed.works.list(keys.prefix("works"))).items == []
    for cluster in ("us-east-cpu", "eu-west-arm"):
        copy = await fed.member_object(cluster, "apps/v1", "Deployment", "web", "kept")
        assert copy is not None and copy["spec"]["replicas"] == 1
        labels = copy["metadata"].get("labels") or {}
        assert labels == {"app": "kept"}, labels
        assert "fedctl.io/workload-ref" not in (copy["metadata"].get("annotations") or {})
    assert "kept" not in await fed.ours("us-east-cpu", "apps/v1", "Deployment")


async def test_a_large_config_map_reaches_every_member_and_is_recorded(fed: Federation) -> None:
    """A 600 KiB ConfigMap (Kubernetes takes up to 1 MiB) on five members: five Works of
    600 KiB each. Written in one transaction (3 MB) they passed etcd's request limit, so
    no Work or status was ever recorded and every pass applied the object to every member
    again. Now the Works go in transactions etcd takes."""
    blob = "x" * (600 * 1024)
    config = Workload.model_validate(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "bundle", "namespace": "web"},
            "data": {"ca.pem": blob},
        }
    )
    await fed.put(config)
    await fed.bind(config, {c: (0, None) for c in NAMES})
    fed.start()

    async def everywhere() -> bool:
        for name in NAMES:
            copy = await fed.member_object(name, "v1", "ConfigMap", "web", "bundle")
            if copy is None or copy.get("data", {}).get("ca.pem") != blob:
                return False
        return True

    async def recorded() -> bool:
        works = (await fed.works.list(keys.prefix("works"))).items
        status = await fed.status(config)
        return len(works) == len(NAMES) and status is not None

    await wait_for(everywhere, timeout=20, message="the ConfigMap on every member")
    await wait_for(recorded, timeout=20, message="its Works and status in the registry")


async def _counts(fed: Federation, name: str, expected: dict[str, int | None]) -> bool:
    return await replicas_in(fed, name) == expected


async def _no_status(fed: Federation, web: Workload) -> bool:
    return await fed.status(web) is None


async def test_abort_refuses_an_unowned_object_and_overwrite_adopts_it(fed: Federation) -> None:
    conn = await fed.conn("us-east-cpu")
    legacy = deployment("legacy", 1).to_wire()
    legacy.pop("status", None)
    await conn.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}})
    await conn.apply(legacy)
    web = deployment("legacy", 2)
    await fed.put(web)
    policy = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "legacy", "namespace": "web"},
        "spec": {
            "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "legacy"}
            ],
            "conflictResolution": "Abort",
        },
    }
    pp = PropagationPolicy.model_validate(policy)
    await fed.put(pp)
    await fed.bind(web, {"us-east-cpu": (2, None)})
    fed.start()
    work_key = keys.work_key("us-east-cpu", ref_of(web))

    async def refused() -> Any:
        stored = await fed.works.get(work_key)
        return stored if stored and "Abort refuses" in stored.obj.status.error else None

    stored = await wait_for(refused, timeout=15, message="Abort refusal in the Work")
    assert not stored.obj.status.applied
    obj = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "legacy")
    assert obj is not None and obj["spec"]["replicas"] == 1
    assert "fedctl.io/managed-by" not in (obj["metadata"].get("labels") or {})

    spec = pp.spec.model_copy(update={"conflict_resolution": "Overwrite"})
    await fed.put(pp.model_copy(update={"spec": spec}))

    async def adopted() -> bool:
        got = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "legacy")
        labels = (got or {}).get("metadata", {}).get("labels") or {}
        return labels.get("fedctl.io/managed-by") == "fedctl" and got["spec"]["replicas"] == 2  # type: ignore[index]

    await wait_for(adopted, timeout=15, message="Overwrite adopts the object")


async def fedctl(server: str, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "federation.cli.main",
        *args,
        env={**os.environ, "FEDCTL_SERVER": server},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_cli_shows_placement_and_readiness_per_cluster_and_the_whole_story(
    fed: Federation,
) -> None:
    web = deployment("catalog", 3)
    await fed.put(web)
    await fed.bind(web, {"us-east-cpu": (2, "amd64"), "eu-west-arm": (1, "arm64")})
    fed.start()

    async def healthy() -> bool:
        status = await fed.status(web)
        return status is not None and status.health == "Healthy" and status.ready_replicas == 3

    await wait_for(healthy, timeout=20, message="catalog ready")
    app = api_app.build_app(fed.store)
    runner = web_server.AppRunner(app)
    await runner.setup()
    port = embedded.free_port()
    await web_server.TCPSite(runner, "127.0.0.1", port).start()
    server = f"http://127.0.0.1:{port}"
    try:
        table = await fedctl(server, "get", "workloads", "-n", "web")
        line = next(row for row in table.splitlines() if "catalog" in row)
        assert "Healthy" in line and "3/3" in line
        assert "us-east-cpu 2/2, eu-west-arm 1/1" in line
        story = await fedctl(server, "describe", "workload", "web/catalog")
        assert "Binding:     Scheduled" in story
        works = story.split("Works:")[1].split("Events:")[0]
        assert "us-east-cpu" in works and "eu-west-arm" in works and "Healthy" in works
        events = story.split("Events:")[1]
        assert "Applied" in events and "applied to us-east-cpu" in events
    finally:
        await runner.cleanup()


async def test_a_namespace_created_ahead_of_its_objects_is_adopted_by_its_namespace_workload(
    fed: Federation,
) -> None:
    """Objects of a namespace can reach a member before the Namespace's own Work: the
    applier creates it as a placeholder, and the Namespace workload (Abort, the default)
    must take it over rather than refuse it as somebody else's."""
    app = deployment("app", 1, namespace="team")
    await fed.put(app)
    await fed.bind(app, {"us-east-cpu": (1, None)})
    fed.start()

    async def placeholder() -> bool:
        got = await fed.member_object("us-east-cpu", "v1", "Namespace", None, "team")
        return got is not None

    await wait_for(placeholder, timeout=15, message="placeholder namespace on the member")
    team = Workload.model_validate(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    )
    await fed.put(team)
    await fed.bind(team, {"us-east-cpu": (1, None)})
    ref = ref_of(team)
    work_key = keys.work_key("us-east-cpu", ref)

    async def applied() -> Any:
        stored = await fed.works.get(work_key)
        return stored if stored and stored.obj.status.applied else None

    stored = await wait_for(applied, timeout=15, message="Namespace Work applied")
    assert stored.obj.status.error == ""
    got = await fed.member_object("us-east-cpu", "v1", "Namespace", None, "team")
    assert got is not None
    assert got["metadata"]["annotations"]["fedctl.io/workload-ref"] == str(ref)


@contextlib.asynccontextmanager
async def member_api(fed: Federation, cluster: str) -> AsyncIterator[Any]:
    """The official client on one member, for writes fedctl did not make (a user's)."""
    api = await kube_config.new_client_from_config(config_file=str(fed.kubeconfig), context=cluster)
    async with api:
        yield api


async def test_a_copy_edited_in_its_member_is_restored_and_the_restore_is_told(
    fed: Federation,
) -> None:
    """Someone scales our copy in the member (`kubectl scale` there): its generation moves
    past the one our apply left, and the propagator applies the manifest again, as Karmada
    restores a member copy it finds changed. A status-only change does not count."""
    web = deployment("edited", 2)
    await fed.put(web)
    await fed.bind(web, {"us-east-cpu": (2, "amd64")})
    fed.start()

    async def replicas() -> int | None:
        got = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "edited")
        return None if got is None else int(got["spec"]["replicas"])

    async def healthy() -> bool:
        status = await fed.status(web)
        return status is not None and status.health == "Healthy" and status.ready_replicas == 2

    await wait_for(healthy, timeout=20, message="edited ready with 2 replicas")
    key = keys.work_key("us-east-cpu", ref_of(web))
    work = await fed.works.get(key)
    assert work is not None and work.obj.status.applied_generation is not None
    applied = work.obj.status.applied_generation
    async with member_api(fed, "us-east-cpu") as api:
        apps = kube_client.AppsV1Api(api)
        await apps.patch_namespaced_deployment_scale("edited", "web", {"spec": {"replicas": 5}})

    async def restored() -> bool:
        stored = await fed.works.get(key)
        return (
            await replicas() == 2
            and stored is not None
            and (stored.obj.status.applied_generation or 0) > applied
        )

    await wait_for(restored, timeout=15, message="the copy scaled back to its share of 2")
    listed = await codec.TypedStore(fed.store, events.EVENTS).list(events.event_prefix(ref_of(web)))
    said = [e.obj.message for e in listed.items]
    assert any(m.startswith("restored in us-east-cpu: its copy was edited there") for m in said)
    await wait_for(healthy, timeout=20, message="edited ready again with 2 replicas")

    # Labels: one of the template's taken off there, then fedctl's own; a label added
    # there is the member's and stays.
    async def labels() -> dict[str, str]:
        got = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "edited")
        return dict((got or {}).get("metadata", {}).get("labels") or {})

    for change in ({"app": None, "team": "payments"}, {"fedctl.io/managed-by": None}):
        async with member_api(fed, "us-east-cpu") as api:
            await kube_client.AppsV1Api(api).patch_namespaced_deployment(
                "edited", "web", {"metadata": {"labels": change}}
            )

        async def relabelled() -> bool:
            now = await labels()
            return now.get("app") == "edited" and now.get("fedctl.io/managed-by") == "fedctl"

        await wait_for(relabelled, timeout=15, message=f"labels restored after {change}")
    assert (await labels())["team"] == "payments"


async def test_a_copy_whose_workload_annotation_is_taken_off_is_still_followed(
    fed: Federation,
) -> None:
    """`kubectl annotate deploy storefront fedctl.io/workload-ref-` in a member (as a
    `rollout undo` there can do): end to end, the annotation comes back. That the watch
    still takes such a copy for ours, rather than a stranger's, is shown where it is
    decided (tests/unit/propagation/test_status_record.py)."""
    web = deployment("noted", 2)
    await fed.put(web)
    await fed.bind(web, {"us-east-cpu": (2, "amd64")})
    fed.start()

    async def copy() -> dict[str, Any]:
        got = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "noted")
        return got or {}

    async def healthy() -> bool:
        status = await fed.status(web)
        return status is not None and status.health == "Healthy" and status.ready_replicas == 2

    await wait_for(healthy, timeout=20, message="ready with 2 replicas")
    async with member_api(fed, "us-east-cpu") as api:
        apps = kube_client.AppsV1Api(api)
        await apps.patch_namespaced_deployment(
            "noted", "web", {"metadata": {"annotations": {"fedctl.io/workload-ref": None}}}
        )

    async def annotated() -> bool:
        notes = (await copy()).get("metadata", {}).get("annotations") or {}
        return notes.get("fedctl.io/workload-ref") == str(ref_of(web))

    await wait_for(annotated, timeout=10, message="the workload annotation put back")


async def test_a_field_added_to_a_copy_in_its_member_is_taken_off(fed: Federation) -> None:
    """`kubectl patch` in a member gave our copy's container a `command` the template does
    not have: the copy was "restored" (its generation moved), yet server-side apply took
    back only the fields fedctl sets and the injected command kept running. The copy is
    now written whole, as Karmada's execution controller writes it; a label added there
    stays."""
    web = deployment("patched", 2)
    await fed.put(web)
    await fed.bind(web, {"us-east-cpu": (2, "amd64")})
    fed.start()

    async def copy() -> dict[str, Any]:
        got = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "patched")
        return got or {}

    async def healthy() -> bool:
        status = await fed.status(web)
        return status is not None and status.health == "Healthy" and status.ready_replicas == 2

    await wait_for(healthy, timeout=20, message="ready with 2 replicas")
    (container,) = (await copy())["spec"]["template"]["spec"]["containers"]
    async with member_api(fed, "us-east-cpu") as api:
        apps = kube_client.AppsV1Api(api)
        await apps.patch_namespaced_deployment(
            "patched",
            "web",
            {
                "metadata": {"labels": {"team": "ops"}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": container["name"], "command": ["sh", "-c", "echo pwned"]}
                ]}}},
            },
        )  # fmt: skip

    async def cleaned() -> bool:
        got = await copy()
        (c,) = got["spec"]["template"]["spec"]["containers"]
        return "command" not in c and got["metadata"].get("labels", {}).get("team") == "ops"

    await wait_for(cleaned, timeout=15, message="the injected command taken off, the label kept")


async def test_a_config_map_edited_in_its_member_is_restored(fed: Federation) -> None:
    """A ConfigMap has no generation to tell an edit by: its data entries are compared
    with what our apply left. A key added there stays; one of ours changed comes back."""
    config = Workload.model_validate(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "web"},
            "data": {"mode": "safe", "level": "3"},
        }
    )
    await fed.put(config)
    await fed.bind(config, {"us-east-cpu": (0, None)})
    fed.start()

    async def data() -> dict[str, str]:
        got = await fed.member_object("us-east-cpu", "v1", "ConfigMap", "web", "settings")
        return dict((got or {}).get("data") or {})

    async def as_given() -> bool:
        now = await data()
        return now.get("mode") == "safe" and now.get("level") == "3"

    await wait_for(as_given, timeout=15, message="the ConfigMap applied")
    async with member_api(fed, "us-east-cpu") as api:
        await kube_client.CoreV1Api(api).patch_namespaced_config_map(
            "settings", "web", {"data": {"mode": "hotfix", "extra": "kept"}}
        )
    await wait_for(as_given, timeout=15, message="the ConfigMap's data restored")
    assert (await data())["extra"] == "kept"


async def test_a_secret_given_as_string_data_is_restored_after_an_edit_there(
    fed: Federation,
) -> None:
    """stringData is never read back from a member, so its entries could not be compared;
    sent as the data the API server stores, an entry changed there comes back."""
    secret = Workload.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "web"},
            "stringData": {"user": "app", "password": "s3cret"},
        }
    )
    await fed.put(secret)
    await fed.bind(secret, {"us-east-cpu": (0, None)})
    fed.start()
    given = {"user": "YXBw", "password": "czNjcmV0"}

    async def as_given() -> bool:
        got = await fed.member_object("us-east-cpu", "v1", "Secret", "web", "creds")
        data = dict((got or {}).get("data") or {})
        return all(data.get(k) == v for k, v in given.items())

    await wait_for(as_given, timeout=15, message="the Secret applied")
    async with member_api(fed, "us-east-cpu") as api:
        await kube_client.CoreV1Api(api).patch_namespaced_secret(
            "creds", "web", {"data": {"password": "aGFja2Vk"}}
        )
    await wait_for(as_given, timeout=15, message="the Secret's data restored")


async def test_a_member_quota_edited_or_deleted_there_is_restored(fed: Federation) -> None:
    """A member's ResourceQuota is the federation's static assignment: raised by hand in
    the member, or deleted there, it is put back, as a workload's copy is."""
    frq = frq_for_test()
    await fed.put(frq)
    fed.start()

    async def gpus() -> str | None:
        got = await fed.member_object(
            "us-east-a100", "v1", "ResourceQuota", "ml-research", "ml-research"
        )
        return None if got is None else got["spec"]["hard"].get("requests.nvidia.com/gpu")

    async def assigned() -> bool:
        return await gpus() == "16"

    await wait_for(assigned, timeout=15, message="the A100 member's quota")
    async with member_api(fed, "us-east-a100") as api:
        await kube_client.CoreV1Api(api).patch_namespaced_resource_quota(
            "ml-research", "ml-research", {"spec": {"hard": {"requests.nvidia.com/gpu": "64"}}}
        )
    assert await gpus() == "64"
    await wait_for(assigned, timeout=15, message="the quota restored after an edit")
    conn = await fed.conn("us-east-a100")
    await conn.delete(member.ObjectRef("v1", "ResourceQuota", "ml-research", "ml-research"))
    await wait_for(assigned, timeout=15, message="the quota restored after a delete")


async def test_a_finished_jobs_copy_deleted_in_its_member_is_not_run_again(
    fed: Federation,
) -> None:
    """The member's TTL controller (`ttlSecondsAfterFinished`, at once when 0), or a team
    cleaning up, deletes a Job that finished there. Applying it again would run it a
    second time: the copy stays gone and the workload stays Succeeded. A service's copy
    deleted there comes back, in the same run, so the watch did see the deletions."""
    job = _report("done")
    wire = _report("quick").to_wire()
    wire["metadata"]["name"] = "quick"
    wire["spec"]["ttlSecondsAfterFinished"] = 0  # deleted there the moment it finishes
    quick = Workload.model_validate(wire)
    web = deployment("kept", 1)
    for workload in (job, quick, web):
        await fed.put(workload)
        await fed.bind(workload, {"us-east-cpu": (1, None)})
    propagator = fed.start()
    await wait_for(lambda: _phase(fed, job, {"Succeeded"}), timeout=20, message="job done")
    await wait_for(lambda: _phase(fed, quick, {"Succeeded"}), timeout=20, message="quick done")

    async def copy(kind: str, api_version: str, name: str) -> Any:
        return await fed.member_object("us-east-cpu", api_version, kind, "web", name)

    await wait_for(lambda: copy("Deployment", "apps/v1", "kept"), timeout=15, message="kept")
    conn = await fed.conn("us-east-cpu")
    await conn.delete(member.ObjectRef("batch/v1", "Job", "report", "web"))
    await conn.delete(member.ObjectRef("apps/v1", "Deployment", "kept", "web"))
    seen = propagator.watches.seen
    slot = ("us-east-cpu", str(ref_of(job)))
    await wait_for(lambda: seen[slot].gone, timeout=15, message="the Job's deletion seen")
    await wait_for(lambda: copy("Deployment", "apps/v1", "kept"), timeout=15, message="back")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="nothing left to do")
    assert await copy("Job", "batch/v1", "report") is None
    assert await copy("Job", "batch/v1", "quick") is None
    assert await _phase(fed, job, {"Succeeded"}) is not None
    assert await _phase(fed, quick, {"Succeeded"}) is not None


async def test_a_member_that_loses_every_namespace_gets_back_what_it_runs_not_what_finished(
    fed: Federation,
) -> None:
    """A member rebuilt, or wiped by a clean-up gone wrong: every namespace fedctl uses
    there is deleted with what it held. The service comes back, and so does the quota; the
    Job that had finished there does not run again, and stays Succeeded."""
    web, job, frq = deployment("survivor", 2), _report("wiped", gpus=1), frq_for_test()
    for obj in (web, job, frq):
        await fed.put(obj)
    for workload in (web, job):
        await fed.bind(workload, {"us-east-a100": (2 if workload is web else 1, None)})
    propagator = fed.start()
    await wait_for(lambda: _phase(fed, job, {"Succeeded"}), timeout=20, message="job done")

    async def present(kind: str, api_version: str, ns: str, name: str) -> bool:
        got = await fed.member_object("us-east-a100", api_version, kind, ns, name)
        return got is not None

    service = ("Deployment", "apps/v1", "web", "survivor")
    quota = ("ResourceQuota", "v1", "ml-research", "ml-research")
    for what in (service, quota):
        await wait_for(lambda w=what: present(*w), timeout=15, message=f"{what[0]} there")
    conn = await fed.conn("us-east-a100")
    for ns in ("web", "ml-research"):
        await conn.delete(member.ObjectRef("v1", "Namespace", ns))
    assert not await present(*service) and not await present(*quota)
    for what in (service, quota):
        await wait_for(lambda w=what: present(*w), timeout=20, message=f"{what[0]} back")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="nothing left to do")
    assert not await present("Job", "batch/v1", "web", "report")
    assert await _phase(fed, job, {"Succeeded"}) is not None
