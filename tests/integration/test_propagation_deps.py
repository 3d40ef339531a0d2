"""Karmada's `propagateDeps` end to end: real etcd, simulated members, one propagator.

A policy with `propagateDeps: true` sends the ConfigMaps, Secrets, PersistentVolumeClaims
and ServiceAccounts its workloads' pods reference (and the federation holds) to the
clusters the workload runs on, moves them when it moves, and takes them off a cluster once
no workload needing them is there, unless their own policy places them there. One that
the federation does not hold is named in the workload's status, not an error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.registry import embedded
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

EAST, WEST, SOUTH = "us-east-cpu", "eu-west-arm", "ap-southeast-cpu"
CLUSTERS = (EAST, WEST, SOUTH)


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def config(kind: str, name: str) -> Workload:
    body = {"data": {"MODE": "cHJvZA==" if kind == "Secret" else "prod"}}
    return Workload.model_validate(
        {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "web"}, **body}
    )


def needing(name: str) -> Workload:
    """A Deployment whose pods take `appcfg` (envFrom), `creds` (an env secretKeyRef),
    `shared` (a volume) and `absent` (a volume: no such ConfigMap is stored)."""
    web = deployment(name, 1)
    pod = web.spec["template"]["spec"]
    container = {
        **pod["containers"][0],
        "envFrom": [{"configMapRef": {"name": "appcfg"}}],
        "env": [{"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "MODE"}}}],
    }
    volumes = [
        {"name": "shared", "configMap": {"name": "shared"}},
        {"name": "absent", "configMap": {"name": "absent"}},
    ]
    template = {
        **web.spec["template"],
        "spec": {**pod, "containers": [container], "volumes": volumes},
    }
    return web.model_copy(update={"spec": {**web.spec, "template": template}})


def policy(name: str, kind: str, *, deps: bool) -> PropagationPolicy:
    api_version = "apps/v1" if kind == "Deployment" else "v1"
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": name, "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": api_version, "kind": kind, "name": name}],
                "propagateDeps": deps,
            },
        }
    )


async def where(fed: Federation, kind: str, name: str) -> set[str]:
    """The clusters holding a copy of `web/name`."""
    found = set()
    for cluster in CLUSTERS:
        if await fed.member_object(cluster, "v1", kind, "web", name) is not None:
            found.add(cluster)
    return found


async def test_dependencies_follow_the_workload_and_leave_with_it(fed: Federation) -> None:
    appcfg, creds = config("ConfigMap", "appcfg"), config("Secret", "creds")
    shared = config("ConfigMap", "shared")
    app = needing("depsapp")
    for obj in (appcfg, creds, shared, app):
        await fed.put(obj)
    await fed.put(policy("depsapp", "Deployment", deps=True))
    await fed.put(policy("shared", "ConfigMap", deps=False))
    await fed.bind(app, {EAST: (1, None)})
    await fed.bind(shared, {SOUTH: (0, None)})
    fed.start()

    async def placed(kind: str, name: str, clusters: set[str]) -> bool:
        return await where(fed, kind, name) == clusters

    await wait_for(lambda: placed("ConfigMap", "appcfg", {EAST}), timeout=15, message="appcfg")
    await wait_for(lambda: placed("Secret", "creds", {EAST}), timeout=15, message="creds east")
    await wait_for(
        lambda: placed("ConfigMap", "shared", {EAST, SOUTH}), timeout=15, message="shared"
    )

    async def statuses() -> tuple[Any, Any]:
        return await fed.status(app), await fed.status(appcfg)

    app_status, cfg_status = await wait_for(
        lambda: _both(statuses()), timeout=10, message="both statuses"
    )
    assert app_status.missing_dependencies == ["web/ConfigMap/absent"]
    assert cfg_status.required_by == [str(ref_of(app))]
    assert [row.cluster for row in cfg_status.clusters] == [EAST]

    # Failover moves the workload: its dependencies follow it, and leave where it left;
    # the one its own policy places on the south cluster stays there.
    await fed.bind(app, {WEST: (1, None)})
    await wait_for(lambda: placed("ConfigMap", "appcfg", {WEST}), timeout=15, message="moved")
    await wait_for(lambda: placed("Secret", "creds", {WEST}), timeout=15, message="creds moved")
    await wait_for(
        lambda: placed("ConfigMap", "shared", {WEST, SOUTH}), timeout=15, message="shared moved"
    )

    # The missing one applied later: sent where the workload runs, and no longer missing.
    await fed.put(config("ConfigMap", "absent"))
    await wait_for(lambda: placed("ConfigMap", "absent", {WEST}), timeout=15, message="absent")

    async def complete() -> bool:
        status = await fed.status(app)
        return status is not None and status.missing_dependencies == []

    await wait_for(complete, timeout=10, message="nothing missing")

    # The workload deleted: nothing needs its dependencies any more.
    await fed.delete(app)
    await fed.unbind(app)
    await wait_for(lambda: placed("ConfigMap", "appcfg", set()), timeout=15, message="gone")
    await wait_for(lambda: placed("Secret", "creds", set()), timeout=15, message="creds gone")
    await wait_for(lambda: placed("ConfigMap", "absent", set()), timeout=15, message="absent gone")
    await wait_for(
        lambda: placed("ConfigMap", "shared", {SOUTH}), timeout=15, message="shared kept"
    )


async def _both(pair: Any) -> tuple[Any, Any] | None:
    first, second = await pair
    return (first, second) if first is not None and second is not None else None


async def test_without_propagate_deps_a_reference_sends_nothing(fed: Federation) -> None:
    appcfg = config("ConfigMap", "appcfg")
    plain, app = needing("plain"), needing("depsapp")
    for obj in (appcfg, plain, app):
        await fed.put(obj)
    await fed.put(policy("plain", "Deployment", deps=False))
    await fed.put(policy("depsapp", "Deployment", deps=True))
    await fed.bind(plain, {SOUTH: (1, None)})
    await fed.bind(app, {EAST: (1, None)})
    fed.start()

    async def copied() -> bool:
        return await where(fed, "ConfigMap", "appcfg") == {EAST}

    await wait_for(copied, timeout=15, message="appcfg where depsapp runs")
    status = await fed.status(plain)
    assert status is None or status.missing_dependencies == []
    assert await where(fed, "ConfigMap", "appcfg") == {EAST}


async def test_a_dependency_takes_its_needers_conflict_resolution(fed: Federation) -> None:
    """Karmada's attached binding copies the needer's `conflictResolution`: a policy that
    adopts its workload's existing copies (`Overwrite`, a migration) adopts the
    ConfigMap its pods read too, instead of leaving it refused."""
    conn = await fed.conn(EAST)
    await conn.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}})
    await conn.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "appcfg", "namespace": "web"},
            "data": {"MODE": "legacy"},
        }
    )
    app = needing("depsapp")
    await fed.put(config("ConfigMap", "appcfg"))
    await fed.put(app)
    adopting = policy("depsapp", "Deployment", deps=True)
    spec = adopting.spec.model_copy(update={"conflict_resolution": "Overwrite"})
    await fed.put(adopting.model_copy(update={"spec": spec}))
    await fed.bind(app, {EAST: (1, None)})
    fed.start()

    async def adopted() -> bool:
        got = await fed.member_object(EAST, "v1", "ConfigMap", "web", "appcfg")
        labels = (got or {}).get("metadata", {}).get("labels") or {}
        return labels.get("fedctl.io/managed-by") == "fedctl" and got["data"]["MODE"] == "prod"  # type: ignore[index]

    await wait_for(adopted, timeout=15, message="the needer's Overwrite adopts the ConfigMap")


async def test_a_service_account_and_a_claim_reach_the_member_and_its_pods_start(
    fed: Federation,
) -> None:
    """Two of the four kinds `propagateDeps` sends were not served by the simulated
    members ("the server does not serve ServiceAccount in v1"), and their pods started
    without them. Now both arrive, and the pods start once they have."""
    account = Workload.model_validate(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "api-sa", "namespace": "web"},
        }
    )
    claim = Workload.model_validate(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "api-data", "namespace": "web"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    app = deployment("api", 1)
    pod = app.spec["template"]["spec"]
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "api-data"}}]
    template = {
        **app.spec["template"],
        "spec": {**pod, "serviceAccountName": "api-sa", "volumes": volumes},
    }
    app = app.model_copy(update={"spec": {**app.spec, "template": template}})
    for obj in (account, claim, app):
        await fed.put(obj)
    await fed.put(policy("api", "Deployment", deps=True))
    await fed.bind(app, {EAST: (1, None)})
    fed.start()

    async def ready() -> bool:
        got = await fed.member_object(EAST, "apps/v1", "Deployment", "web", "api")
        return bool(got) and (got.get("status") or {}).get("readyReplicas") == 1

    await wait_for(ready, timeout=20, message="api ready on the member with its dependencies")
    assert await where(fed, "ServiceAccount", "api-sa") == {EAST}
    assert await where(fed, "PersistentVolumeClaim", "api-data") == {EAST}
    got = await fed.member_object(EAST, "v1", "PersistentVolumeClaim", "web", "api-data")
    assert got is not None and got["status"]["phase"] == "Bound"

    async def healthy(dep: Workload) -> bool:
        status = await fed.status(dep)
        return status is not None and [(r.cluster, r.health) for r in status.clusters] == [
            (EAST, "Healthy")
        ]

    for dep in (account, claim):
        await wait_for(lambda dep=dep: healthy(dep), timeout=10, message=f"{dep.kind} healthy")
