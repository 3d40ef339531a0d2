"""The scheduling loop over a memory store keeps a workload with the policy that claimed
it, as Karmada does: the audit's live sequence (a higher-priority policy applied, then the
policies deleted one by one), in one leader's term and across leaders."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from federation import clock
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from federation.scheduler import binder as binder_mod
from federation.scheduler import loop as loop_mod
from federation.scheduler import reconcile
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from policies.models.cluster import ClusterStatus
from tests.unit.scheduler.fleet import cluster, workload
from tests.unit.scheduler.test_claim_preemption import pp
from tests.unit.scheduler.test_loop import running
from tests.waiting import wait_for

SETTINGS = SchedulerSettings()
WEB = workload("web", kind="Deployment", replicas=2)
LOW = pp("low", clusters=("a", "b", "c"))
HIGH = pp("high", priority=10, clusters=("b",))
HIGH_ALWAYS = pp("high", priority=10, preemption="Always", clusters=("b",))
EVERYWHERE = {"a": 2, "b": 2, "c": 2}


class Fleet:
    """Three members, the policies and workloads written to a store, and its Bindings."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.objs = codec.TypedStore(self.store, objects.ObjectCodec())
        self.bindings = codec.TypedStore(self.store, codec.Codec(Binding))
        self.markers = 0

    async def start(self) -> None:
        statuses = codec.TypedStore(self.store, codec.Codec(ClusterStatus))
        for name in ("a", "b", "c"):
            member = cluster(name)
            assert member.status is not None
            await self.objs.put(keys.cluster_key(name), member.model_copy(update={"status": None}))
            await statuses.put(keys.cluster_status_key(name), member.status)
        await self.put(LOW, WEB)

    async def put(self, *items: Any) -> None:
        for item in items:
            await self.objs.put(objects.key_for(item), item)

    async def delete(self, item: Any) -> None:
        await self.objs.delete(objects.key_for(item))

    async def web(self) -> Binding | None:
        got = await self.bindings.get(keys.binding_key(reconcile.ref_of(WEB)))
        return got.obj if got is not None else None

    async def placed(self, placement: dict[str, int], claim: str) -> Binding | None:
        got = await self.web()
        if got is None or got.status.phase != "Scheduled" or got.placement() != placement:
            return None
        return got if got.metadata.annotations.get(binder_mod.CLAIMED_BY) == claim else None

    async def settled(self, loop: loop_mod.SchedulerLoop, *policies: Any) -> None:
        """Wait for a cycle that read `policies` as they are now: one that admits a workload
        written after the loop's mirror of the policies had them."""
        wanted = {objects.key_for(p): p for p in policies}
        await wait_for(
            lambda: all(
                (k in loop.policies.items and loop.policies.items[k].obj == p)
                for k, p in wanted.items()
            ),
            message="the loop reads the policies",
        )
        self.markers += 1
        marker = workload(f"marker-{self.markers}")
        await self.put(marker)

        async def admitted() -> bool:
            got = await self.bindings.get(keys.binding_key(reconcile.ref_of(marker)))
            return got is not None and got.obj.status.phase == "Scheduled"

        await wait_for(admitted, message="a cycle after the policies were read")


@contextlib.asynccontextmanager
async def leading(fleet: Fleet) -> AsyncIterator[loop_mod.SchedulerLoop]:
    loop = loop_mod.SchedulerLoop(fleet.store, settings=SETTINGS, clock=clock.real, debounce=0.01)
    async with running(loop):
        yield loop


LOW_ID, HIGH_ID = "PropagationPolicy/team/low", "PropagationPolicy/team/high"


async def test_the_audits_sequence_keeps_each_claim_and_the_copies_of_a_deleted_policy() -> None:
    fleet = Fleet()
    await fleet.start()
    async with leading(fleet) as loop:
        await wait_for(lambda: fleet.placed(EVERYWHERE, LOW_ID), message="web under low")

        await fleet.put(HIGH)  # priority 10, preemption Never: low keeps it
        await fleet.settled(loop, HIGH)
        assert await fleet.placed(EVERYWHERE, LOW_ID)

        await fleet.put(HIGH_ALWAYS)  # now allowed to preempt: it takes web over
        await wait_for(lambda: fleet.placed({"b": 2}, HIGH_ID), message="web under high")

        await fleet.delete(HIGH_ALWAYS)  # its claimant gone, low matches: low claims it
        await wait_for(lambda: fleet.placed(EVERYWHERE, LOW_ID), message="web under low again")

        await fleet.delete(LOW)  # none matches: web stays on every member
        kept = await wait_for(lambda: fleet.placed(EVERYWHERE, ""), message="web kept")
        assert kept.status.reason == (
            f"Kept where it is: its policy {LOW_ID} was deleted and no other policy claims"
            " it; it stays until one does"
        )
        await fleet.settled(loop)
        assert await fleet.web() == kept  # written once, then left alone


async def test_a_new_leader_keeps_the_claims_the_bindings_record() -> None:
    fleet = Fleet()
    await fleet.start()
    async with leading(fleet):
        await wait_for(lambda: fleet.placed(EVERYWHERE, LOW_ID), message="web under low")

    await fleet.put(HIGH)  # applied while no scheduler leads
    async with leading(fleet) as loop:
        await fleet.settled(loop, HIGH)
        assert await fleet.placed(EVERYWHERE, LOW_ID)

    await fleet.delete(HIGH)
    await fleet.delete(LOW)
    async with leading(fleet):
        await wait_for(lambda: fleet.placed(EVERYWHERE, ""), message="web kept")
    async with leading(fleet) as loop:
        await fleet.settled(loop)
        assert await fleet.placed(EVERYWHERE, "")


async def test_a_binding_written_before_claims_were_recorded_gets_its_claim() -> None:
    """Its claim lived only in a leader's memory: deleting the policy while no scheduler led
    re-placed the workload on one member instead of keeping it on every member."""
    fleet = Fleet()
    await fleet.start()
    async with leading(fleet):
        await wait_for(lambda: fleet.placed(EVERYWHERE, LOW_ID), message="web under low")
    stored = await fleet.bindings.get(keys.binding_key(reconcile.ref_of(WEB)))
    assert stored is not None
    notes = dict(stored.obj.metadata.annotations)
    del notes[binder_mod.CLAIMED_BY]  # as an older release wrote it
    legacy = stored.obj.model_copy(
        update={"metadata": stored.obj.metadata.model_copy(update={"annotations": notes})}
    )
    await fleet.bindings.update(stored.key, legacy, revision=stored.revision)

    async with leading(fleet):
        await wait_for(lambda: fleet.placed(EVERYWHERE, LOW_ID), message="the claim recorded")

    await fleet.delete(LOW)  # while no scheduler leads
    async with leading(fleet) as loop:
        await wait_for(lambda: fleet.placed(EVERYWHERE, ""), message="web kept everywhere")
        await fleet.settled(loop)
        assert await fleet.placed(EVERYWHERE, "")
