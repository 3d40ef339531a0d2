"""What `fedctl get` shows of clusters, works, queues and workloads, from a user audit:

- `get clusters` said NAME and AGE only; it shows readiness, region, chips, free capacity
  and taints, as `cluster list` reads them;
- `get works` said NAME and AGE (`<unknown>`) only; it shows namespace, kind, member,
  whether the member took it, health, readiness and age;
- `get queues -o json` and `get workloads -o json` lacked the counts, phase, reason and
  clusters the tables show;
- `get queues default` answered not found for the implicit default queue that `get queues`
  lists.

The registry is a real etcd holding what the controllers would have written (a scheduler
cycle's Bindings, the monitor's cluster status, the propagator's Works); the API is the
real one over it, and the CLI is `main.main`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.api import app as api_app
from federation.cache import snapshot as snap
from federation.cli import queues_view, render, workloads_view
from federation.queue.pending import PendingStore
from federation.quota.accounting import Usage
from federation.registry import codec, embedded, keys, objects
from federation.registry.etcd import EtcdStore
from federation.resources import ResourceList
from federation.scheduler import cycle
from federation.scheduler import plan as planning
from policies.models.base import KubeObject, ObjectMeta
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus, ResourceTotals, Taint
from policies.models.work import (
    ClusterWorkloadStatus,
    Observed,
    Work,
    WorkCondition,
    WorkloadStatus,
    WorkSpec,
    WorkStatus,
)
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe
from tests.serving import fedctl, serving
from tests.unit.scheduler import fleet

pytestmark = pytest.mark.integration

CREATED = "2026-01-01T00:00:00Z"
APPLIED_AT = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)


@pytest.fixture
async def registry(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[EtcdStore]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    yield store
    await wipe(store)
    await store.close()


def created(obj: KubeObject) -> KubeObject:
    meta = obj.metadata.model_copy(update={"creation_timestamp": CREATED})
    return obj.model_copy(update={"metadata": meta})


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


async def put_cluster(store: EtcdStore, cluster: Cluster, **status: Any) -> None:
    await codec.TypedStore(store, objects.ObjectCodec()).put(
        keys.cluster_key(cluster.name), created(cluster.model_copy(update={"status": None}))
    )
    if cluster.status is not None:
        await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
            keys.cluster_status_key(cluster.name), cluster.status.model_copy(update=status)
        )


async def fleet_registry(store: EtcdStore) -> None:
    """Two members: `gpu-a` (eu-west, 2 CPU nodes and one of 8 A100s, 24 of 48 cores free,
    tainted for maintenance) and `cpu-b` (us-east, 32 cores) where the scheduler placed
    `web` (queue default, 2 replicas, ready) and `train` (queue qa, its apply refused);
    `huge` waits in qa for room the fleet does not have."""
    gpu_a = fleet.cluster(
        "gpu-a",
        fleet.flavor(),
        fleet.flavor(chip="nvidia-a100-80gb", devices=8, nodes=1, free_devices=6),
        region="eu-west",
        taints=[Taint(key="maintenance", value="disk", effect="NoSchedule")],
    )
    cpu = ResourceList.from_wire({"cpu": "48", "pods": "330"})
    gpu = ResourceList.from_wire({"cpu": "24", "pods": "1"})
    await put_cluster(store, gpu_a, totals=ResourceTotals(allocatable=cpu, free=gpu))
    cpu_b = fleet.cluster("cpu-b", region="us-east")
    await put_cluster(store, cpu_b)
    objs = codec.TypedStore(store, objects.ObjectCodec())
    qa = fleet.queue("qa")
    await objs.put(objects.key_for(qa), created(qa))
    web_app = fleet.workload("web", kind="Deployment", replicas=2)
    train = fleet.workload("train", queue="qa")
    huge = fleet.workload("huge", cpu="999", queue="qa")
    for w in (web_app, train, huge):
        await objs.put(objects.key_for(w), created(w))
    scheduler = cycle.Scheduler()
    pending = PendingStore()
    for seq, w in enumerate((web_app, train)):
        pending.add(planning.job_for(w, None, settings=scheduler.settings, seq=seq))
    decided = scheduler.run_cycle(snap.build([cpu_b], queues=[qa]), pending, Usage(), fleet.NOW)
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    by_name = {b.metadata.name: b for b in decided.bindings}
    assert set(by_name) == {"web", "train"}
    for binding in decided.bindings:
        ref = objects.workload_ref(web_app if binding.metadata.name == "web" else train)
        await bindings.put(keys.binding_key(ref), binding)
    waiting = by_name["train"].model_copy(
        update={
            "metadata": by_name["train"].metadata.model_copy(update={"name": "huge"}),
            "spec": by_name["train"].spec.model_copy(update={"clusters": []}),
            "status": by_name["train"].status.model_copy(
                update={"phase": "Pending", "reason": "no cluster has 999 cpu free"}
            ),
        }
    )
    await bindings.put(keys.binding_key(objects.workload_ref(huge)), waiting)
    web_ref = objects.workload_ref(web_app)
    await codec.TypedStore(store, codec.Codec(WorkloadStatus)).put(
        keys.workload_status_key(web_ref),
        WorkloadStatus(
            workload=by_name["web"].spec.workload,
            health="Healthy",
            replicas=2,
            ready_replicas=2,
            clusters=[
                ClusterWorkloadStatus(
                    cluster="cpu-b", health="Healthy", replicas=2, ready_replicas=2, applied=True
                )
            ],
        ),
    )
    works = codec.TypedStore(store, codec.Codec(Work))
    for w, status in (
        (
            web_app,
            WorkStatus(
                applied=True,
                conditions=[
                    WorkCondition(type="Applied", status="True", last_transition_time=APPLIED_AT)
                ],
                observed=Observed(health="Healthy", replicas=2, ready_replicas=2),
            ),
        ),
        (train, WorkStatus(error="jobs.batch is forbidden")),
    ):
        ref = objects.workload_ref(w)
        work = Work(
            metadata=ObjectMeta(name=ref.name, namespace=ref.namespace),
            spec=WorkSpec(
                cluster="cpu-b",
                workload=by_name[w.metadata.name].spec.workload,
                binding_revision=7,
                manifest={},
            ),
            status=status,
        )
        await works.put(keys.work_key("cpu-b", ref), work)


async def test_get_clusters_shows_readiness_place_chips_free_capacity_and_taints(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    await fleet_registry(registry)
    async with serving(api_app.build_app(registry)) as server:
        assert await fedctl(server, "get", "clusters") == 0
        table = rows(capsys.readouterr().out)
        assert table[0] == render.CLUSTER_HEADERS
        got = {row[0]: row[1:] for row in table[1:]}
        assert got["gpu-a"][:7] == [
            "True",
            "eu-west",
            "amd64:2,nvidia-a100-80gb:8",
            "24/48",
            "1/330",  # full by pod count, though half its cores are free
            "nvidia-a100-80gb=6/8",
            "maintenance=disk:NoSchedule",
        ]
        assert got["gpu-a"][7].endswith("d")  # created on the first of January
        assert got["cpu-b"][:2] == ["True", "us-east"] and got["cpu-b"][6] == "-"

        assert await fedctl(server, "get", "cluster", "gpu-a", "-o", "wide") == 0
        table = rows(capsys.readouterr().out)
        assert table[0][len(render.CLUSTER_HEADERS) :] == [
            "REASON",
            "ZONE",
            "PROVIDER",
            "MEMORY",
            "PRICE/H",
            "LABELS",
        ]
        assert [row[0] for row in table[1:]] == ["gpu-a"]
        assert table[1][len(render.CLUSTER_HEADERS) + 2] == "aws"


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        pytest.param("spec.region=eu-west", ["gpu-a"], id="by region"),
        pytest.param("spec.region!=eu-west", ["cpu-b"], id="not in a region"),
        pytest.param("spec.provider=aws,metadata.name!=gpu-a", ["cpu-b"], id="provider and name"),
        pytest.param("spec.zone=nowhere", [], id="none"),
    ],
)
async def test_get_clusters_chooses_by_region_zone_and_provider_fields(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str], selector: str, names: list[str]
) -> None:
    """Region, zone and provider are spec fields, not labels: `-l region=eu-west` found
    nothing and there was no other way to choose by them."""
    await fleet_registry(registry)
    async with serving(api_app.build_app(registry)) as server:
        capsys.readouterr()
        assert await fedctl(server, "get", "clusters", "--field-selector", selector) == 0
        out = capsys.readouterr()
        assert [row[0] for row in rows(out.out)[1:]] == names, out
        assert await fedctl(server, "cluster", "list", "--field-selector", selector) == 0
        out = capsys.readouterr()
        assert [row[0] for row in rows(out.out)[1:]] == names, out


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("get", "workloads"), id="a view computed from several kinds"),
        pytest.param(("get", "cluster", "gpu-a"), id="one named object"),
        pytest.param(("get", "queues"), id="the queue view"),
    ],
)
async def test_a_field_selector_where_none_can_choose_is_refused_before_asking(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    async with serving(api_app.build_app(registry)) as server:
        capsys.readouterr()
        assert await fedctl(server, *command, "--field-selector", "spec.region=x") == 1
        assert "fedctl: --field-selector chooses from a list" in capsys.readouterr().err


async def test_cluster_list_and_describe_show_provider_and_pod_slots(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """A member full by pod count read a third empty: pods were shown nowhere."""
    await fleet_registry(registry)
    async with serving(api_app.build_app(registry)) as server:
        capsys.readouterr()
        assert await fedctl(server, "cluster", "list") == 0
        table = rows(capsys.readouterr().out)
        assert table[0][:3] == ["NAME", "REGION", "PROVIDER"] and "PODS" in table[0]
        gpu_a = dict(zip(table[0], table[2], strict=False))  # in name order
        assert (gpu_a["NAME"], gpu_a["PROVIDER"], gpu_a["PODS"]) == ("gpu-a", "aws", "1/330")
        assert await fedctl(server, "cluster", "describe", "gpu-a") == 0
        out = capsys.readouterr().out
        assert "Pod slots:   1 free of 330 (the nodes' allocatable pods)\nAPIs:" in out, out


async def test_get_works_shows_each_members_copy_and_how_it_is_there(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    await fleet_registry(registry)
    async with serving(api_app.build_app(registry)) as server:
        assert await fedctl(server, "get", "works") == 0
        table = rows(capsys.readouterr().out)
        assert table[0] == workloads_view.WORK_HEADERS
        got = {row[1]: row for row in table[1:]}
        assert got["web"][:7] == [
            "team",
            "web",
            "Deployment.apps",
            "cpu-b",
            "yes",
            "Healthy",
            "2/2",
        ]
        assert got["web"][7].endswith("d")  # applied on the second of January
        assert got["train"][:7] == ["team", "train", "Job.batch", "cpu-b", "no", "Unknown", "0/0"]

        assert await fedctl(server, "get", "works", "-n", "team", "-o", "wide") == 0
        table = rows(capsys.readouterr().out)
        assert table[0][-2:] == ["REVISION", "ERROR"]
        wide = {row[1]: " ".join(row[8:]) for row in table[1:]}
        assert wide == {"train": "7 jobs.batch is forbidden", "web": "7 -"}
        assert await fedctl(server, "get", "works", "-n", "elsewhere") == 0
        assert capsys.readouterr().err == "No works found.\n"


async def test_json_says_what_the_queue_and_workload_tables_say(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    await fleet_registry(registry)
    async with serving(api_app.build_app(registry)) as server:
        assert await fedctl(server, "get", "queues", "-o", "json") == 0
        queues = {q["metadata"]["name"]: q for q in json.loads(capsys.readouterr().out)}
        assert set(queues) == {"qa"}, "a queue that is not stored was printed as a Queue"
        assert queues["qa"]["spec"]["weight"] == 1
        assert queues["qa"]["status"] == {
            "defined": True,
            "implicit": False,
            "admitted": 1,
            "pending": 1,
            "share": queues["qa"]["status"]["share"],
            "used": {"cpu": "1", "memory": "1Gi"},
            "children": [],
            "hourlyCost": "0.0550",  # as `fedctl cost` sums its Bindings
            "unpricedReplicas": 0,  # none runs where no price is known
            "currency": "USD",
        }
        assert await fedctl(server, "get", "queue", "default", "-o", "json") == 0
        implicit = json.loads(capsys.readouterr().out)
        assert implicit["kind"] == "QueueStatus" and "spec" not in implicit
        assert implicit["status"]["implicit"] is True
        assert implicit["status"]["admitted"] == 1

        assert await fedctl(server, "get", "workloads", "-A", "-o", "json") == 0
        loads = {w["metadata"]["name"]: w for w in json.loads(capsys.readouterr().out)}
        assert set(loads) == {"web", "train", "huge"}
        assert loads["web"]["spec"]["replicas"] == 2  # the template, as stored
        assert loads["web"]["status"] == {
            "health": "Healthy",
            "phase": None,
            "replicas": 2,
            "readyReplicas": 2,
            "suspended": False,
            # Kubernetes' job fields: none for a Deployment, there so every key always is.
            "active": None,
            "succeeded": None,
            "failed": None,
            "startTime": None,
            "completionTime": None,
            "conditions": [],
            "queue": "default",
            "scheduling": {"phase": "Scheduled", "reason": None},
            "federationOnly": False,
            "clusters": [
                {
                    "name": "cpu-b",
                    "replicas": 2,
                    "chip": "amd64",
                    "applied": True,
                    "health": "Healthy",
                    "phase": None,
                    "readyReplicas": 2,
                    "error": None,
                }
            ],
        }
        assert loads["huge"]["status"]["scheduling"] == {
            "phase": "Pending",
            "reason": "no cluster has 999 cpu free",
        }
        assert loads["huge"]["status"]["clusters"] == []
        assert set(loads["huge"]["status"]) == set(loads["web"]["status"])

        assert await fedctl(server, "get", "workload", "team/huge", "-o", "yaml") == 0
        out = capsys.readouterr().out
        assert "kind: Job" in out and "reason: no cluster has 999 cpu free" in out


async def test_the_implicit_default_queue_is_found_by_name_as_the_table_lists_it(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    await fleet_registry(registry)
    async with serving(api_app.build_app(registry)) as server:
        assert await fedctl(server, "get", "queues") == 0
        listed = {row[0]: row for row in rows(capsys.readouterr().out)[1:]}
        assert listed["default"][-1] == "<implicit>"

        assert await fedctl(server, "get", "queue", "default") == 0
        table = rows(capsys.readouterr().out)
        assert table == [queues_view.HEADERS, listed["default"]]
        assert await fedctl(server, "get", "queue", "default", "-o", "json") == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["metadata"] == {"name": "default"} and doc["status"]["defined"] is False

        assert await fedctl(server, "describe", "queue", "default") == 0
        described = capsys.readouterr().out
        assert "Queue (implicit: no Queue object is stored)" in described
        assert "apply a Queue named default" in described

        assert await fedctl(server, "get", "queue", "nowhere") == 1
        assert capsys.readouterr().err == 'fedctl: not found: queues "nowhere"\n'
        # Stored queues answer as stored, whatever the queue view (kept up to 2 s) holds.
        spare = tmp_path / "spare.yaml"
        spare.write_text("apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: spare}\n")
        assert await fedctl(server, "apply", "-f", str(spare)) == 0
        assert await fedctl(server, "get", "queue", "spare") == 0
        assert rows(capsys.readouterr().out)[-1][:3] == ["spare", "-", "1"]
        assert await fedctl(server, "delete", "queue", "spare") == 0
        assert await fedctl(server, "get", "queue", "spare") == 1
        assert capsys.readouterr().err.endswith('fedctl: not found: queues "spare"\n')


async def test_the_default_queue_is_there_before_any_workload_runs_in_it(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """A workload naming no queue goes to `default`, so it exists with no Queue object and
    no work in it yet; `get queue default` said not found until some workload ran there."""
    async with serving(api_app.build_app(registry)) as server:
        assert await fedctl(server, "get", "queue", "default") == 0
        (row,) = rows(capsys.readouterr().out)[1:]
        assert row[0] == "default" and row[4:6] == ["0", "0"] and row[-1] == "<implicit>"
        assert await fedctl(server, "describe", "queue", "default") == 0
        assert "Queue (implicit: no Queue object is stored)" in capsys.readouterr().out


async def test_a_workloads_works_are_a_list_and_each_is_described(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """A work has no name of its own: NAME is its workload's, and selects one work per
    member. `-o json` gave one object for one work and a list for several, and `describe`
    showed the first work only."""
    await fleet_registry(registry)
    works = codec.TypedStore(registry, codec.Codec(Work))
    ref = keys.WorkloadRef("team", "Deployment.apps", "web")
    stored = await works.get(keys.work_key("cpu-b", ref))
    assert stored is not None
    spec = stored.obj.spec.model_copy(update={"cluster": "gpu-a"})
    await works.put(keys.work_key("gpu-a", ref), stored.obj.model_copy(update={"spec": spec}))
    async with serving(api_app.build_app(registry)) as server:
        assert await fedctl(server, "get", "works", "train", "-n", "team", "-o", "json") == 0
        (one,) = json.loads(capsys.readouterr().out)  # a list, of one
        assert one["spec"]["cluster"] == "cpu-b"
        assert await fedctl(server, "get", "works", "web", "-n", "team", "-o", "json") == 0
        assert sorted(w["spec"]["cluster"] for w in json.loads(capsys.readouterr().out)) == [
            "cpu-b",
            "gpu-a",
        ]
        assert await fedctl(server, "describe", "works", "team/web") == 0
        described = capsys.readouterr().out
        assert described.count("Name:        web") == 2
        assert "cluster: cpu-b" in described and "cluster: gpu-a" in described
