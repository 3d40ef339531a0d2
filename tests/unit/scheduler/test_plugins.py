"""Each filter and score plugin, cluster by cluster, and the framework around them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Admission, Usage
from federation.registry import keys
from federation.resources import ResourceList
from federation.scheduler import framework as fw
from federation.scheduler.plugins import (
    affinity,
    apis,
    binpack,
    capacity,
    chips,
    cost,
    default_registry,
    health,
    locality,
    quota,
    spot,
    taints,
)
from federation.settings import SchedulerSettings
from policies.models.cluster import Cluster, Taint
from tests.unit.scheduler.fleet import cluster, flavor, frq, job, queue, workload

SETTINGS = SchedulerSettings()


def verdict(
    plugin: Any,
    c: Cluster,
    w: Any = None,
    *,
    placement: dict[str, Any] | None = None,
    fedctl: dict[str, Any] | None = None,
    previous: dict[str, int] | None = None,
    usage: Usage | None = None,
    **snapshot_kw: Any,
) -> fw.Verdict:
    s = snap.build([c], **snapshot_kw)
    state = fw.CycleState(s, usage or Usage(), SETTINGS)
    request = fw.request_for(
        job(w or workload("w"), placement=placement, fedctl=fedctl),
        settings=SETTINGS,
        device_resources=s.device_resources,
        previous=previous,
    )
    result: fw.Verdict = plugin.filter(request, s.clusters[0], state)
    return result


@pytest.mark.parametrize(
    ("ready", "previous", "ok"),
    [
        pytest.param(True, None, True, id="a Ready cluster takes new work"),
        pytest.param(False, None, False, id="a cluster that is not Ready is filtered"),
        pytest.param(
            False, {"c": 2}, True, id="one already hosting the workload keeps it (failover's call)"
        ),
        pytest.param(False, {"d": 2}, False, id="hosting elsewhere does not count"),
    ],
)
def test_health(ready: bool, previous: dict[str, int] | None, ok: bool) -> None:
    c = cluster("c", ready=ready)
    result = verdict(health.Health(), c, previous=previous)
    assert result.ok is ok
    if not ok:
        assert result.reasons == ("cluster is not Ready",)
    s = snap.build([c])
    request = fw.request_for(
        job(workload("w")), settings=SETTINGS, device_resources=(), previous=previous
    )
    mask = health.Health().mask(request, fw.CycleState(s, Usage(), SETTINGS), np.array([0]))
    assert mask.tolist() == [ok], "the vector path agrees with the plain one"


NO_SCHEDULE = Taint(key="maintenance", value="yes", effect="NoSchedule")
NO_EXECUTE = Taint(key="cluster.fedctl.io/unreachable", effect="NoExecute")
PREFER = Taint(key="busy", effect="PreferNoSchedule")


@pytest.mark.parametrize(
    ("taint", "tolerations", "previous", "ok"),
    [
        pytest.param(
            NO_SCHEDULE, [], None, False, id="NoSchedule without toleration keeps work out"
        ),
        pytest.param(NO_EXECUTE, [], None, False, id="NoExecute without toleration keeps work out"),
        pytest.param(
            NO_SCHEDULE,
            [{"key": "maintenance", "operator": "Equal", "value": "yes"}],
            None,
            True,
            id="an Equal toleration with the right value passes",
        ),
        pytest.param(
            NO_SCHEDULE,
            [{"key": "maintenance", "operator": "Equal", "value": "no"}],
            None,
            False,
            id="an Equal toleration with another value does not",
        ),
        pytest.param(
            NO_EXECUTE,
            [{"key": "cluster.fedctl.io/unreachable", "operator": "Exists", "effect": "NoExecute"}],
            None,
            True,
            id="Exists with the matching effect tolerates NoExecute",
        ),
        pytest.param(
            Taint(key="cluster.fedctl.io/unreachable", effect="NoSchedule"),
            [{"key": "cluster.karmada.io/unreachable", "operator": "Exists"}],
            None,
            True,
            id="Karmada's unreachable key tolerates fedctl's unreachable taint",
        ),
        pytest.param(
            NO_EXECUTE,
            [{"operator": "Exists", "effect": "NoSchedule"}],
            None,
            False,
            id="a toleration for another effect does not count",
        ),
        pytest.param(
            NO_SCHEDULE, [], {"c": 2}, True, id="NoSchedule keeps a cluster already hosting it"
        ),
        pytest.param(
            NO_EXECUTE, [], {"c": 2}, True, id="NoExecute too: failover moves it, in its time"
        ),
        pytest.param(NO_EXECUTE, [], None, False, id="NoExecute keeps new work out"),
        pytest.param(PREFER, [], None, True, id="PreferNoSchedule only lowers the score"),
    ],
)
def test_taints(taint: Taint, tolerations: list[dict[str, Any]], previous: Any, ok: bool) -> None:
    placement = {"clusterTolerations": tolerations}
    result = verdict(
        taints.Taints(), cluster("c", taints=[taint]), placement=placement, previous=previous
    )
    assert result.ok is ok
    if not ok:
        assert taint.key in result.reasons[0] and taint.effect in result.reasons[0]


@pytest.mark.parametrize(
    ("term", "reason"),
    [
        pytest.param({"clusterNames": ["c"]}, None, id="listed by name"),
        pytest.param({"clusterNames": ["other"]}, "not in clusterNames", id="not listed by name"),
        pytest.param({"exclude": ["c"]}, "excluded by name", id="exclude wins"),
        pytest.param({"labelSelector": {"matchLabels": {"tier": "gpu"}}}, None, id="labels match"),
        pytest.param(
            {
                "labelSelector": {
                    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]
                }
            },
            "labels do not match labelSelector",
            id="NotIn expression fails",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "region", "operator": "In", "values": ["eu-west"]}]
                }
            },
            "region us-east fails fieldSelector In ['eu-west']",
            id="region field selector fails",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [
                        {"key": "provider", "operator": "NotIn", "values": ["gcp"]}
                    ]
                }
            },
            None,
            id="provider NotIn passes",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [
                        {"key": "zone", "operator": "In", "values": ["us-east-1a"]}
                    ]
                }
            },
            None,
            id="zone In passes",
        ),
    ],
)
def test_affinity(term: dict[str, Any], reason: str | None) -> None:
    c = cluster("c", labels={"tier": "gpu"}, zone="us-east-1a")
    result = verdict(affinity.Affinity(), c, placement={"clusterAffinity": term})
    assert result.ok is (reason is None)
    if reason:
        assert result.reasons == (reason,)


@pytest.mark.parametrize(
    ("served", "previous", "ok"),
    [
        pytest.param([("batch/v1", "Job")], None, True, id="the kind is served"),
        pytest.param([("apps/v1", "Deployment")], None, False, id="the kind is not served"),
        pytest.param(
            [("apps/v1", "Deployment")], {"c": 1}, True, id="a host is kept on a partial list"
        ),
        pytest.param([], None, True, id="no API list reported yet: benefit of the doubt"),
    ],
)
def test_api_enablement(served: list[tuple[str, str]], previous: Any, ok: bool) -> None:
    result = verdict(apis.ApiEnablement(), cluster("c", apis=served), previous=previous)
    assert result.ok is ok
    if not ok:
        assert result.reasons == ("API batch/v1 Job is not served",)


A100 = flavor(chip="nvidia-a100-80gb", devices=8, cpu="96", memory="1Ti")
ASCEND = flavor(arch="arm64", chip="ascend-910b", devices=8, cpu="192", memory="1Ti")
ARM = flavor(arch="arm64")
X86 = flavor()


@pytest.mark.parametrize(
    ("flavors", "w", "fedctl", "ok"),
    [
        pytest.param(
            [A100], workload("w", gpus=8), None, True, id="a GPU job finds the GPU flavor"
        ),
        pytest.param(
            [X86], workload("w", gpus=8), None, False, id="a GPU job on a CPU-only cluster"
        ),
        pytest.param(
            [ASCEND],
            workload("w", gpus=8),
            None,
            False,
            id="nvidia.com/gpu does not land on Ascend unless the chip is named",
        ),
        pytest.param(
            [ASCEND],
            workload("w", gpus=8, chips="ascend-910b"),
            None,
            True,
            id="naming the chip allows translation to Ascend",
        ),
        pytest.param(
            [A100],
            workload("w", gpus=8, chips="nvidia-h100-80gb"),
            None,
            False,
            id="another GPU model than the one named",
        ),
        pytest.param([A100], workload("w"), None, False, id="CPU pods stay off accelerator nodes"),
        pytest.param([X86, ARM], workload("w"), {"arches": ["arm64"]}, True, id="arch allowed"),
        pytest.param([X86], workload("w"), {"arches": ["arm64"]}, False, id="arch not present"),
        pytest.param([X86], workload("w", chips="arm64"), None, False, id="chips naming an arch"),
    ],
)
def test_chips(flavors: list[Any], w: Any, fedctl: Any, ok: bool) -> None:
    result = verdict(chips.Chips(), cluster("c", *flavors), w, fedctl=fedctl)
    assert result.ok is ok
    if not ok:
        assert result.reasons[0].startswith("no node flavor with")


@pytest.mark.parametrize(
    ("flavors", "w", "reason"),
    [
        pytest.param(
            [A100], workload("w", gpus=8), None, id="an empty 8-GPU node takes an 8-GPU pod"
        ),
        pytest.param(
            [
                flavor(
                    chip="nvidia-a100-80gb", devices=8, nodes=4, free_devices=16, largest_devices=4
                )
            ],
            workload("w", gpus=8),
            "no node with 8 free nvidia.com/gpu (emptiest has 4)",
            id="16 free GPUs spread 4 per node cannot host an 8-GPU pod",
        ),
        pytest.param(
            [X86],
            workload("w", cpu="4", replicas=9),
            "room for 8 of 9 replicas",
            id="a gang of 9 does not fit 2 nodes of 16 cores with 4 cores each",
        ),
        pytest.param([X86], workload("w", cpu="4", replicas=8), None, id="a gang of 8 does"),
        pytest.param(
            [X86],
            workload("w", memory="100Gi"),
            "no node with 100Gi memory even when empty (largest has 64Gi)",
            id="memory per node, not in total",
        ),
        pytest.param(
            [
                flavor(
                    chip="nvidia-a100-80gb", devices=8, nodes=2, free_devices=0, largest_devices=0
                )
            ],
            workload("w", gpus=16),
            "no node with 16 nvidia.com/gpu even when empty (largest has 8)",
            id="a pod larger than any node is told so, even on a full cluster",
        ),
        pytest.param(
            [flavor(memory="256Gi", nodes=0), X86],
            workload("w", memory="100Gi"),
            "no node with 100Gi memory even when empty (largest has 64Gi)",
            id="a flavor without nodes has no node that large",
        ),
    ],
)
def test_capacity(flavors: list[Any], w: Any, reason: str | None) -> None:
    result = verdict(capacity.Capacity(), cluster("c", *flavors), w)
    assert result.ok is (reason is None)
    if reason:
        assert result.reasons == (reason,)


def test_capacity_counts_placements_made_earlier_in_the_cycle() -> None:
    s = snap.build([cluster("c", A100)])
    state = fw.CycleState(s, Usage(), SETTINGS)
    request = fw.request_for(
        job(workload("w", gpus=8)), settings=SETTINGS, device_resources=s.device_resources
    )
    rows = np.array([0])
    assert capacity.cluster_available(request, state, rows).tolist() == [2]
    state.take(0, 0, 1, request.vector)
    assert capacity.cluster_available(request, state, rows).tolist() == [1]
    state.take(0, 0, 1, request.vector)
    assert capacity.Capacity().filter(request, s.clusters[0], state).reasons == (
        "no node with 8 free nvidia.com/gpu (emptiest has 0)",
    )
    assert capacity.Capacity().mask(request, state, rows).tolist() == [False]


def _usage(queue_name: str, namespace: str, **charge: str) -> Usage:
    ref = keys.WorkloadRef(namespace, "Job.batch", "old")
    amounts = ResourceList.from_wire({k.replace("_", "/"): v for k, v in charge.items()})
    return Usage([Admission(ref, queue_name, namespace, 0, 1, amounts)])


@pytest.mark.parametrize(
    ("queues", "quotas", "usage", "reason"),
    [
        pytest.param([], [], None, None, id="no queue or quota limits"),
        pytest.param(
            [queue("ml", capability={"accelerator/nvidia-a100-80gb": "64"})],
            [],
            _usage("ml", "team", **{"accelerator/nvidia-a100-80gb": "64"}),
            "queue ml at capability for nvidia-a100-80gb: 64/64 (needs 8)",
            id="queue at its per-chip capability",
        ),
        pytest.param(
            [queue("ml", capability={"accelerator/nvidia-h100": "8"})],
            [],
            None,
            None,
            id="a cap on another chip model does not apply",
        ),
        pytest.param(
            [],
            [frq("team", **{"nvidia.com/gpu": "4"})],
            None,
            "namespace team FederatedResourceQuota quota overall for nvidia.com/gpu is 4, this"
            " workload needs 8: it can never be admitted (raise the limit or shrink the request)",
            id="namespace quota overall smaller than the request",
        ),
    ],
)
def test_quota(
    queues: list[Any], quotas: list[Any], usage: Usage | None, reason: str | None
) -> None:
    w = workload("w", gpus=8, queue="ml")
    result = verdict(
        quota.Quota(), cluster("c", A100), w, usage=usage, queues=queues, quotas=quotas
    )
    assert result.ok is (reason is None)
    if reason:
        assert result.reasons == (reason,)


@pytest.mark.parametrize(
    ("max_cost", "ok"),
    [
        pytest.param("100", True, id="under the hourly cap"),
        pytest.param("10", False, id="over the hourly cap"),
    ],
)
def test_max_cost(max_cost: str, ok: bool) -> None:
    c = cluster("c", A100, gpu_prices={"nvidia-a100-80gb": "3"})
    result = verdict(cost.MaxCost(), c, workload("w", gpus=8), fedctl={"maxHourlyCost": max_cost})
    assert result.ok is ok


def _scores(plugin: Any, clusters: list[Cluster], w: Any, **kw: Any) -> list[int]:
    s = snap.build(clusters)
    state = fw.CycleState(s, Usage(), SETTINGS)
    request = fw.request_for(
        job(w, fedctl=kw.get("fedctl")),
        settings=SETTINGS,
        device_resources=s.device_resources,
        previous=kw.get("previous"),
    )
    rows = np.arange(s.size)
    vector = fw.normalise(plugin.raw_all(request, state, rows), plugin.scale).tolist()
    loop = fw.normalise(np.array([plugin.raw(request, c, state) for c in s.clusters]), plugin.scale)
    assert vector == loop.tolist()  # both paths agree
    return list(vector)


def test_cost_prefers_the_cheapest_cluster_on_demand_or_spot() -> None:
    fleet = [
        cluster("a-dear", A100, gpu_prices={"nvidia-a100-80gb": "4"}),
        cluster("b-cheap", A100, gpu_prices={"nvidia-a100-80gb": "2"}),
        cluster(
            "c-mid",
            A100,
            gpu_prices={"nvidia-a100-80gb": "3"},
            spot={"cpu": "0.01", "accelerators": {"nvidia-a100-80gb": "1"}},
        ),
    ]
    w = workload("w", gpus=8, duration="6h")
    assert _scores(cost.Cost(), fleet, w) == [0, 100, 50]
    spot = _scores(cost.Cost(), fleet, w, fedctl={"capacityType": "any"})
    assert spot.index(100) == 2


SPOT = {"cpu": "0.01", "accelerators": {"nvidia-a100-80gb": "1"}}


@pytest.mark.parametrize(
    ("capacity_type", "offers", "reason"),
    [
        pytest.param("spot", "spot", None, id="spot work goes where spot is offered"),
        pytest.param(
            "spot",
            "none",
            "capacityType is spot and this cluster offers no spot",
            id="spot work is refused where only on-demand is offered",
        ),
        pytest.param(
            "spot",
            "CNY",
            "capacityType is spot and this cluster's prices are not usable: priced in CNY,"
            " which has no exchange rate to USD (set FEDCTL_SCHEDULER__EXCHANGE_RATES=CNY=RATE):"
            " taken as unpriced",
            id="spot work is refused where prices cannot be read, saying why",
        ),
        pytest.param("any", "none", None, id="any capacity takes on-demand too"),
        pytest.param("on-demand", "none", None, id="on-demand work is unaffected"),
    ],
)
def test_spot_work_only_goes_where_spot_is_offered(
    capacity_type: str, offers: str, reason: str | None
) -> None:
    c = cluster("c", A100, spot=SPOT if offers != "none" else None)
    if offers == "CNY":
        assert c.spec.prices is not None
        prices = c.spec.prices.model_copy(update={"currency": "CNY"})
        c = c.model_copy(update={"spec": c.spec.model_copy(update={"prices": prices})})
    w = workload("w", gpus=8)
    fedctl = {"capacityType": capacity_type}
    result = verdict(spot.SpotOffer(), c, w, fedctl=fedctl)
    assert result.ok is (reason is None)
    if reason:
        assert result.reasons == (reason,)
    s = snap.build([c])
    request = fw.request_for(
        job(w, fedctl=fedctl), settings=SETTINGS, device_resources=s.device_resources
    )
    state = fw.CycleState(s, Usage(), SETTINGS)
    mask = spot.SpotOffer().mask(request, state, np.array([0]))
    assert mask.tolist() == [reason is None], "the vector path agrees with the plain one"


def test_binpack_prefers_fuller_clusters_and_spread_emptier() -> None:
    full = flavor(nodes=2)
    full = full.model_copy(update={"free": full.allocatable})  # half of it used
    fleet = [cluster("a", full), cluster("b", flavor(nodes=2))]
    assert _scores(binpack.Binpack(SETTINGS), fleet, workload("w")) == [50, 0]
    spread = binpack.Binpack(SchedulerSettings(binpack=False))
    assert _scores(spread, fleet, workload("w")) == [50, 100]


def test_locality_keeps_work_where_it_runs() -> None:
    fleet = [cluster("a"), cluster("b")]
    assert _scores(locality.Locality(), fleet, workload("w"), previous={"b": 1}) == [0, 100]


def test_registry_refuses_duplicates_and_builds_every_plugin() -> None:
    registry = default_registry()
    with pytest.raises(ValueError, match="already registered"):
        registry.register("health", health.Health)
    built = registry.build(SETTINGS)
    assert [p.name for p in built][:4] == ["eviction", "health", "taints", "affinity"]
    assert all(isinstance(p, fw.FilterPlugin | fw.ScorePlugin) for p in built)


@pytest.mark.parametrize(
    ("raw", "scale", "expected"),
    [
        pytest.param([1.0, 2.0, 3.0], "min_best", [100, 50, 0], id="lowest raw is best"),
        pytest.param([1.0, 2.0, 3.0], "max_best", [0, 50, 100], id="highest raw is best"),
        pytest.param([5.0, 5.0], "min_best", [100, 100], id="all equal all best"),
        pytest.param([float("nan"), 2.0], "min_best", [0, 100], id="unpriced scores zero"),
        pytest.param([150.0, -3.0], "absolute", [100, 0], id="absolute values are clipped"),
    ],
)
def test_normalise(raw: list[float], scale: str, expected: list[int]) -> None:
    assert fw.normalise(np.array(raw), scale).tolist() == expected
