"""A member's own objects stay as they are: real etcd, simulated members, one propagator.

A member may already hold an object of a template's name: in a migration the members ran
the objects before the federation did. `conflictResolution: Abort` refuses to take such
an object over, so it stays the member's, and no way of taking a copy off a member may
delete it or write to it: a placement that leaves the member, the template deleted (its
copies released under `preserveResourcesOnDeletion`, or deleted), the Namespace deleted,
a dependency no longer needed there. Each of these deleted (or, released, overwrote) the
member's object, as if fedctl's refused copy had been applied. Karmada's execution
controller skips deleting an object it does not manage the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.api import app as api_app
from federation.registry import codec, embedded, events, keys
from policies.models.propagation import PropagationPolicy
from policies.models.work import Event
from policies.models.workload import Workload
from tests.integration.test_propagation_deps import needing
from tests.integration.test_propagation_deps import policy as deps_policy
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.serving import fedctl, serving
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

EAST, WEST = "us-east-cpu", "eu-west-arm"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def config_map(name: str, value: str, *, namespace: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"k": value},
    }


async def member_owns(fed: Federation, cluster: str, *objs: dict[str, Any]) -> None:
    """Objects the member's team created there by hand, before the federation came."""
    conn = await fed.conn(cluster)
    namespaces = {o["metadata"].get("namespace") for o in objs} - {None}
    for ns in sorted(namespaces):
        await conn.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for obj in objs:
        await conn.apply(obj)


async def refused(fed: Federation, cluster: str, workload: Workload) -> Any:
    """The Work of `workload` on `cluster` once Abort has refused it there."""

    async def probe() -> Any:
        stored = await fed.works.get(keys.work_key(cluster, ref_of(workload)))
        return stored if stored and "Abort refuses" in stored.obj.status.error else None

    return await wait_for(probe, timeout=15, message=f"Abort's refusal on {cluster}")


async def work_gone(fed: Federation, cluster: str, workload: Workload) -> None:
    async def probe() -> bool:
        return await fed.works.get(keys.work_key(cluster, ref_of(workload))) is None

    await wait_for(probe, timeout=15, message=f"the Work on {cluster} removed")


async def said(fed: Federation, workload: Workload, reason: str) -> list[Event]:
    listed = await codec.TypedStore(fed.store, events.EVENTS).list(
        events.event_prefix(ref_of(workload))
    )
    return [e.obj for e in listed.items if e.obj.reason == reason]


async def untouched(fed: Federation, cluster: str, expected: dict[str, Any]) -> None:
    """The member's object is there as its team wrote it: its data, none of our marks."""
    meta = expected["metadata"]
    got = await fed.member_object(
        cluster, expected["apiVersion"], expected["kind"], meta.get("namespace"), meta["name"]
    )
    assert got is not None, f"{meta['name']} was deleted from {cluster}"
    assert got.get("data") == expected.get("data")
    assert not (got["metadata"].get("labels") or {}), got["metadata"]
    assert "fedctl.io/workload-ref" not in (got["metadata"].get("annotations") or {})


async def left_told(fed: Federation, workload: Workload, cluster: str) -> None:
    """Said as left there, not as removed (the events are written after the Work goes)."""

    async def left() -> list[Event]:
        return [e for e in await said(fed, workload, "Left") if e.cluster == cluster]

    (told,) = await wait_for(left, timeout=10, message=f"the Left event on {cluster}")
    assert "not managed by fedctl" in told.message, told
    assert not [e for e in await said(fed, workload, "Removed") if e.cluster == cluster]
    assert not [e for e in await said(fed, workload, "Released") if e.cluster == cluster]


def template(name: str) -> Workload:
    return Workload.model_validate(config_map(name, "federation"))


def claiming(name: str, *, preserve: bool = False) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": name, "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": name}],
                "preserveResourcesOnDeletion": preserve,
            },
        }
    )


async def test_a_placement_leaving_a_member_leaves_the_object_abort_refused_there(
    fed: Federation,
) -> None:
    own = config_map("owned", "member-owned")
    await member_owns(fed, EAST, own)
    owned = template("owned")
    await fed.put(owned)
    await fed.bind(owned, {EAST: (0, None), WEST: (0, None)})
    fed.start()
    await refused(fed, EAST, owned)

    await fed.bind(owned, {WEST: (0, None)})
    await work_gone(fed, EAST, owned)
    await untouched(fed, EAST, own)
    await left_told(fed, owned, EAST)
    assert await fed.member_object(WEST, "v1", "ConfigMap", "web", "owned") is not None


@pytest.mark.parametrize(
    "preserve",
    [
        pytest.param(False, id="deleted template: its copies deleted, the member's object not"),
        pytest.param(True, id="preserved template: its copies released, the member's not written"),
    ],
)
async def test_a_deleted_template_leaves_the_object_abort_refused_as_it_was(
    fed: Federation, preserve: bool
) -> None:
    own = config_map("owned", "member-owned")
    await member_owns(fed, EAST, own)
    owned = template("owned")
    await fed.put(claiming("owned", preserve=preserve))
    await fed.put(owned)
    await fed.bind(owned, {EAST: (0, None), WEST: (0, None)})
    fed.start()
    await refused(fed, EAST, owned)

    async def ours_on_west() -> bool:
        return "owned" in await fed.ours(WEST, "v1", "ConfigMap")

    await wait_for(ours_on_west, timeout=15, message="our copy on the other member")
    await fed.delete(owned)
    await fed.unbind(owned)
    for cluster in (EAST, WEST):
        await work_gone(fed, cluster, owned)
    await untouched(fed, EAST, own)
    await left_told(fed, owned, EAST)
    west = await fed.member_object(WEST, "v1", "ConfigMap", "web", "owned")
    if preserve:
        assert west is not None and west["data"] == {"k": "federation"}
        assert not (west["metadata"].get("labels") or {})
    else:
        assert west is None


async def test_deleting_a_namespace_abort_refused_leaves_the_members_namespace_and_contents(
    fed: Federation,
) -> None:
    """The member had namespace kt8 and its team's data in it; the federation's Namespace
    kt8 was refused there. `fedctl delete namespace kt8` deleted the member's namespace,
    and everything in it with it."""
    data = config_map("team-data", "member-owned", namespace="kt8")
    await member_owns(fed, EAST, data)
    kt8 = Workload.model_validate(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kt8"}}
    )
    await fed.put(kt8)
    await fed.bind(kt8, {EAST: (0, None)})
    propagator = fed.start()
    await refused(fed, EAST, kt8)

    async with serving(api_app.build_app(fed.store)) as server:
        assert await fedctl(server, "delete", "namespace", "kt8") == 0
    await work_gone(fed, EAST, kt8)
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="nothing left to do")
    assert await fed.member_object(EAST, "v1", "Namespace", None, "kt8") is not None
    await untouched(fed, EAST, data)
    await left_told(fed, kt8, EAST)


async def test_a_dependency_no_longer_needed_leaves_the_object_abort_refused_there(
    fed: Federation,
) -> None:
    """propagateDeps sends the ConfigMap the pods read where the workload runs; a member
    with its own ConfigMap of that name refuses it. The workload moved off that member,
    and the member's ConfigMap was deleted as if it had been the dependency's copy."""
    own = {**config_map("appcfg", "member-owned"), "data": {"MODE": "legacy"}}
    await member_owns(fed, WEST, own)
    appcfg = Workload.model_validate({**config_map("appcfg", ""), "data": {"MODE": "prod"}})
    app = needing("depsapp")
    policy = deps_policy("depsapp", "Deployment", deps=True)
    for obj in (appcfg, app, policy):
        await fed.put(obj)
    await fed.bind(app, {EAST: (1, None), WEST: (1, None)})
    fed.start()
    await refused(fed, WEST, appcfg)

    await fed.bind(app, {EAST: (1, None)})
    await work_gone(fed, WEST, appcfg)
    await untouched(fed, WEST, own)
    await left_told(fed, appcfg, WEST)
    assert await fed.member_object(EAST, "v1", "ConfigMap", "web", "appcfg") is not None


async def test_a_copy_abort_refused_counts_as_wanted_and_not_ready(fed: Federation) -> None:
    """A Deployment of 1 sent whole to two members, one of which runs its own: READY read
    1/1, as if one copy were all that was asked; it reads 1/2."""
    precious = deployment("precious", 1)
    own = precious.to_wire()
    own.pop("status", None)
    await member_owns(fed, EAST, own)
    await fed.put(precious)
    await fed.bind(precious, {EAST: (1, None), WEST: (1, None)})
    fed.start()
    await refused(fed, EAST, precious)

    async def one_ready() -> Any:
        status = await fed.status(precious)
        return status if status is not None and status.ready_replicas == 1 else None

    status = await wait_for(one_ready, timeout=20, message="the copy on the other member ready")
    assert (status.health, status.ready_replicas, status.replicas) == ("Progressing", 1, 2)
