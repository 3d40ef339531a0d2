"""Benchmark of the controller's scheduling loop at scale; prints one JSON document.

bench/scheduler.py times one decision cycle on jobs handed to it. What a user waits for is
the loop around it: every change (a job submitted, a monitor status write) costs a whole
cycle - snapshot build, reconcile over every workload and Binding, a Usage of every
admission, `run_cycle`, the write - so with many workloads already admitted that overhead,
not the decisions, sets how long a new job waits for its Binding.

Real pieces: etcd (started here on a free loopback port), the registry codecs, and
`SchedulerLoop` itself (real clock, list+watch mirrors, binder), run through `run()` as the
controller runs it. The loop is subclassed only to time each `cycle_once` and keep the
binder `run()` made. The fleet is bench/scheduler.py's `make_fleet` (`--clusters` clusters,
about 20 node flavors each), stored as Clusters plus the monitor's ClusterStatuses; no
monitor, propagator or member runs.

Setup: `--admitted` small CPU workloads (Deployments and Jobs, 1-3 replicas, default queue,
a Queue with a capability far above their sum) are written in transactions of 100, then a
SchedulerLoop with `cycle_batch` = `--admitted` admits them all itself and writes their
Scheduled Bindings (with the fingerprints it stores on them) through its binder; it is then
stopped and a fresh loop measured:

- load_s: from `run()` to the first cycle done (mirrors listed, binder loaded, one cycle);
  first_cycle_s is that cycle alone, replaced_on_load what it decided (0: nothing re-placed).
- idle_cycle_s: `cycle_once` called directly on the running loop while nothing changed and
  no cycle of its own runs, with the binder `run()` made: the floor every change pays.
- status_write_cycle_s: one ClusterStatus rewritten (heartbeat bumped); the cycle it
  triggers, timed around `cycle_once`; status_write_to_idle_s adds the debounce and the
  watch. A loop that does not cycle on it reports 0 and status_write_cycles_triggered 0.
- submit_to_bound_s: one Deployment put; until its Binding is read back from etcd Scheduled
  (a get every 2 ms).
- burst_1000_s: `--burst` workloads put in transactions of 100 back to back; until a watch
  on their Bindings has seen every one Scheduled. Both run in a client process of their
  own, as users' clients do, not under the measured loop's interpreter lock. Bursts stay
  admitted, so later runs see slightly more workloads (admitted_at_end).
- queue_status_from_loop_s / _from_registry_s: the queue status view (`fedctl get
  queues`, the dashboard) answered from the loop's latest cycle, as the controller does,
  and from a registry read, as a replica that does not lead does; each with the largest
  event-loop lag meanwhile.
- backlog_all_bound_s: a sweep of `--backlog` one-pod Jobs put at once (after the bursts,
  once); until every one is Scheduled, with backlog_jobs_per_s and the cycles it took, and
  how late a 10 ms timer fired on the event loop meanwhile (the API, the watches and the
  lease renewal share it): backlog_event_loop_lag_max_s and _p99_s.
Each of the others runs `--repeats` times (idle cycles 2x); p50 and max, seconds.
peak_rss_mib includes the setup loop; rss_after_load_mib is the process with the measured
loop loaded.

`python bench/loop.py [--clusters N --admitted N --burst N --backlog N --repeats N
--debounce S]`
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import random
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from bench.scheduler import make_fleet
from federation import clock
from federation.api import queue_status
from federation.registry import codec, embedded, keys, objects
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.scheduler import binder as binder_mod
from federation.scheduler import cycle, queue_view
from federation.scheduler.loop import SchedulerLoop
from federation.settings import EtcdSettings, SchedulerSettings
from policies.models.binding import Binding
from policies.models.cluster import ClusterStatus
from policies.models.queue import Queue
from policies.models.workload import Workload

BATCH = 100
POLL = 0.002
OBJECTS = objects.ObjectCodec()
BINDINGS = codec.Codec(Binding)
STATUSES = codec.Codec(ClusterStatus)


class TimedLoop(SchedulerLoop):
    """The controller's loop, each cycle timed, the binder `run()` made kept."""

    def __init__(self, store: st.Store, *, settings: SchedulerSettings, debounce: float) -> None:
        super().__init__(
            store,
            settings=settings,
            clock=clock.real,
            debounce=debounce,
            queue_view=queue_view.Published(),  # as the controller runs it
        )
        self.durations: list[float] = []
        self.busy = False
        self.ended = 0.0
        self.binder: binder_mod.Binder | None = None

    async def cycle_once(self, binder: binder_mod.Binder) -> cycle.CycleResult:
        self.binder, self.busy = binder, True
        began = time.perf_counter()
        try:
            return await super().cycle_once(binder)
        finally:
            self.ended = time.perf_counter()
            self.durations.append(self.ended - began)
            self.busy = False


def workload(name: str, namespace: str, *, kind: str, replicas: int, cpu: str) -> Workload:
    pod = {
        "containers": [
            {
                "name": "app",
                "image": "registry.example.com/bench/app:1",
                "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}},
            }
        ]
    }
    if kind == "Job":
        api = "batch/v1"
        spec: dict[str, Any] = {
            "parallelism": replicas,
            "template": {"spec": {**pod, "restartPolicy": "Never"}},
        }
    else:
        api, spec = "apps/v1", {"replicas": replicas, "template": {"spec": pod}}
    return Workload.model_validate(
        {
            "apiVersion": api,
            "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


def admitted_mix(count: int, rng: random.Random) -> list[Workload]:
    """Small CPU services and jobs: all fit, so every one is admitted and none waits."""
    return [
        workload(
            f"app-{i:06d}",
            "bench",
            kind="Job" if rng.random() < 0.2 else "Deployment",
            replicas=rng.randint(1, 3),
            cpu=rng.choice(["100m", "250m", "500m"]),
        )
        for i in range(count)
    ]


def binding_key(w: Workload) -> str:
    return keys.binding_key(objects.workload_ref(w))


async def commit(store: st.Store, ops: Sequence[st.Op]) -> None:
    """In transactions of BATCH, as the binder writes."""
    for start in range(0, len(ops), BATCH):
        await store.commit(ops[start : start + BATCH])


async def put_all(store: st.Store, items: Sequence[Any]) -> None:
    """Objects as the API stores them (workloads, clusters, policies), each transaction
    encoded just before it is sent, so a large put never holds the event loop long."""
    typed = codec.TypedStore(store, OBJECTS)
    for start in range(0, len(items), BATCH):
        chunk = items[start : start + BATCH]
        await store.commit([typed.put_op(objects.key_for(obj), obj) for obj in chunk])


async def seed_fleet(store: st.Store, clusters: int, rng: random.Random) -> str:
    """Clusters, their statuses as the monitor writes them, and the default Queue; returns
    the name of a cluster whose status the bench rewrites later."""
    fleet = make_fleet(clusters, rng)
    await put_all(store, fleet)
    now = clock.real.now()
    statuses = codec.TypedStore(store, STATUSES)
    beat = {"last_heartbeat": now}
    await commit(
        store,
        [
            statuses.put_op(keys.cluster_status_key(c.name), c.status.model_copy(update=beat))
            for c in fleet
            if c.status is not None
        ],
    )
    queue = Queue.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {"capability": {"cpu": "100000000", "memory": "100000Ti"}},
        }
    )
    await put_all(store, [queue])
    return fleet[0].name


async def settle(loop: TimedLoop, task: asyncio.Task[None], *, timeout: float) -> None:
    """Until the loop has finished a cycle and stayed idle for a while: nothing in flight."""
    quiet = 0.1 + 5 * loop.debounce
    deadline = time.perf_counter() + timeout
    while loop.busy or not loop.ended or time.perf_counter() - loop.ended < quiet:
        if task.done():
            task.result()  # the loop failed: its error, not a timeout
            raise RuntimeError("scheduling loop ended")
        if time.perf_counter() > deadline:
            raise TimeoutError("scheduling loop did not go idle")
        await asyncio.sleep(0.01)


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def admit(store: st.Store, workloads: list[Workload], *, timeout: float) -> dict[str, Any]:
    """Let a loop admit every workload in one cycle and write their Bindings, then stop it."""
    began = time.perf_counter()
    await put_all(store, workloads)
    written = time.perf_counter() - began
    settings = SchedulerSettings(cycle_batch=max(len(workloads), 1))
    loop = TimedLoop(store, settings=settings, debounce=0.02)
    task = asyncio.create_task(loop.run())
    began = time.perf_counter()
    try:
        await settle(loop, task, timeout=timeout)
        admit_s = loop.ended - began
    finally:
        await stop(task)
    stored = (await store.list(keys.prefix("bindings"))).items
    scheduled = sum(
        1 for kv in stored if BINDINGS.decode(kv.key, kv.value).status.phase == "Scheduled"
    )
    if scheduled != len(workloads):
        raise RuntimeError(f"setup admitted {scheduled} of {len(workloads)} workloads")
    return {
        "method": "a SchedulerLoop with cycle_batch=admitted admitted them, wrote the Bindings",
        "workloads_written_s": round(written, 2),
        "admit_and_bind_s": round(admit_s, 2),
        "admit_cycle_s": round(loop.durations[0], 3),
        "binding_bytes_avg": round(sum(len(kv.value) for kv in stored) / len(stored)),
    }


def summary(values: Sequence[float]) -> dict[str, Any]:
    """Median, maximum and each run, to the microsecond: at 0.1 ms a fast view's run
    (the queue status a loop answers from memory) read as 0."""
    return {
        "p50": round(statistics.median(values), 6),
        "max": round(max(values), 6),
        "runs": [round(v, 6) for v in values],
    }


def rss_mib() -> float | None:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


async def load(
    store: st.Store, settings: SchedulerSettings, debounce: float, *, timeout: float
) -> tuple[TimedLoop, asyncio.Task[None], float]:
    """A fresh loop started as the controller starts it; returns once its first cycle ran."""
    loop = TimedLoop(store, settings=settings, debounce=debounce)
    began = time.perf_counter()
    task = asyncio.create_task(loop.run())
    ready = asyncio.create_task(loop.ready.wait())
    await asyncio.wait({task, ready}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    took = time.perf_counter() - began
    if not ready.done():
        ready.cancel()
        if task.done():
            task.result()
        await stop(task)
        raise TimeoutError(f"scheduling loop not ready within {timeout:g}s")
    return loop, task, took


async def submit_one(store: st.Store, w: Workload, *, timeout: float) -> float:
    key = binding_key(w)
    began = time.perf_counter()
    await put_all(store, [w])
    deadline = began + timeout
    while True:
        kv = await store.get(key)
        if kv is not None and BINDINGS.decode(key, kv.value).status.phase == "Scheduled":
            return time.perf_counter() - began
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{key} not Scheduled within {timeout:g}s")
        await asyncio.sleep(POLL)


async def burst(
    url: str,
    namespace: str,
    names: Sequence[str],
    *,
    kind: str,
    cpu: str,
    timeout: float,
    lags: list[float] | None = None,
) -> tuple[float, float, int]:
    """Seconds until every Binding is Scheduled, until the first, and how many were; with
    `lags`, this event loop's lag meanwhile (`_lag`), from the first put on.

    The submitter and the watcher run in a process of their own (`client`), as users'
    clients do: run here, they took about a third of the interpreter the loop needs (its
    watches and writes run on this event loop and its cycle in a thread under the same
    GIL), so the sweep measured them as much as the controller."""
    spec = {
        "url": url,
        "namespace": namespace,
        "names": list(names),
        "kind": kind,
        "cpu": cpu,
        "timeout": timeout,
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--client",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write(json.dumps(spec).encode() + b"\n")
        await child.stdin.drain()
        async with asyncio.timeout(timeout):
            ready = await child.stdout.readline()  # built and connected
        lag = asyncio.create_task(_lag(lags)) if lags is not None else None
        try:
            child.stdin.write(b"go\n")
            await child.stdin.drain()
            async with asyncio.timeout(timeout):
                line = await child.stdout.readline()
        finally:
            if lag is not None:
                await stop(lag)
        if not ready or not line:
            raise RuntimeError(f"bench client exited with {await child.wait()} before its result")
        result = json.loads(line)
    finally:
        if child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await child.wait()
    return result["all_s"], result["first_s"], result["got"]


async def client(spec: dict[str, Any], go: Callable[[], Awaitable[object]]) -> dict[str, Any]:
    """`burst`'s other process: builds the workloads and connects, then once `go` returns
    puts them (transactions of 100) while a watch waits for every Binding to be Scheduled;
    the clock starts at the first put, as a user's would."""
    namespace, timeout = spec["namespace"], spec["timeout"]
    workloads = [
        workload(n, namespace, kind=spec["kind"], replicas=1, cpu=spec["cpu"])
        for n in spec["names"]
    ]
    store = EtcdStore(EtcdSettings(endpoints=(spec["url"],)))
    await store.connect()
    try:
        prefix = f"{keys.prefix('bindings')}{namespace}/"
        wanted = {binding_key(w) for w in workloads}
        start = await store.current_revision() + 1
        seen: set[str] = set()
        first = 0.0

        async def watch() -> None:
            nonlocal first
            typed = codec.TypedStore(store, BINDINGS)
            async for event in typed.watch(prefix, start_revision=start):
                if isinstance(event, codec.Put) and event.item.obj.status.phase == "Scheduled":
                    seen.add(event.item.key)
                    first = first or time.perf_counter() - began
                    if wanted <= seen:
                        return

        await go()
        began = time.perf_counter()
        watcher = asyncio.create_task(watch())
        await put_all(store, workloads)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await asyncio.shield(watcher)
        elapsed = time.perf_counter() - began
        await stop(watcher)
    finally:
        await store.close()
    return {"all_s": elapsed, "first_s": first, "got": len(wanted & seen)}


async def status_write(
    store: st.Store, loop: TimedLoop, cluster: str, *, timeout: float
) -> tuple[float, float, int]:
    """The cycle a heartbeat write triggers: its duration, put-to-idle, cycles it caused."""
    key = keys.cluster_status_key(cluster)
    typed = codec.TypedStore(store, STATUSES)
    current = await typed.get(key)
    if current is None:
        raise RuntimeError(f"no status for {cluster}")
    cycles, done = loop.cycles, len(loop.durations)
    bumped = current.obj.model_copy(update={"last_heartbeat": clock.real.now()})
    began = time.perf_counter()
    revision = (await typed.put(key, bumped)).revision
    quiet = 0.25 + 5 * loop.debounce
    deadline = began + timeout
    seen_at: float | None = None
    while True:
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError("status write: loop did not settle")
        mirrored = loop.statuses.items.get(key)
        if seen_at is None and mirrored is not None and mirrored.revision >= revision:
            seen_at = now
        if loop.cycles > cycles and not loop.busy:
            return loop.durations[done], loop.ended - began, loop.cycles - cycles
        if seen_at is not None and not loop.busy and now - seen_at > quiet:
            return 0.0, 0.0, 0  # seen and no cycle followed: the write cost no cycle
        await asyncio.sleep(POLL)


async def measure_loads(
    store: st.Store, settings: SchedulerSettings, args: argparse.Namespace
) -> tuple[TimedLoop, asyncio.Task[None], dict[str, Any]]:
    """`--repeats` fresh loads; the last loop is left running for the other measurements."""
    loads: list[float] = []
    firsts: list[float] = []
    replaced = 0
    while True:
        loop, task, took = await load(store, settings, args.debounce, timeout=args.timeout)
        loads.append(took)
        firsts.append(loop.durations[0])
        replaced += loop.last.decisions if loop.last else 0
        if len(loads) == args.repeats:
            break
        await stop(task)
        del loop, task
        gc.collect()
    return (
        loop,
        task,
        {
            "load_s": summary(loads),
            "first_cycle_s": summary(firsts),
            "replaced_on_load": replaced,
            "rss_after_load_mib": rss_mib(),
        },
    )


async def measure_idle(
    loop: TimedLoop, task: asyncio.Task[None], args: argparse.Namespace
) -> dict[str, Any]:
    """Cycles with nothing changed, run directly while the loop's own cycles wait on a
    change that does not come; the binder is the one `run()` made."""
    idle, decisions = [], 0
    for _ in range(2 * args.repeats):
        await settle(loop, task, timeout=args.timeout)
        if loop.binder is None:
            raise RuntimeError("cycle_once was never called through the subclass")
        began = time.perf_counter()
        decisions += (await loop.cycle_once(loop.binder)).decisions
        idle.append(time.perf_counter() - began)
    return {"idle_cycle_s": summary(idle), "idle_cycle_decisions": decisions}


async def measure_status(
    store: st.Store, loop: TimedLoop, task: asyncio.Task[None], cluster: str, args: Any
) -> dict[str, Any]:
    cycle_s, to_idle, triggered = [], [], 0
    for _ in range(args.repeats):
        await settle(loop, task, timeout=args.timeout)
        one, whole, n = await status_write(store, loop, cluster, timeout=args.timeout)
        cycle_s.append(one)
        to_idle.append(whole)
        triggered += n
    return {
        "status_write_cycle_s": summary(cycle_s),
        "status_write_to_idle_s": summary(to_idle),
        "status_write_cycles_triggered": triggered,
    }


async def measure_submits(
    store: st.Store, loop: TimedLoop, task: asyncio.Task[None], args: argparse.Namespace
) -> dict[str, Any]:
    submits = []
    for r in range(args.repeats):
        await settle(loop, task, timeout=args.timeout)
        w = workload(f"submit-{r}", "bench", kind="Deployment", replicas=1, cpu="250m")
        submits.append(await submit_one(store, w, timeout=args.timeout))
    return {"submit_to_bound_s": summary(submits)}


async def measure_bursts(
    store: st.Store, loop: TimedLoop, task: asyncio.Task[None], args: argparse.Namespace
) -> dict[str, Any]:
    took, first, landed, cycles = [], [], [], []
    for r in range(args.repeats):
        await settle(loop, task, timeout=args.timeout)
        ns = f"burst-{r}"
        names = [f"job-{j:05d}" for j in range(args.burst)]
        before = loop.cycles
        all_s, first_s, got = await burst(
            args.url, ns, names, kind="Deployment", cpu="100m", timeout=args.timeout
        )
        took.append(all_s)
        first.append(first_s)
        landed.append(got)
        # The last Binding can be seen before the cycle that wrote it has returned (it
        # counts itself after its writes): let it finish before counting.
        await settle(loop, task, timeout=args.timeout)
        cycles.append(loop.cycles - before)
    return {
        "burst": args.burst,
        "burst_1000_s": summary(took),
        "burst_first_bound_s": summary(first),
        "burst_bound_min": min(landed),
        "burst_cycles": cycles,
    }


async def measure_queue_status(
    store: st.Store, loop: TimedLoop, task: asyncio.Task[None], args: argparse.Namespace
) -> dict[str, Any]:
    """The queue status view (what `fedctl get queues` and the dashboard read), each of
    `--repeats` calls to a fresh route so none is served from a kept answer: from the
    leading loop's latest cycle, as the controller answers, and from a read of the
    registry, as a replica that does not lead answers; with this event loop's lag meanwhile.
    """
    await settle(loop, task, timeout=args.timeout)
    request = make_mocked_request("GET", queue_status.QUEUES_PATH)
    report: dict[str, Any] = {}
    for name, source in (("from_loop", loop.queue_view), ("from_registry", None)):
        took, lags = [], []
        for _ in range(args.repeats):
            api = queue_status.QueueStatusApi(store, source=source)
            lag = asyncio.create_task(_lag(lags))
            began = time.perf_counter()
            response = await api.list_queues(request)
            took.append(time.perf_counter() - began)
            await stop(lag)
            assert isinstance(response, web.Response) and response.text is not None
            assert json.loads(response.text)["source"] == ("scheduler" if source else "registry")
        report[f"queue_status_{name}_s"] = summary(took)
        report[f"queue_status_{name}_event_loop_lag_max_s"] = round(max(lags, default=0.0), 3)
    return report


async def _lag(lags: list[float], tick: float = 0.01) -> None:
    """How late a 10 ms timer fires on the controller's event loop, every tick: what the
    API, the watches and the lease renewal would wait meanwhile."""
    while True:
        began = time.perf_counter()
        await asyncio.sleep(tick)
        lags.append(max(time.perf_counter() - began - tick, 0.0))


async def measure_backlog(
    store: st.Store, loop: TimedLoop, task: asyncio.Task[None], args: argparse.Namespace
) -> dict[str, Any]:
    """A sweep submitted at once: `--backlog` small jobs put back to back (transactions of
    100) while the admitted ones stand; until every one is bound. The loop runs with the
    controller's defaults, so this is what a user waits for, cycle batching included."""
    if args.backlog <= 0:
        return {}
    await settle(loop, task, timeout=args.timeout)
    ns = "backlog"
    names = [f"sweep-{j:06d}" for j in range(args.backlog)]
    before = loop.cycles
    lags: list[float] = []
    all_s, first_s, got = await burst(
        args.url, ns, names, kind="Job", cpu="100m", timeout=args.timeout, lags=lags
    )
    await settle(loop, task, timeout=args.timeout)  # the writing cycle counts itself last
    return {
        "backlog": args.backlog,
        "backlog_event_loop_lag_max_s": round(max(lags, default=0.0), 3),
        "backlog_event_loop_lag_p99_s": round(
            statistics.quantiles(lags, n=100, method="inclusive")[98] if len(lags) > 1 else 0.0, 3
        ),
        "backlog_all_bound_s": round(all_s, 2),
        "backlog_first_bound_s": round(first_s, 3),
        "backlog_bound": got,
        "backlog_jobs_per_s": round(got / all_s) if all_s > 0 else 0,
        "backlog_cycles": loop.cycles - before,
    }


async def measure(args: argparse.Namespace, url: str) -> dict[str, Any]:
    rng = random.Random(args.seed)
    store = EtcdStore(EtcdSettings(endpoints=(url,)))
    await store.connect()
    report: dict[str, Any] = {
        "benchmark": "scheduler-loop",
        "clusters": args.clusters,
        "admitted": args.admitted,
        "debounce_s": args.debounce,
        "repeats": args.repeats,
    }
    try:
        began = time.perf_counter()
        cluster = await seed_fleet(store, args.clusters, rng)
        fleet_s = time.perf_counter() - began
        report["setup"] = {"fleet_written_s": round(fleet_s, 2)} | await admit(
            store, admitted_mix(args.admitted, rng), timeout=args.timeout
        )
        gc.collect()
        loop, task, loads = await measure_loads(store, SchedulerSettings(), args)
        report |= loads
        try:
            report |= await measure_idle(loop, task, args)
            report |= await measure_status(store, loop, task, cluster, args)
            report |= await measure_submits(store, loop, task, args)
            report |= await measure_bursts(store, loop, task, args)
            report |= await measure_queue_status(store, loop, task, args)
            report |= await measure_backlog(store, loop, task, args)
            await settle(loop, task, timeout=args.timeout)
            report["admitted_at_end"] = sum(
                1 for i in loop.bindings.items.values() if i.obj.status.phase == "Scheduled"
            )
            report["loop_cycles"] = loop.cycles
        finally:
            await stop(task)
    finally:
        await store.close()
    report["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return report


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--admitted", type=int, default=20_000)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backlog", type=int, default=20_000, help="sweep size; 0: skip")
    parser.add_argument("--debounce", type=float, default=0.02)
    parser.add_argument("--timeout", type=float, default=300.0, help="deadline per wait, s")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.admitted < 1 or args.burst < 1 or args.clusters < 1:
        parser.error("--repeats, --admitted, --burst and --clusters must be at least 1")
    return args


async def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole benchmark on an etcd of its own; the report as a dict."""
    args = parse(argv)
    server = embedded.EmbeddedEtcd()
    server.start()
    try:
        args.url = server.url
        return await measure(args, server.url)
    finally:
        server.cleanup()


def main() -> None:
    if sys.argv[1:] == ["--client"]:
        spec = json.loads(sys.stdin.readline())

        async def go() -> str:
            sys.stdout.write("ready\n")
            sys.stdout.flush()
            return await asyncio.to_thread(sys.stdin.readline)

        result = asyncio.run(client(spec, go))
        sys.stdout.write(json.dumps(result) + "\n")
        return
    report = asyncio.run(run())
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
