"""Shared set-up for the propagation tests (no tests here): etcd, five members, a propagator.

Members are reached only over HTTP through the connector; Bindings are written straight
into the registry with the Binding model (the scheduler's job, not under test here).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from clusters import member
from clusters.kube import connector
from clusters.sim import profile
from clusters.sim.fleet import SimFleet
from federation.propagation.controller import Propagator
from federation.propagation.members import kube_connect
from federation.registry import codec, keys, objects
from federation.registry.etcd import EtcdStore
from federation.scheduler import plan
from federation.settings import MemberSettings, PropagationSettings
from policies import loading
from policies.models.base import KubeObject
from policies.models.binding import Binding
from policies.models.cluster import Cluster, Connection
from policies.models.frq import FederatedResourceQuota
from policies.models.work import QuotaStatus, Work, WorkloadStatus
from policies.models.workload import Workload

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"


def _pool(name: str, arch: str, count: int = 2, **extra: Any) -> dict[str, Any]:
    return {"name": name, "count": count, "arch": arch, "cpu": "16", "memory": "64Gi", **extra}


def _fleet(*, system_pools: bool) -> profile.Profile:
    system = {
        arch: [_pool("system", arch, count=1, cpu="8", memory="32Gi")] if system_pools else []
        for arch in ("amd64", "arm64")
    }
    return profile.parse(
        {
            "clusters": [
                {"name": "us-east-cpu", "region": "us-east", "nodePools": [_pool("m7i", "amd64")]},
                {"name": "eu-west-arm", "region": "eu-west", "nodePools": [_pool("c7g", "arm64")]},
                {
                    "name": "ap-southeast-cpu",
                    "region": "ap-southeast",
                    "nodePools": [_pool("m7i", "amd64")],
                },
                {
                    "name": "us-east-a100",
                    "region": "us-east",
                    "nodePools": [
                        *system["amd64"],
                        _pool(
                            "a100",
                            "amd64",
                            cpu="96",
                            memory="1152Gi",
                            accelerators=[
                                {
                                    "model": "nvidia-a100-80gb",
                                    "resourceName": "nvidia.com/gpu",
                                    "countPerNode": 8,
                                    "product": "NVIDIA-A100-SXM4-80GB",
                                }
                            ],
                        ),
                    ],
                },
                {
                    "name": "cn-north-ascend",
                    "region": "cn-north",
                    "nodePools": [
                        *system["arm64"],
                        _pool(
                            "ascend",
                            "arm64",
                            cpu="192",
                            memory="1536Gi",
                            accelerators=[
                                {
                                    "model": "ascend-910b",
                                    "resourceName": "huawei.com/Ascend910",
                                    "countPerNode": 8,
                                }
                            ],
                        ),
                    ],
                },
            ]
        }
    )


PROFILE = _fleet(system_pools=False)
"""Accelerator clusters with accelerator nodes only: CPU-only work has no room there."""
STAND_IN_PROFILE = _fleet(system_pools=True)
"""The same fleet, its accelerator clusters also with the small CPU pool the demo's have,
for tests whose stand-in scheduler binds CPU-only work by hand to any member: a pod that
asks for no device is kept off accelerator nodes, so it runs on that pool."""

NAMES = [c.name for c in PROFILE.clusters]
MEMBER = MemberSettings(
    request_timeout=2.0,
    retry_attempts=5,
    retry_initial=0.02,
    retry_max=0.1,
    retry_deadline=2.0,
    watch_timeout=5.0,
)
PROPAGATION = PropagationSettings(concurrency_per_member=8, request_timeout=2.0)


def load(name: str, *, kinds: tuple[str, ...] = ()) -> list[KubeObject]:
    """Models from an example file (only `kinds` when given)."""
    loaded = loading.load_paths([EXAMPLES / name])
    assert loaded.ok, loaded.errors
    return [o.model for o in loaded.objects if not kinds or o.model.kind in kinds]


class Federation:
    def __init__(self, store: EtcdStore, fleet: SimFleet, kubeconfig: Path) -> None:
        self.store, self.fleet, self.kubeconfig = store, fleet, kubeconfig
        self.objects = codec.TypedStore(store, objects.ObjectCodec())
        self.bindings = codec.TypedStore(store, codec.Codec(Binding))
        self.works = codec.TypedStore(store, codec.Codec(Work))
        self.statuses = codec.TypedStore(store, codec.Codec(WorkloadStatus))
        self.quota_statuses = codec.TypedStore(store, codec.Codec(QuotaStatus))
        self.propagator: Propagator | None = None
        self.task: asyncio.Task[None] | None = None
        self.conns: dict[str, member.Member] = {}

    async def join_all(self) -> None:
        for name in NAMES:
            cluster = Cluster.model_validate(
                {
                    "metadata": {"name": name},
                    "spec": {
                        "region": self.fleet[name].profile.region,
                        "connection": {"kubeconfigPath": str(self.kubeconfig), "context": name},
                    },
                }
            )
            await self.put(cluster)
        for profile_obj in load("accelerators.yaml"):
            await self.put(profile_obj)

    async def put(self, obj: KubeObject) -> None:
        await self.objects.put(objects.key_for(obj), obj)

    async def delete(self, obj: KubeObject) -> None:
        await self.objects.delete(objects.key_for(obj))

    async def bind(
        self, workload: Workload, placement: Mapping[str, tuple[int, str | None]]
    ) -> None:
        ref = ref_of(workload)
        binding = Binding.model_validate(
            {
                "metadata": {"name": workload.metadata.name, "namespace": ref.namespace},
                "spec": {
                    "workload": {
                        "apiVersion": workload.api_version,
                        "kind": workload.kind,
                        "namespace": ref.namespace,
                        "name": workload.metadata.name,
                    },
                    "clusters": [
                        {"name": name, "replicas": replicas, "chip": chip}
                        for name, (replicas, chip) in placement.items()
                    ],
                },
                "status": {"phase": "Scheduled"},
            }
        )
        await self.bindings.put(keys.binding_key(ref), binding)

    async def unbind(self, workload: Workload) -> None:
        await self.bindings.delete(keys.binding_key(ref_of(workload)))

    def start(self, settings: PropagationSettings = PROPAGATION) -> Propagator:
        self.propagator = Propagator(
            self.store,
            settings=settings,
            connect=kube_connect(MEMBER, clock_real()),
            claim=plan.claim,
            workers=8,
        )
        self.task = asyncio.create_task(self.propagator.run())
        return self.propagator

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            async with asyncio.timeout(5):
                with contextlib.suppress(asyncio.CancelledError):
                    await self.task
        self.task = None

    async def conn(self, name: str) -> member.Member:
        if name not in self.conns:
            self.conns[name] = await connector.connect(
                name,
                Connection(kubeconfig_path=str(self.kubeconfig), context=name),
                settings=MEMBER,
            )
        return self.conns[name]

    async def member_object(
        self, cluster: str, api_version: str, kind: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        conn = await self.conn(cluster)
        try:
            return await conn.get(member.ObjectRef(api_version, kind, name, namespace))
        except member.MemberNotFound:
            return None

    async def ours(self, cluster: str, api_version: str, kind: str) -> dict[str, dict[str, Any]]:
        """name → object for every object of a kind in a member that carries our label."""
        conn = await self.conn(cluster)
        listed = await conn.list(api_version, kind)
        return {
            o["metadata"]["name"]: o
            for o in listed.items
            if (o["metadata"].get("labels") or {}).get("fedctl.io/managed-by") == "fedctl"
        }

    async def status(self, workload: Workload) -> WorkloadStatus | None:
        stored = await self.statuses.get(keys.workload_status_key(ref_of(workload)))
        return stored.obj if stored else None

    async def admin(self, name: str, verb: str, body: dict[str, Any]) -> None:
        """POST to a member's fault API (`fault` with a mode, or `heal`)."""
        import aiohttp

        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.fleet[name].admin_url}/{verb}", json=body) as resp,
        ):
            assert resp.status == 200, await resp.text()

    async def close(self) -> None:
        await self.stop()
        for conn in self.conns.values():
            await conn.close()


def clock_real() -> Any:
    from federation import clock

    return clock.real


def ref_of(workload: Workload) -> keys.WorkloadRef:
    return objects.workload_ref(workload)


def deployment(name: str, replicas: int, *, namespace: str = "web") -> Workload:
    return Workload.model_validate(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": f"registry.example.com/web/{name}:1.0",
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                            }
                        ]
                    },
                },
            },
        }
    )


def frq_for_test() -> FederatedResourceQuota:
    (frq,) = load("quota.yaml")
    assert isinstance(frq, FederatedResourceQuota)
    return frq


@contextlib.asynccontextmanager
async def started_federation(
    etcd_url: str, tmp_path: Path, *, fleet_profile: profile.Profile = PROFILE
) -> AsyncIterator[Federation]:
    """The demo-shaped fleet on a fast clock, its clusters joined, on the given etcd."""
    from tests.conftest import etcd_settings

    fleet = SimFleet(fleet_profile, speed=50)
    kubeconfig = tmp_path / "fleet.kubeconfig"
    await fleet.start(kubeconfig_path=kubeconfig)
    store = EtcdStore(etcd_settings(etcd_url))
    await store.connect()
    federation = Federation(store, fleet, kubeconfig)
    await federation.join_all()
    try:
        yield federation
    finally:
        await federation.close()
        await store.close()
        await fleet.stop()
