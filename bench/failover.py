"""Benchmark of failover; prints one JSON document.

10 members, 1,000 one-replica workloads (100 per member), one member declared down: how
long failover takes to taint it (NoSchedule at once, NoExecute after the grace), to evict
every Binding on it, to see them all re-placed and, once the new placements report
healthy, to end every eviction task. Runs once with the default 30 s grace and once with
5 s. The goal: everything re-placed within grace + 2 s.

Real pieces: etcd (started here on a free loopback port) and the failover controller. The
monitor's part (flipping Ready=False) and the scheduler's and propagator's parts (putting
an evicted workload on another member, reporting it healthy there) are played by small
loops here, so the numbers are failover's own; the monitor adds its failure threshold
(MonitorSettings.failure_threshold, 30 s by default) before any of this starts.

`python bench/failover.py [--members N --workloads N --graces 30,5]`
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from federation import clock
from federation.failover.controller import FailoverController
from federation.registry import codec, embedded, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.settings import EtcdSettings, FailoverSettings
from policies.models.base import ObjectMeta
from policies.models.binding import (
    Binding,
    BindingSpec,
    BindingStatus,
    TargetCluster,
    WorkloadReference,
)
from policies.models.cluster import Cluster, ClusterStatus, Condition
from policies.models.work import ClusterWorkloadStatus, WorkloadStatus


def _binding(i: int, cluster: str) -> tuple[str, Binding]:
    name = f"app-{i:04d}"
    ref = keys.WorkloadRef("bench", "Deployment.apps", name)
    b = Binding(
        metadata=ObjectMeta(name=name, namespace="bench"),
        spec=BindingSpec(
            workload=WorkloadReference(
                api_version="apps/v1", kind="Deployment", namespace="bench", name=name
            ),
            clusters=[TargetCluster(name=cluster, replicas=1)],
        ),
        status=BindingStatus(phase="Scheduled"),
    )
    return keys.binding_key(ref), b


def _status(ready: bool) -> ClusterStatus:
    cond = Condition(
        type="Ready",
        status="True" if ready else "False",
        reason="ClusterReady" if ready else "ConnectionRefused",
        last_transition_time=clock.real.now(),
    )
    return ClusterStatus(conditions=[cond])


async def _seed(store: st.Store, members: list[str], workloads: int) -> None:
    clusters = codec.TypedStore(store, codec.Codec(Cluster))
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    for name in members:
        c = Cluster.model_validate({"metadata": {"name": name}, "spec": {"region": "r"}})
        await clusters.put(keys.cluster_key(name), c)
        await statuses.put(keys.cluster_status_key(name), _status(True))
    ops: list[st.Op] = []
    for i in range(workloads):
        key, b = _binding(i, members[i % len(members)])
        ops.append(bindings.put_op(key, b))
    for start in range(0, len(ops), 100):
        await store.commit(ops[start : start + 100])


async def _replacer(store: st.Store, healthy: list[str], moved: dict[str, float]) -> None:
    """The scheduler and the propagator: re-place each evicted Binding, report it healthy."""
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    wstatus = codec.TypedStore(store, codec.Codec(WorkloadStatus))
    turn = itertools.cycle(healthy)
    listed = await bindings.list(keys.prefix("bindings"))
    async for event in bindings.watch(keys.prefix("bindings"), start_revision=listed.revision + 1):
        if not isinstance(event, codec.Put):
            continue
        b = event.item.obj
        if b.status.phase != "Pending" or not b.spec.eviction_tasks or event.item.key in moved:
            continue
        target = next(turn)
        spec = b.spec.model_copy(update={"clusters": [TargetCluster(name=target, replicas=1)]})
        new = b.model_copy(update={"spec": spec, "status": BindingStatus(phase="Scheduled")})
        with contextlib.suppress(Exception):
            await bindings.update(event.item.key, new, revision=event.item.revision)
            moved[event.item.key] = time.monotonic()
            ref = keys.parse_workload_key(event.item.key)
            ws = WorkloadStatus(
                workload=b.spec.workload,
                health="Healthy",
                clusters=[ClusterWorkloadStatus(cluster=target, health="Healthy")],
            )
            await wstatus.put(keys.workload_status_key(ref), ws)


async def _one(url: str, *, members: int, workloads: int, grace: float) -> dict[str, Any]:
    store = EtcdStore(EtcdSettings(endpoints=[url]))
    await store.connect()
    for kv in (await store.list("/fedctl/")).items:
        await store.commit([st.Delete(kv.key)])
    names = [f"m{i:02d}" for i in range(members)]
    victim = names[0]
    await _seed(store, names, workloads)
    settings = FailoverSettings(eviction_grace=grace)
    ctl = FailoverController(store, settings=settings, workers=8)
    moved: dict[str, float] = {}
    tasks = [
        asyncio.create_task(ctl.run()),
        asyncio.create_task(_replacer(store, names[1:], moved)),
    ]
    on_victim = workloads // members
    try:
        await _until(lambda: ctl.queue.pending == 0, 30)
        statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
        t0 = time.monotonic()
        await statuses.put(keys.cluster_status_key(victim), _status(False))
        marks = ctl.timeline

        def first(what: str, detail: str = "") -> float | None:
            for m in marks:
                if m.what == what and m.cluster == victim and detail in m.detail:
                    return m.at.timestamp()
            return None

        await _until(lambda: len(moved) >= on_victim, grace + 60)
        t_replaced = max(moved.values()) - t0
        await _until(
            lambda: sum(1 for m in marks if m.what == "task-ended") >= on_victim, grace + 60
        )
        t_ready = time.monotonic() - t0
        wall0 = clock.real.now().timestamp() - (time.monotonic() - t0)
        taint_ns, taint_ne = first("taints", "NoSchedule"), first("taints", "NoExecute")
        evicted = [m.at.timestamp() for m in marks if m.what == "evicted"]
        return {
            "grace_s": grace,
            "members": members,
            "workloads": workloads,
            "on_failed_member": on_victim,
            "noschedule_taint_s": round(taint_ns - wall0, 3) if taint_ns else None,
            "noexecute_taint_s": round(taint_ne - wall0, 3) if taint_ne else None,
            "last_eviction_s": round(max(evicted) - wall0, 3) if evicted else None,
            "all_replaced_s": round(t_replaced, 3),
            "all_ready_tasks_ended_s": round(t_ready, 3),
            "goal_replaced_within_s": grace + 2,
            "goal_met": t_replaced <= grace + 2,
        }
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await store.close()


async def _until(probe: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not reached")
        await asyncio.sleep(0.01)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--graces", default="30,5", help="eviction graces to run, seconds")
    args = parser.parse_args()
    server = embedded.EmbeddedEtcd()
    server.start()
    try:
        runs = [
            await _one(server.url, members=args.members, workloads=args.workloads, grace=g)
            for g in (float(x) for x in args.graces.split(","))
        ]
    finally:
        server.cleanup()
    print(json.dumps({"benchmark": "failover", "runs": runs}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
