"""A running fedctl stack for the browser tests: real etcd, the simulated demo fleet, the
controller's API app (which serves the dashboard) and the cluster monitor.

The stack lives on its own event loop in a thread, because Playwright's synchronous API
drives the browser from the test thread and must not share a running loop with it. Tests
reach the stack over HTTP, as the browser does, or run coroutines on its loop with `call`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

from clusters import member
from clusters.kube import connector
from clusters.sim import profile
from clusters.sim.fleet import SimFleet
from federation.api import app as api_app
from federation.monitor.monitor import ClusterMonitor
from federation.registry import embedded
from federation.registry.etcd import EtcdStore
from federation.settings import ApiSettings, EtcdSettings, MemberSettings, MonitorSettings
from policies import loading
from policies.models.cluster import Connection

__all__ = ["EXAMPLES", "Stack"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "policies" / "examples"
DEMO_PROFILE = ROOT / "clusters" / "sim" / "profiles" / "demo.yaml"
API = "/apis/fedctl.io/v1alpha1"

MONITOR = MonitorSettings(
    probe_period=0.5,
    probe_timeout=1.0,
    failure_threshold=2.0,
    success_threshold=0,
    heartbeat=60.0,
    workers=4,
    watch_backoff_max=0.5,
)
API_SETTINGS = ApiSettings(watch_bookmark_interval=2.0)
"""Bookmarks every 2 s, so a page takes 5 s of silence as a stalled stream: a test of that
need not wait the default 75 s."""
MEMBER = MemberSettings(
    request_timeout=2.0,
    retry_attempts=5,
    retry_initial=0.02,
    retry_max=0.2,
    retry_deadline=3.0,
    watch_timeout=5.0,
)

T = TypeVar("T")


class Stack:
    """Start with `start()`, stop with `stop()`; `url` is the controller's base URL."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.etcd = embedded.EmbeddedEtcd(data_dir=workdir / "etcd")
        self.url = ""
        self.store: EtcdStore | None = None
        self.fleet: SimFleet | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="e2e-stack", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._old_kubeconfig = os.environ.get("KUBECONFIG")

    # lifecycle

    def start(self, *, timeout: float = 60.0) -> None:
        self.etcd.start()
        kubeconfig = self.workdir / "fleet.kubeconfig"
        # The demo Cluster objects name only a context; the monitor finds it in $KUBECONFIG.
        os.environ["KUBECONFIG"] = str(kubeconfig)
        self._thread.start()
        if not self._ready.wait(timeout) or self._error is not None:
            self.stop()
            raise RuntimeError(f"stack did not start: {self._error!r}")

    def stop(self) -> None:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(30)
        self.etcd.cleanup()
        if self._old_kubeconfig is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = self._old_kubeconfig

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as exc:  # reported to start() and re-raised there
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self.fleet = SimFleet(profile.load(DEMO_PROFILE), speed=20)
        await self.fleet.start(kubeconfig_path=self.workdir / "fleet.kubeconfig")
        self.store = EtcdStore(EtcdSettings.model_validate({"endpoints": [self.etcd.url]}))
        await self.store.connect()
        # The fleet's kubeconfig lets the drill API find each member's fault API.
        app = api_app.build_app(
            self.store,
            settings=API_SETTINGS,
            kubeconfig=str(self.workdir / "fleet.kubeconfig"),
            monitor=MONITOR,
        )
        runner = web.AppRunner(app, handler_cancellation=True)
        await runner.setup()
        port = embedded.free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        monitor = ClusterMonitor(self.store, settings=MONITOR, member_settings=MEMBER)
        task = asyncio.create_task(monitor.run(), name="e2e-monitor")
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await runner.cleanup()
            await self.store.close()
            await self.fleet.stop()

    # access

    def call(self, make: Callable[[], Awaitable[T]], *, timeout: float = 20.0) -> T:
        """Run a coroutine on the stack's loop and return its result."""

        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    async def in_member(
        self,
        cluster: str,
        *,
        apply: Sequence[dict[str, Any]] = (),
        delete: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Create or delete objects directly in a member, as its own users would."""
        conn = Connection(kubeconfig_path=str(self.workdir / "fleet.kubeconfig"), context=cluster)
        async with await connector.connect(cluster, conn, settings=MEMBER) as client:
            for obj in apply:
                await client.apply(obj)
            for obj in delete:
                meta = obj["metadata"]
                await client.delete(
                    member.ObjectRef(
                        api_version=obj["apiVersion"],
                        kind=obj["kind"],
                        namespace=meta.get("namespace"),
                        name=meta["name"],
                    )
                )

    def http(
        self, method: str, path: str, body: str | None = None, *, ctype: str = "application/json"
    ) -> tuple[int, Any]:
        data = body.encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": ctype}
        )
        try:
            with urllib.request.urlopen(request, timeout=20) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")

    def apply_examples(self) -> list[dict[str, Any]]:
        loaded = loading.load_paths([EXAMPLES])
        assert loaded.ok, [str(f) for f in loaded.errors]
        body = json.dumps({"items": [o.model.to_wire() for o in loaded.objects]})
        status, result = self.http("POST", f"{API}/apply", body)
        assert status == 200, result
        return list(result["results"])
