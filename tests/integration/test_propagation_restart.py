"""Killing the propagator half-way and starting it again leaves nothing orphaned or missing.

The first propagator is cancelled while it is still applying twelve workloads. Meanwhile
the registry moves on: some workloads are deleted, one is re-placed, and an object carrying
our labels that no Work describes is planted in a member (as a crash between apply and the
Work write would leave it). The second propagator must end with exactly the wanted copies.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clusters import member
from federation.registry import codec, embedded, keys
from policies.models.cluster import ClusterStatus
from tests.integration.test_propagation_support import (
    PROPAGATION,
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

CLUSTERS = ("us-east-cpu", "eu-west-arm", "ap-southeast-cpu")


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def plant(fed: Federation, cluster: str, name: str) -> None:
    """A copy carrying our labels that no Work records, put straight into a member: what a
    crash between apply and the Work write, or a deposed leader's late apply, leaves."""
    stray = deployment(name, 1).to_wire()
    stray.pop("status", None)
    stray["metadata"]["labels"]["fedctl.io/managed-by"] = "fedctl"
    stray["metadata"]["annotations"] = {"fedctl.io/workload-ref": f"web/Deployment.apps/{name}"}
    conn = await fed.conn(cluster)
    await conn.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}})
    await conn.apply(stray)


async def test_killed_half_way_then_restarted_nothing_orphaned_nothing_missing(
    fed: Federation,
) -> None:
    workloads = [deployment(f"svc-{i:02d}", 2) for i in range(12)]
    wanted: dict[str, set[str]] = {}
    for i, web in enumerate(workloads):
        await fed.put(web)
        targets = (CLUSTERS[i % 3], CLUSTERS[(i + 1) % 3])
        await fed.bind(web, {c: (1, None) for c in targets})
        wanted[web.metadata.name] = set(targets)
    # A slow member keeps the first propagator busy, so it really is stopped half-way.
    await fed.admin("ap-southeast-cpu", "fault", {"mode": "slow", "latency": 0.3, "jitter": 0})
    fed.start()

    async def some_works() -> bool:
        return len((await fed.works.list(keys.prefix("works"))).items) >= 4

    await wait_for(some_works, timeout=15, message="a few Works written")
    await fed.stop()  # killed half-way
    assert len((await fed.works.list(keys.prefix("works"))).items) < 24
    await fed.admin("ap-southeast-cpu", "heal", {})

    for web in workloads[:3]:
        await fed.delete(web)
        await fed.unbind(web)
        wanted.pop(web.metadata.name)
    moved = workloads[5]
    await fed.bind(moved, {"ap-southeast-cpu": (2, None)})
    wanted[moved.metadata.name] = {"ap-southeast-cpu"}
    await plant(fed, "eu-west-arm", "stray")

    fed.start()

    async def converged() -> bool:
        placed: dict[str, set[str]] = {}
        for cluster in CLUSTERS:
            for name in await fed.ours(cluster, "apps/v1", "Deployment"):
                placed.setdefault(name, set()).add(cluster)
        return placed == wanted

    await wait_for(converged, timeout=30, message="exactly the wanted copies in the members")
    works = await fed.works.list(keys.prefix("works"))
    recorded: dict[str, set[str]] = {}
    for item in works.items:
        recorded.setdefault(item.obj.spec.workload.name, set()).add(item.obj.spec.cluster)
    assert recorded == wanted


async def test_after_a_restart_copies_deleted_in_members_are_applied_again(
    fed: Federation,
) -> None:
    """A restarted propagator finds its copies' Works already applied and applies nothing;
    it must still watch those copies, so one deleted by hand (or by a deposed leader's late
    call) while it was down, or after it came back, is put back."""
    web = deployment("keep", 2)
    await fed.put(web)
    await fed.bind(web, {"us-east-cpu": (1, None), "eu-west-arm": (1, None)})
    fed.start()

    async def present(cluster: str) -> bool:
        return "keep" in await fed.ours(cluster, "apps/v1", "Deployment")

    async def both() -> bool:
        return await present("us-east-cpu") and await present("eu-west-arm")

    async def recorded() -> bool:
        works = (await fed.works.list(keys.prefix("works"))).items
        return len(works) == 2 and all(w.obj.status.applied for w in works)

    await wait_for(both, timeout=15, message="both copies applied")
    await wait_for(recorded, timeout=15, message="both Works recorded as applied")
    await fed.stop()
    gone = deployment("keep", 2).to_wire()["metadata"]
    conn = await fed.conn("us-east-cpu")
    await conn.delete(member.ObjectRef("apps/v1", "Deployment", gone["name"], gone["namespace"]))
    assert not await present("us-east-cpu")

    propagator = fed.start()
    await wait_for(propagator.ready.is_set, timeout=15, message="propagator ready")
    await wait_for(both, timeout=15, message="the copy deleted while stopped applied again")
    conn = await fed.conn("eu-west-arm")
    await conn.delete(member.ObjectRef("apps/v1", "Deployment", gone["name"], gone["namespace"]))
    await wait_for(both, timeout=15, message="the copy deleted after the restart applied again")


@pytest.mark.parametrize(
    ("gc_interval", "watched"),
    [
        pytest.param(1.0, False, id="no watch of the kind there: the periodic pass lists it"),
        pytest.param(0.0, True, id="the kind watched there: the watch event removes it"),
    ],
)
async def test_a_stray_copy_that_appears_while_running_is_collected(
    fed: Federation, gc_interval: float, watched: bool
) -> None:
    """A deposed leader's apply can land after the new leader's start-up collection: a
    copy carrying our labels that no Work or Binding wants (a batch Job there would run
    twice). It is deleted; the wanted copy stays."""
    web = deployment("single", 1)
    await fed.put(web)
    await fed.bind(web, {"us-east-cpu": (1, None)})
    if watched:  # another Deployment there, so a watch of the kind runs in that member
        other = deployment("other", 1)
        await fed.put(other)
        await fed.bind(other, {"eu-west-arm": (1, None)})
    settings = PROPAGATION.model_copy(update={"gc_interval": gc_interval})
    propagator = fed.start(settings)
    await wait_for(propagator.ready.is_set, timeout=15, message="propagator ready")

    async def where() -> set[str]:
        return {c for c in CLUSTERS if "single" in await fed.ours(c, "apps/v1", "Deployment")}

    async def only_wanted() -> bool:
        return await where() == {"us-east-cpu"}

    await wait_for(only_wanted, timeout=15, message="the wanted copy")
    await plant(fed, "eu-west-arm", "single")
    assert await where() == {"us-east-cpu", "eu-west-arm"}
    await wait_for(only_wanted, timeout=15, message="the stray copy collected")


async def test_copies_come_back_after_their_namespace_is_deleted_in_the_member(
    fed: Federation,
) -> None:
    """`kubectl delete namespace` in a member takes our copies with it. They are applied
    again, into the namespace created again, even though the applier had already seen
    that namespace there once."""
    web = deployment("lonely", 1, namespace="lonely")
    await fed.put(web)
    await fed.bind(web, {"us-east-cpu": (1, None)})
    propagator = fed.start()
    await wait_for(propagator.ready.is_set, timeout=15, message="propagator ready")

    async def there() -> bool:
        got = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "lonely", "lonely")
        return got is not None

    await wait_for(there, timeout=15, message="the copy applied")
    conn = await fed.conn("us-east-cpu")
    await conn.delete(member.ObjectRef("v1", "Namespace", "lonely"))
    assert not await there()
    await wait_for(there, timeout=15, message="the copy back in its namespace")


async def test_a_copy_edited_while_the_propagator_was_stopped_is_restored(
    fed: Federation,
) -> None:
    """What the last apply left is recorded in the Work (`appliedState`), not only held in
    memory: a label taken off a copy while no propagator ran is put back by the next one,
    where a baseline taken from the first observation would have kept the edit."""
    web = deployment("steady", 1)
    await fed.put(web)
    await fed.bind(web, {"us-east-cpu": (1, None)})
    fed.start()

    async def labels() -> dict[str, str]:
        got = await fed.member_object("us-east-cpu", "apps/v1", "Deployment", "web", "steady")
        return dict((got or {}).get("metadata", {}).get("labels") or {})

    async def recorded() -> bool:
        work = await fed.works.get(keys.work_key("us-east-cpu", ref_of(web)))
        return work is not None and work.obj.status.applied_state is not None

    async def labelled() -> bool:
        return (await labels()).get("app") == "steady"

    await wait_for(labelled, timeout=15, message="the copy applied")
    await wait_for(recorded, timeout=15, message="what the apply left, recorded")
    await fed.stop()
    conn = await fed.conn("us-east-cpu")
    edited = await conn.get(member.ObjectRef("apps/v1", "Deployment", "steady", "web"))
    edited["metadata"]["labels"].pop("app")
    for field in ("managedFields", "resourceVersion"):
        edited["metadata"].pop(field, None)
    await conn.apply({**edited, "status": {}}, force=True)
    assert "app" not in await labels()
    fed.start()
    await wait_for(labelled, timeout=15, message="the label put back after the restart")


async def test_a_copy_the_registry_does_not_know_is_deleted_loudly_and_counted(
    fed: Federation, caplog: pytest.LogCaptureFixture
) -> None:
    """After an etcd restore every copy submitted since the snapshot is such a copy, and
    GC deleted them all, running Jobs included, with nothing above INFO in the log and no
    metric: each deletion is now a WARNING naming it, then a summary, and counted."""
    await plant(fed, "eu-west-arm", "after-snapshot")
    counted: list[tuple[str, str]] = []
    caplog.set_level(logging.WARNING, logger="federation.propagation")
    propagator = fed.start()
    propagator.collected = lambda cluster, kind: counted.append((cluster, kind))

    async def gone() -> bool:
        return "after-snapshot" not in await fed.ours("eu-west-arm", "apps/v1", "Deployment")

    def warned() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]

    def summed_up() -> bool:
        return any(m.startswith("gc: deleted 1 copies from eu-west-arm") for m in warned())

    await wait_for(gone, timeout=15, message="the unknown copy collected")
    await wait_for(summed_up, message="the pass's summary")
    assert any(
        "gc: deleted " in m and "after-snapshot" in m and "from eu-west-arm" in m for m in warned()
    ), warned()
    assert counted == [("eu-west-arm", "Deployment")]


async def test_a_status_left_by_a_cluster_deleted_while_stopped_is_removed_at_start(
    fed: Federation,
) -> None:
    """A Cluster deleted while no controller ran was never seen going by the monitor,
    and its ClusterStatus stayed in the registry for good."""
    statuses = codec.TypedStore(fed.store, codec.Codec(ClusterStatus))
    await statuses.put(keys.cluster_status_key("gone-member"), ClusterStatus())
    await statuses.put(keys.cluster_status_key("us-east-cpu"), ClusterStatus())
    propagator = fed.start()
    await wait_for(propagator.ready.is_set, timeout=15, message="propagator ready")
    assert await statuses.get(keys.cluster_status_key("gone-member")) is None
    assert await statuses.get(keys.cluster_status_key("us-east-cpu")) is not None
