"""Karmada's `suspension` end to end: real etcd, simulated members, one propagator.

A policy that suspends dispatching (everywhere, or to the clusters it names) freezes what
its workloads' members run: no copy there is created, updated, restored or taken off a
cluster the placement left, until the suspension is lifted; then each is brought up to
date. Deleting the template still removes its copies, as Karmada's Work deletion does
whatever the suspension. Every suspended Work says so, and so does the workload status.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.registry import embedded, keys, objects
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

EAST, WEST = "us-east-cpu", "eu-west-arm"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def policy(name: str, suspension: dict[str, Any] | None = None) -> PropagationPolicy:
    spec: dict[str, Any] = {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}]
    }
    if suspension is not None:
        spec["suspension"] = suspension
    return PropagationPolicy.model_validate(
        {"metadata": {"name": name, "namespace": "web"}, "spec": spec}
    )


def tagged(web: Workload, tag: str) -> Workload:
    """`web` running image tag `tag`."""
    spec = web.spec
    pod = spec["template"]["spec"]
    container = {**pod["containers"][0], "image": f"registry.example.com/web/app:{tag}"}
    template = {**spec["template"], "spec": {**pod, "containers": [container]}}
    return web.model_copy(update={"spec": {**spec, "template": template}})


async def images(fed: Federation, name: str) -> dict[str, str | None]:
    """cluster → the image its copy runs (None: no copy)."""
    found: dict[str, str | None] = {}
    for cluster in (EAST, WEST):
        obj = await fed.member_object(cluster, "apps/v1", "Deployment", "web", name)
        found[cluster] = obj["spec"]["template"]["spec"]["containers"][0]["image"] if obj else None
    return found


def image(tag: str) -> str:
    return f"registry.example.com/web/app:{tag}"


async def suspended_rows(fed: Federation, web: Workload) -> dict[str, bool] | None:
    status = await fed.status(web)
    return None if status is None else {row.cluster: row.suspended for row in status.clusters}


async def test_suspension_freezes_copies_until_lifted_then_brings_them_up_to_date(
    fed: Federation,
) -> None:
    web = tagged(deployment("paused", 2), "1")
    await fed.put(policy("paused"))
    await fed.put(web)
    await fed.bind(web, {EAST: (1, None), WEST: (1, None)})
    fed.start()

    async def shows(expected: dict[str, str | None]) -> bool:
        return await images(fed, "paused") == expected

    await wait_for(
        lambda: shows({EAST: image("1"), WEST: image("1")}), timeout=15, message="both copies"
    )

    # Suspended on one cluster: an update reaches the other one only.
    await fed.put(policy("paused", {"dispatchingOnClusters": {"clusterNames": [WEST]}}))
    await fed.put(tagged(web, "2"))
    await wait_for(
        lambda: shows({EAST: image("2"), WEST: image("1")}), timeout=15, message="east updated"
    )
    rows = await wait_for(
        lambda: _rows(fed, web, {EAST: False, WEST: True}), timeout=10, message="west suspended"
    )
    assert rows == {EAST: False, WEST: True}
    work = await fed.works.get(keys.work_key(WEST, ref_of(web)))
    assert work is not None and work.obj.spec.suspend_dispatching

    # Lifted: the suspended copy is brought up to date.
    await fed.put(policy("paused"))
    await wait_for(
        lambda: shows({EAST: image("2"), WEST: image("2")}), timeout=15, message="west updated"
    )
    await wait_for(
        lambda: _rows(fed, web, {EAST: False, WEST: False}), timeout=10, message="none suspended"
    )

    # Suspended everywhere: neither an update nor a placement that leaves a cluster
    # reaches the members; the copy on the cluster left stays, listed as leaving.
    await fed.put(policy("paused", {"dispatching": True}))
    await wait_for(
        lambda: _rows(fed, web, {EAST: True, WEST: True}), timeout=10, message="all suspended"
    )
    revision = (await fed.status(web)).binding_revision  # type: ignore[union-attr]
    await fed.put(tagged(web, "3"))
    await fed.bind(web, {EAST: (2, None)})

    async def caught_up() -> Any:
        status = await fed.status(web)
        return status if status is not None and status.binding_revision > revision else None

    status = await wait_for(caught_up, timeout=15, message="the status at the new Binding")
    assert {row.cluster: (row.leaving, row.suspended) for row in status.clusters} == {
        EAST: (False, True),
        WEST: (True, True),
    }
    assert await images(fed, "paused") == {EAST: image("2"), WEST: image("2")}

    # Deleted while suspended: its copies go, as Karmada deletes a deleted Work's.
    await fed.delete(web)
    await fed.unbind(web)
    await wait_for(lambda: shows({EAST: None, WEST: None}), timeout=15, message="copies gone")


async def _rows(fed: Federation, web: Workload, expected: dict[str, bool]) -> dict[str, bool]:
    rows = await suspended_rows(fed, web)
    return rows if rows == expected else {}


async def test_a_new_workload_under_a_suspended_policy_reaches_no_member_until_lifted(
    fed: Federation,
) -> None:
    web = tagged(deployment("held", 1), "1")
    await fed.put(policy("held", {"dispatching": True}))
    await fed.put(web)
    await fed.bind(web, {EAST: (1, None)})
    fed.start()
    await wait_for(lambda: _rows(fed, web, {EAST: True}), timeout=15, message="a suspended Work")
    work = await fed.works.get(keys.work_key(EAST, ref_of(web)))
    assert work is not None and not work.obj.status.applied
    assert await images(fed, "held") == {EAST: None, WEST: None}

    await fed.put(policy("held"))

    async def created() -> bool:
        return await images(fed, "held") == {EAST: image("1"), WEST: None}

    await wait_for(created, timeout=15, message="created once lifted")


async def test_a_suspension_applied_with_the_change_holds_it_back_however_late_it_is_read(
    fed: Federation,
) -> None:
    """`fedctl apply -f` of a suspended policy and the template change it should hold
    back writes both at once, but the controller watches policies and templates apart:
    the template's event can come first. Here the policy watch is stopped outright, so
    the pass sees the change long before its mirror of the policy would."""
    web = tagged(deployment("rollout", 2), "1")
    await fed.put(policy("rollout"))
    await fed.put(web)
    await fed.bind(web, {EAST: (1, None), WEST: (1, None)})
    propagator = fed.start()

    async def shows(expected: dict[str, str | None]) -> bool:
        return await images(fed, "rollout") == expected

    await wait_for(
        lambda: shows({EAST: image("1"), WEST: image("1")}), timeout=15, message="both copies"
    )
    watch = next(
        t
        for t in asyncio.all_tasks()
        if t.get_name() == f"propagator-watch-{propagator.policies.prefix}"
    )
    watch.cancel()
    suspended, changed = policy("rollout", {"dispatching": True}), tagged(web, "2")
    await fed.store.commit(
        [
            fed.objects.put_op(objects.key_for(suspended), suspended),
            fed.objects.put_op(objects.key_for(changed), changed),
        ]
    )
    await wait_for(
        lambda: _rows(fed, web, {EAST: True, WEST: True}), timeout=10, message="all suspended"
    )
    assert await images(fed, "rollout") == {EAST: image("1"), WEST: image("1")}
