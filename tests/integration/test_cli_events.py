"""`fedctl get events`: what the propagator did across workloads, as `kubectl get events`
lists it. Events were only shown per workload by `describe`; after a drill, seeing what
was applied and removed where meant describing each workload in turn."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from federation import clock
from federation.registry import codec, embedded, keys, objects
from federation.registry.etcd import EtcdStore
from federation.registry.events import Again, Recorder
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


WEB = keys.WorkloadRef("web", "Deployment.apps", "storefront")
JOB = keys.WorkloadRef("ml", "Job.batch", "train")


async def _three_recorded(etcd_server: embedded.EmbeddedEtcd) -> tuple[EtcdStore, Recorder]:
    """A wiped registry with three events, each at its own minute: JOB's ApplyFailed (1),
    WEB's Removed (2) and Applied (3); and the recorder that wrote them."""
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    recorder = Recorder(store, clock=clock.real)
    ops = await recorder.ops(WEB, [_event(WEB, "Removed", "eu-west-arm", 2)])
    ops += await recorder.ops(JOB, [_event(JOB, "ApplyFailed", "us-east-a100", 1)])
    ops += await recorder.ops(WEB, [_event(WEB, "Applied", "us-east-cpu", 3)])
    await store.commit(ops)
    return store, recorder


async def test_get_events_lists_them_across_workloads_oldest_first(
    etcd_server: embedded.EmbeddedEtcd, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = await _three_recorded(etcd_server)
    web, job = WEB, JOB
    try:
        async with api_server(store) as server:
            capsys.readouterr()
            assert await fedctl(server, "get", "events", "-A") == 0
            lines = capsys.readouterr().out.splitlines()
            assert lines[0].split() == [
                *("LAST", "SEEN"),
                *("TYPE", "REASON", "OBJECT", "CLUSTER", "MESSAGE"),
            ]
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


async def test_events_are_listed_by_last_seen_and_a_repeat_shows_its_count(
    etcd_server: embedded.EmbeddedEtcd, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o json` (and the API) listed events in key order, grouped by workload, while the
    docs say oldest first; a failure met at every retry showed as one event whose age kept
    growing. A repeat counts on its event, which sorts by when it was last seen."""
    store, recorder = await _three_recorded(etcd_server)
    for minutes in (4, 5):  # each retry's pass commits its own
        again = Again(_event(JOB, "ApplyFailed", "us-east-a100", minutes))
        await store.commit(await recorder.ops(JOB, [again]))
    try:
        async with api_server(store) as server:
            capsys.readouterr()
            assert await fedctl(server, "get", "events", "-A", "-o", "json") == 0
            items = json.loads(capsys.readouterr().out)
            assert [(e["reason"], e["count"]) for e in items] == [
                ("Removed", 1),
                ("Applied", 1),
                ("ApplyFailed", 3),
            ]
            assert items[-1]["lastTime"] > items[-1]["time"]
            assert await fedctl(server, "get", "events", "-A") == 0
            last = capsys.readouterr().out.splitlines()[-1]
            assert " (x3 over 4m) " in last and "ApplyFailed" in last, last
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


async def test_describe_shows_only_the_events_of_the_object_as_it_is_now(
    etcd_server: embedded.EmbeddedEtcd, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A workload deleted and created again under its name described with its
    predecessor's events (`Applied`, `Removed`, then `Applied` again, up to 20 of an old
    one's), though it is a new object with a fresh status; `kubectl describe` shows an
    object's own events (by uid). Events older than the object are left out of describe;
    `get events` still lists them all."""
    store, recorder = await _three_recorded(etcd_server)
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: storefront, namespace: web}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: s}}\n"
        "  template:\n    metadata: {labels: {app: s}}\n"
        "    spec: {containers: [{name: s, image: nginx}]}\n"
    )
    try:
        async with api_server(store) as server:
            assert await fedctl(server, "apply", "-f", str(manifest)) == 0
            now = dt.datetime.now(dt.UTC)
            await store.commit(
                await recorder.ops(
                    WEB,
                    [
                        lambda: Event(
                            reason="Applied",
                            message="fresh",
                            cluster="ap-southeast-cpu",
                            object=str(WEB),
                            time=now,
                        )
                    ],
                )
            )
            capsys.readouterr()
            assert await fedctl(server, "describe", "deployment", "storefront", "-n", "web") == 0
            said = capsys.readouterr().out
            assert "ap-southeast-cpu" in said and "fresh" in said
            assert "Removed" not in said and "us-east-cpu" not in said, said
            assert await fedctl(server, "get", "events", "storefront", "-n", "web") == 0
            rows = capsys.readouterr().out.splitlines()[1:]
            assert [row.split()[2] for row in rows] == ["Removed", "Applied", "Applied"]
    finally:
        await store.close()
