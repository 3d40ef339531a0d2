"""The monitor loop on a fake clock with a scripted member: when it writes, and when not."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from clusters import member
from federation import errors
from federation.clock import FakeClock
from federation.monitor.monitor import ClusterMonitor
from federation.registry import codec, keys
from federation.registry.memory import MemoryStore
from federation.settings import MonitorSettings
from policies.models.cluster import Cluster, ClusterStatus, Taint
from tests.unit.monitor.kube_objects import node, pod
from tests.waiting import background, stop, wait_for

SETTINGS = MonitorSettings(
    probe_period=10, failure_threshold=30, success_threshold=0, heartbeat=300, workers=2
)
OK = member.Readiness(True, "ProbeSucceeded", "readyz ok")
REFUSED = member.Readiness(False, "ConnectionRefused", "connection refused by https://c1:6443")


PODS = member.ResourceInfo(name="pods", kind="Pod", namespaced=True)
VCJOBS = member.ResourceInfo(name="jobs", kind="Job", namespaced=True)


class ScriptedMember:
    """Answers probes with `answer`; nodes and pods are listed once, then changed by tests."""

    def __init__(self, name: str, uid: str | None = None) -> None:
        self.name = name
        self.uid = uid or f"uid-of-{name}"
        self.answer = OK
        self.crash: Exception | None = None
        """Raised by the next probe (a bug in a member's loops), then cleared."""
        self.probes = 0
        self.served = "v1.32.0"
        self.groups = [member.APIGroupResources("v1", (PODS,))]
        self.refusal: member.MemberError | None = None
        """Raised by discovery (a member rejecting the credentials)."""
        self.closed = False
        self.changes: dict[str, asyncio.Queue[member.Changed]] = {
            "Node": asyncio.Queue(),
            "Pod": asyncio.Queue(),
        }
        self.items = {
            "Node": [node("g0", devices={"nvidia.com/gpu": "8"})],
            "Pod": [],
        }

    async def ready(self, *, timeout: float | None = None) -> member.Readiness:
        self.probes += 1
        crash, self.crash = self.crash, None
        if crash is not None:
            raise crash
        return self.answer

    async def version(self, *, timeout: float | None = None) -> str:
        return self.served

    async def discover(self, *, timeout: float | None = None) -> list[member.APIGroupResources]:
        if self.refusal is not None:
            raise self.refusal
        return list(self.groups)

    async def get(self, ref: member.ObjectRef) -> dict[str, Any]:
        if (ref.kind, ref.name) == ("Namespace", "kube-system"):
            return {"metadata": {"name": "kube-system", "uid": self.uid}}
        raise member.MemberNotFound(f"{ref} not found")

    async def follow(
        self, api_version: str, kind: str, *, namespace: str | None = None
    ) -> AsyncIterator[member.Relisted | member.Changed]:
        yield member.Relisted(list(self.items[kind]), "1")
        while True:
            yield await self.changes[kind].get()

    async def close(self) -> None:
        self.closed = True


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.store = MemoryStore(clock=self.clock)
        self.members: dict[str, ScriptedMember] = {}
        self.uids: dict[str, str] = {}
        """Cluster name → the kube-system uid its member answers (another name's: the same
        Kubernetes cluster joined twice)."""
        self.refusals: dict[str, member.MemberError] = {}
        """Cluster name → what its member's discovery raises from the start."""
        self.down: set[str] = set()
        """Cluster names whose members refuse probes from the start (as a new leader
        finds a member already failing)."""
        self.unreadable: str | None = None
        """Set: every connection fails to be built, with this message (a controller
        started without the kubeconfig the members' connections name)."""
        self.monitor = ClusterMonitor(
            self.store, settings=SETTINGS, clock=self.clock, connect=self._connect
        )
        self.statuses = codec.TypedStore(self.store, codec.Codec(ClusterStatus))
        self.running: asyncio.Task[None] | None = None
        """The monitor's task, once the fixture started it."""

    async def _connect(self, cluster: Cluster) -> Any:
        if self.unreadable is not None:
            raise errors.Invalid(self.unreadable)
        made = ScriptedMember(cluster.name, self.uids.get(cluster.name))
        made.refusal = self.refusals.get(cluster.name)
        if cluster.name in self.down:
            made.answer = REFUSED
        self.members[cluster.name] = made
        return made

    async def join(self, name: str) -> None:
        cluster = Cluster.model_validate({"metadata": {"name": name}, "spec": {"region": "r"}})
        await codec.TypedStore(self.store, codec.Codec(Cluster)).create(
            keys.cluster_key(name), cluster
        )

    async def status(self, name: str) -> ClusterStatus | None:
        stored = await self.statuses.get(keys.cluster_status_key(name))
        return stored.obj if stored else None

    async def writes(self, name: str) -> int:
        kv = await self.store.get(keys.cluster_status_key(name))
        return kv.version if kv else 0

    async def settle(self) -> None:
        """Let the workers drain the queue (real time; the fake clock stands still)."""
        for _ in range(20):
            await asyncio.sleep(0)
        await wait_for(lambda: self.monitor.pending() == 0, timeout=2, message="queue drained")
        for _ in range(20):
            await asyncio.sleep(0)

    async def advance(self, seconds: float, *, step: float = SETTINGS.probe_period) -> None:
        while seconds > 0:
            await self.clock.advance(min(step, seconds))
            seconds -= step
            await self.settle()


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    task = h.running = asyncio.create_task(h.monitor.run())
    try:
        yield h
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert all(m.closed for m in h.members.values()), "connectors are closed on stop"
        await h.store.close()


async def ready_status(h: Harness, name: str, expected: str) -> ClusterStatus | None:
    status = await h.status(name)
    cond = status.condition("Ready") if status else None
    return status if cond is not None and cond.status == expected else None


async def test_steady_member_is_written_once_then_only_on_heartbeat(harness: Harness) -> None:
    await harness.join("c1")
    ready = await wait_for(lambda: ready_status(harness, "c1", "True"), message="c1 Ready")
    assert ready is not None and ready.cluster_id == "uid-of-c1"  # what join compares
    await harness.settle()
    settled = await harness.writes("c1")
    await harness.advance(250)  # 25 probes
    assert harness.members["c1"].probes >= 25
    assert await harness.writes("c1") == settled
    await harness.advance(60)
    assert await harness.writes("c1") == settled + 1, "the heartbeat writes once"


async def test_not_ready_after_the_threshold_from_the_first_failure(harness: Harness) -> None:
    await harness.join("c1")
    await wait_for(lambda: ready_status(harness, "c1", "True"), message="c1 Ready")
    await harness.settle()
    harness.members["c1"].answer = REFUSED
    await harness.advance(30)  # failures at 10, 20, 30 s: lasting 20 s so far
    assert await ready_status(harness, "c1", "True")
    await harness.advance(10)  # the failure at 40 s has lasted 30 s since the first
    status = await ready_status(harness, "c1", "False")
    assert status is not None
    cond = status.condition("Ready")
    assert cond is not None
    assert (cond.reason, cond.message) == ("ConnectionRefused", REFUSED.message)
    written = await harness.writes("c1")
    await harness.advance(50)
    assert await harness.writes("c1") == written, "still down for the same reason: no writes"
    harness.members["c1"].answer = OK
    await harness.advance(10)
    assert await ready_status(harness, "c1", "True")


async def _lost(harness: Harness) -> None:
    """c1 joined and Ready, then refusing probes until it is Ready=False."""
    await harness.join("c1")
    await wait_for(lambda: ready_status(harness, "c1", "True"), message="c1 Ready")
    await harness.settle()
    harness.members["c1"].answer = REFUSED
    await harness.advance(40)
    assert await ready_status(harness, "c1", "False")


async def test_a_member_lost_and_back_is_logged_at_warning_and_a_new_leader_resumes(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """At the default level (WARNING) a member lost for a minute, its work moved, left no
    line; and each leader change logged "joined" for every member, though none joined."""
    caplog.set_level(logging.INFO, logger="federation.monitor")
    await _lost(harness)
    harness.members["c1"].answer = OK
    await harness.advance(10)
    assert await ready_status(harness, "c1", "True")
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert said == [
        ("INFO", "cluster c1 joined: monitoring"),
        ("INFO", "cluster c1 Ready=True: member answers: readyz ok"),
        ("WARNING", f"cluster c1 Ready=False: {REFUSED.message}"),
        ("WARNING", "cluster c1 Ready=True: member answers: readyz ok"),
    ]
    caplog.clear()
    successor = ClusterMonitor(
        harness.store, settings=SETTINGS, clock=harness.clock, connect=harness._connect
    )
    task = asyncio.create_task(successor.run())
    try:
        await wait_for(lambda: caplog.records, message="the successor's monitor starts")
    finally:
        await stop([task])
    assert [r.getMessage() for r in caplog.records] == ["cluster c1: monitoring resumed"]


async def test_capacity_change_past_the_threshold_is_written_at_once(harness: Harness) -> None:
    await harness.join("c1")
    await wait_for(lambda: ready_status(harness, "c1", "True"), message="c1 Ready")
    await harness.settle()
    before = await harness.writes("c1")
    train = pod("train", node_name="g0", limits={"nvidia.com/gpu": "4"})
    await harness.members["c1"].changes["Pod"].put(member.Changed("ADDED", train))
    await harness.settle()
    status = await harness.status("c1")
    assert status is not None
    assert status.totals.free.amount("nvidia.com/gpu") == 4_000
    assert await harness.writes("c1") == before + 1


async def test_failover_taints_survive_status_writes(harness: Harness) -> None:
    await harness.join("c1")
    await wait_for(lambda: ready_status(harness, "c1", "True"), message="c1 Ready")

    def taint(current: ClusterStatus | None) -> ClusterStatus | None:
        assert current is not None
        return current.model_copy(
            update={"taints": [Taint(key="cluster.fedctl.io/unreachable", effect="NoSchedule")]}
        )

    await harness.statuses.mutate(keys.cluster_status_key("c1"), taint)
    harness.members["c1"].answer = REFUSED
    await harness.advance(40)
    status = await ready_status(harness, "c1", "False")
    assert status is not None
    assert [t.key for t in status.taints] == ["cluster.fedctl.io/unreachable"]


async def test_the_name_in_use_keeps_a_member_joined_twice_while_it_is_down(
    harness: Harness,
) -> None:
    """Which name keeps a member reached under two must not flip when the member goes
    down: the other name, Ready again, would be placed on and apply over the first's
    copies when it comes back."""
    await harness.join("c1")
    await wait_for(lambda: ready_status(harness, "c1", "True"), message="c1 Ready")
    harness.uids["a-again"] = "uid-of-c1"  # sorts first: the name must not decide
    await harness.join("a-again")
    await harness.settle()
    status = await ready_status(harness, "a-again", "False")
    assert status is not None and status.duplicate_of == "c1"
    for name in ("c1", "a-again"):
        harness.members[name].answer = REFUSED
    await harness.advance(40)
    down = await ready_status(harness, "c1", "False")
    assert down is not None and down.duplicate_of is None
    status = await harness.status("a-again")
    assert status is not None and status.duplicate_of == "c1"
    for name in ("c1", "a-again"):
        harness.members[name].answer = OK
    await harness.advance(10)
    assert await ready_status(harness, "c1", "True")
    status = await ready_status(harness, "a-again", "False")
    assert status is not None and status.duplicate_of == "c1"


async def test_a_member_whose_loops_fail_is_reported_alone_and_followed_again(
    harness: Harness,
) -> None:
    """An exception escaping one member's loops reached the monitor's TaskGroup and
    stopped the monitor, and the controller with it. Now that member alone is
    Ready=Unknown MonitorFailed (a fault of this controller says nothing of the member,
    so nothing is evicted for it), and its loops start again after a backoff."""
    await harness.join("c1")
    await harness.join("c2")
    await wait_for(lambda: ready_status(harness, "c2", "True"), message="c2 Ready")
    await harness.settle()
    harness.members["c1"].crash = RuntimeError("a bug")

    await harness.advance(10)

    status = await ready_status(harness, "c1", "Unknown")
    assert status is not None, await harness.status("c1")
    cond = status.condition("Ready")
    assert cond is not None and cond.reason == "MonitorFailed", cond
    assert "RuntimeError('a bug')" in cond.message
    assert await ready_status(harness, "c2", "True")
    await harness.advance(20)
    assert await ready_status(harness, "c1", "True"), "followed again after the backoff"


def _upgrade(m: ScriptedMember, *, uid: str) -> None:
    """The member rebuilt behind the same endpoint: newer, with Volcano, another uid."""
    m.served, m.uid = "v1.33.1", uid
    m.groups = [*m.groups, member.APIGroupResources("batch.volcano.sh/v1alpha1", (VCJOBS,))]


def _seen(status: ClusterStatus | None) -> tuple[str | None, str | None, list[str]]:
    assert status is not None
    apis = [a.group_version for a in status.api_enablements]
    return status.kubernetes_version, status.cluster_id, apis


async def test_a_member_upgraded_in_place_shows_its_new_version_apis_and_id(
    harness: Harness,
) -> None:
    """Version, APIs and cluster id were read once: a member upgraded (or rebuilt) while
    staying Ready kept its old ones until the controller restarted, and work needing a
    newly installed API stayed Pending. They are read again every discovery period."""
    await harness.join("c1")
    await wait_for(lambda: ready_status(harness, "c1", "True"), message="c1 Ready")
    await harness.settle()
    _upgrade(harness.members["c1"], uid="rebuilt")

    await harness.advance(60)  # the default discovery period

    seen = _seen(await harness.status("c1"))
    assert seen == ("v1.33.1", "rebuilt", ["v1", "batch.volcano.sh/v1alpha1"]), seen


async def test_a_member_restarted_is_discovered_again_at_its_next_good_probe(
    harness: Harness,
) -> None:
    """A member restarted within the failure threshold stayed Ready and was never read
    again; a failed probe is a sign of a restart, so the next good one re-reads it. A
    rebuilt member now answering with another joined name's uid is that name's duplicate."""
    await harness.join("c1")
    await harness.join("c2")
    await wait_for(lambda: ready_status(harness, "c2", "True"), message="c2 Ready")
    await harness.settle()
    harness.members["c2"].answer = REFUSED
    await harness.advance(10)
    _upgrade(harness.members["c2"], uid="uid-of-c1")
    harness.members["c2"].answer = OK

    await harness.advance(10)

    status = await ready_status(harness, "c2", "False")
    assert status is not None and status.duplicate_of == "c1", status
    assert _seen(status)[:2] == ("v1.33.1", "uid-of-c1")
    assert await ready_status(harness, "c1", "True")


async def test_a_member_rejecting_the_credentials_is_not_ready_and_says_so(
    harness: Harness,
) -> None:
    """A member answering /readyz and /version anonymously but 401 to everything else (a
    wrong or expired token) was Ready=True with no APIs, id or capacity, and nothing said
    why. Now Ready=False and CompleteAPIEnablements=False say the credentials are refused."""
    harness.refusals["c1"] = member.MemberRejected(
        "Unauthorized", cluster="c1", code=401, reason="Unauthorized"
    )
    await harness.join("c1")

    status = await wait_for(lambda: ready_status(harness, "c1", "False"), message="refused")

    ready, apis = status.condition("Ready"), status.condition("CompleteAPIEnablements")
    assert ready is not None and apis is not None
    assert (ready.reason, apis.status, apis.reason) == ("Unauthorized", "False", "Unauthorized")
    assert ready.message.startswith(
        "readyz answers, but 401 Unauthorized on /api: the member"
        " rejects the credentials of this Cluster's kubeconfig"
    )
    harness.members["c1"].refusal = None
    await harness.advance(10)
    status = await ready_status(harness, "c1", "True")
    assert status is not None
    apis = status.condition("CompleteAPIEnablements")
    assert apis is not None and (apis.status, apis.reason) == ("True", "Complete")


async def test_a_member_that_is_down_is_probed_often_so_its_return_is_seen_soon(
    harness: Harness,
) -> None:
    """Until the monitor sees a member Ready again its return changes nothing: failover
    purges a moved batch job's old copy there only then, and until then the job runs in
    two members. Probed at the normal period, that took up to 10 s after the member
    answered."""
    await _lost(harness)
    await harness.advance(1, step=0.5)  # in step with the down member's probes
    harness.members["c1"].answer = OK
    await harness.advance(SETTINGS.recovery_probe_period, step=0.5)
    assert await ready_status(harness, "c1", "True"), "seen back within a recovery probe period"


async def test_a_successor_that_cannot_build_the_connections_leaves_members_unknown(
    harness: Harness,
) -> None:
    """A replica started without the kubeconfig its members' connections name took the
    lease and marked every member Ready=False at once, which failover then evicted from.
    Its own configuration says nothing of the members: Ready=Unknown with the reason, for
    as long as it lasts; a member already judged down on a probe stays False."""
    for name in ("c1", "c2"):
        await harness.join(name)
        await wait_for(lambda n=name: ready_status(harness, n, "True"), message=f"{name} Ready")
    await harness.settle()
    harness.members["c2"].answer = REFUSED
    await harness.advance(40)
    assert await ready_status(harness, "c2", "False")
    assert harness.running is not None
    await stop([harness.running])  # the leader goes
    harness.unreadable = "kubeconfig /root/.kube/config does not exist"
    successor = ClusterMonitor(
        harness.store, settings=SETTINGS, clock=harness.clock, connect=harness._connect
    )
    harness.monitor = successor
    async with background(successor.run()):
        status = await wait_for(lambda: ready_status(harness, "c1", "Unknown"), message="c1")
        cond = status.condition("Ready")
        assert cond is not None and cond.reason == "KubeconfigInvalid", cond
        assert cond.message == harness.unreadable
        await harness.advance(120)
        assert await ready_status(harness, "c1", "Unknown"), "never judged down for it"
        down = await ready_status(harness, "c2", "False")
        assert down is not None
        assert down.condition("Ready").reason == "ConnectionRefused"  # type: ignore[union-attr]


async def test_a_new_leader_judges_a_failing_member_down_at_the_original_deadline(
    harness: Harness,
) -> None:
    """Every leader change started the failure threshold again: a member failing for 20 s
    when the lease changed hands was judged down 30 s after the handover, 50 s after it
    failed. The first failure is stored; the successor, once a probe of its own fails,
    counts from it."""
    await harness.join("c1")
    await wait_for(lambda: ready_status(harness, "c1", "True"), message="c1 Ready")
    await harness.settle()
    harness.members["c1"].answer = REFUSED
    await harness.advance(10)
    status = await harness.status("c1")
    assert status is not None and status.probe_failures is not None, status
    first = status.probe_failures.since
    assert status.probe_failures.message == REFUSED.message
    await harness.advance(10)  # failing for 10 s, 20 s since the last good probe
    assert await ready_status(harness, "c1", "True")

    assert harness.running is not None
    await stop([harness.running])  # the leader goes
    harness.down.add("c1")
    successor = ClusterMonitor(
        harness.store, settings=SETTINGS, clock=harness.clock, connect=harness._connect
    )
    harness.monitor = successor
    async with background(successor.run()):
        await harness.settle()
        assert await ready_status(harness, "c1", "True"), "not before its own probe failed"
        await harness.advance(20)

        status = await ready_status(harness, "c1", "False")
        assert status is not None, await harness.status("c1")
        cond = status.condition("Ready")
        assert cond is not None
        waited = (cond.last_transition_time - first).total_seconds()
        assert SETTINGS.failure_threshold <= waited <= SETTINGS.failure_threshold + 10, waited
