"""`fedctl drill plan`: where every workload on a member would go if it went down - and what
would not fit - predicted from the live registry without writing anything.

Real etcd (a private one, so the fleet in it is exactly this test's); the clusters carry the
statuses the monitor would write, the Bindings are those the scheduler would have written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from federation.cli import main
from federation.registry import codec, embedded, keys, objects
from federation.registry.etcd import EtcdStore
from policies.models.binding import Binding
from policies.models.cluster import ClusterStatus
from policies.models.propagation import PropagationPolicy
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload
from tests.conftest import etcd_settings
from tests.unit.scheduler import fleet

pytestmark = pytest.mark.integration

APIS = [("apps/v1", "Deployment"), ("batch/v1", "Job")]
VICTIM = "us-a"


@pytest.fixture
async def registry(own_etcd: embedded.EmbeddedEtcd) -> AsyncIterator[EtcdStore]:
    store = EtcdStore(etcd_settings(own_etcd.url))
    await store.connect()
    yield store
    await store.close()


def bound(w: Workload, cluster: str, replicas: int) -> Binding:
    return Binding.model_validate(
        {
            "metadata": {"name": w.metadata.name, "namespace": w.namespace},
            "spec": {
                "workload": {
                    "apiVersion": w.api_version,
                    "kind": w.kind,
                    "namespace": w.namespace,
                    "name": w.metadata.name,
                },
                "clusters": [{"name": cluster, "replicas": replicas, "chip": "amd64"}],
            },
            "status": {"phase": "Scheduled"},
        }
    )


TOLERANT = PropagationPolicy.model_validate(
    {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "sticky", "namespace": "team"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "cache"}],
            "placement": {
                "clusterTolerations": [
                    {"key": "cluster.fedctl.io/unreachable", "operator": "Exists"}
                ]
            },
        },
    }
)


async def join_members(store: EtcdStore) -> None:
    """Three members (one cheap, one dear), with the statuses the monitor would write."""
    typed = codec.TypedStore(store, objects.ObjectCodec())
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    for name, price in ((VICTIM, "0.05"), ("eu-cheap", "0.02"), ("ap-dear", "0.09")):
        c = fleet.cluster(name, fleet.flavor(cpu="16", nodes=2), cpu_price=price, apis=APIS)
        assert c.status is not None
        await typed.put(keys.cluster_key(name), c.model_copy(update={"status": None}))
        await statuses.put(keys.cluster_status_key(name), c.status)


async def seed(store: EtcdStore) -> list[Workload]:
    """The three members and three workloads on the victim."""
    await join_members(store)
    typed = codec.TypedStore(store, objects.ObjectCodec())
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    web = fleet.workload("web", kind="Deployment", cpu="2", replicas=3)
    huge = fleet.workload("huge", kind="Job", cpu="20")  # no node anywhere has 20 cores
    cache = fleet.workload("cache", kind="Deployment", cpu="1")
    await typed.put(objects.key_for(TOLERANT), TOLERANT)
    for w, replicas in ((web, 3), (huge, 1), (cache, 1)):
        await typed.put(objects.key_for(w), w)
        await bindings.put(keys.binding_key(objects.workload_ref(w)), bound(w, VICTIM, replicas))
    return [web, huge, cache]


async def drill_plan(store: EtcdStore, *args: str) -> int:
    return await asyncio.to_thread(
        main.main, ["--etcd", store.endpoint, "drill", "plan", "--cluster", VICTIM, *args]
    )


async def test_drill_plan_predicts_targets_and_shortfall_and_writes_nothing(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(registry)
    before = await registry.list(keys.ROOT + "/")

    code = await drill_plan(registry, "-o", "json")

    doc = json.loads(capsys.readouterr().out)
    assert code == 3  # something would not fit
    assert doc["cluster"] == VICTIM
    by_name: dict[str, Any] = {w["workload"].rpartition("/")[2]: w for w in doc["workloads"]}
    assert (by_name["web"]["action"], by_name["web"]["replicas"]) == ("move", 3)
    targets = by_name["web"]["targets"]
    assert sum(t["replicas"] for t in targets) == 3
    assert {t["cluster"] for t in targets} <= {"eu-cheap", "ap-dear"}
    assert all(t["chip"] == "amd64" and t["hourlyCost"] for t in targets)
    assert by_name["web"]["reason"] == "untolerated taint cluster.fedctl.io/unreachable:NoExecute"
    assert by_name["huge"]["action"] == "pending"
    assert by_name["huge"]["targets"] == []
    assert "no eligible cluster has a node with 20 cpu even when empty" in by_name["huge"]["reason"]
    assert (by_name["cache"]["action"], by_name["cache"]["reason"]) == (
        "stay",
        "tolerates the taint",
    )
    after = await registry.list(keys.ROOT + "/")
    assert [(kv.key, kv.mod_revision) for kv in after.items] == [
        (kv.key, kv.mod_revision) for kv in before.items
    ]


async def test_drill_plan_text_is_a_table_with_a_summary(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(registry)

    code = await drill_plan(registry)

    out = capsys.readouterr().out.splitlines()
    assert code == 3
    # In the caller's settings' currency, which may not be the controller's: named.
    assert out[0].split() == ["WORKLOAD", "FROM", "REPLICAS", "PREDICTED", "CHIP", "COST/H(USD)"]
    rows = {line.split()[0]: line for line in out[1:-1] if line.strip()}
    assert "would not fit:" in rows["team/Job.batch/huge"]
    assert "stays: tolerates the taint" in rows["team/Deployment.apps/cache"]
    assert out[-1] == f"If {VICTIM} went down now: 1 would move, 1 stay, 1 would not fit."


async def test_drill_plan_of_an_unknown_cluster_says_so(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await asyncio.to_thread(
        main.main, ["--etcd", registry.endpoint, "drill", "plan", "--cluster", "nope"]
    )
    assert code == 1
    assert "no cluster 'nope'" in capsys.readouterr().out
    # The member may be given as the one argument, as `kubectl drain NODE` takes it.
    code = await asyncio.to_thread(
        main.main, ["--etcd", registry.endpoint, "drill", "plan", "nope"]
    )
    assert code == 1
    assert "no cluster 'nope'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ([], "name the member: CLUSTER or --cluster CLUSTER"),
        (["a", "--cluster", "b"], "two members named: a and --cluster b"),
    ],
)
def test_drill_plan_needs_one_member(
    given: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main.main(["drill", "plan", *given])
    assert stopped.value.code == 2
    assert said in capsys.readouterr().err


async def test_finished_jobs_on_the_member_are_listed_as_finished_and_do_not_fail_the_plan(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failover never moves a job that has ended (it would only run again), so the plan
    lists it as finished - not as work that would not fit - and exits 0 when the rest fits:
    a CI gate on `drill plan` must pass on a fleet whose jobs have finished."""
    await join_members(registry)
    typed = codec.TypedStore(registry, objects.ObjectCodec())
    bindings = codec.TypedStore(registry, codec.Codec(Binding))
    results = codec.TypedStore(registry, codec.Codec(WorkloadStatus))
    web = fleet.workload("web", kind="Deployment", cpu="2", replicas=3)
    done = fleet.workload("done", kind="Job", cpu="1")
    broke = fleet.workload("broke", kind="Job", cpu="1")
    for w, replicas in ((web, 3), (done, 1), (broke, 1)):
        await typed.put(objects.key_for(w), w)
        await bindings.put(keys.binding_key(objects.workload_ref(w)), bound(w, VICTIM, replicas))
    for w, phase in ((done, "Succeeded"), (broke, "Failed")):
        ref = {"apiVersion": w.api_version, "kind": w.kind, "namespace": w.namespace}
        status = {"workload": {**ref, "name": w.metadata.name}, "phase": phase}
        key = keys.workload_status_key(objects.workload_ref(w))
        await results.put(key, WorkloadStatus.model_validate(status))

    code = await drill_plan(registry)
    out = capsys.readouterr().out.splitlines()
    json_code = await drill_plan(registry, "-o", "json")
    doc = json.loads(capsys.readouterr().out)

    assert (code, json_code) == (0, 0), out
    rows = {line.split()[0]: line for line in out[1:-1] if line.strip()}
    assert "finished (Succeeded): not moved" in rows["team/Job.batch/done"]
    assert "finished (Failed): not moved" in rows["team/Job.batch/broke"]
    assert (
        out[-1] == f"If {VICTIM} went down now: 1 would move, 0 stay, 0 would not fit, 2 finished."
    )
    actions = {w["workload"].rpartition("/")[2]: w["action"] for w in doc["workloads"]}
    assert actions == {"web": "move", "done": "finished", "broke": "finished"}
