"""Leader election on a real etcd: one leader, fast takeover, and fencing of the deposed."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from federation import errors
from federation.api import metrics as metrics_mod
from federation.registry import embedded
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.runtime.election import Election
from tests.conftest import etcd_settings
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

TTL = 2


@dataclass
class Replica:
    store: EtcdStore
    election: Election
    task: asyncio.Task[None]
    metrics: metrics_mod.Metrics


@pytest.fixture
async def replicas(etcd_server: embedded.EmbeddedEtcd, prefix: str) -> AsyncIterator[list[Replica]]:
    """Three controller replicas, each with its own etcd connection, campaigning on one key."""
    out: list[Replica] = []
    for i in range(3):
        store = EtcdStore(etcd_settings(etcd_server.url))
        await store.connect()
        metrics = metrics_mod.Metrics()
        election = Election(
            store,
            ttl=TTL,
            identity=f"replica-{i}",
            key=f"{prefix}leader",
            observe=metrics.set_leader,
        )
        out.append(Replica(store, election, asyncio.create_task(election.run()), metrics))
    yield out
    for r in out:
        r.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await r.task
        await r.store.close()


def leaders(replicas: list[Replica]) -> list[Replica]:
    return [r for r in replicas if r.election.is_leader]


def gauge(replica: Replica) -> float | None:
    """The replica's `fedctl_leader` sample, as a scrape of its `/metrics` reads it."""
    return replica.metrics.registry.get_sample_value("fedctl_leader")


async def test_exactly_one_of_three_leads_and_the_key_names_it(replicas: list[Replica]) -> None:
    (leader,) = await wait_for(lambda: leaders(replicas), message="a leader")
    assert await leader.election.leader() == leader.election.identity
    # Followers stay followers while the leader keeps its lease past several TTLs' worth of
    # keepalives; a second leader would show up here.
    deadline = time.monotonic() + TTL * 1.5
    while time.monotonic() < deadline:
        assert leaders(replicas) == [leader]
        await asyncio.sleep(0.1)
    for r in replicas:
        if r is not leader:
            with pytest.raises(errors.Fenced):
                r.election.guard()


async def test_a_killed_leader_is_replaced_within_the_ttl_and_its_late_write_is_fenced(
    replicas: list[Replica], prefix: str
) -> None:
    (old,) = await wait_for(lambda: leaders(replicas), message="a leader")
    stale_guard = old.election.guard()
    # A write fenced by the current leader's guard goes through.
    await old.store.commit([st.Put(f"{prefix}work", b"by the first leader")], guards=[stale_guard])

    # SIGKILL-like: the process vanishes without revoking its lease.
    old.election.resign_on_stop = False
    old.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await old.task
    killed_at = time.monotonic()

    others = [r for r in replicas if r is not old]
    (new,) = await wait_for(lambda: leaders(others), timeout=TTL + 3, message="a new leader")
    assert time.monotonic() - killed_at <= TTL + 1.5
    assert new.election.guard() != stale_guard

    # The deposed leader wakes up and sends the write it had prepared: refused.
    with pytest.raises(errors.Fenced):
        await old.store.commit([st.Put(f"{prefix}work", b"late write")], guards=[stale_guard])
    kv = await new.store.get(f"{prefix}work")
    assert kv is not None and kv.value == b"by the first leader"
    await new.store.commit(
        [st.Put(f"{prefix}work", b"by the new leader")], guards=new.election.guards()
    )


async def test_a_leader_whose_lease_is_revoked_steps_down_and_its_loops_stop(
    replicas: list[Replica],
) -> None:
    (leader,) = await wait_for(lambda: leaders(replicas), message="a leader")
    runs: list[str] = []
    stopped = asyncio.Event()

    async def loop() -> None:
        runs.append("started")
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    gated = asyncio.create_task(leader.election.while_leader("loop", loop))
    try:
        await wait_for(lambda: runs, message="the write loop to start under the leader")
        kv = await leader.store.get(leader.election.key)
        assert kv is not None
        await leader.store.revoke(kv.lease)  # e.g. an operator, or a lease lost in a partition
        await wait_for(stopped.is_set, timeout=5, message="the write loop to stop")
        await wait_for(
            lambda: len(leaders(replicas)) == 1, timeout=TTL + 3, message="one leader again"
        )
    finally:
        gated.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await gated


async def test_the_leader_gauge_is_1_on_the_leader_alone_and_follows_a_takeover(
    replicas: list[Replica],
) -> None:
    """Before, nothing set `fedctl_leader`: every replica said 0, the leader included.
    Each change of role is counted too: a gauge alone misses a step-down and re-election
    between two scrapes."""
    (old,) = await wait_for(lambda: leaders(replicas), message="a leader")
    assert [gauge(r) for r in replicas] == [1.0 if r is old else 0.0 for r in replicas]

    old.task.cancel()  # a controller stopped: it resigns
    with contextlib.suppress(asyncio.CancelledError):
        await old.task
    assert gauge(old) == 0.0
    others = [r for r in replicas if r is not old]
    (new,) = await wait_for(lambda: leaders(others), timeout=TTL + 3, message="a new leader")
    await wait_for(lambda: gauge(new) == 1.0, message="the new leader's gauge")
    assert [gauge(r) for r in replicas] == [1.0 if r is new else 0.0 for r in replicas]
    assert (transitions(old, "leader"), transitions(old, "follower")) == (1.0, 1.0)
    assert (transitions(new, "leader"), transitions(new, "follower")) == (1.0, 0.0)


def transitions(replica: Replica, to: str) -> float | None:
    """The replica's `fedctl_leader_transitions_total{to=...}` sample."""
    return replica.metrics.registry.get_sample_value("fedctl_leader_transitions_total", {"to": to})
