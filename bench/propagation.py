"""Benchmark of the propagator; prints one JSON document.

A fleet of simulated members (default 20, generated profile) runs in a child process
(`fedctl sim up`), etcd in another (`EmbeddedEtcd`), and the propagator alone in a third
(this file with `--controller`), so the CPU and memory reported are the controller's.
This process is the driver: it writes N Deployments with their Bindings into the registry
at a steady rate (`--targets` replicas divided 1 per member over that many members, as
the scheduler would write them; default one member each) and watches every member over
HTTP to time each copy's arrival and readiness.

Reported: member objects applied per second, time from the first write to every copy
ready, template-to-member latency (write of template + Binding → object visible in its
last member) p50/p99/max, controller CPU seconds and peak RSS. Goal: p99 ≤ 1 s at 5,000
workloads over 20 members. `python bench/propagation.py --workloads 500` for a quick run.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clusters import member  # noqa: E402
from clusters.kube import connector  # noqa: E402
from federation.registry import codec, embedded, keys, objects  # noqa: E402
from federation.registry import store as st  # noqa: E402
from federation.registry.etcd import EtcdStore  # noqa: E402
from federation.settings import EtcdSettings, MemberSettings, PropagationSettings  # noqa: E402
from policies.models.binding import Binding  # noqa: E402
from policies.models.cluster import Cluster, Connection  # noqa: E402
from policies.models.workload import Workload  # noqa: E402

PROFILE = """
generate:
  - namePrefix: prop
    count: {members}
    regions:
      - {{region: us-east, zones: [us-east-1a], provider: aws}}
      - {{region: eu-west, zones: [eu-west-1a], provider: gcp}}
    templates:
      - nodePools:
          - {{name: cpu, count: {nodes}, arch: amd64, cpu: "64", memory: 256Gi, pods: 250}}
"""


def start_fleet(
    profile: Path, kubeconfig: Path, speed: float
) -> tuple[subprocess.Popen[bytes], Any]:
    state_file = kubeconfig.with_name(kubeconfig.name + ".fleet.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "federation.cli.main", "sim", "up", "--profile", str(profile),
         "--kubeconfig", str(kubeconfig), "--speed", str(speed)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
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


def workload(i: int, replicas: int) -> Workload:
    name = f"svc-{i:05d}"
    return Workload.model_validate(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": f"team-{i % 10}"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "registry.example.com/app:1",
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                            }
                        ]
                    },
                },
            },
        }
    )


def binding(w: Workload, targets: list[str]) -> Binding:
    return Binding.model_validate(
        {
            "metadata": {"name": w.metadata.name, "namespace": w.namespace},
            "spec": {
                "workload": {
                    "apiVersion": w.api_version,
                    "kind": w.kind,
                    "namespace": w.namespace,
                    "name": w.metadata.name,
                },
                "clusters": [{"name": c, "replicas": 1} for c in targets],
            },
            "status": {"phase": "Scheduled"},
        }
    )


class Tracker:
    """When each (cluster, name) first appeared in its member, and when it was ready."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], float] = {}
        self.ready: dict[tuple[str, str], float] = {}

    async def follow(self, name: str, conn: member.Member) -> None:
        while True:
            try:
                async for event in conn.follow("apps/v1", "Deployment"):
                    items = event.items if isinstance(event, member.Relisted) else [event.object]
                    now = time.monotonic()
                    for obj in items:
                        self._take(name, obj, now)
            except member.MemberError:
                await asyncio.sleep(0.2)

    def _take(self, cluster: str, obj: dict[str, Any], now: float) -> None:
        key = (cluster, obj["metadata"]["name"])
        self.seen.setdefault(key, now)
        status = obj.get("status") or {}
        if status.get("readyReplicas", 0) >= (obj.get("spec") or {}).get("replicas", 1):
            self.ready.setdefault(key, now)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3) if ordered else 0.0


async def drive(args: argparse.Namespace, store: EtcdStore, names: list[str], kubeconfig: Path,
                controller: subprocess.Popen[bytes]) -> dict[str, Any]:  # fmt: skip
    tracker = Tracker()
    conns = [
        await connector.connect(n, Connection(kubeconfig_path=str(kubeconfig), context=n),
                                settings=MemberSettings(request_timeout=30))
        for n in names
    ]  # fmt: skip
    watchers = [
        asyncio.create_task(tracker.follow(n, c)) for n, c in zip(names, conns, strict=True)
    ]
    objs = codec.TypedStore(store, objects.ObjectCodec())
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    submitted: dict[str, float] = {}
    targets: dict[str, list[str]] = {}
    batch = max(1, int(args.rate / 10))
    began = time.monotonic()
    try:
        for start in range(0, args.workloads, batch):
            ops: list[st.Op] = []
            for i in range(start, min(args.workloads, start + batch)):
                w = workload(i, args.targets)
                where = [names[(i + k) % len(names)] for k in range(args.targets)]
                b = binding(w, where)
                ref = keys.WorkloadRef(w.namespace, "Deployment.apps", w.metadata.name)
                ops += [
                    objs.put_op(objects.key_for(w), w),
                    bindings.put_op(keys.binding_key(ref), b),
                ]
                targets[w.metadata.name] = where
            now = time.monotonic()
            await store.commit(ops)
            for i in range(start, min(args.workloads, start + batch)):
                submitted[f"svc-{i:05d}"] = now
            pause = began + (start + batch) / args.rate - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
        written = time.monotonic() - began
        want = {(c, n) for n, cs in targets.items() for c in cs}
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline and not want <= tracker.ready.keys():
            await asyncio.sleep(0.25)
        all_ready = max((tracker.ready.get(k, float("nan")) for k in want), default=began) - began
        latencies = [
            max(tracker.seen[(c, n)] for c in cs) - submitted[n]
            for n, cs in targets.items()
            if all((c, n) in tracker.seen for c in cs)
        ]
        arrivals = sorted(tracker.seen[k] for k in want if k in tracker.seen)
        span = (arrivals[-1] - began) if arrivals else 0.0
        return {
            "workloads": args.workloads,
            "members": len(names),
            "member_objects": len(want),
            "submit_rate_per_s": args.rate,
            "submit_s": round(written, 2),
            "objects_applied_per_s": round(len(arrivals) / span, 1) if span else None,
            "apply_to_all_ready_s": (
                round(all_ready, 2) if len(tracker.ready.keys() & want) == len(want) else None
            ),
            "ready_objects": len(tracker.ready.keys() & want),
            "template_to_member_p50_s": percentile(latencies, 0.50),
            "template_to_member_p99_s": percentile(latencies, 0.99),
            "template_to_member_max_s": round(max(latencies), 3) if latencies else None,
            "arrived_workloads": len(latencies),
        }  # fmt: skip
    finally:
        for task in watchers:
            task.cancel()
        for conn in conns:
            await conn.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="fedctl-bench-propagation-"))
    profile = tmp / "profile.yaml"
    nodes = max(2, (args.workloads * args.targets // args.members) // 200 + 1)
    profile.write_text(PROFILE.format(members=args.members, nodes=nodes))
    kubeconfig = tmp / "fleet.kubeconfig"
    fleet, state = start_fleet(profile, kubeconfig, args.speed)
    etcd = embedded.EmbeddedEtcd()
    etcd.start()
    store = EtcdStore(EtcdSettings(endpoints=(etcd.url,)))
    await store.connect()
    controller: subprocess.Popen[bytes] | None = None
    try:
        names = sorted(state["clusters"])
        clusters = codec.TypedStore(store, codec.Codec(Cluster))
        for name in names:
            spec = {
                "metadata": {"name": name},
                "spec": {
                    "region": state["clusters"][name]["region"],
                    "connection": {"kubeconfigPath": str(kubeconfig), "context": name},
                },
            }
            await clusters.create(keys.cluster_key(name), Cluster.model_validate(spec))
        controller = subprocess.Popen(  # noqa: ASYNC220 - started once, before any load
            [sys.executable, __file__, "--controller", etcd.url, "--workers", str(args.workers),
             "--concurrency", str(args.concurrency)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        assert controller.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(controller.stdout.readline), 120)
        if line.strip() != b"READY":
            err = controller.stderr.read().decode()[-2000:] if controller.stderr else ""
            raise RuntimeError(f"controller did not start: {line!r}\n{err}")
        result = await drive(args, store, names, kubeconfig, controller)
        result["nodes_per_member"] = nodes
    finally:
        if controller is not None:
            os.killpg(controller.pid, signal.SIGTERM)
            out, err = controller.communicate(timeout=30)
            lines = out.decode().strip().splitlines()
            stats = json.loads(lines[-1]) if lines else {"error": err.decode()[-500:]}
        await store.close()
        etcd.cleanup()
        os.killpg(fleet.pid, signal.SIGTERM)
        try:
            fleet.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(fleet.pid, signal.SIGKILL)
    result.update(stats)
    p99 = result.get("template_to_member_p99_s")
    result["goal_p99_le_1s"] = (
        p99 is not None and p99 <= 1.0 and result["arrived_workloads"] == args.workloads
    )
    return result  # fmt: skip


async def controller_main(args: argparse.Namespace) -> None:
    """The propagator alone, until SIGTERM; then its CPU and peak RSS as one JSON line."""
    from federation.propagation.controller import Propagator

    store = EtcdStore(EtcdSettings(endpoints=(args.controller,)))
    await store.connect()
    propagator = Propagator(
        store,
        settings=PropagationSettings(concurrency_per_member=args.concurrency),
        member_settings=MemberSettings(request_timeout=30),
        workers=args.workers,
    )
    timings: dict[str, list[float]] = {"sync": [], "apply": [], "commit": []}

    def timed(name: str, fn: Any) -> Any:
        async def wrapper(*a: Any, **kw: Any) -> Any:
            t = time.monotonic()
            try:
                return await fn(*a, **kw)
            finally:
                timings[name].append(time.monotonic() - t)

        return wrapper

    propagator.sync.sync = timed("sync", propagator.sync.sync)  # type: ignore[method-assign]
    propagator.applier.apply = timed("apply", propagator.applier.apply)  # type: ignore[method-assign]
    propagator.sync.records.commit = timed("commit", propagator.sync.records.commit)  # type: ignore[method-assign]
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    task = asyncio.create_task(propagator.run())
    await propagator.ready.wait()
    print("READY", flush=True)
    await stop.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, TimeoutError):
        await asyncio.wait_for(task, 10)
    await store.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "controller_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                "controller_peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
                "controller_member_applies": propagator.applier.applied,
                "controller_workers": args.workers,
                "concurrency_per_member": args.concurrency,
                **{
                    f"controller_{name}_p50_ms": round(1000 * percentile(values, 0.5), 1)
                    for name, values in timings.items()
                },
                **{
                    f"controller_{name}_p99_ms": round(1000 * percentile(values, 0.99), 1)
                    for name, values in timings.items()
                },
                "controller_syncs": len(timings["sync"]),
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument(
        "--targets", type=int, default=1, help="members per workload (1 replica each)"
    )
    parser.add_argument("--rate", type=float, default=35.0, help="workloads written per second")
    parser.add_argument("--speed", type=float, default=20.0, help="simulated time speed-up")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for ready")
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8, help="applies in flight per member")
    parser.add_argument("--controller", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.controller:
        profile_to = os.environ.get("FEDCTL_BENCH_PROFILE")
        if profile_to:
            import cProfile

            cProfile.runctx("asyncio.run(controller_main(args))", globals(), locals(), profile_to)
        else:
            asyncio.run(controller_main(args))
        return
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()
