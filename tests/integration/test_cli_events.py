"""`fedctl get events`: what the propagator did across workloads, as `kubectl get events`
lists it. Events were only shown per workload by `describe`; after a drill, seeing what
was applied and removed where meant describing each workload in turn."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

from federation import clock
from federation.registry import codec, embedded, keys, objects
from federation.registry.etcd import EtcdStore
from federation.registry.events import Recorder
from policies.models.work import Event
from policies.models.workload import Workload
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe
from tests.serving import api_server, fedctl

pytestmark = pytest.mark.integration

T0 = dt.datetime(2026, 12, 6, 10, 0, tzinfo=dt.UTC)


def _event(ref: keys.WorkloadRef, reason: str, cluster: str, minutes: int) -> Callable[[], Event]:
    return lambda: Event(
        type="Warning" if reason == "ApplyFailed" else "Normal",
        reason=reason,
        message=f"{reason} on {cluster}",
        cluster=cluster,
        object=str(ref),
        time=T0 + dt.timedelta(minutes=minutes),
    )


async def test_get_events_lists_them_across_workloads_oldest_first(
    etcd_server: embedded.EmbeddedEtcd, capsys: pytest.CaptureFixture[str]
) -> None:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    web = keys.WorkloadRef("web", "Deployment.apps", "storefront")
    job = keys.WorkloadRef("ml", "Job.batch", "train")
    recorder = Recorder(store, clock=clock.real)
    ops = await recorder.ops(web, [_event(web, "Removed", "eu-west-arm", 2)])
    ops += await recorder.ops(job, [_event(job, "ApplyFailed", "us-east-a100", 1)])
    ops += await recorder.ops(web, [_event(web, "Applied", "us-east-cpu", 3)])
    await store.commit(ops)
    try:
        async with api_server(store) as server:
            capsys.readouterr()
            assert await fedctl(server, "get", "events", "-A") == 0
            lines = capsys.readouterr().out.splitlines()
            assert lines[0].split() == ["AGE", "TYPE", "REASON", "OBJECT", "CLUSTER", "MESSAGE"]
            assert [line.split()[1:5] for line in lines[1:]] == [
                ["Warning", "ApplyFailed", str(job), "us-east-a100"],
                ["Normal", "Removed", str(web), "eu-west-arm"],
                ["Normal", "Applied", str(web), "us-east-cpu"],
            ]
            assert await fedctl(server, "get", "events", "storefront", "-n", "web") == 0
            rows = capsys.readouterr().out.splitlines()[1:]
            assert [row.split()[2] for row in rows] == ["Removed", "Applied"]
            assert await fedctl(server, "get", "ev", "-n", "nowhere") == 0
            assert "No events found." in capsys.readouterr().err
    finally:
        await wipe(store)
        await store.close()


async def test_get_events_names_a_workload_by_the_one_name_rule(
    etcd_server: embedded.EmbeddedEtcd, capsys: pytest.CaptureFixture[str]
) -> None:
    """`get events kt12/w5` printed "No events found." for a workload with events, while
    `get works kt12/w5` and `get deploy kt12/w5` found it, and a misspelt name read as a
    workload without events. NAME is read as every verb reads it; events of a workload
    deleted since are still found by its name; a name that addresses nothing is not found."""
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    w5 = keys.WorkloadRef("kt12", "Deployment.apps", "w5")
    quiet = Workload.model_validate(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "quiet", "namespace": "kt12"},
        }
    )
    await codec.TypedStore(store, objects.ObjectCodec()).put(objects.key_for(quiet), quiet)
    recorder = Recorder(store, clock=clock.real)
    ops = await recorder.ops(w5, [_event(w5, "Applied", "us-east-cpu", 1)])
    ops += await recorder.ops(w5, [_event(w5, "Removed", "eu-west-arm", 2)])
    await store.commit(ops)
    try:
        async with api_server(store) as server:
            for word in (
                ["kt12/w5"],
                ["w5", "-n", "kt12"],
                ["kt12/Deployment.apps/w5"],
                ["deployment/w5", "-n", "kt12"],
            ):
                capsys.readouterr()
                assert await fedctl(server, "get", "events", *word) == 0, word
                rows = capsys.readouterr().out.splitlines()[1:]
                assert [row.split()[2] for row in rows] == ["Applied", "Removed"], word
            assert await fedctl(server, "get", "events", "kt12/quiet") == 0
            assert "No events found." in capsys.readouterr().err
            for word in (["kt12/w6"], ["w5"]):
                assert await fedctl(server, "get", "events", *word) != 0, word
                err = capsys.readouterr().err
                assert 'workloads "' in err and "not found" in err, err
            assert "there is one in namespace kt12" in err  # `w5` alone is looked for in default
    finally:
        await wipe(store)
        await store.close()
