"""A workload's pass holds its namespace on the clusters it is placed on.

A copy is applied before its Work is written. A Namespace template deleted in between saw
no Work of its namespace on that member and deleted the member's namespace, the new copy
with it: a running Job started over once its pass wrote the Work and the copy was found
gone. Now the namespace counts as occupied while such a pass is under way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, cast

from clusters import member as member_mod
from federation.propagation.controller import Propagator
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from policies.models.binding import Binding
from policies.models.cluster import Cluster
from tests.unit.scheduler import fleet
from tests.waiting import wait_for

JOB = fleet.workload("train", namespace="hh")


class Slow:
    """A member whose apply of a copy waits until `go` is set."""

    name = "a"

    def __init__(self) -> None:
        self.applying = False
        self.go = asyncio.Event()

    async def get(self, ref: member_mod.ObjectRef) -> dict[str, Any]:
        if ref.kind == "Namespace":
            return {"metadata": {"name": ref.name}}
        raise member_mod.MemberNotFound("not found", cluster=self.name, code=404)

    async def apply(self, obj: Mapping[str, Any], *, force: bool = False) -> dict[str, Any]:
        self.applying = True
        await self.go.wait()
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1", "uid": "u"}}


async def test_a_workload_being_applied_occupies_its_namespace_before_its_work_is_written() -> None:
    store = MemoryStore()
    slow = Slow()

    async def connect(cluster: Cluster) -> member_mod.Member:
        return cast(member_mod.Member, slow)

    propagator = Propagator(store, connect=connect)
    ref = objects.workload_ref(JOB)
    await codec.TypedStore(store, objects.ObjectCodec()).put(objects.key_for(JOB), JOB)
    await codec.TypedStore(store, codec.Codec(Cluster)).put(
        keys.cluster_key("a"), fleet.cluster("a")
    )
    binding = Binding.model_validate(
        {
            "metadata": {"name": "train", "namespace": "hh"},
            "spec": {
                "workload": {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "namespace": "hh",
                    "name": "train",
                },
                "clusters": [{"name": "a", "replicas": 1}],
            },
        }
    )
    await codec.TypedStore(store, codec.Codec(Binding)).put(keys.binding_key(ref), binding)
    for mirror in (propagator.clusters, propagator.workloads, propagator.bindings):
        await mirror.load()
    passing = asyncio.create_task(propagator.sync.sync(ref))
    try:
        await wait_for(lambda: slow.applying, timeout=5, message="the copy being applied")
        assert propagator.sync.occupied("hh", "a"), "held while its copy is applied"
        assert not propagator.sync.occupied("hh", "b"), "only where it is placed"
    finally:
        slow.go.set()
        await passing
    assert propagator.sync.occupied("hh", "a"), "its Work now holds it"
    await store.close()
