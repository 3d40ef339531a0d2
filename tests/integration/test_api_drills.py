"""The drill API and the tenancy of the status views, on a real etcd and simulated members.

What an operator relies on: a drill started over HTTP really breaks the member (through the
simulator's fault API, or a NoExecute taint on a member that is not simulated), shows its
timeline while it runs, mends the member and leaves its report; one drill runs at a time;
bad requests say which field is wrong; only admins drill; a replica that does not lead
records the drill for the leader, and a leader deposed mid-drill heals what it broke and
leaves the report to the next; with two controller processes, a drill asked of the
follower runs on the leader and both show it.
a drill stopped by a shutdown heals first. Tenants see only their own workloads in the
status views.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from clusters.sim import profile
from clusters.sim.fleet import SimFleet
from federation import errors
from federation.api import app as api_app
from federation.api import auth
from federation.failover import faults
from federation.monitor.monitor import ClusterMonitor
from federation.registry import codec, embedded, keys, objects
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.settings import MemberSettings, MonitorSettings
from policies.models.cluster import Cluster, ClusterStatus
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe
from tests.integration.test_api_security import (
    ADMIN,
    OTHER,
    TENANT,
    TOKENS,
    Client,
    job,
    serving,
)
from tests.integration.test_ha import Controllers, Replica, controllers, leader_kv
from tests.waiting import stop, wait_for

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
DRILLS = f"{API}/drills"
STATUS = "/apis/status.fedctl.io/v1alpha1"
VICTIM, REAL = "sim-east", "real-west"
MONITOR = MonitorSettings(
    probe_period=0.2,
    probe_timeout=0.5,
    failure_threshold=0.5,
    success_threshold=0,
    heartbeat=60.0,
    workers=2,
    watch_backoff_max=0.5,
)
MEMBER = MemberSettings(
    request_timeout=1.0,
    retry_attempts=2,
    retry_initial=0.02,
    retry_max=0.1,
    retry_deadline=1.0,
    watch_timeout=5.0,
)
PROFILE = profile.parse(
    {
        "clusters": [
            {
                "name": VICTIM,
                "region": "us-east",
                "nodePools": [
                    {"name": "m7i", "count": 1, "arch": "amd64", "cpu": "16", "memory": "64Gi"}
                ],
            }
        ]
    }
)


def cluster(name: str, kubeconfig: Path) -> Cluster:
    return Cluster.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "region": "us-east",
                "connection": {"kubeconfigPath": str(kubeconfig), "context": name},
            },
        }
    )


class Drills:
    """The API app with drills on: one simulated member, one that is not, and a monitor."""

    def __init__(self, api: Client, app: web.Application, fleet: SimFleet) -> None:
        self.api, self.app, self.fleet = api, app, fleet

    async def start(self, body: Any, *, token: str | None = ADMIN) -> tuple[int, Any]:
        code, doc, _ = await self.api.call("POST", DRILLS, body, token=token)
        return code, doc

    async def get(self, drill_id: str, fmt: str = "") -> tuple[int, Any]:
        query = f"?format={fmt}" if fmt else ""
        code, doc, _ = await self.api.call("GET", f"{DRILLS}/{drill_id}{query}")
        return code, doc

    async def ended(self, drill_id: str) -> Any:
        code, doc = await self.get(drill_id)
        return doc if code == 200 and doc["phase"] != "Running" else None

    async def member_faults(self) -> list[str]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.fleet[VICTIM].admin_url}/state") as resp,
        ):
            state = await resp.json()
        return [f["mode"] for f in state["faults"]]


async def ready(store: EtcdStore, name: str) -> bool:
    stored = await codec.TypedStore(store, codec.Codec(ClusterStatus)).get(
        keys.cluster_status_key(name)
    )
    return stored is not None and stored.obj.ready()


@contextlib.asynccontextmanager
async def drills_app(
    store: EtcdStore, tmp_path: Path, *, guards: Callable[[], Sequence[st.Guard]] | None = None
) -> AsyncIterator[Drills]:
    """Without `guards` the app runs its drills itself; with them, as a replica of an
    elected controller, only a `DrillsApi.lead` the test runs does."""
    fleet = SimFleet(PROFILE, speed=50)
    kubeconfig = tmp_path / "fleet.kubeconfig"
    await fleet.start(kubeconfig_path=kubeconfig)
    typed = codec.TypedStore(store, objects.ObjectCodec())
    for name in (VICTIM, REAL):
        await typed.put(keys.cluster_key(name), cluster(name, kubeconfig))
    app = api_app.build_app(
        store,
        auth=auth.Authenticator(auth.TokenTable.from_yaml(TOKENS)),
        kubeconfig=str(kubeconfig),
        guards=guards,
    )
    app[api_app.DRILLS].runner.poll = 0.1
    app[api_app.DRILLS].runner.publish = 0.1
    monitor = asyncio.create_task(
        ClusterMonitor(store, settings=MONITOR, member_settings=MEMBER).run()
    )
    try:
        await wait_for(lambda: ready(store, VICTIM), timeout=10, message=f"{VICTIM} Ready")
        async with serving(app) as base, aiohttp.ClientSession() as session:
            yield Drills(Client(base, session), app, fleet)
    finally:
        monitor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await monitor
        await fleet.stop()


@pytest.fixture
async def store(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[EtcdStore]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    yield store
    await store.close()


@pytest.fixture
async def drilling(store: EtcdStore, tmp_path: Path) -> AsyncIterator[Drills]:
    async with drills_app(store, tmp_path) as running:
        yield running


async def test_a_drill_breaks_the_member_shows_its_timeline_live_and_leaves_a_report(
    drilling: Drills,
) -> None:
    code, started = await drilling.start({"cluster": VICTIM, "duration": "2s", "settle": 5})
    assert code == 202, started
    drill_id = started["id"]
    assert started["phase"] == "Running" and started["fault"] == "down"

    async def live() -> Any:
        code, doc = await drilling.get(drill_id)
        running = code == 200 and doc["phase"] == "Running" and doc["stage"] == "fault"
        return doc if running and len(doc["samples"]) >= 2 else None

    doc = await wait_for(live, timeout=5, message="the running drill's samples")
    assert doc["timeline"][0] == {"t": 0.0, "event": "fault", "message": f"down on {VICTIM}"}
    assert await drilling.member_faults() == ["down"], "the simulator really is down"
    _, listed, _ = await drilling.api.call("GET", DRILLS)
    assert [(d["id"], d["phase"]) for d in listed["items"]] == [(drill_id, "Running")]

    code, busy = await drilling.start({"cluster": REAL, "duration": 1})
    assert code == 409 and drill_id in busy["message"], "one drill at a time"

    report = await wait_for(lambda: drilling.ended(drill_id), timeout=15, message="drill end")
    assert report["phase"] == "Completed" and report["error"] == ""
    assert report["detect"] is not None and report["detect"] < 2.0, "the monitor saw it"
    assert 2.0 <= report["healed_at"] < 3.0
    assert (report["lost"], report["double_runs"], report["shortfall"]) == (0, 0, {})
    assert [e["event"] for e in report["timeline"]] == ["fault", "detected", "healed"]
    assert await drilling.member_faults() == [], "healed"

    code, svg = await drilling.get(drill_id, "svg")
    assert code == 200 and ET.fromstring(svg).tag.endswith("svg")
    code, markdown = await drilling.get(drill_id, "markdown")
    assert code == 200 and f"# Drill {drill_id}: `down` on `{VICTIM}`" in markdown
    _, listed, _ = await drilling.api.call("GET", DRILLS)
    assert [(d["id"], d["phase"]) for d in listed["items"]] == [(drill_id, "Completed")]


async def taints_of(store: EtcdStore, name: str) -> list[str]:
    stored = await codec.TypedStore(store, objects.ObjectCodec()).get(keys.cluster_key(name))
    assert stored is not None and isinstance(stored.obj, Cluster)
    return [f"{t.key}:{t.effect}" for t in stored.obj.spec.taints]


async def test_a_member_that_is_not_simulated_is_drilled_with_a_noexecute_taint(
    drilling: Drills,
    store: EtcdStore,
) -> None:
    body = {"cluster": REAL, "fault": "down", "duration": "1s", "settle": 0}
    code, started = await drilling.start(body)
    assert code == 202, started
    assert started["fault"] == "taint" and "not simulated" in started["message"]
    tainted = f"{faults.DRILL_TAINT}:NoExecute"
    await wait_for(lambda: _has(store, REAL, tainted), timeout=5, message="the drill taint")
    report = await wait_for(lambda: drilling.ended(started["id"]), timeout=10, message="end")
    assert report["phase"] == "Completed"
    assert await taints_of(store, REAL) == [], "the taint is removed when the drill ends"


async def _has(store: EtcdStore, name: str, taint: str) -> bool:
    return taint in await taints_of(store, name)


async def test_a_drill_stopped_by_a_shutdown_heals_first_and_keeps_its_report(
    store: EtcdStore,
    tmp_path: Path,
) -> None:
    async with drills_app(store, tmp_path) as drilling:
        code, started = await drilling.start({"cluster": REAL, "fault": "taint", "duration": 60})
        assert code == 202, started
        tainted = f"{faults.DRILL_TAINT}:NoExecute"
        await wait_for(lambda: _has(store, REAL, tainted), timeout=5, message="the drill taint")
    # Leaving the block shuts the app down, as the controller does on SIGTERM.
    assert await taints_of(store, REAL) == []
    stored = await store.get(keys.drill_key(started["id"]))
    assert stored is not None
    assert "shut down" in json.loads(stored.value)["object"]["error"]


async def test_a_fault_api_that_does_not_answer_fails_the_drill_and_says_why(
    drilling: Drills, tmp_path: Path
) -> None:
    state = tmp_path / "fleet.kubeconfig.fleet.json"
    doc = json.loads(state.read_text())
    doc["clusters"][REAL] = {"adminUrl": f"http://127.0.0.1:{embedded.free_port()}/_sim"}
    state.write_text(json.dumps(doc))
    body = {"cluster": REAL, "fault": "slow", "duration": 5, "settle": 0}
    code, started = await drilling.start(body)
    assert code == 202 and started["fault"] == "slow", started
    report = await wait_for(lambda: drilling.ended(started["id"]), timeout=10, message="end")
    assert report["phase"] == "Failed" and "did not answer" in report["error"]
    assert report["timeline"][-1]["event"] == "failed"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({}, "cluster", id="no cluster"),
        pytest.param({"cluster": "../leader"}, "cluster", id="a cluster name climbing up"),
        pytest.param({"cluster": VICTIM, "fault": "meteor"}, "fault", id="an unknown fault"),
        pytest.param(
            {"cluster": REAL, "fault": "slow"}, "fault", id="a degraded member with no fault API"
        ),
        pytest.param({"cluster": VICTIM, "duration": "soon"}, "duration", id="not a duration"),
        pytest.param({"cluster": VICTIM, "duration": 0}, "duration", id="a zero-length fault"),
        pytest.param({"cluster": VICTIM, "settle": "-1s"}, "settle", id="a negative settle"),
        pytest.param({"cluster": VICTIM, "settle": "2h"}, "settle", id="a settle over an hour"),
        pytest.param({"cluster": VICTIM, "colour": "red"}, "colour", id="an unknown field"),
        pytest.param([VICTIM], "body", id="not an object"),
    ],
)
async def test_bad_drill_requests_are_400_naming_the_field(
    drilling: Drills, body: Any, field: str
) -> None:
    code, status = await drilling.start(body)
    assert code == 400, status
    assert status["message"].startswith(f"{field}: "), status["message"]
    _, listed, _ = await drilling.api.call("GET", DRILLS)
    assert listed["items"] == [], "nothing started"


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        pytest.param(("POST", DRILLS, {"cluster": "nowhere"}, ADMIN), 404, id="an unknown cluster"),
        pytest.param(("GET", f"{DRILLS}/20250101T000000Z-x", None, ADMIN), 404,
                     id="an unknown drill"),
        pytest.param(("GET", f"{DRILLS}/..%2Fleader", None, ADMIN), 400,
                     id="a drill id climbing up"),
        pytest.param(("GET", f"{DRILLS}/x?format=png", None, ADMIN), 400, id="an unknown format"),
        pytest.param(("POST", DRILLS, {"cluster": VICTIM}, TENANT), 403,
                     id="a tenant starting one"),
        pytest.param(("GET", DRILLS, None, OTHER), 403, id="a tenant reading reports"),
        pytest.param(("POST", DRILLS, {"cluster": VICTIM}, None), 401, id="no token"),
    ],
)  # fmt: skip
async def test_drill_requests_that_are_refused(
    drilling: Drills, request_: tuple[str, str, Any, str | None], code: int
) -> None:
    method, path, body, token = request_
    got, status, _ = await drilling.api.call(method, path, body, token=token)
    assert got == code, status
    _, listed, _ = await drilling.api.call("GET", DRILLS)
    assert listed["items"] == [], "nothing started"


class Fence:
    """An election's fence as the drill loop sees it: the leader key at this replica's
    revision while it leads, `Fenced` at once when it does not (`Election.guard`)."""

    def __init__(self, store: EtcdStore) -> None:
        self.store, self.revision, self.leads = store, 0, False

    async def lead(self, identity: str) -> None:
        self.revision = await st.put(self.store, keys.leader_key(), identity.encode())
        self.leads = True

    def guards(self) -> tuple[st.Guard, ...]:
        if not self.leads:
            raise errors.Fenced("replica-1 is not the leader")
        return (st.Guard(keys.leader_key(), self.revision),)


async def led(drilling: Drills, drill_id: str) -> Any:
    """The report of `drill_id`, once the drill loop of this (leading) replica ends it."""
    leading = asyncio.create_task(drilling.app[api_app.DRILLS].lead())
    try:
        return await wait_for(lambda: drilling.ended(drill_id), timeout=15, message="its end")
    finally:
        await stop([leading])


async def test_a_replica_that_does_not_lead_records_the_drill_for_the_leader(
    store: EtcdStore,
    tmp_path: Path,
) -> None:
    fence = Fence(store)  # nobody leads yet
    async with drills_app(store, tmp_path, guards=fence.guards) as drilling:
        code, started = await drilling.start({"cluster": VICTIM, "duration": 1, "settle": 0})
        assert code == 202 and started["stage"] == "pending", started
        assert "no controller leads" in started["message"], "says why nothing happens yet"
        code, listed, _ = await drilling.api.call("GET", DRILLS)
        assert code == 200 and [(d["id"], d["stage"]) for d in listed["items"]] == [
            (started["id"], "pending")
        ]
        assert await drilling.member_faults() == [], "only a leader breaks a member"
        code, busy = await drilling.start({"cluster": REAL, "duration": 1})
        assert code == 409 and started["id"] in busy["message"], busy

        await fence.lead("replica-1")
        report = await led(drilling, started["id"])
        assert report["phase"] == "Completed" and report["healed_at"] >= 1.0, report
        assert await store.get(keys.drill_run_key()) is None


async def test_a_leader_deposed_mid_drill_heals_and_the_next_leader_reports_it(
    store: EtcdStore,
    tmp_path: Path,
) -> None:
    fence = Fence(store)
    await fence.lead("replica-1")
    async with drills_app(store, tmp_path, guards=fence.guards) as drilling:
        leading = asyncio.create_task(drilling.app[api_app.DRILLS].lead())
        code, started = await drilling.start({"cluster": VICTIM, "duration": 60})
        assert code == 202, started
        await wait_for(drilling.member_faults, timeout=5, message="the fault in")

        # Another replica takes the leader key; this one steps down, and the election
        # stops its leader loops, the drill's among them.
        fence.leads = False
        await st.put(store, keys.leader_key(), b"replica-2")
        await stop([leading])
        assert await drilling.member_faults() == [], "it lifted the fault it injected"
        assert await store.get(keys.drill_key(started["id"])) is None, "its report is refused"
        code, doc = await drilling.get(started["id"])
        assert code == 200 and doc["phase"] == "Running", "in flight until a leader ends it"

        # The next leader finds a drill whose leader is gone: it stores the last progress
        # published as its report, stopped, and starts no fault of its own.
        await fence.lead("replica-2")
        report = await led(drilling, started["id"])
        assert report["phase"] == "Failed" and "stopped leading" in report["error"], report
        assert report["timeline"][0]["event"] == "fault", "what its leader saw is kept"
        assert await drilling.member_faults() == []
        assert await store.get(keys.drill_run_key()) is None


# -- several controllers on one etcd ------------------------------------------------------------
# The replicas sit behind one Service, so the dashboard and the API reach whichever one the
# Service picks: starting a drill must not depend on reaching the leader itself. Real
# `fedctl controller` processes; the drilled member is not simulated, so the drill is a taint.


Leading = Callable[[], Awaitable["Replica | None"]]


@contextlib.asynccontextmanager
async def two_controllers(
    store: EtcdStore, etcd_server: embedded.EmbeddedEtcd, tmp_path: Path
) -> AsyncIterator[tuple[Controllers, aiohttp.ClientSession, Leading]]:
    """Two `fedctl controller` processes on one etcd, the member `REAL` registered, and
    which of them leads (None while neither does)."""
    typed = codec.TypedStore(store, objects.ObjectCodec())
    await typed.put(keys.cluster_key(REAL), cluster(REAL, tmp_path / "none.kubeconfig"))
    async with (
        controllers(etcd_server.url, tmp_path, 2, FEDCTL_LOG_LEVEL="info") as group,
        aiohttp.ClientSession() as session,
    ):

        async def leading() -> Replica | None:
            kv = await leader_kv(store)
            return group.by_identity(kv.value.decode() if kv else None)

        yield group, session, leading


@pytest.mark.slow
async def test_a_drill_started_through_a_follower_runs_on_the_leader_and_both_show_it(
    store: EtcdStore, etcd_server: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    async with two_controllers(store, etcd_server, tmp_path) as (group, session, leading):

        async def call(replica: Replica, method: str, path: str, body: Any = None) -> Any:
            code, doc, _ = await Client(replica.url, session).call(method, path, body)
            return code, doc

        leader = await wait_for(leading, timeout=15, message="a leader")
        follower = next(r for r in group.replicas if r is not leader)

        body = {"cluster": REAL, "fault": "taint", "duration": "3s", "settle": "0s"}
        code, started = await call(follower, "POST", DRILLS, body)
        assert code == 202, started
        drill = started["id"]
        await wait_for(
            lambda: _has(store, REAL, f"{faults.DRILL_TAINT}:NoExecute"),
            timeout=10,
            message="the drill taint, set by the leader",
        )

        async def running_on(replica: Replica) -> bool:
            code, doc = await call(replica, "GET", f"{DRILLS}/{drill}")
            return code == 200 and doc["phase"] == "Running" and doc["stage"] == "fault"

        # While it runs, the replica that did not run it shows it too (a dashboard behind
        # the Service reaches either).
        await wait_for(lambda: running_on(follower), timeout=5, message="running, on the follower")
        code, listed = await call(follower, "GET", DRILLS)
        assert code == 200 and [i["id"] for i in listed["items"]] == [drill], listed
        # One drill at a time across replicas, not per replica.
        code, busy = await call(leader, "POST", DRILLS, body)
        assert code == 409 and drill in busy["message"], busy

        async def ended_on(replica: Replica) -> Any:
            code, doc = await call(replica, "GET", f"{DRILLS}/{drill}")
            return doc if code == 200 and doc["phase"] != "Running" else None

        for replica in (follower, leader):
            report = await wait_for(lambda r=replica: ended_on(r), timeout=20, message="the end")
            assert report["phase"] == "Completed" and report["error"] == "", report
        assert await taints_of(store, REAL) == []
        assert f"drill {drill}: taint on {REAL}" in group.tail(leader, 200)
        assert f"drill {drill}: taint" not in group.tail(follower, 200)
        assert await store.get(keys.drill_run_key()) is None, "nothing left in flight"


@pytest.mark.slow
async def test_a_leader_paused_past_its_lease_mid_drill_stops_it_and_the_next_reports_it(
    store: EtcdStore, etcd_server: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    tainted = f"{faults.DRILL_TAINT}:NoExecute"
    async with two_controllers(store, etcd_server, tmp_path) as (group, session, leading):
        paused = await wait_for(leading, timeout=15, message="a leader")
        body = {"cluster": REAL, "fault": "taint", "duration": "60s", "settle": "0s"}
        code, started, _ = await Client(paused.url, session).call("POST", DRILLS, body)
        assert code == 202, started
        await wait_for(lambda: _has(store, REAL, tainted), timeout=10, message="the taint")

        assert paused.proc is not None
        os.kill(paused.proc.pid, signal.SIGSTOP)  # a GC pause, a partition: past the lease
        try:
            successor = await wait_for(
                lambda: _other_leads(leading, paused), timeout=20, message="another leader"
            )
            stored = await wait_for(
                lambda: store.get(keys.drill_key(started["id"])), timeout=10, message="report"
            )
        finally:
            os.kill(paused.proc.pid, signal.SIGCONT)
        report = json.loads(stored.value)["object"]
        assert "stopped leading" in report["error"], report
        # Awake, the deposed leader steps down and stops its drill: it lifts its taint
        # (60 s before its end), and its late writes do not bring the drill back.
        await wait_for(lambda: _lacks(store, REAL, tainted), timeout=15, message="the taint lifted")
        await wait_for(
            lambda: "drills stopped: leadership lost" in group.tail(paused, 400),
            timeout=10,
            message="the drill loop stopped with the leadership",
        )
        assert await store.get(keys.drill_run_key()) is None, "nothing in flight"
        after = await store.get(keys.drill_key(started["id"]))
        assert after is not None and after.mod_revision == stored.mod_revision, "not rewritten"
        assert await leading() is successor


async def _other_leads(leading: Leading, paused: Replica) -> Replica | None:
    now = await leading()
    return now if now is not None and now is not paused else None


async def _lacks(store: EtcdStore, name: str, taint: str) -> bool:
    return not await _has(store, name, taint)


# -- tenancy of the status views -------------------------------------------------------------


@pytest.fixture
async def status_api(store: EtcdStore) -> AsyncIterator[Client]:
    app = api_app.build_app(store, auth=auth.Authenticator(auth.TokenTable.from_yaml(TOKENS)))
    async with serving(app) as base, aiohttp.ClientSession() as session:
        api = Client(base, session)
        for ns, name in (("ml-research", "train"), ("web", "train"), ("web", "serve")):
            code, created, _ = await api.call("POST", f"{API}/namespaces/{ns}/workloads",
                                              job(ns, name))  # fmt: skip
            assert code == 201, created
        yield api


async def listed_names(api: Client, token: str, query: str = "") -> list[str]:
    code, listed, _ = await api.call("GET", f"{STATUS}/workloads{query}", token=token)
    assert code == 200, listed
    return sorted(f"{w['namespace']}/{w['name']}" for w in listed["items"])


async def test_a_tenant_lists_only_workloads_in_its_own_namespaces(status_api: Client) -> None:
    assert await listed_names(status_api, TENANT) == ["ml-research/train"]
    assert await listed_names(status_api, OTHER) == ["web/serve", "web/train"]
    assert await listed_names(status_api, OTHER, "?namespace=web") == ["web/serve", "web/train"]
    assert await listed_names(status_api, ADMIN) == [
        "ml-research/train",
        "web/serve",
        "web/train",
    ]


@pytest.mark.parametrize(
    ("path", "token", "code"),
    [
        pytest.param(f"{STATUS}/workloads?namespace=web", TENANT, 403,
                     id="a tenant naming another namespace in the list"),
        pytest.param(f"{STATUS}/namespaces/web/workloads/Job.batch/train", TENANT, 403,
                     id="a tenant reading another namespace's workload"),
        pytest.param(f"{STATUS}/namespaces/ml-research/workloads/Job.batch/train", TENANT, 200,
                     id="a tenant reading its own workload"),
        pytest.param(f"{STATUS}/namespaces/web/workloads/Job.batch/train", ADMIN, 200,
                     id="an admin reading any workload"),
        pytest.param(f"{STATUS}/workloads", None, 401, id="no token"),
        pytest.param(f"{STATUS}/queues", TENANT, 200,
                     id="a tenant reading queue usage (aggregates, as it reads queues)"),
        pytest.param(f"{STATUS}/queues", None, 401, id="queue usage needs a token"),
    ],
)  # fmt: skip
async def test_status_views_keep_tenants_in_their_namespaces(
    status_api: Client, path: str, token: str | None, code: int
) -> None:
    got, body, _ = await status_api.call("GET", path, token=token)
    assert got == code, body
    if code == 403:
        assert body["reason"] == "Forbidden" and "namespace 'web'" in body["message"]
