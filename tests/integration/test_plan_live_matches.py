"""`fedctl plan --live` against the controller: the plan of a file is the Binding the
scheduling loop writes once that file is applied (a memory registry, the real loop and the
real plan route, no members: the statuses say what the monitor would)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import pytest

from federation import clock
from federation.api import app as api_app
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.cluster import ClusterStatus
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.serving import serving
from tests.unit.scheduler import fleet
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration


def _policy(clusters: list[str], weight: dict[str, Any] | None) -> PropagationPolicy:
    """web, Divided by weight over `clusters`: by free room (`weight` None) or equally."""
    replica: dict[str, Any] = {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
    }
    if weight is not None:
        replica["weightPreference"] = weight
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": {
                    "clusterAffinity": {"clusterNames": clusters},
                    "replicaScheduling": replica,
                },
            },
        }
    )


DYNAMIC = {"dynamicWeight": "AvailableReplicas"}


@contextlib.asynccontextmanager
async def controller(*names: str) -> AsyncIterator[tuple[MemoryStore, str]]:
    """A registry holding clusters `names` (2 nodes of 16 cores each, all free), its
    scheduling loop running and its API served (the URL yielded)."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    for name in names:
        member = fleet.cluster(name)
        assert member.status is not None
        await objs.put(keys.cluster_key(name), member.model_copy(update={"status": None}))
        await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
            keys.cluster_status_key(name), member.status
        )
    loop = SchedulerLoop(store, settings=SchedulerSettings(), clock=clock.real, debounce=0.01)
    async with background(loop.run()), serving(api_app.build_app(store)) as server:
        yield store, server


async def applied(store: MemoryStore, *objs: Any) -> None:
    typed = codec.TypedStore(store, objects.ObjectCodec())
    for obj in objs:
        await typed.put(objects.key_for(obj), obj)


async def bound(store: MemoryStore, web: Workload, *, replicas: int) -> Binding:
    """web's Binding once the loop has decided on `replicas` of it (placed, or waiting)."""
    typed = codec.TypedStore(store, codec.Codec(Binding))

    async def decided() -> Binding | None:
        got = await typed.get(keys.binding_key(objects.workload_ref(web)))
        if got is None or got.obj.spec.replicas != replicas:  # a Pending one's too
            return None
        return got.obj

    return await wait_for(decided, message=f"web's Binding for {replicas} replicas")


def plan(server: str, *objs: Any) -> dict[str, Any]:
    """The live plan of `objs` as a file without server metadata (what a user applies)."""
    docs = []
    for obj in objs:
        wire = obj.to_wire()
        for field in ("uid", "resourceVersion", "generation", "creationTimestamp"):
            wire["metadata"].pop(field, None)
        docs.append(json.dumps(wire))
    request = urllib.request.Request(
        server + "/apis/fedctl.io/v1alpha1/plan",
        data="\n---\n".join(docs).encode(),
        headers={"Content-Type": "application/yaml"},
        method="POST",
    )
    with urllib.request.urlopen(request) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
    (entry,) = [p for p in answer["plans"] if p["key"].endswith("/web")]
    return entry


def web(replicas: int, *, cpu: str = "3", uid: str | None = None) -> Workload:
    return fleet.workload("web", kind="Deployment", cpu=cpu, replicas=replicas, uid=uid)


@pytest.mark.parametrize(
    ("scaled", "placed"),
    [
        pytest.param(8, {"a": 8}, id="scale-up within the room left is placed"),
        pytest.param(12, None, id="scale-up beyond the room left waits, as the controller has it"),
    ],
)
async def test_a_live_plan_of_a_scale_up_is_the_binding_the_controller_writes(
    scaled: int, placed: dict[str, int] | None
) -> None:
    """a holds ten 3-core pods (5 on each 16-core node); web runs 6 there, leaving room for
    4. Planned, a scale-up got web's own 6 back as free room and then held them again on
    top: 12 was "placed on a:12", which the controller refused ("free capacity for 4")."""
    policy = _policy(["a"], DYNAMIC)
    async with controller("a") as (store, server):
        await applied(store, policy, web(6))
        assert (await bound(store, web(6), replicas=6)).placement() == {"a": 6}

        planned = (await asyncio.to_thread(plan, server, web(scaled), policy))["after"]
        await applied(store, web(scaled))
        binding = await bound(store, web(scaled), replicas=scaled)

    if placed is None:
        assert binding.status.phase == "Pending", binding.status
        assert not planned["scheduled"], planned
        # The Binding adds where the copies it keeps still run.
        assert binding.status.reason == planned["reason"] + " (still running on a)"
        assert "free capacity for 4 (a=4)" in planned["reason"], planned
    else:
        assert binding.placement() == placed
        assert planned["placement"] == placed, planned


async def test_a_live_plan_of_an_unchanged_file_keeps_the_uid_seeded_tie_of_its_binding() -> None:
    """5 replicas on a and b by equal weights tie for the fifth, which Karmada gives by
    the workload's uid: this one's sends it to the larger name (b). The file has no uid,
    and planned as written the tie went ascending: "placed on a:3, b:2", a move the
    controller never makes."""
    descending = "00000000-0000-0000-0000-000000000000"
    policy = _policy(["a", "b"], None)
    placed = web(5, cpu="10m", uid=descending)
    async with controller("a", "b") as (store, server):
        await applied(store, policy, placed)
        binding = await bound(store, placed, replicas=5)
        entry = await asyncio.to_thread(plan, server, placed, policy)

    assert binding.placement() == {"a": 2, "b": 3}
    assert entry["before"]["placement"] == entry["after"]["placement"] == {"a": 2, "b": 3}
