"""`fedctl up --tour`: the scripted terminal tour `make demo` runs once the federation is up.

Fed by `up_cmd` (the API address, admin token, etcd URL, members kubeconfig and data
directory of the federation it just started); feeds the terminal. It writes two department
bursts into `<data-dir>/tour/` and then drives the federation only the way a person would:
by running `fedctl` commands (child processes talking to the REST API, or to etcd for
drills), printing each command as it would be typed and then its output. Between steps it
reads the API to wait for what the next step shows, always against a deadline: a step
that runs out of time says so and the tour carries on, so the dashboard is always left up.

Why child processes and not the command functions: what the tour prints is then exactly
what the reader gets by typing the same line into another terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federation import clock

__all__ = ["DRILL_CLUSTER", "FAST_FAILURE_DETECTION", "Tour", "burst_files", "prepare_env"]

# The tour's drill must finish in seconds, so failure is noticed sooner than in production
# (probe every 10s, Ready=False after 30s, NoExecute 30s later, Ready again after 30s of
# good probes). Set only when unset.
FAST_FAILURE_DETECTION = {
    "FEDCTL_MONITOR__PROBE_PERIOD": "1",
    "FEDCTL_MONITOR__FAILURE_THRESHOLD": "3",
    "FEDCTL_MONITOR__SUCCESS_THRESHOLD": "3",
    "FEDCTL_FAILOVER__EVICTION_GRACE": "3",
}

PROD_JOBS = ("eval-1", "eval-2", "eval-3", "eval-4")
RESEARCH_JOBS = ("sweep-1", "sweep-2", "sweep-3")
SERVICE = "embed-serve"
EVAL_SECONDS, SWEEP_SECONDS = 8, 10
DRILL_CLUSTER = "us-east-a100"
DRILL_FAULT_SECONDS, DRILL_SETTLE_SECONDS = 15, 30
TOUR_LABEL = "fedctl.io/tour"
STATUS = "/apis/status.fedctl.io/v1alpha1/workloads"
QUEUE_STATUS = "/apis/status.fedctl.io/v1alpha1/queues"


def prepare_env(environ: MutableMapping[str, str]) -> list[str]:
    """Shorten failure detection and return for the tour's drill; the settings it changed,
    for a note."""
    changed = []
    for name, value in FAST_FAILURE_DETECTION.items():
        if name not in environ:
            environ[name] = value
            changed.append(f"{name}={value}")
    return changed


_JOB = """\
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {ns}
  labels: {{{label}: burst}}
  annotations: {{fedctl.io/queue: {ns}}}
spec:
  template:
    metadata:
      # The simulated kubelet ends the pod after this long, as Succeeded.
      annotations: {{sim.fedctl.io/duration: {seconds}s}}
    spec:
      restartPolicy: Never
      tolerations:
        - {{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}
      containers:
        - name: {container}
          image: registry.example.com/ml/{container}:1.0
          resources:
            requests: {{cpu: "8", memory: 64Gi, nvidia.com/gpu: "{gpus}"}}
            limits: {{nvidia.com/gpu: "{gpus}"}}
"""

_POLICY = """\
---
# Every job of the burst in {ns}, whole in one cluster, on the cheapest chip that fits.
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: tour-{ns}
  namespace: {ns}
spec:
  resourceSelectors:
    - apiVersion: batch/v1
      kind: Job
      labelSelector:
        matchLabels: {{{label}: burst}}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Aggregated
  fedctl:
    chips: [{chips}]
    expectedDuration: 10m
    capacityType: on-demand
"""

_SERVICE = """\
---
# An embedding service on one GPU per replica, A100 or L4. It keeps running, so the drill
# on its cluster has something to move to the other GPU region.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: ml-prod
  labels: {{app: {name}}}
  annotations: {{fedctl.io/queue: ml-prod}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      tolerations:
        - {{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}
      containers:
        - name: server
          image: registry.example.com/ml/{name}:3.1
          resources:
            requests: {{cpu: "4", memory: 32Gi, nvidia.com/gpu: "1"}}
            limits: {{nvidia.com/gpu: "1"}}
---
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: {name}
  namespace: ml-prod
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: {name}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Aggregated
  fedctl:
    chips: [nvidia-a100-80gb, nvidia-l4]
    capacityType: on-demand
"""


def burst_files() -> dict[str, str]:
    """The two departments' submissions, by file name: ml-prod evaluations (4 GPUs each, L4
    or A100) and a GPU service; ml-research sweeps (2 H100 each), whose queue caps H100 at 4
    at once, so the third sweep waits on quota while the H100 node still has room."""

    def jobs(ns: str, names: tuple[str, ...], *, seconds: int, gpus: int, what: str) -> str:
        return "".join(
            _JOB.format(name=n, ns=ns, label=TOUR_LABEL, seconds=seconds, container=what, gpus=gpus)
            for n in names
        )

    prod = "# ml-prod: four evaluation jobs and an embedding service.\n"
    prod += jobs("ml-prod", PROD_JOBS, seconds=EVAL_SECONDS, gpus=4, what="eval")
    prod += _POLICY.format(ns="ml-prod", label=TOUR_LABEL, chips="nvidia-l4, nvidia-a100-80gb")
    prod += _SERVICE.format(name=SERVICE)
    research = "# ml-research: three sweeps on 2 H100 each; its queue allows 4 H100 at once.\n"
    research += jobs("ml-research", RESEARCH_JOBS, seconds=SWEEP_SECONDS, gpus=2, what="sweep")
    research += _POLICY.format(ns="ml-research", label=TOUR_LABEL, chips="nvidia-h100-80gb")
    return {"ml-prod.yaml": prod, "ml-research.yaml": research}


def _shown(path: Path) -> str:
    """`path` as a person in the current directory would type it."""
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


@dataclass
class Tour:
    """One run of the tour against a running federation."""

    server: str
    token: str
    etcd: str
    kubeconfig: Path
    data: Path
    out: Callable[[str], None] = field(default=lambda text: print(text, flush=True))
    problems: list[str] = field(default_factory=list)
    drilled: str = DRILL_CLUSTER

    @property
    def dir(self) -> Path:
        return self.data / "tour"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "FEDCTL_SERVER": self.server,
            "FEDCTL_TOKEN": self.token,
            "FEDCTL_ETCD": self.etcd,
            "KUBECONFIG": str(self.kubeconfig),
        }

    # -- plumbing ------------------------------------------------------------------------

    def heading(self, n: int, title: str) -> None:
        self.out(f"\n━━ Tour {n}/5 · {title} " + "━" * max(3, 60 - len(title)))

    async def fedctl(self, *args: str, timeout: float = 60.0) -> int:
        """Print `$ fedctl ARGS`, run it, print what it prints; its exit code (or -1)."""
        self.out("$ fedctl " + " ".join(args))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "federation.cli.main", *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=self.env(),
        )  # fmt: skip
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                async for line in proc.stdout:
                    self.out(line.decode(errors="replace").rstrip("\n"))
                return await proc.wait()
        except TimeoutError:
            self.note(f"`fedctl {args[0]}` did not finish within {timeout:g}s; stopped it")
            return -1
        finally:
            await _end(proc)

    def note(self, text: str) -> None:
        self.out(f"# {text}")

    async def wait(
        self, what: str, probe: Callable[[], Awaitable[bool]], *, timeout: float
    ) -> bool:
        """Poll `probe` until true; on the deadline say what did not happen and go on."""
        deadline = clock.real.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):  # the next poll answers; the deadline rules
                if await probe():
                    return True
            if clock.real.monotonic() >= deadline:
                self.problems.append(f"{what} (timed out)")
                self.note(f"timed out after {timeout:g}s waiting for {what}; carrying on")
                return False
            await clock.real.sleep(0.5)

    async def get(self, path: str) -> Any:
        from federation.cli import client

        async with client.ApiClient(self.server, token=self.token, timeout=10) as api:
            return await api.request("GET", path)

    async def workloads(self) -> dict[str, dict[str, Any]]:
        doc = await self.get(STATUS)
        return {f"{i['namespace']}/{i['name']}": i for i in doc["items"]}

    # -- the steps -----------------------------------------------------------------------

    async def run(self) -> bool:
        """Every step in order; True when none ran into trouble."""
        self.out(
            "\nThe tour runs fedctl commands as you would type them. In another terminal:\n"
            f"  export FEDCTL_SERVER={self.server} FEDCTL_TOKEN={self.token}\n"
            f"  export FEDCTL_ETCD={self.etcd} KUBECONFIG={_shown(self.kubeconfig)}"
        )
        steps = (self.submit, self.where, self.quota, self.drill)
        for n, step in enumerate(steps, start=1):
            try:
                await step(n)
            except Exception as exc:  # one broken step must not end the demo
                self.problems.append(f"step {n}")
                self.note(f"step {n} failed: {exc}; carrying on")
        return not self.problems

    async def submit(self, n: int) -> None:
        self.heading(n, "Submit a burst of jobs to two department queues")
        await self.wait("every member cluster Ready", self._clusters_ready, timeout=60)
        await self._forget_previous_tour()
        # The examples were just applied: until the scheduler has decided them, the queue
        # reads empty even though llm-finetune is about to take its GPUs.
        research = [r for r in await self.workloads() if r.startswith("ml-research/")]
        await self.wait("the examples in ml-research decided", self._decided(research), timeout=60)
        if not await self._research_gpus_free():
            self.note(
                "the example llm-finetune still holds ml-research's GPUs; waiting for it to"
                " finish, so that the queue's story below is the tour's own"
            )
            await self.wait("ml-research's GPUs to be free", self._research_gpus_free, timeout=60)
        self.dir.mkdir(parents=True, exist_ok=True)
        for name, text in burst_files().items():
            (self.dir / name).write_text(text, encoding="utf-8")
        self.note(f"{len(PROD_JOBS)} jobs and a service to queue ml-prod,")
        self.note(f"{len(RESEARCH_JOBS)} jobs to queue ml-research")
        await self.fedctl("apply", "-f", _shown(self.dir))

    async def where(self, n: int) -> None:
        self.heading(n, "Where they went, and why")
        mine = [f"ml-prod/{j}" for j in (*PROD_JOBS, SERVICE)]
        mine += [f"ml-research/{j}" for j in RESEARCH_JOBS]
        await self.wait(
            "the scheduler to place or queue every job", self._decided(mine), timeout=30
        )
        await self.fedctl("get", "workloads", "-A")
        self.note("one job in detail: every cluster's verdict, the division, the works")
        await self.fedctl("describe", "workload", f"ml-prod/{await self._overflow()}")

    async def quota(self, n: int) -> None:
        self.heading(n, "A job waiting on quota, admitted when another finishes")
        last = f"ml-research/{RESEARCH_JOBS[-1]}"
        if await self.wait(f"{last} to wait on its queue", lambda: self._pending(last), timeout=15):
            await self.fedctl("describe", "workload", last)
        self.note(
            f"queue ml-research may hold 4 H100 at once; {' and '.join(RESEARCH_JOBS[:-1])}"
            f" hold them for {SWEEP_SECONDS}s, then {RESEARCH_JOBS[-1]} is admitted"
        )
        start = clock.real.monotonic()
        if await self.wait(
            f"{last} to be admitted", lambda: self._placed(last), timeout=SWEEP_SECONDS * 3 + 30
        ):
            self.note(f"{last} admitted {clock.real.monotonic() - start:.0f}s later")
        await self.fedctl("get", "workloads", "-n", "ml-research")

    async def drill(self, n: int) -> None:
        service = f"ml-prod/{SERVICE}"
        await self.wait(f"{service} ready", lambda: self._ready(service), timeout=30)
        target = (_placement((await self.workloads()).get(service)) or [DRILL_CLUSTER])[0]
        self.heading(n, f"A failover drill on the GPU cluster {target}")
        self.note(
            f"{target} goes down for {DRILL_FAULT_SECONDS}s; {SERVICE} must move to the other"
            " GPU region, and no workload may be lost or run in two places"
        )
        report = self.dir / "drill"
        code = await self.fedctl(
            "drill", "run", "--cluster", target, "--fault", "down",
            "--duration", f"{DRILL_FAULT_SECONDS}s", "--settle", f"{DRILL_SETTLE_SECONDS}s",
            "--report", _shown(report),
            timeout=DRILL_FAULT_SECONDS + DRILL_SETTLE_SECONDS + 60,
        )  # fmt: skip
        self.drilled = target
        self.note(f"the report is also in {_shown(report)}/ (report.md, .json, timeline.svg)")
        if code != 0:
            self.problems.append(f"the drill (exit {code}: see its report)")

    # -- what the steps wait for ---------------------------------------------------------

    async def _clusters_ready(self) -> bool:
        from policies.models.cluster import ClusterStatus

        items = (await self.get("/apis/fedctl.io/v1alpha1/clusters"))["items"]
        return bool(items) and all(
            i.get("status") and ClusterStatus.model_validate(i["status"]).ready() for i in items
        )

    async def _research_gpus_free(self) -> bool:
        """Whether queue ml-research holds no GPUs (the queue status view, which charges
        as the scheduler does): step 3 shows its H100 cap, which only the tour's own
        sweeps should meet."""
        items = (await self.get(QUEUE_STATUS))["items"]
        held: dict[str, str] = {i["name"]: i["used"] for i in items}.get("ml-research", {})
        return held.get("nvidia.com/gpu", "0") == "0"

    async def _forget_previous_tour(self) -> None:
        """A second tour on the same data directory starts from nothing again."""
        names = {f"ml-prod/{j}" for j in (*PROD_JOBS, SERVICE)}
        names |= {f"ml-research/{j}" for j in RESEARCH_JOBS}
        if not names & set(await self.workloads()) or not self.dir.exists():
            return
        self.note("removing the previous tour's workloads first")
        await self.fedctl("delete", "-f", _shown(self.dir))

        async def gone() -> bool:
            return not names & set(await self.workloads())

        await self.wait("the previous tour's workloads to go", gone, timeout=30)

    def _decided(self, refs: list[str]) -> Callable[[], Awaitable[bool]]:
        async def probe() -> bool:
            items = await self.workloads()
            return all(_placement(items.get(r)) or _reason(items.get(r)) for r in refs)

        return probe

    async def _overflow(self) -> str:
        """The ml-prod job that did not get the cheapest cluster, else the first."""
        items = await self.workloads()
        for job in PROD_JOBS:
            if "ap-southeast-l4" not in _placement(items.get(f"ml-prod/{job}")):
                return job
        return PROD_JOBS[0]

    async def _pending(self, ref: str) -> bool:
        return bool(_reason((await self.workloads()).get(ref)))

    async def _placed(self, ref: str) -> bool:
        return bool(_placement((await self.workloads()).get(ref)))

    async def _ready(self, ref: str) -> bool:
        status = ((await self.workloads()).get(ref) or {}).get("status") or {}
        return status.get("health") == "Healthy"

    def closing(self, *, dashboard: str, token: str) -> None:
        """The last screen: what went wrong if anything, and where to look next."""
        self.heading(5, "Explore")
        if self.problems:
            self.out("The tour ran into trouble at: " + "; ".join(self.problems))
        else:
            self.out("The tour completed every step.")
        self.out(
            f"Everything is still running.\n"
            f"  dashboard:    {dashboard}  (admin token: {token})\n"
            f"  try:          fedctl get workloads -A; fedctl cost; fedctl drill list;"
            f" kubectl get pods -A --context {self.drilled}\n"
            f"Ctrl-C to stop."
        )


def _placement(item: Mapping[str, Any] | None) -> list[str]:
    spec = ((item or {}).get("binding") or {}).get("spec") or {}
    return [t["name"] for t in spec.get("clusters", []) if t.get("replicas", 0) > 0]


def _reason(item: Mapping[str, Any] | None) -> str:
    return str((((item or {}).get("binding") or {}).get("status") or {}).get("reason") or "")


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Stop a child that is still running: SIGINT lets a drill heal its member first."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)
    try:
        await asyncio.wait_for(proc.wait(), timeout=10)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
