"""The cluster monitor with a real etcd and simulated members reached over HTTP.

Three members (x86, Arm, NVIDIA GPU) join through the registry; the monitor must report
their capacity by chip exactly as the fleet profile declares it, follow pods created
behind its back, turn Ready=False within the failure threshold plus one period when a
member goes down or silent, come back when it heals, and stay quiet (few registry writes)
when a member merely throws 30% errors. Faults are injected through the members' admin
HTTP API; the controller side talks to members only through its connector.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from ruamel.yaml import YAML

from clusters.kube import connector
from clusters.sim import profile
from clusters.sim.fleet import SimFleet, capacity
from federation import clock, errors
from federation.monitor import summary
from federation.monitor.member import APIS
from federation.monitor.monitor import ClusterMonitor
from federation.registry import codec, embedded, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.resources import ResourceList
from federation.settings import MemberSettings, MonitorSettings
from policies.models import rules
from policies.models.cluster import Cluster, ClusterStatus
from tests.conftest import etcd_settings
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

PROFILE = profile.parse(
    {
        "clusters": [
            {
                "name": "x86",
                "region": "us-east",
                "nodePools": [{"name": "cpu", "count": 3, "cpu": "16", "memory": "64Gi"}],
            },
            {
                "name": "arm",
                "region": "eu-west",
                "nodePools": [
                    {"name": "c7g", "count": 2, "arch": "arm64", "cpu": "16", "memory": "32Gi"}
                ],
            },
            {
                "name": "gpu",
                "region": "us-west",
                "nodePools": [
                    {"name": "system", "count": 1, "cpu": "8", "memory": "32Gi"},
                    {
                        "name": "a100",
                        "count": 2,
                        "cpu": "96",
                        "memory": "1152Gi",
                        "accelerators": [
                            {
                                "model": "nvidia-a100-80gb",
                                "resourceName": "nvidia.com/gpu",
                                "countPerNode": 8,
                                "product": "NVIDIA-A100-SXM4-80GB",
                            }
                        ],
                    },
                ],
            },
        ]
    }
)
PERIOD = 0.25
MONITOR = MonitorSettings(
    probe_period=PERIOD,
    probe_timeout=0.5,
    failure_threshold=1.0,
    success_threshold=0,
    heartbeat=60.0,
    workers=2,
    watch_backoff_max=0.5,
)
MEMBER = MemberSettings(
    request_timeout=1.0,
    retry_attempts=10,
    retry_initial=0.02,
    retry_max=0.1,
    retry_deadline=2.0,
    watch_timeout=5.0,
)


class Federation:
    """etcd, the simulated fleet, and a running monitor."""

    def __init__(self, store: EtcdStore, fleet: SimFleet, kubeconfig: Path) -> None:
        self.store, self.fleet, self.kubeconfig = store, fleet, kubeconfig
        self.clusters = codec.TypedStore(store, codec.Codec(Cluster))
        self.statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
        self.monitor = ClusterMonitor(store, settings=MONITOR, member_settings=MEMBER)
        self.task: asyncio.Task[None] | None = None

    async def join(self, name: str, *, context: str | None = None) -> None:
        """Register `name`, reaching the member of the same name (or `context`'s)."""
        p = self.fleet[context or name].profile
        cluster = Cluster.model_validate(
            {
                "metadata": {"name": name},
                "spec": {
                    "region": p.region,
                    "connection": {
                        "kubeconfigPath": str(self.kubeconfig),
                        "context": context or name,
                    },
                    "prices": {"onDemand": {"cpu": "0.05", "memory": "0.005"}},
                },
            }
        )
        await self.clusters.create(keys.cluster_key(name), cluster)

    async def status(self, name: str) -> ClusterStatus | None:
        stored = await self.statuses.get(keys.cluster_status_key(name))
        return stored.obj if stored else None

    async def writes(self, name: str) -> int:
        kv = await self.store.get(keys.cluster_status_key(name))
        return kv.version if kv else 0

    async def ready(self, name: str, expected: str) -> ClusterStatus | None:
        status = await self.status(name)
        cond = status.condition("Ready") if status else None
        return status if cond is not None and cond.status == expected else None

    async def fault(self, name: str, mode: str, **params: Any) -> None:
        await self._admin(name, "fault", {"mode": mode, **params})

    async def heal(self, name: str) -> None:
        await self._admin(name, "heal", {})

    async def _admin(self, name: str, verb: str, body: dict[str, Any]) -> None:
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.fleet[name].admin_url}/{verb}", json=body) as resp,
        ):
            assert resp.status == 200, await resp.text()


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    fleet = SimFleet(PROFILE, speed=20)
    kubeconfig = tmp_path / "fleet.kubeconfig"
    await fleet.start(kubeconfig_path=kubeconfig)
    store = EtcdStore(etcd_settings(own_etcd.url))
    await store.connect()
    federation = Federation(store, fleet, kubeconfig)
    federation.task = asyncio.create_task(federation.monitor.run())
    try:
        yield federation
    finally:
        federation.task.cancel()
        # Stopping must not hang, whatever state the members are in.
        async with asyncio.timeout(5):
            with contextlib.suppress(asyncio.CancelledError):
                await federation.task
        await store.close()
        await fleet.stop()


def declared_chips(name: str) -> dict[str, int]:
    """Chips as the profile declares them: accelerators by model, plain arches by nodes."""
    chips: dict[str, int] = {}
    for pool in PROFILE.clusters[[c.name for c in PROFILE.clusters].index(name)].node_pools:
        if pool.accelerators:
            for acc in pool.accelerators:
                chips[acc.model] = chips.get(acc.model, 0) + acc.count_per_node * pool.count
        else:
            chips[pool.arch] = chips.get(pool.arch, 0) + pool.count
    return chips


async def test_three_members_join_with_capacity_by_chip_as_the_profile_says(
    fed: Federation,
) -> None:
    for name in ("x86", "arm", "gpu"):
        await fed.join(name)
    rows = {}
    for name in ("x86", "arm", "gpu"):
        status = await wait_for(
            lambda n=name: fed.ready(n, "True"), timeout=10, message=f"{name} Ready"
        )
        assert status is not None
        cluster = (await fed.clusters.get(keys.cluster_key(name))).obj  # type: ignore[union-attr]
        rows[name] = summary.row(cluster, status)
        declared = capacity(fed.fleet[name].profile)
        assert rows[name].chips == declared_chips(name)
        assert status.totals.allocatable.amount("cpu") == ResourceList.from_wire(
            {"cpu": declared["cpu"]}
        ).amount("cpu")
        assert status.totals.allocatable.amount("memory") == ResourceList.from_wire(
            {"memory": declared["memory"]}
        ).amount("memory")
        assert status.kubernetes_version == "v1.32.0"
        assert status.api_enabled("apps/v1", "Deployment")
        assert status.last_heartbeat is not None
    assert rows["gpu"].chips == {"amd64": 1, "nvidia-a100-80gb": 16}
    assert rows["gpu"].accelerators["nvidia-a100-80gb"] == summary.Amount(16_000, 16_000)
    assert rows["arm"].chips == {"arm64": 2}
    (a100,) = (await fed.status("gpu")).flavors_for("nvidia-a100-80gb")  # type: ignore[union-attr]
    assert (a100.arch, a100.node_count, a100.accelerator_resource) == ("amd64", 2, "nvidia.com/gpu")
    table = summary.table(list(rows.values()))
    assert "nvidia-a100-80gb 16/16" in table
    assert fed.monitor.tracked() == ["arm", "gpu", "x86"]


async def gpu_member(fed: Federation) -> connector.KubeConnector:
    """A connection to the "gpu" member, as the controller's connector makes one."""
    return await connector.connect(
        "gpu", Cluster.model_validate(
            {"metadata": {"name": "gpu"}, "spec": {"region": "r", "connection": {
                "kubeconfigPath": str(fed.kubeconfig), "context": "gpu"}}}
        ).spec.connection, settings=MEMBER,
    )  # fmt: skip


def gpu_pod(name: str, gpus: str) -> dict[str, Any]:
    """A bare Pod asking for `gpus` GPUs, for the member's own scheduler to bind."""
    container = {
        "name": "main",
        "image": "trainer",
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container]},
    }


async def test_pods_created_in_a_member_lower_free_gpus_within_two_periods(
    fed: Federation,
) -> None:
    await fed.join("gpu")
    await wait_for(lambda: fed.ready("gpu", "True"), timeout=10, message="gpu Ready")
    conn = await gpu_member(fed)
    async with conn:
        for i in range(2):
            await conn.apply(gpu_pod(f"train-{i}", "3"))

        async def bound() -> bool:
            pods = await conn.list("v1", "Pod", namespace="default")
            return len([p for p in pods.items if p["spec"].get("nodeName")]) == 2

        await wait_for(bound, timeout=10, message="the sim scheduler binds both pods")

    async def free_gpus() -> int | None:
        status = await fed.status("gpu")
        free = status.totals.free.amount("nvidia.com/gpu") if status else None
        return free if free == 10_000 else None

    await wait_for(free_gpus, timeout=2 * PERIOD, message="free GPUs 16 - 6 = 10")


async def test_down_turns_not_ready_within_threshold_plus_a_period_then_heals(
    fed: Federation,
) -> None:
    await fed.join("x86")
    await wait_for(lambda: fed.ready("x86", "True"), timeout=10, message="x86 Ready")
    await fed.fault("x86", "down")
    started = clock.real.monotonic()
    status = await wait_for(
        lambda: fed.ready("x86", "False"),
        timeout=MONITOR.failure_threshold + MONITOR.probe_period + 0.5,
        message="Ready=False",
    )
    took = clock.real.monotonic() - started
    assert took >= MONITOR.failure_threshold - MONITOR.probe_period
    cond = status.condition("Ready")  # type: ignore[union-attr]
    assert cond is not None
    assert cond.reason == "ConnectionRefused"
    assert cond.message == f"connection refused by {fed.fleet['x86'].url}"
    await fed.heal("x86")
    healed = await wait_for(lambda: fed.ready("x86", "True"), timeout=5, message="Ready again")
    assert healed.condition("Ready").reason == "ClusterReady"  # type: ignore[union-attr]
    assert healed.totals.allocatable.amount("cpu") == 48_000  # capacity survives the outage


async def test_thirty_percent_errors_stay_ready_without_flooding_the_registry(
    fed: Federation,
) -> None:
    await fed.join("arm")
    await wait_for(lambda: fed.ready("arm", "True"), timeout=10, message="arm Ready")
    await wait_for(
        lambda: fed.status("arm"),
        message="first capacity written",
    )
    before = await fed.writes("arm")
    await fed.fault("arm", "errors", rate=0.3, codes=[429, 500, 503], retryAfter=0)
    periods = 12
    deadline = clock.real.monotonic() + periods * PERIOD
    while clock.real.monotonic() < deadline:
        assert await fed.ready("arm", "True"), "a 30% error rate must not make the member NotReady"
        await asyncio.sleep(PERIOD / 2)
    # Nothing meaningful changed: at most a capacity catch-up, never one write per probe.
    assert await fed.writes("arm") - before <= 2


async def test_a_slow_member_answering_each_request_in_time_is_discovered(
    fed: Federation,
) -> None:
    """Discovery is five round trips in a row (version, /api, /apis, the group versions,
    kube-system); each within the probe timeout is an answer, even when together they
    take longer: the documented `slow` fault is a degraded member, not stale APIs."""
    latency = 0.2
    await fed.fault("x86", "slow", latency=latency, jitter=0)
    assert 5 * latency > MONITOR.probe_timeout > latency
    await fed.join("x86")

    async def discovered() -> ClusterStatus | None:
        status = await fed.ready("x86", "True")
        apis = status.condition(APIS) if status else None
        return status if apis is not None and apis.status == "True" else None

    status = await wait_for(discovered, timeout=10, message="x86 Ready with its APIs read")
    assert status.kubernetes_version == "v1.32.0"
    assert status.api_enabled("apps/v1", "Deployment")
    assert status.cluster_id


async def test_blackhole_times_out_turns_not_ready_and_nothing_hangs(fed: Federation) -> None:
    await fed.join("gpu")
    await wait_for(lambda: fed.ready("gpu", "True"), timeout=10, message="gpu Ready")
    await fed.fault("gpu", "blackhole")
    status = await wait_for(
        lambda: fed.ready("gpu", "False"),
        timeout=MONITOR.failure_threshold + MONITOR.probe_timeout + MONITOR.probe_period + 0.5,
        message="Ready=False on silence",
    )
    cond = status.condition("Ready")  # type: ignore[union-attr]
    assert cond is not None
    assert (cond.reason, cond.message) == (
        "Timeout",
        f"no answer from {fed.fleet['gpu'].url} within {MONITOR.probe_timeout:g}s",
    )
    # The fixture's teardown cancels the monitor with the member still silent: it must stop.


async def test_unjoin_stops_monitoring_and_removes_the_status(fed: Federation) -> None:
    await fed.join("x86")
    await wait_for(lambda: fed.ready("x86", "True"), timeout=10, message="x86 Ready")
    await fed.clusters.delete(keys.cluster_key("x86"))
    await wait_for(lambda: not fed.monitor.tracked(), timeout=5, message="monitoring of x86 stops")

    async def gone() -> bool:
        return await fed.status("x86") is None

    await wait_for(gone, timeout=5, message="x86 status removed")


async def test_a_member_joined_again_under_another_name_is_never_ready(fed: Federation) -> None:
    """A second Cluster reaching a joined member (joined with `--no-verify`, or applied)
    was Ready: it got its share of every workload, applied over the first name's copies,
    and unjoining it deleted them. The monitor compares cluster ids: the later name is
    reported not Ready, naming the first, until the first leaves."""
    await fed.join("x86")
    first = await wait_for(lambda: fed.ready("x86", "True"), timeout=10, message="x86 Ready")
    assert first is not None and first.cluster_id
    start = (await fed.statuses.list(keys.prefix("clusterstatus"))).revision + 1
    seen: list[ClusterStatus] = []

    async def record() -> None:
        key = keys.cluster_status_key("x86-again")
        async for event in fed.statuses.watch(key, start_revision=start):
            if isinstance(event, codec.Put):
                seen.append(event.item.obj)

    watching = asyncio.create_task(record())
    try:
        await fed.join("x86-again", context="x86")
        status = await wait_for(
            lambda: fed.ready("x86-again", "False"), timeout=10, message="x86-again judged"
        )
        assert status is not None and status.duplicate_of == "x86"
        assert status.cluster_id == first.cluster_id
        cond = status.condition("Ready")
        assert cond is not None and cond.reason == "DuplicateCluster"
        assert f"already joined as x86 (kube-system uid {first.cluster_id})" in cond.message
        kept = await fed.status("x86")
        assert kept is not None and kept.ready() and kept.duplicate_of is None

        # The first name leaves: the member is the second's now.
        await fed.clusters.delete(keys.cluster_key("x86"))
        taken = await wait_for(
            lambda: fed.ready("x86-again", "True"), timeout=10, message="x86-again Ready"
        )
        assert taken is not None and taken.duplicate_of is None
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    ready = [s for s in seen if s.ready()]
    assert seen and ready == [seen[-1]], "x86-again was Ready while x86 was joined"


async def test_unreachable_kubeconfig_context_is_reported_not_ready(fed: Federation) -> None:
    bad = Cluster.model_validate(
        {
            "metadata": {"name": "ghost"},
            "spec": {
                "region": "nowhere",
                "connection": {"kubeconfigPath": str(fed.kubeconfig), "context": "ghost"},
            },
        }
    )
    await fed.clusters.create(keys.cluster_key("ghost"), bad)
    status = await wait_for(lambda: fed.ready("ghost", "Unknown"), timeout=5, message="ghost")
    cond = status.condition("Ready")  # type: ignore[union-attr]
    assert cond is not None
    assert cond.reason == "KubeconfigInvalid"
    assert "ghost" in cond.message


async def test_a_kubeconfig_that_is_not_yaml_fails_its_cluster_only_until_it_is_fixed(
    fed: Federation, tmp_path: Path
) -> None:
    """A Cluster whose kubeconfig file was not YAML raised PyYAML's ParserError out of the
    monitor, which stopped the whole controller on every start. Now that Cluster alone is
    Ready=Unknown KubeconfigInvalid, naming the file and line; the others are followed, and
    the file, once fixed, is picked up without a restart."""
    broken = tmp_path / "arm.kubeconfig"
    broken.write_text("apiVersion: v1\nclusters: [\n")
    await fed.join("x86")
    arm = Cluster.model_validate(
        {
            "metadata": {"name": "arm"},
            "spec": {
                "region": "eu-west",
                "connection": {"kubeconfigPath": str(broken), "context": "arm"},
            },
        }
    )
    await fed.clusters.create(keys.cluster_key("arm"), arm)

    status = await wait_for(lambda: fed.ready("arm", "Unknown"), timeout=5, message="arm")
    cond = status.condition("Ready")
    assert cond is not None and cond.reason == "KubeconfigInvalid", cond
    assert f"kubeconfig {broken}:3:1: not valid YAML" in cond.message, cond.message
    await wait_for(lambda: fed.ready("x86", "True"), timeout=5, message="x86 followed")
    assert fed.task is not None and not fed.task.done(), "the monitor stopped"

    broken.write_text(fed.kubeconfig.read_text())

    await wait_for(lambda: fed.ready("arm", "True"), timeout=10, message="arm, once fixed")


async def test_a_registry_kubeconfig_with_a_credential_plugin_is_refused_and_not_run(
    fed: Federation, tmp_path: Path
) -> None:
    """An inline kubeconfig put in the registry directly (the API refuses it where it is
    written) whose user runs an `exec` plugin: the controller ran the command with its own
    rights. Now nothing runs, and the Cluster reads Ready=Unknown naming the cluster's field
    and the user; one reached through its kubeconfigPath is refused the same way."""
    ran = tmp_path / "ran"
    served = yaml_text(fed.kubeconfig)
    context = served["contexts"][0]["name"]
    script = f'touch {ran}; echo \'{{"apiVersion":"client.authentication.k8s.io/v1beta1"}}\''
    served["users"] = [{"name": "u", "user": {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "/bin/sh",
        "args": ["-c", script]}}}]  # fmt: skip
    for ctx in served["contexts"]:
        ctx["context"]["user"] = "u"
    path = tmp_path / "plugin.kubeconfig"
    path.write_text(json.dumps(served))
    sources = {
        "inline": {"kubeconfig": json.dumps(served)},
        "byfile": {"kubeconfigPath": str(path)},
    }
    for name, source in sources.items():
        spec = {"region": "nowhere", "connection": {**source, "context": context}}
        cluster = Cluster.model_validate(
            {"metadata": {"name": name}, "spec": spec}, context=rules.STORED
        )
        await fed.clusters.create(keys.cluster_key(name), cluster)
    for name, field in (("inline", "spec.connection.kubeconfig"),
                        ("byfile", f"spec.connection.kubeconfigPath {path}")):  # fmt: skip
        status = await wait_for(lambda n=name: fed.ready(n, "Unknown"), timeout=5, message=name)
        cond = status.condition("Ready")
        assert cond is not None and cond.reason == "KubeconfigInvalid", cond
        assert cond.message.startswith(f"{field}: users[0].user.exec (user u) runs a program")
    assert not ran.exists(), "the plugin ran"


def yaml_text(path: Path) -> Any:
    """A kubeconfig file's content as data."""
    return YAML(typ="safe").load(path.read_text())


@contextlib.asynccontextmanager
async def rejecting(upstream: str) -> AsyncIterator[str]:
    """An endpoint answering /readyz, /healthz and /version from `upstream` to anyone and
    401 to everything else: a real API server given a wrong or expired token."""

    async def answer(request: web.Request) -> web.StreamResponse:
        if request.path in ("/readyz", "/healthz", "/version"):
            async with (
                aiohttp.ClientSession() as session,
                session.get(upstream + request.path) as resp,
            ):
                return web.Response(status=resp.status, body=await resp.read())
        status = {"kind": "Status", "status": "Failure", "reason": "Unauthorized", "code": 401}
        return web.json_response({**status, "message": "Unauthorized"}, status=401)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_a_member_rejecting_the_credentials_is_not_ready_with_the_reason(
    fed: Federation,
) -> None:
    """Such a member was Ready=True with no APIs, id or capacity, the 401s logged at debug
    level only."""
    async with rejecting(fed.fleet["x86"].url) as url:
        text = (
            "apiVersion: v1\nkind: Config\n"
            f"clusters: [{{name: x, cluster: {{server: '{url}'}}}}]\n"
            "users: [{name: u, user: {token: expired}}]\n"
            "contexts: [{name: x, context: {cluster: x, user: u}}]\ncurrent-context: x\n"
        )
        badtok = Cluster.model_validate(
            {
                "metadata": {"name": "badtok"},
                "spec": {"region": "us-east", "connection": {"kubeconfig": text}},
            }
        )
        await fed.clusters.create(keys.cluster_key("badtok"), badtok)

        status = await wait_for(lambda: fed.ready("badtok", "False"), timeout=5, message="401")

    ready, apis = status.condition("Ready"), status.condition("CompleteAPIEnablements")
    assert ready is not None and ready.reason == "Unauthorized", ready
    assert "401 Unauthorized on /api: the member rejects the credentials" in ready.message
    assert apis is not None and (apis.status, apis.reason) == ("False", "Unauthorized")


async def test_a_monitor_holding_a_stale_fence_writes_no_status_and_stops(
    fed: Federation,
) -> None:
    """A deposed leader's monitor must not overwrite what the new leader's monitor writes:
    its ClusterStatus writes carry the old leader key's revision and etcd refuses them."""
    await fed.store.commit([st.Put(keys.leader_key(), b"new-leader")])
    stale = st.Guard(keys.leader_key(), 1)  # a revision the leader key no longer has
    deposed = ClusterMonitor(
        fed.store, settings=MONITOR, member_settings=MEMBER, guards=lambda: (stale,)
    )
    fed.task.cancel()  # type: ignore[union-attr]
    with contextlib.suppress(asyncio.CancelledError):
        await fed.task  # type: ignore[misc]
    await fed.join("x86")
    with pytest.raises(BaseExceptionGroup) as raised:
        async with asyncio.timeout(15):
            await deposed.run()
    assert raised.value.subgroup(errors.Fenced) is not None
    assert await fed.status("x86") is None, "nothing written under a stale fence"


async def test_the_status_shows_how_free_gpus_are_split_over_the_members_nodes(
    fed: Federation,
) -> None:
    """Pods the member's scheduler binds leave each node with its own free amount: the
    status groups the nodes by it, so the scheduler counts pods node by node."""
    await fed.join("gpu")
    await wait_for(lambda: fed.ready("gpu", "True"), timeout=10, message="gpu Ready")
    conn = await gpu_member(fed)
    async with conn:
        for i, gpus in enumerate(("3", "3", "1")):
            await conn.apply(gpu_pod(f"split-{i}", gpus))

        async def bound() -> dict[str, int] | None:
            pods = (await conn.list("v1", "Pod", namespace="default")).items
            on = [p for p in pods if p["metadata"]["name"].startswith("split-")]
            if len(on) < 3 or not all(p["spec"].get("nodeName") for p in on):
                return None
            used: dict[str, int] = {}
            for p in on:
                gpus = int(p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
                used[p["spec"]["nodeName"]] = used.get(p["spec"]["nodeName"], 0) + gpus
            return used

        used = await wait_for(bound, timeout=10, message="the sim scheduler binds the pods")
    idle = [8_000] * (2 - len(used))  # the flavor's two 8-GPU nodes, one maybe untouched
    expected = sorted([8_000 - 1000 * u for u in used.values()] + idle, reverse=True)

    async def split() -> list[int] | None:
        status = await fed.status("gpu")
        flavors = status.flavors_for("nvidia-a100-80gb") if status else []
        if not flavors:
            return None
        groups = flavors[0].free_nodes
        frees = [g.free.amount("nvidia.com/gpu") for g in groups for _ in range(g.count)]
        return frees if frees == expected else None

    await wait_for(split, timeout=2 * PERIOD, message=f"free GPUs per node {expected}")
