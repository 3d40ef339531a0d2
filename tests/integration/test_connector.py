"""The member connector against a simulated member, over HTTP only, through its kubeconfig."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from clusters import member
from clusters.kube import connector
from clusters.kube.connector import KubeConnector
from clusters.sim import profile
from clusters.sim.fleet import SimFleet
from federation import clock, errors
from federation.settings import MemberSettings
from policies.models.cluster import Connection
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

PROFILE = {
    "clusters": [
        {
            "name": "edge",
            "region": "us-east",
            "nodePools": [{"name": "cpu", "count": 2, "cpu": "8", "memory": "32Gi"}],
        }
    ]
}
FAST = MemberSettings(
    request_timeout=1.0,
    retry_attempts=10,
    retry_initial=0.02,
    retry_max=0.2,
    retry_deadline=3.0,
    watch_timeout=5.0,
)


class Member:
    """The simulated member, its connector, and its fault switch (HTTP to the admin port)."""

    def __init__(self, fleet: SimFleet, conn: KubeConnector, kubeconfig: Path) -> None:
        self.fleet, self.conn, self.kubeconfig = fleet, conn, kubeconfig

    @property
    def url(self) -> str:
        return self.fleet["edge"].url

    async def fault(self, mode: str, **params: Any) -> None:
        await self._admin("fault", {"mode": mode, **params})

    async def heal(self) -> None:
        await self._admin("heal", {})

    async def _admin(self, verb: str, body: dict[str, Any]) -> None:
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.fleet['edge'].admin_url}/{verb}", json=body) as resp,
        ):
            assert resp.status == 200, await resp.text()


@pytest.fixture
async def edge(tmp_path: Path) -> AsyncIterator[Member]:
    fleet = SimFleet(profile.parse(PROFILE), speed=20)
    kubeconfig = tmp_path / "fleet.kubeconfig"
    await fleet.start(kubeconfig_path=kubeconfig)
    conn = await connector.connect(
        "edge", Connection(kubeconfig_path=str(kubeconfig), context="edge"), settings=FAST
    )
    try:
        yield Member(fleet, conn, kubeconfig)
    finally:
        await conn.close()
        await fleet.stop()


def configmap(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


async def test_ready_version_and_discovery(edge: Member) -> None:
    assert await edge.conn.ready() == member.Readiness(True, "ProbeSucceeded", "readyz ok")
    assert await edge.conn.version() == "v1.32.0"
    served = {g.group_version: {r.kind for r in g.resources} for g in await edge.conn.discover()}
    assert {"Node", "Pod", "ConfigMap", "Namespace"} <= served["v1"]
    assert {"Deployment", "StatefulSet"} <= served["apps/v1"]
    assert "Job" in served["batch/v1"]


async def test_inline_kubeconfig_reaches_the_same_member(edge: Member) -> None:
    inline = Connection(kubeconfig=edge.kubeconfig.read_text(), context="edge")
    async with await connector.connect("edge", inline, settings=FAST) as conn:
        nodes = await conn.list("v1", "Node")
    assert sorted(n["metadata"]["name"] for n in nodes.items) == ["edge-cpu-0", "edge-cpu-1"]
    assert nodes.resource_version


@pytest.mark.parametrize(
    ("connection", "fragment"),
    [
        pytest.param({"context": "nowhere"}, "nowhere", id="unknown context"),
        pytest.param({"kubeconfig": "just text"}, "not a YAML mapping", id="inline not YAML map"),
        pytest.param({"kubeconfig_path": "/nonexistent/kc"}, "does not exist", id="missing file"),
    ],
)
async def test_unusable_kubeconfig_is_invalid(
    edge: Member, connection: dict[str, Any], fragment: str
) -> None:
    spec = {"kubeconfig_path": str(edge.kubeconfig), **connection}
    if "kubeconfig" in connection:
        spec.pop("kubeconfig_path")
    with pytest.raises(errors.Invalid, match=fragment):
        await connector.connect("edge", Connection(**spec), settings=FAST)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param(
            "apiVersion: v1\nclusters: [\n",
            "broken.kubeconfig:3:1: not valid YAML: while parsing a flow node expected the"
            " node content, but found '<stream end>'",
            id="not YAML: file, line and column",
        ),
        pytest.param(
            "", "broken.kubeconfig is empty: expected clusters, contexts and users", id="empty"
        ),
        pytest.param("- a\n- b\n", "broken.kubeconfig is not a YAML mapping", id="a list"),
    ],
)
async def test_a_kubeconfig_file_that_is_not_one_is_invalid_naming_where(
    tmp_path: Path, text: str, fragment: str
) -> None:
    """kubernetes_asyncio parses with PyYAML and raised its ParserError (or a TypeError
    for an empty file) past the connector: the monitor crashed, the CLI printed a
    traceback. Now it is `Invalid`, naming the file and the line."""
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text(text)
    with pytest.raises(errors.Invalid) as refused:
        await connector.connect("edge", Connection(kubeconfig_path=str(broken)), settings=FAST)
    assert f"kubeconfig {broken}" in str(refused.value)
    assert fragment in str(refused.value)


async def test_apply_get_delete_any_kind(edge: Member) -> None:
    created = await edge.conn.apply(configmap("settings", mode="a"))
    assert created["data"] == {"mode": "a"}
    updated = await edge.conn.apply(configmap("settings", mode="b"), force=True)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    ref = member.ObjectRef("v1", "ConfigMap", "settings", "default")
    assert (await edge.conn.get(ref))["data"] == {"mode": "b"}
    assert await edge.conn.delete(ref) is True
    assert await edge.conn.delete(ref) is False
    with pytest.raises(member.MemberNotFound) as missing:
        await edge.conn.get(ref)
    assert 'configmaps "settings" not found' in str(missing.value)


async def test_permanent_rejection_carries_the_members_status(edge: Member) -> None:
    with pytest.raises(member.MemberRejected) as rejected:
        await edge.conn.apply(configmap("x", namespace="nope"))
    assert rejected.value.code == 404
    assert 'namespaces "nope" not found' in rejected.value.detail
    with pytest.raises(member.MemberNotFound, match="does not serve Widget"):
        await edge.conn.get(member.ObjectRef("example.com/v1", "Widget", "w", "default"))


async def test_follow_lists_then_watches_and_relists_after_410(edge: Member) -> None:
    seen: list[member.Relisted | member.Changed] = []

    async def follow() -> None:
        async for event in edge.conn.follow("v1", "ConfigMap", namespace="default"):
            seen.append(event)

    task = asyncio.create_task(follow())
    try:
        await wait_for(lambda: seen, message="the first list")
        await edge.conn.apply(configmap("one"))
        await wait_for(
            lambda: any(isinstance(e, member.Changed) for e in seen), message="the ADDED event"
        )
        await edge.fault("compact")
        await wait_for(
            lambda: sum(isinstance(e, member.Relisted) for e in seen) == 2,
            message="a re-list after 410",
        )
        relisted = [e for e in seen if isinstance(e, member.Relisted)][-1]
        assert [o["metadata"]["name"] for o in relisted.items] == ["one"]
        await edge.conn.apply(configmap("two"))
        await wait_for(
            lambda: (
                isinstance(seen[-1], member.Changed)
                and seen[-1].object["metadata"]["name"] == "two"
            ),
            message="events after the re-list",
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_down_member_is_refused_with_its_address(edge: Member) -> None:
    await edge.fault("down")
    readiness = await edge.conn.ready(timeout=1.0)
    assert readiness == member.Readiness(
        False, "ConnectionRefused", f"connection refused by {edge.url}"
    )
    with pytest.raises(member.MemberUnavailable) as refused:
        await edge.conn.list("v1", "Node")
    assert refused.value.reason == "ConnectionRefused"
    await edge.heal()
    assert (await edge.conn.ready()).ok


async def test_blackholed_member_times_out_and_nothing_hangs(edge: Member) -> None:
    await edge.fault("blackhole")
    started = clock.real.monotonic()
    readiness = await edge.conn.ready(timeout=0.3)
    assert (readiness.ok, readiness.reason) == (False, "Timeout")
    assert readiness.message == f"no answer from {edge.url} within 0.3s"
    assert clock.real.monotonic() - started < 1.0
    async with asyncio.timeout(FAST.retry_deadline + 2 * FAST.request_timeout):
        with pytest.raises(member.MemberUnavailable) as silent:
            await edge.conn.version()
    assert silent.value.reason == "Timeout"


async def test_discovery_with_a_timeout_bounds_each_round_trip_not_the_chain(
    edge: Member,
) -> None:
    """`timeout` is per round trip: a member slower than it in total but quicker on each
    request is read in full; a silent one is a Timeout within about one timeout."""
    await edge.fault("slow", latency=0.15, jitter=0)
    started = clock.real.monotonic()
    served = {g.group_version for g in await edge.conn.discover(timeout=0.4)}
    assert clock.real.monotonic() - started > 0.4  # /api, /apis, then the group versions
    assert {"v1", "apps/v1"} <= served
    assert await edge.conn.version(timeout=0.4) == "v1.32.0"
    await edge.fault("blackhole")
    for call in (edge.conn.discover, edge.conn.version):
        started = clock.real.monotonic()
        with pytest.raises(member.MemberUnavailable) as silent:
            await call(timeout=0.3)
        assert (silent.value.reason, str(silent.value).endswith("within 0.3s")) == (
            "Timeout",
            True,
        )
        assert clock.real.monotonic() - started < 1.0


async def test_throttling_and_server_errors_are_absorbed_by_retries(edge: Member) -> None:
    await edge.fault("errors", rate=0.3, codes=[429, 500, 503], retryAfter=0)
    for _ in range(20):
        nodes = await edge.conn.list("v1", "Node")
        assert len(nodes.items) == 2
    assert all([(await edge.conn.ready()).ok for _ in range(10)])


@contextlib.asynccontextmanager
async def bare_server(routes: dict[str, int]) -> AsyncIterator[str]:
    """A server that answers only `routes` (path -> status), as some API servers do."""

    def handler(status: int) -> Any:
        async def answer(_request: web.Request) -> web.Response:
            return web.Response(status=status, text="ok" if status == 200 else "unhealthy")

        return answer

    app = web.Application()
    app.add_routes([web.get(path, handler(status)) for path, status in routes.items()])
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def inline_kubeconfig(url: str) -> Connection:
    text = (
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: old, cluster: {{server: '{url}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: old, context: {cluster: old, user: u}}]\n"
        "current-context: old\n"
    )
    return Connection(kubeconfig=text)


@pytest.mark.parametrize(
    ("routes", "expected"),
    [
        pytest.param(
            {"/healthz": 200},
            member.Readiness(True, "ProbeSucceeded", "healthz ok"),
            id="no readyz: healthz answers",
        ),
        pytest.param(
            {"/readyz": 500, "/healthz": 200},
            member.Readiness(False, "ReadyzFailed", "readyz returned 500"),
            id="readyz failing is not papered over by healthz",
        ),
        pytest.param(
            {},
            member.Readiness(
                False, "NoHealthEndpoint", "{url} serves neither /readyz nor /healthz"
            ),
            id="neither endpoint",
        ),
    ],
)
async def test_readiness_falls_back_to_healthz(
    routes: dict[str, int], expected: member.Readiness
) -> None:
    async with bare_server(routes) as url:
        conn = await connector.connect("old", inline_kubeconfig(url), settings=FAST)
        async with conn:
            got = await conn.ready(timeout=2.0)
    assert got == member.Readiness(expected.ok, expected.reason, expected.message.format(url=url))
