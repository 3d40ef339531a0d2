"""Benchmark of the cluster monitor; prints one JSON document.

A fleet of simulated members (default: `bench-100.yaml`, 100 clusters x 50 nodes) runs in
a child process (`fedctl sim up`), etcd in another (`EmbeddedEtcd`); this process runs only
the controller's ClusterMonitor, so its CPU and memory are the controller's. Phases:

1. join: every member is registered; time until all are Ready with capacity.
2. steady: nothing changes in the fleet; registry status writes per minute (goal: far
   below one per cluster per minute) and controller CPU over the window.
3. down: one member's API is closed (`down` fault over its admin HTTP API); time until
   its status says Ready=False (expected: failure threshold plus at most one period).

Bounded: `--duration` seconds in total (default 120); the steady window is whatever the
join and down phases leave. `python bench/monitor.py --duration 60`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from federation.monitor.monitor import ClusterMonitor  # noqa: E402
from federation.registry import codec, embedded, keys  # noqa: E402
from federation.registry.etcd import EtcdStore  # noqa: E402
from federation.settings import EtcdSettings, MemberSettings, MonitorSettings  # noqa: E402
from policies.models.cluster import Cluster, ClusterStatus  # noqa: E402

PROFILE = ROOT / "clusters" / "sim" / "profiles" / "bench-100.yaml"


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def start_fleet(
    profile: Path, kubeconfig: Path, timeout: float
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    state_file = kubeconfig.with_name(kubeconfig.name + ".fleet.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "federation.cli.main", "sim", "up", "--profile", str(profile),
         "--kubeconfig", str(kubeconfig)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"fleet exited: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        if state_file.exists():
            return proc, json.loads(state_file.read_text())
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("fleet did not start in time")


async def count_ready(statuses: codec.TypedStore[ClusterStatus], want: str) -> dict[str, str]:
    listed = await statuses.list(keys.prefix("clusterstatus"))
    out = {}
    for item in listed.items:
        cond = item.obj.condition("Ready")
        if cond is not None and cond.status == want and item.obj.flavors:
            out[keys.split(item.key)[-1]] = cond.status
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    began = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="fedctl-bench-monitor-"))
    kubeconfig = tmp / "fleet.kubeconfig"
    fleet, state = start_fleet(Path(args.profile), kubeconfig, timeout=120)
    etcd = embedded.EmbeddedEtcd()
    etcd.start()
    store = EtcdStore(EtcdSettings(endpoints=(etcd.url,)))
    await store.connect()
    settings = MonitorSettings(
        probe_period=args.probe_period, failure_threshold=args.failure_threshold
    )
    monitor = ClusterMonitor(store, settings=settings, member_settings=MemberSettings())
    clusters = codec.TypedStore(store, codec.Codec(Cluster))
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    names = sorted(state["clusters"])
    result: dict[str, Any] = {
        "members": len(names),
        "nodes_per_member": args.nodes_hint,
        "probe_period_s": settings.probe_period,
        "failure_threshold_s": settings.failure_threshold,
        "heartbeat_s": settings.heartbeat,
    }
    cpu0, rss0 = cpu_seconds(), rss_mib()
    task = asyncio.create_task(monitor.run())
    try:
        t0 = time.monotonic()
        for name in names:
            spec = {
                "metadata": {"name": name},
                "spec": {
                    "region": state["clusters"][name]["region"],
                    "connection": {"kubeconfigPath": str(kubeconfig), "context": name},
                },
            }
            await clusters.create(keys.cluster_key(name), Cluster.model_validate(spec))
        while len(await count_ready(statuses, "True")) < len(names):
            if time.monotonic() - t0 > 90:
                break
            await asyncio.sleep(0.5)
        result["join_all_ready_s"] = round(time.monotonic() - t0, 2)
        result["ready_after_join"] = len(await count_ready(statuses, "True"))
        down_budget = settings.failure_threshold + settings.probe_period + 5
        steady = max(10.0, args.duration - (time.monotonic() - began) - down_budget)
        # Let the join writes settle, then count writes over a quiet window.
        await asyncio.sleep(min(5.0, steady / 4))
        w0, c0, s0 = monitor.writes, cpu_seconds(), time.monotonic()
        await asyncio.sleep(steady)
        elapsed = time.monotonic() - s0
        writes = monitor.writes - w0
        result["steady_window_s"] = round(elapsed, 1)
        result["steady_writes_total"] = writes
        result["steady_writes_per_minute"] = round(writes * 60 / elapsed, 2)
        result["steady_writes_per_cluster_per_minute"] = round(
            writes * 60 / elapsed / len(names), 4
        )
        result["controller_cpu_percent_steady"] = round(100 * (cpu_seconds() - c0) / elapsed, 1)
        result["controller_rss_mib"] = rss_mib()
        result["controller_rss_growth_mib"] = round(rss_mib() - rss0, 1)
        victim = names[len(names) // 2]
        async with aiohttp.ClientSession() as session:
            admin = state["clusters"][victim]["adminUrl"]
            async with session.post(f"{admin}/fault", json={"mode": "down"}) as resp:
                resp.raise_for_status()
        t_down = time.monotonic()
        detected = None
        while time.monotonic() - t_down < down_budget + 30:
            stored = await statuses.get(keys.cluster_status_key(victim))
            if stored is not None and not stored.obj.ready():
                detected = time.monotonic() - t_down
                break
            await asyncio.sleep(0.1)
        result["down_to_not_ready_s"] = round(detected, 2) if detected is not None else None
        result["controller_cpu_seconds_total"] = round(cpu_seconds() - cpu0, 1)
        result["total_s"] = round(time.monotonic() - began, 1)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(task, 10)
        await store.close()
        etcd.cleanup()
        os.killpg(fleet.pid, signal.SIGTERM)
        try:
            fleet.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(fleet.pid, signal.SIGKILL)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds in total")
    parser.add_argument("--profile", default=str(PROFILE), help="fleet profile YAML")
    parser.add_argument("--probe-period", type=float, default=10.0)
    parser.add_argument("--failure-threshold", type=float, default=30.0)
    parser.add_argument("--nodes-hint", type=int, default=50, help="nodes per member, reported")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()
