"""Benchmark of the member-cluster simulator; prints one JSON document.

Part 1, the fleet: 100 simulated clusters x 50 nodes in one process (profile
`bench-100.yaml`), 20,000 pods in total created through Deployments over HTTP and run by
the in-process scheduler and kubelet. Reports start-up time, resident memory, time until
every pod is Running, list-nodes latency (p50/p99, raw HTTP plus JSON decode, random
members) and watch fan-out latency (many watchers on one member, time from a create's
response to each watcher's event).

Part 2, one big member: 1,000 nodes and 10,000 pods (bound by the scheduler); list latency
for nodes and pods, whole and paged with `limit=500`. List latencies are measured from a
separate client process (HTTP round trip plus JSON decode), so the client's work is not
charged to the simulator; the watch fan-out is measured in-process.

Keep the run under about three minutes on two cores: `python bench/sim.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from clusters.sim import profile
from clusters.sim.cluster import SimCluster
from clusters.sim.controllers_base import POD, Settings
from clusters.sim.fleet import SimFleet

PROFILE = Path(__file__).resolve().parents[1] / "clusters" / "sim" / "profiles" / "bench-100.yaml"

# Heartbeats would add 5,000 node writes per simulated minute; the bench measures the API.
SETTINGS = Settings(heartbeat_seconds=0, pod_startup_seconds=1.0)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "nginx",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ]
                },
            },
        },
    }


def running(member: SimCluster) -> int:
    pods, _ = member.store.list(POD, copy=False)
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")


async def wait_running(members: list[SimCluster], want: int, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if sum(running(m) for m in members) >= want:
            return time.monotonic() - started
        await asyncio.sleep(0.25)
    raise TimeoutError(f"only {sum(running(m) for m in members)}/{want} pods running")


async def settle(members: list[SimCluster]) -> None:
    """Wait until no member's controllers have work queued (status writes have landed)."""
    for _ in range(600):
        if all(m.controllers.idle() for m in members):
            return
        await asyncio.sleep(0.05)


async def remote_list_latency(urls: list[str], n: int) -> list[float]:
    """`list_latency` measured from a separate client process, as a real client sees it.

    In-process, the client's own JSON decoding of 10,000 pods (and the garbage collections
    it triggers) would be charged to the server.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--client", str(n), *urls, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    samples: list[float] = json.loads(out)
    return samples


async def client_main(n: int, urls: list[str]) -> None:
    random.seed(11)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        print(json.dumps(await list_latency(session, urls, n)))


async def list_latency(session: aiohttp.ClientSession, urls: list[str], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        url = random.choice(urls)
        t0 = time.perf_counter()
        async with session.get(url) as resp:
            body = await resp.read()
        json.loads(body)
        samples.append(time.perf_counter() - t0)
    return samples


async def watch_fanout(
    session: aiohttp.ClientSession, base: str, watchers: int, events: int
) -> list[float]:
    """Latency from a create's response to its ADDED event at each of `watchers` streams."""
    sent: dict[str, float] = {}
    got: list[float] = []
    ready = asyncio.Event()
    opened = 0
    url = f"{base}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="
    async with session.get(f"{base}/api/v1/namespaces/default/configmaps") as resp:
        rv = (await resp.json())["metadata"]["resourceVersion"]

    async def watcher() -> None:
        nonlocal opened
        async with session.get(url + rv) as resp:
            opened += 1
            if opened == watchers:
                ready.set()
            seen = 0
            async for line in resp.content:
                name = json.loads(line)["object"]["metadata"]["name"]
                t = time.perf_counter()
                if name in sent:
                    got.append(t - sent[name])
                seen += 1
                if seen == events:
                    return

    tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
    await asyncio.wait_for(ready.wait(), 30)
    async with aiohttp.ClientSession() as writer:
        await _create_events(writer, base, events, sent)
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    return got


async def _create_events(
    session: aiohttp.ClientSession, base: str, events: int, sent: dict[str, float]
) -> None:
    for i in range(events):
        name = f"fan-{i}"
        async with session.post(
            f"{base}/api/v1/namespaces/default/configmaps", json={"metadata": {"name": name}}
        ) as resp:
            assert resp.status == 201, await resp.text()
        sent[name] = time.perf_counter()
        await asyncio.sleep(0.01)


async def fleet_part(pods_total: int, speed: float) -> dict[str, Any]:
    prof = profile.load(PROFILE)
    fleet = SimFleet(prof, speed=speed, settings=SETTINGS)
    rss0 = rss_mib()
    t0 = time.monotonic()
    await fleet.start()
    startup = time.monotonic() - t0
    rss_started = rss_mib()
    members = list(fleet)
    per_cluster = pods_total // len(members)
    timeout = aiohttp.ClientTimeout(total=120)
    out: dict[str, Any] = {
        "clusters": len(members),
        "nodes": sum(m.profile.node_count for m in members),
    }
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        t1 = time.monotonic()
        for m in members:
            for d in range(4):
                async with session.post(
                    f"{m.url}/apis/apps/v1/namespaces/default/deployments",
                    json=deployment(f"app-{d}", per_cluster // 4),
                ) as resp:
                    assert resp.status == 201, await resp.text()
        create_seconds = time.monotonic() - t1
        to_running = await wait_running(members, per_cluster * len(members), 150)
        await settle(members)
        node_urls = [f"{m.url}/api/v1/nodes" for m in members]
        lists = await remote_list_latency(node_urls, 500)
        fan = await watch_fanout(session, members[0].url, watchers=100, events=50)
    out.update(
        pods=per_cluster * len(members),
        startup_seconds=round(startup, 2),
        rss_mib={"before": rss0, "after_start": rss_started, "with_pods": rss_mib()},
        deployments_created_seconds=round(create_seconds, 2),
        all_pods_running_seconds=round(create_seconds + to_running, 2),
        list_nodes_50_ms={"p50": pct(lists, 0.5), "p99": pct(lists, 0.99), "n": len(lists)},
        watch_fanout_ms={
            "watchers": 100,
            "events": 50,
            "deliveries": len(fan),
            "p50": pct(fan, 0.5),
            "p99": pct(fan, 0.99),
        },
    )
    await fleet.stop()
    return out


async def big_part(nodes: int, pods: int, speed: float) -> dict[str, Any]:
    prof = profile.ClusterProfile.model_validate(
        {
            "name": "big",
            "region": "us-east",
            "nodePools": [
                {"name": "cpu", "count": nodes, "cpu": "64", "memory": "256Gi", "pods": 110}
            ],
        }
    )
    member = SimCluster(prof, settings=SETTINGS, history_limit=20_000)
    rss0 = rss_mib()
    t0 = time.monotonic()
    await member.start()
    startup = time.monotonic() - t0
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        t1 = time.monotonic()
        for d in range(10):
            async with session.post(
                f"{member.url}/apis/apps/v1/namespaces/default/deployments",
                json=deployment(f"big-{d}", pods // 10),
            ) as resp:
                assert resp.status == 201, await resp.text()
        await wait_running([member], pods, 150)
        result: dict[str, Any] = {
            "nodes": nodes,
            "pods": pods,
            "startup_seconds": round(startup, 2),
            "all_pods_running_seconds": round(time.monotonic() - t1, 2),
            "rss_mib": {"before": rss0, "with_pods": rss_mib()},
        }
        await settle([member])
        for what, url, n in (
            ("list_nodes_1000", f"{member.url}/api/v1/nodes", 20),
            ("list_pods_10000", f"{member.url}/api/v1/pods", 10),
            ("list_pods_page_500", f"{member.url}/api/v1/pods?limit=500", 50),
            (
                "list_pods_one_node_field_selector",
                f"{member.url}/api/v1/pods?fieldSelector=spec.nodeName%3Dbig-cpu-7",
                20,
            ),
        ):
            # The first list serialises every object once; later ones reuse the cached JSON.
            first, *samples = await remote_list_latency([url], n + 1)
            result[f"{what}_ms"] = {
                "first": round(first * 1000, 2),
                "p50": pct(samples, 0.5),
                "p99": pct(samples, 0.99),
                "n": n,
            }
    await member.stop()
    return result


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20_000, help="fleet pods in total")
    parser.add_argument("--big-nodes", type=int, default=1_000)
    parser.add_argument("--big-pods", type=int, default=10_000)
    parser.add_argument("--speed", type=float, default=60.0)
    args = parser.parse_args(argv)
    random.seed(7)
    t0 = time.monotonic()
    fleet = await fleet_part(args.pods, args.speed)
    big = await big_part(args.big_nodes, args.big_pods, args.speed)
    print(
        json.dumps(
            {"fleet": fleet, "big_cluster": big, "total_seconds": round(time.monotonic() - t0, 1)},
            indent=2,
        )
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--client"]:
        asyncio.run(client_main(int(sys.argv[2]), sys.argv[3:]))
    else:
        asyncio.run(main(sys.argv[1:]))
