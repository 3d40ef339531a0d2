"""Fixtures for the simulator's tests: one simulated cluster's API served on loopback.

`sim_server` serves a fresh `ObjectStore` through `build_app` on a free 127.0.0.1 port and
hands out a `kubernetes_asyncio` client configured for it, so tests exercise the same HTTP
path the controller and kubectl use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from clusters.sim.clock import SimClock
from clusters.sim.resources import by_kind
from clusters.sim.server import ClusterInfo, build_app
from clusters.sim.store import ObjectStore


@dataclass
class SimServer:
    store: ObjectStore
    url: str
    api: Any  # kubernetes_asyncio.client.ApiClient

    @property
    def core(self) -> Any:
        return client.CoreV1Api(self.api)

    @property
    def apps(self) -> Any:
        return client.AppsV1Api(self.api)

    @property
    def batch(self) -> Any:
        return client.BatchV1Api(self.api)

    @property
    def coordination(self) -> Any:
        return client.CoordinationV1Api(self.api)

    @property
    def custom(self) -> Any:
        return client.CustomObjectsApi(self.api)


async def serve(
    store: ObjectStore, *, info: ClusterInfo | None = None, **kwargs: Any
) -> tuple[web.AppRunner, str]:
    """Serve `store` on a free loopback port; returns the runner and base URL."""
    app = build_app(store, info=info or ClusterInfo(name="test"), **kwargs)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


@pytest.fixture
async def sim_server() -> AsyncIterator[SimServer]:
    store = ObjectStore(clock=SimClock(speed=1.0))
    runner, url = await serve(store, bookmark_interval=0.2)
    api = client.ApiClient(client.Configuration(host=url))
    try:
        yield SimServer(store=store, url=url, api=api)
    finally:
        await api.close()
        await runner.cleanup()


def node_object(name: str, *, gpus: int = 0, arch: str = "amd64", ready: bool = True) -> dict:
    """A Node as a kubelet would register it, with optional `nvidia.com/gpu` capacity."""
    capacity = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/arch": arch,
                "kubernetes.io/hostname": name,
                "node-role.kubernetes.io/worker": "",
            },
        },
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "architecture": arch,
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kernelVersion": "6.1.0",
                "kubeProxyVersion": "v1.32.0",
                "kubeletVersion": "v1.32.0",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 12",
                "systemUUID": "",
            },
        },
    }


NODES = by_kind("v1", "Node")
