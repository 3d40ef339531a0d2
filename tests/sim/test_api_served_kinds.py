"""The kinds a workload's pods reference, and the workload kinds fedctl propagates, are
served: the simulator lacked ServiceAccount and PersistentVolumeClaim, so propagating a
workload's dependencies to `fedctl up`'s fleet failed with "the server does not serve
ServiceAccount in v1", and CronJobs, DaemonSets and HPAs were filtered out by API
enablement."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes_asyncio import client, watch

from clusters.sim.resources import by_kind
from tests.sim.conftest import SimServer

NS = "default"


async def test_discovery_lists_the_dependency_kinds_and_the_stored_workload_kinds(
    sim_server: SimServer,
) -> None:
    core = {r.name: r for r in (await sim_server.core.get_api_resources()).resources}
    assert (core["serviceaccounts"].kind, core["serviceaccounts"].namespaced) == (
        "ServiceAccount",
        True,
    )
    assert core["serviceaccounts"].short_names == ["sa"]
    assert core["persistentvolumeclaims"].short_names == ["pvc"]
    assert "persistentvolumeclaims/status" in core
    apps = {r.name for r in (await sim_server.apps.get_api_resources()).resources}
    batch = {r.name for r in (await sim_server.batch.get_api_resources()).resources}
    hpa = {
        r.name
        for r in (await client.AutoscalingV2Api(sim_server.api).get_api_resources()).resources
    }
    assert "daemonsets" in apps
    assert "cronjobs" in batch
    assert "horizontalpodautoscalers" in hpa


async def test_service_accounts_are_created_read_listed_watched_and_deleted(
    sim_server: SimServer,
) -> None:
    core = sim_server.core
    events: list[tuple[str, str]] = []

    async def follow() -> None:
        async with watch.Watch().stream(
            core.list_namespaced_service_account, NS, timeout_seconds=5
        ) as stream:
            async for event in stream:
                events.append((event["type"], event["object"].metadata.name))
                if event["type"] == "DELETED":
                    return

    watching = asyncio.create_task(follow())
    await core.create_namespaced_service_account(NS, {"metadata": {"name": "api-sa"}})
    got = await core.read_namespaced_service_account("api-sa", NS)
    assert got.metadata.uid
    listed = await core.list_namespaced_service_account(NS)
    assert [sa.metadata.name for sa in listed.items] == ["api-sa"]
    await core.patch_namespaced_service_account(
        "api-sa", NS, {"metadata": {"labels": {"team": "shop"}}}
    )
    await core.delete_namespaced_service_account("api-sa", NS)
    await asyncio.wait_for(watching, timeout=10)
    assert events == [("ADDED", "api-sa"), ("MODIFIED", "api-sa"), ("DELETED", "api-sa")]


async def test_a_claim_is_bound_as_it_is_created_and_keeps_its_phase_on_update(
    sim_server: SimServer,
) -> None:
    core = sim_server.core
    body = {
        "metadata": {"name": "api-data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}},
    }
    await core.create_namespaced_persistent_volume_claim(NS, body)
    claim = await core.read_namespaced_persistent_volume_claim("api-data", NS)
    assert (claim.status.phase, claim.status.capacity) == ("Bound", {"storage": "2Gi"})
    await core.patch_namespaced_persistent_volume_claim(
        "api-data", NS, {"metadata": {"labels": {"tier": "db"}}}
    )
    claim = await core.read_namespaced_persistent_volume_claim("api-data", NS)
    assert (claim.status.phase, claim.metadata.labels) == ("Bound", {"tier": "db"})


def _template(name: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


async def test_cron_jobs_daemon_sets_and_autoscalers_are_stored_as_sent(
    sim_server: SimServer,
) -> None:
    """Stored with no controller behind them: a DaemonSet starts no pods, a CronJob
    never fires, an HPA never scales. A DaemonSet gets no `replicas` defaulted into it."""
    ds = {
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": _template("agent")},
    }
    await sim_server.apps.create_namespaced_daemon_set(NS, ds)
    got_ds = await sim_server.apps.read_namespaced_daemon_set("agent", NS)
    assert got_ds.spec.selector.match_labels == {"app": "agent"}
    raw = sim_server.store.get(by_kind("apps/v1", "DaemonSet"), NS, "agent")
    assert "replicas" not in raw["spec"]

    cj = {
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {
            **_template("nightly"),
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"},
        }}}},
    }  # fmt: skip
    await sim_server.batch.create_namespaced_cron_job(NS, cj)
    assert (await sim_server.batch.read_namespaced_cron_job("nightly", NS)).spec.schedule == (
        "0 3 * * *"
    )

    hpa = {
        "metadata": {"name": "api"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "minReplicas": 1,
            "maxReplicas": 5,
        },
    }
    autoscaling = client.AutoscalingV2Api(sim_server.api)
    await autoscaling.create_namespaced_horizontal_pod_autoscaler(NS, hpa)
    got = await autoscaling.read_namespaced_horizontal_pod_autoscaler("api", NS)
    assert got.spec.max_replicas == 5
