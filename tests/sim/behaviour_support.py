"""Builders and waiters shared by the simulator's behaviour, fault, fleet and CLI tests.

Two ways to run a simulated cluster in a test: `running_cluster` serves a full
`SimCluster` over HTTP on a fast `SimClock` (for tests that go through
`kubernetes_asyncio`, kubectl or the admin routes), and `ManualCluster` runs the store and
controllers on a `ManualClock` with no HTTP at all (for deterministic timing tests).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from kubernetes_asyncio import client

from clusters.sim import controllers_nodes, profile
from clusters.sim.clock import ManualClock, SimClock
from clusters.sim.cluster import SimCluster
from clusters.sim.controllers import Controllers
from clusters.sim.controllers_base import Settings
from clusters.sim.resources import by_kind
from clusters.sim.store import ObjectStore

T = TypeVar("T")

NAMESPACE = by_kind("v1", "Namespace")
POD = by_kind("v1", "Pod")
NODE = by_kind("v1", "Node")
EVENT = by_kind("v1", "Event")
QUOTA = by_kind("v1", "ResourceQuota")
DEPLOYMENT = by_kind("apps/v1", "Deployment")
REPLICASET = by_kind("apps/v1", "ReplicaSet")
STATEFULSET = by_kind("apps/v1", "StatefulSet")
JOB = by_kind("batch/v1", "Job")
VCJOB = by_kind("batch.volcano.sh/v1alpha1", "Job")
PYTORCHJOB = by_kind("kubeflow.org/v1", "PyTorchJob")


def pool(
    name: str = "cpu",
    *,
    count: int = 2,
    arch: str = "amd64",
    cpu: str = "8",
    memory: str = "32Gi",
    gpus: int = 0,
    resource: str = "nvidia.com/gpu",
    model: str = "nvidia-a100-80gb",
    taints: list[dict[str, str]] | None = None,
    pods: int = 110,
) -> dict[str, Any]:
    """A node pool as it appears in a profile."""
    out: dict[str, Any] = {
        "name": name,
        "count": count,
        "arch": arch,
        "cpu": cpu,
        "memory": memory,
        "pods": pods,
    }
    if gpus:
        out["accelerators"] = [{"model": model, "resourceName": resource, "countPerNode": gpus}]
    if taints:
        out["taints"] = taints
    return out


def cluster_profile(
    name: str = "c1", *pools: dict[str, Any], **extra: Any
) -> profile.ClusterProfile:
    return profile.ClusterProfile.model_validate(
        {"name": name, "region": "us-east", "zone": "us-east-1a", "nodePools": list(pools), **extra}
    )


def container(
    name: str = "main",
    *,
    image: str = "busybox",
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": image, "resources": resources}


def pod_body(name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": list(containers) or [container()], **spec},
    }


def deployment_body(
    name: str, replicas: int, *containers: dict[str, Any], image: str = "nginx:1.27"
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": list(containers) or [container("web", image=image)]},
            },
        },
    }


def job_body(
    name: str,
    *,
    completions: int = 1,
    parallelism: int = 1,
    duration: str = "30s",
    fail: bool = False,
    backoff_limit: int = 6,
    containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    annotations = {"sim.fedctl.io/duration": duration}
    if fail:
        annotations["sim.fedctl.io/fail"] = "true"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": containers or [container()]},
            },
        },
    }


async def eventually(
    probe: Callable[[], Awaitable[T]] | Callable[[], T], *, timeout: float = 5.0
) -> T:
    """Poll `probe` until it returns something truthy; fail with its last value at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while True:
        result = probe()
        last = await result if asyncio.iscoroutine(result) else result
        if last:
            return last  # type: ignore[no-any-return]
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value: {last!r}")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running_cluster(
    prof: profile.ClusterProfile,
    *,
    speed: float = 100.0,
    settings: Settings | None = None,
    history_limit: int = 10_000,
) -> AsyncIterator[SimCluster]:
    """A started `SimCluster` on a fast clock; stopped afterwards."""
    member = SimCluster(
        prof,
        clock=SimClock(speed=speed),
        settings=settings,
        history_limit=history_limit,
        bookmark_interval=30.0,
    )
    await member.start()
    try:
        yield member
    finally:
        await member.stop()


@contextlib.asynccontextmanager
async def api_client(url: str) -> AsyncIterator[Any]:
    api = client.ApiClient(client.Configuration(host=url))
    try:
        yield api
    finally:
        await api.close()


class ManualCluster:
    """Store plus controllers on a `ManualClock`: time moves only when the test says so."""

    def __init__(self, prof: profile.ClusterProfile, *, settings: Settings | None = None) -> None:
        self.clock = ManualClock()
        self.store = ObjectStore(clock=self.clock)
        self.controllers = Controllers(self.store, self.clock, settings=settings)
        self.controllers.seed_nodes(controllers_nodes.build_nodes(prof, now="2026-01-01T00:00:00Z"))
        self.store.create(NAMESPACE, {"metadata": {"name": "default"}})
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ManualCluster:
        self._task = asyncio.create_task(self.controllers.run())
        await self.settle()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def settle(self) -> None:
        """Let the worker drain everything that is due now."""
        for _ in range(1000):
            await asyncio.sleep(0)
            if self.controllers.idle():
                for _ in range(5):
                    await asyncio.sleep(0)
                if self.controllers.idle():
                    return
        raise AssertionError("controllers never went idle")

    async def advance(self, seconds: float, *, step: float = 1.0) -> None:
        """Move simulated time forward in steps, draining the work queue after each."""
        await self.settle()
        moved = 0.0
        while moved < seconds:
            delta = min(step, seconds - moved)
            await self.clock.advance(delta)
            moved += delta
            await self.settle()

    def get(self, rt: Any, name: str, namespace: str | None = "default") -> dict[str, Any]:
        return self.store.get(rt, namespace, name)

    def events(self, reason: str) -> list[dict[str, Any]]:
        items, _ = self.store.list(EVENT)
        return [e for e in items if e["reason"] == reason]
