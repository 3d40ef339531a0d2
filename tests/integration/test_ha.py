"""HA controllers: three `fedctl controller` processes on one etcd, the leader SIGKILLed
during heavy scheduling, a follower leading within the lease TTL, every job bound exactly
once, and deposed leaders' writes (a Binding, the propagator's Works) refused by the fence.

Real pieces: etcd, the controller processes (each its own API, election and loops),
simulated members over HTTP. The helpers here (`Controllers`, `BindingHistory`, `batch_job`)
are shared with the chaos test.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation import errors
from federation.propagation.controller import Propagator
from federation.propagation.members import kube_connect
from federation.registry import codec, embedded, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.runtime.election import Election
from federation.scheduler import plan
from policies.models.binding import Binding
from policies.models.queue import Queue
from policies.models.workload import Workload
from tests.conftest import etcd_settings
from tests.integration.test_propagation_support import (
    MEMBER,
    NAMES,
    PROPAGATION,
    Federation,
    clock_real,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TTL = 3
"""Lease TTL of the controllers under test (the default, 15 s, would make the test slow)."""

APPLY = "/apis/fedctl.io/v1alpha1/apply"

CONTROLLER_ENV = {
    "FEDCTL_MONITOR__PROBE_PERIOD": "0.5",
    "FEDCTL_MONITOR__PROBE_TIMEOUT": "1.0",
    "FEDCTL_MONITOR__FAILURE_THRESHOLD": "1.0",
    "FEDCTL_MONITOR__SUCCESS_THRESHOLD": "0",
    "FEDCTL_MONITOR__HEARTBEAT": "60",
    "FEDCTL_MONITOR__WORKERS": "2",
    "FEDCTL_MONITOR__WATCH_BACKOFF_MAX": "0.5",
    "FEDCTL_MEMBER__REQUEST_TIMEOUT": "2",
    "FEDCTL_MEMBER__RETRY_ATTEMPTS": "3",
    "FEDCTL_MEMBER__RETRY_INITIAL": "0.02",
    "FEDCTL_MEMBER__RETRY_MAX": "0.2",
    "FEDCTL_MEMBER__RETRY_DEADLINE": "2",
    "FEDCTL_MEMBER__WATCH_TIMEOUT": "5",
    "FEDCTL_PROPAGATION__REQUEST_TIMEOUT": "2",
    "FEDCTL_PROPAGATION__WORKERS": "8",
    "FEDCTL_FAILOVER__EVICTION_GRACE": "1",
    "FEDCTL_FAILOVER__GRACEFUL_TIMEOUT": "10",
    "FEDCTL_API__RATE_LIMIT": "1000",
    "FEDCTL_API__RATE_BURST": "2000",
}


# -- controller processes ---------------------------------------------------------------------


@dataclass
class Replica:
    index: int
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    killed: bool = False
    """Killed on purpose (so its absence is not a crash)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Controllers:
    """`fedctl controller` processes on one etcd; each logs to its own file."""

    etcd_url: str
    workdir: Path
    ttl: int = TTL
    env: dict[str, str] = field(default_factory=dict)
    replicas: list[Replica] = field(default_factory=list)

    def start(self, index: int) -> Replica:
        """Start replica `index` (a new one, or the same slot again after a kill)."""
        while len(self.replicas) <= index:
            n = len(self.replicas)
            self.replicas.append(
                Replica(n, embedded.free_port(), self.workdir / f"controller-{n}.log")
            )
        replica = self.replicas[index]
        assert not replica.alive
        replica.killed = False
        env = {**os.environ, **CONTROLLER_ENV, **self.env}
        with replica.log.open("ab") as out:
            replica.proc = subprocess.Popen(
                [sys.executable, "-m", "federation.cli.main", "--etcd", self.etcd_url,
                 "controller", "--listen", f"127.0.0.1:{replica.port}",
                 "--lease-ttl", str(self.ttl)],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        return replica

    async def ready(self, replica: Replica, *, timeout: float = 30) -> None:
        async def answers() -> bool:
            assert replica.alive, f"controller {replica.index} exited: {self.tail(replica)}"
            try:
                async with (
                    aiohttp.ClientSession() as session,
                    session.get(replica.url + "/readyz", timeout=aiohttp.ClientTimeout(1)) as r,
                ):
                    return r.status == 200
            except (aiohttp.ClientError, TimeoutError):
                return False

        await wait_for(answers, timeout=timeout, interval=0.1, message=f"replica {replica.index}")

    def kill(self, replica: Replica) -> None:
        """SIGKILL: no lease revoked, no cleanup; the successor waits out the TTL."""
        assert replica.proc is not None
        replica.killed = True
        replica.proc.send_signal(signal.SIGKILL)
        replica.proc.wait(timeout=10)

    def stop_all(self) -> None:
        for replica in self.replicas:
            if replica.alive:
                assert replica.proc is not None
                replica.proc.send_signal(signal.SIGTERM)
        for replica in self.replicas:
            if replica.proc is not None:
                try:
                    replica.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    replica.proc.kill()
                    replica.proc.wait(timeout=5)

    def tail(self, replica: Replica, lines: int = 30) -> str:
        text = replica.log.read_text(errors="replace") if replica.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def by_identity(self, identity: str | None) -> Replica | None:
        """The replica whose pid the leader identity (host/pid/random) names."""
        if not identity:
            return None
        pid = int(identity.split("/")[1])
        return next(
            (r for r in self.replicas if r.proc is not None and r.proc.pid == pid and r.alive),
            None,
        )

    def crashed(self) -> list[Replica]:
        """Replicas that exited without being killed: a controller must never do that."""
        return [r for r in self.replicas if r.proc is not None and not r.alive and not r.killed]


async def leader_kv(store: st.Store) -> st.KeyValue | None:
    return await store.get(keys.leader_key())


@contextlib.asynccontextmanager
async def controllers(
    etcd_url: str, workdir: Path, count: int, **env: str
) -> AsyncIterator[Controllers]:
    group = Controllers(etcd_url, workdir, env=env)
    try:
        for i in range(count):
            group.start(i)
        await asyncio.gather(*(group.ready(r) for r in group.replicas))
        yield group
    finally:
        group.stop_all()


# -- workloads ----------------------------------------------------------------------------------


def batch_job(name: str, queue: str, *, duration: str = "1h", cpu: str = "100m") -> Workload:
    """A one-pod batch Job that runs `duration` of simulated time."""
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": "batch",
                "annotations": {"fedctl.io/queue": queue},
            },
            "spec": {
                "template": {
                    "metadata": {"annotations": {"sim.fedctl.io/duration": duration}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "work",
                                "image": "registry.example.com/batch/work:1",
                                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                            }
                        ],
                    },
                }
            },
        }
    )


def cpu_queue(name: str, cpu: int) -> Queue:
    return Queue.model_validate(
        {"metadata": {"name": name}, "spec": {"capability": {"cpu": str(cpu), "memory": "1Ti"}}}
    )


async def submit(session: aiohttp.ClientSession, url: str, jobs: Iterable[Workload]) -> None:
    """Apply a batch of jobs through one replica's API (any replica serves writes)."""
    body = {"items": [j.to_wire() for j in jobs]}
    async with session.post(url + APPLY, json=body) as resp:
        text = await resp.text()
        assert resp.status == 200, f"{resp.status}: {text}"


# -- what was written to Bindings over time ------------------------------------------------------


@dataclass
class Written:
    revision: int
    create_revision: int
    phase: str
    reason: str
    placement: dict[str, int]


class BindingHistory:
    """Every write to every Binding, from one watch: who ended up where, and how often."""

    def __init__(self, store: EtcdStore) -> None:
        self.store = store
        self.codec = codec.Codec(Binding)
        self.writes: dict[str, list[Written]] = {}
        self.deletes: dict[str, int] = {}

    async def run(self, start_revision: int) -> None:
        prefix = keys.prefix("bindings")
        async for event in self.store.watch(prefix, start_revision=start_revision):
            name = event.key.rpartition("/")[2]
            if event.type == "delete":
                self.deletes[name] = self.deletes.get(name, 0) + 1
                continue
            b = self.codec.decode(event.key, event.value)
            self.writes.setdefault(name, []).append(
                Written(
                    event.mod_revision,
                    event.create_revision,
                    b.status.phase,
                    b.status.reason,
                    b.placement(),
                )
            )

    def placements(self, name: str) -> list[dict[str, int]]:
        """The distinct Scheduled placements `name` was ever written with, in order."""
        out: list[dict[str, int]] = []
        for w in self.writes.get(name, []):
            if w.phase == "Scheduled" and w.placement and w.placement not in out:
                out.append(w.placement)
        return out

    def scheduled(self) -> set[str]:
        return {n for n, ws in self.writes.items() if ws[-1].phase == "Scheduled"}


# -- tests ----------------------------------------------------------------------------------------


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def test_three_controllers_the_leader_killed_mid_scheduling_every_job_bound_once(
    fed: Federation, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    total, first_wave = 300, 150
    jobs = [batch_job(f"job-{i:03d}", "qa") for i in range(total)]
    await fed.put(cpu_queue("qa", 1000))
    history = BindingHistory(fed.store)
    watcher = asyncio.create_task(history.run(await fed.store.current_revision() + 1))
    try:
        async with (
            controllers(own_etcd.url, tmp_path, 3) as group,
            aiohttp.ClientSession() as session,
        ):
            kv = await wait_for(lambda: leader_kv(fed.store), message="a leader")
            leader = group.by_identity(kv.value.decode())
            assert leader is not None
            stale = st.Guard(keys.leader_key(), kv.mod_revision)
            # The first wave through the followers' APIs, in batches, as clients would.
            followers = [r for r in group.replicas if r is not leader]
            for n, start in enumerate(range(0, first_wave, 25)):
                await submit(session, followers[n % 2].url, jobs[start : start + 25])
            await wait_for(
                lambda: len(history.scheduled()) >= first_wave // 3,
                timeout=30,
                message="the leader binding the first wave",
            )

            # SIGKILL the leader mid-way, while the rest is still being submitted.
            group.kill(leader)
            killed = time.monotonic()
            at_kill = len(history.scheduled())
            for start in range(first_wave, total, 25):
                await submit(session, followers[0].url, jobs[start : start + 25])

            async def successor() -> Any:
                kv = await leader_kv(fed.store)
                return kv if kv is not None and kv.mod_revision != stale.revision else None

            new_kv = await wait_for(successor, timeout=TTL + 5, message="a new leader")
            takeover = time.monotonic() - killed
            print(
                f"\nHA: leader SIGKILLed with {at_kill}/{total} jobs Scheduled;"
                f" takeover {takeover:.2f}s after (lease TTL {TTL}s)"
            )
            assert group.by_identity(new_kv.value.decode()) in followers
            assert takeover <= TTL + 1.5

            # The deposed leader's fence: a Binding write it prepared is refused.
            victim = keys.binding_key(ref_of(jobs[0]))
            before = await fed.store.get(victim)
            with pytest.raises(errors.Fenced):
                await fed.store.commit([st.Put(victim, b"{}")], guards=[stale])
            assert await fed.store.get(victim) == before

            await wait_for(
                lambda: history.scheduled() >= {j.metadata.name for j in jobs},
                timeout=30,
                message=f"all {total} jobs Scheduled",
            )

            # Nothing lost: every job runs in a member; nothing doubled: in exactly one.
            async def all_in_members() -> dict[str, list[str]]:
                where: dict[str, list[str]] = {}
                for name in NAMES:
                    for job_name in await fed.ours(name, "batch/v1", "Job"):
                        where.setdefault(job_name, []).append(name)
                return where if len(where) == total else {}

            where = await wait_for(
                all_in_members, timeout=30, interval=0.5, message="every job in a member"
            )
            assert not group.crashed(), [group.tail(r) for r in group.crashed()]
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    assert not history.deletes, history.deletes
    doubled = {n: history.placements(n) for n in history.writes if len(history.placements(n)) > 1}
    assert not doubled, f"Bindings written with different targets: {doubled}"
    created = {n: {w.create_revision for w in ws} for n, ws in history.writes.items()}
    assert all(len(c) == 1 for c in created.values()), "a Binding was created twice"
    for j in jobs:
        (placement,) = history.placements(j.metadata.name)
        assert where[j.metadata.name] == list(placement), j.metadata.name


async def test_a_deposed_leaders_propagator_write_is_refused(fed: Federation) -> None:
    """A leader frozen past its lease wakes up and its propagator writes: etcd says no."""
    stores = [EtcdStore(etcd_settings(fed.store.endpoint)) for _ in range(2)]
    for s in stores:
        await s.connect()
    old = Election(stores[0], ttl=1, identity="old", resign_on_stop=False)
    new = Election(stores[1], ttl=1, identity="new")
    old_task = asyncio.create_task(old.run())
    await wait_for(lambda: old.is_leader, message="the first leader")
    new_task = asyncio.create_task(new.run())
    stale = old.guards()
    job = batch_job("fenced", "qa")
    await fed.put(job)
    await fed.bind(job, {NAMES[0]: (1, None)})
    propagator = Propagator(
        fed.store,
        settings=PROPAGATION,
        connect=kube_connect(MEMBER, clock_real()),
        claim=plan.claim,
        workers=2,
        guards=lambda: stale,  # what the frozen leader still believes
    )
    run = asyncio.create_task(propagator.run())
    try:
        # While it leads, its writes go through: the job's Work and status appear.
        await wait_for(lambda: fed.status(job), timeout=15, message="the job's status")
        # Frozen: its keepalives stop, the lease runs out, the other replica takes over.
        old_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await old_task
        await wait_for(lambda: new.is_leader, timeout=5, message="the successor")
        status_before = await fed.statuses.get(keys.workload_status_key(ref_of(job)))
        await fed.bind(job, {NAMES[1]: (1, None)})  # something for the old propagator to do
        with pytest.raises(BaseExceptionGroup) as raised:
            async with asyncio.timeout(15):
                await run
        assert raised.value.subgroup(errors.Fenced) is not None
        # Its Works and status writes were refused; what the successor sees is unchanged.
        assert await fed.statuses.get(keys.workload_status_key(ref_of(job))) == status_before
        works = await fed.works.list(keys.prefix("works"))
        assert [w.obj.spec.cluster for w in works.items] == [NAMES[0]]
        # The successor's fence holds.
        await fed.store.commit([st.Put(f"{keys.ROOT}/test/fenced", b"ok")], guards=new.guards())
    finally:
        for task in (run, old_task, new_task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, BaseExceptionGroup):
                await task
        for s in stores:
            await s.close()


async def test_a_fenced_loop_steps_down_instead_of_crashing_the_process(
    own_etcd: embedded.EmbeddedEtcd,
) -> None:
    """`while_leader` treats a refused write as lost leadership, not as a crash."""
    store = EtcdStore(etcd_settings(own_etcd.url))
    await store.connect()
    election = Election(store, ttl=1, identity="solo")
    runs: list[int] = []

    async def loop() -> None:
        runs.append(election.terms)
        guard = election.guard()
        if len(runs) == 1:
            # Someone else took the key meanwhile (as after a lease expiry): the write fails.
            kv = await store.get(election.key)
            assert kv is not None
            await store.commit([st.Put(election.key, b"usurper", kv.lease)])
        async with asyncio.TaskGroup() as group:  # as the loops run their workers
            group.create_task(store.commit([st.Put(f"{keys.ROOT}/t", b"x")], guards=[guard]))
            group.create_task(asyncio.Event().wait())

    campaign = asyncio.create_task(election.run())
    gated = asyncio.create_task(election.while_leader("loop", loop))
    try:
        await wait_for(lambda: len(runs) >= 2, timeout=10, message="the loop in a second term")
        assert not gated.done()
        assert runs[1] > runs[0]  # restarted only once this replica led again
    finally:
        for task in (gated, campaign):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await store.close()


async def test_a_loop_failing_as_it_is_stopped_on_step_down_does_not_crash_the_process(
    own_etcd: embedded.EmbeddedEtcd,
) -> None:
    """Leadership lost mid-write: the loop ends with that write's error, not CancelledError."""
    store = EtcdStore(etcd_settings(own_etcd.url))
    await store.connect()
    election = Election(store, ttl=1, identity="solo")
    runs: list[int] = []

    async def loop() -> None:
        runs.append(election.terms)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise errors.Unavailable("etcd went away mid-write") from None

    campaign = asyncio.create_task(election.run())
    gated = asyncio.create_task(election.while_leader("loop", loop))
    try:
        await wait_for(lambda: runs, message="the loop under the first term")
        kv = await store.get(election.key)
        assert kv is not None
        await store.revoke(kv.lease)  # the lease lost (an etcd outage longer than the TTL)
        await wait_for(lambda: len(runs) >= 2, timeout=10, message="the loop in a second term")
        assert not gated.done()
    finally:
        for task in (gated, campaign):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await store.close()


async def test_a_loop_stopped_by_a_registry_outage_runs_again_while_leading(
    own_etcd: embedded.EmbeddedEtcd,
) -> None:
    """A new leader whose first reads meet a restarting etcd keeps its process alive."""
    store = EtcdStore(etcd_settings(own_etcd.url))
    await store.connect()
    election = Election(store, ttl=3, identity="solo")
    runs: list[int] = []

    async def loop() -> None:
        runs.append(election.terms)
        if len(runs) == 1:
            async with asyncio.TaskGroup() as group:  # as the loops load their mirrors
                group.create_task(_raise(errors.Unavailable("etcd restarting")))
        await asyncio.Event().wait()

    campaign = asyncio.create_task(election.run())
    gated = asyncio.create_task(election.while_leader("loop", loop))
    try:
        await wait_for(lambda: len(runs) >= 2, timeout=10, message="the loop started again")
        assert runs == [1, 1]  # the same term: leadership was never lost
        assert not gated.done()
    finally:
        for task in (gated, campaign):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await store.close()


async def _raise(exc: Exception) -> None:
    raise exc
