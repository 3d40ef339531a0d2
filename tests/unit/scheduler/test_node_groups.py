"""Free replicas are counted node by node: a flavor's free room split over its nodes holds
fewer pods than its sum, and a member is never given pods its nodes cannot hold (they
would wait Pending there for good). Placements made earlier in the cycle, and admitted
pods the monitor does not show yet, are charged node by node the same way; pods that no
node holds are charged nowhere, as they hold no room on the member."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.resources import ResourceList
from federation.scheduler import framework as fw
from federation.scheduler import free_replicas, node_groups
from federation.scheduler.plugins import capacity
from federation.settings import SchedulerSettings
from policies.models.cluster import Cluster, FreeNodes, NodeFlavor
from tests.unit.scheduler.fleet import DYNAMIC_WEIGHT, cluster, flavor, job, placed, run, workload
from tests.unit.scheduler.test_held import held

SETTINGS = SchedulerSettings()
CORE = 1000


def split(cpus: list[str], *, memory: str = "64Gi") -> NodeFlavor:
    """8-CPU nodes as the monitor reports them, one node per entry of `cpus` free."""
    base = flavor(cpu="8", memory=memory, nodes=len(cpus))
    frees = [ResourceList.from_wire({"cpu": c, "memory": memory, "pods": "100"}) for c in cpus]
    groups: dict[ResourceList, int] = {}
    for f in frees:
        groups[f] = groups.get(f, 0) + 1
    ordered = sorted(groups, key=lambda f: f.amount("cpu"), reverse=True)
    total = ResourceList()
    for f in frees:
        total = total + f
    return base.model_copy(
        update={
            "free": total,
            "largest_free": ordered[0],
            "free_nodes": [FreeNodes(free=f, count=groups[f]) for f in ordered],
        }
    )


FRAGMENTED = ["5", "8", "4400m", "1500m", "4400m"]
"""23.3 CPU free: seven 3-CPU pods by the sum, five node by node (1+2+1+0+1)."""


def state_of(*clusters: Cluster, usage: Usage | None = None) -> tuple[snap.Snapshot, fw.CycleState]:
    s = snap.build(list(clusters))
    return s, fw.CycleState(s, usage or Usage(), SETTINGS)


def request(s: snap.Snapshot, cpu: str, replicas: int = 1) -> fw.JobRequest:
    w = workload("w", cpu=cpu, memory="1Gi", replicas=replicas)
    return fw.request_for(job(w), settings=SETTINGS, device_resources=s.device_resources)


ROWS = np.array([0])


def test_free_replicas_are_what_fits_node_by_node_not_the_sum() -> None:
    s, state = state_of(cluster("a", split(FRAGMENTED)))
    three = request(s, "3")
    assert capacity.cluster_available(three, state, ROWS).tolist() == [5]
    assert capacity.flavor_available(three, state, ROWS).tolist() == [[5]]
    assert capacity.one_flavor_available(three, state, 0, 0) == 5
    gang = dataclasses.replace(request(s, "3", replicas=6), single_cluster=True)
    assert capacity.Capacity().filter(gang, s.clusters[0], state).reasons == (
        "room for 5 of 6 replicas",
    )


def test_a_status_without_free_nodes_is_read_as_before() -> None:
    """Stored before the monitor reported how room is split: the sum decides (7)."""
    old = split(FRAGMENTED).model_copy(update={"free_nodes": []})
    s, state = state_of(cluster("a", old))
    assert capacity.cluster_available(request(s, "3"), state, ROWS).tolist() == [7]


def test_a_member_is_given_only_the_replicas_its_nodes_hold() -> None:
    w = workload("frag", cpu="3", memory="1Gi", replicas=6, kind="Deployment")
    result = run(
        [cluster("a", split(FRAGMENTED)), cluster("b", flavor(cpu="4", nodes=1))],
        [job(w, placement={"replicaScheduling": DYNAMIC_WEIGHT})],
    )
    assert placed(result) == {"frag": {"a": 5, "b": 1}}


def test_placements_earlier_in_the_cycle_are_charged_node_by_node() -> None:
    """Two 3-CPU pods spread over the two emptiest nodes (8 and 5 CPU free) leave 5 and 2:
    three more 3-CPU pods fit, and a 6-CPU pod no longer does."""
    s, state = state_of(cluster("a", split(FRAGMENTED)))
    three, six = request(s, "3"), request(s, "6")
    assert capacity.cluster_available(six, state, ROWS).tolist() == [1]
    state.take(0, 0, 2, three.vector)
    assert capacity.cluster_available(three, state, ROWS).tolist() == [3]
    assert capacity.cluster_available(six, state, ROWS).tolist() == [0]
    assert capacity.Capacity().filter(six, s.clusters[0], state).reasons == (
        "room for 0 of 1 replicas",
    )


def test_pods_no_node_holds_do_not_hide_the_room_nodes_still_have() -> None:
    """Charging more 3-CPU pods than fit (kept replicas, a duplicate) leaves the small
    room of the other nodes: a 10m pod still fits, and the emptiest node is not zero."""
    s, state = state_of(cluster("a", split(["3", "2", "1"])))
    state.take(0, 0, 4, request(s, "3").vector)
    tiny = request(s, "10m")
    assert capacity.Capacity().filter(tiny, s.clusters[0], state).ok
    assert capacity.cluster_available(request(s, "1"), state, ROWS).tolist() == [3]
    assert state.largest[0, 0, snap.CPU] >= 2 * CORE  # not driven below the 2-CPU node


def test_admitted_pods_left_pending_on_the_member_hold_no_room() -> None:
    """Two 3-CPU pods admitted, neither shown by the monitor: one fits the 3-CPU node, the
    other fits no node and waits Pending. Only the first is taken from the room: the
    2-CPU node still takes a 10m pod."""
    pod = ResourceList.from_wire({"cpu": "3", "memory": "1Gi"})
    s, state = state_of(
        cluster("a", split(["3", "2"])), usage=Usage([held("w", {"a": 2}, pod=pod)])
    )
    tiny = request(s, "10m")
    assert capacity.Capacity().filter(tiny, s.clusters[0], state).ok
    assert capacity.cluster_available(request(s, "1"), state, ROWS).tolist() == [2]
    assert capacity.cluster_available(request(s, "3"), state, ROWS).tolist() == [0]


GIB = 1024**3 * 1000


@pytest.mark.parametrize("seed", range(20))
def test_charged_groups_count_what_is_left_on_the_nodes(seed: int) -> None:
    """After any mix of charges, what the groups count as fitting is what was counted
    before less what was charged, or less (groups joined when slots run out): never more,
    and every pod counted as placed did fit."""
    rng = random.Random(seed)
    kinds: dict[tuple[int, ...], int] = {}
    for _ in range(12):
        node = (rng.randint(0, 16) * 500, rng.randint(0, 8) * GIB, 0, 50_000)
        kinds[node] = kinds.get(node, 0) + 1
    rows = [list(k) for k in kinds] + [[0, 0, 0, 0]] * node_groups.SPARE
    counts = [*kinds.values()] + [0] * node_groups.SPARE
    for _ in range(15):
        vector = [rng.randint(1, 8) * 500, rng.randint(0, 4) * GIB, 0, 1000]
        need = [(r, w) for r, w in enumerate(vector) if w > 0]
        before = node_groups.fit_one(rows, counts, need)
        pods = rng.randint(0, before + 2)
        placed_pods = node_groups.charge(rows, counts, pods, vector)
        assert placed_pods == min(pods, before)
        assert sum(counts) == 12
        assert all(a >= 0 for row, n in zip(rows, counts, strict=True) if n for a in row)
        assert node_groups.fit_one(rows, counts, need) <= before - placed_pods
        arrays = np.array(rows), np.array(counts)
        mask = np.array(vector) > 0
        assert node_groups.fit(*arrays, mask, np.array(vector)[mask]) == node_groups.fit_one(
            rows, counts, need
        )


@pytest.mark.parametrize(
    "vector",
    [
        pytest.param([0, 0, 0, 1000], id="pod slots alone"),
        pytest.param([1500, 0, 0, 1000], id="cpu"),
        pytest.param([1500, 3 * GIB, 0, 1000], id="cpu and memory"),
        pytest.param([1500, 3 * GIB, 2000, 1000], id="cpu, memory and devices"),
    ],
)
def test_the_plain_count_agrees_with_the_vector_count_however_many_resources(
    vector: list[int],
) -> None:
    """Every pod asks for pod slots and up to three more resources; the plain count reads
    them as four (`node_groups.asked`), which must count what the vectorised one does."""
    rows = [[8000, 10 * GIB, 8000, 5000], [3000, 16 * GIB, 4000, 110_000], [0, 0, 0, 0]]
    counts = [3, 2, 0]
    mask = np.array(vector) > 0
    expected = int(node_groups.fit(np.array(rows), np.array(counts), mask, np.array(vector)[mask]))
    need = [(r, w) for r, w in enumerate(vector) if w > 0]
    assert node_groups.fit_one(rows, counts, node_groups.asked(vector)) == expected
    assert node_groups.fit_one(rows, counts, need) == expected


def test_the_incremental_count_agrees_with_the_vector_count() -> None:
    s, state = state_of(cluster("a", split(FRAGMENTED)), cluster("b", split(["8", "2"])))
    three = request(s, "3")
    shape = free_replicas.Shape(three, state)
    for row, pods in ((0, 2), (1, 1), (0, 1)):
        state.take(row, 0, pods, three.vector)
        shape.sync(three, state)
        expected = capacity.cluster_available(three, state, np.array([0, 1])).tolist()
        assert shape.total == expected


def test_pods_are_spread_over_the_emptiest_nodes_as_the_members_scheduler_spreads() -> None:
    """Four 1-CPU pods on two empty 8-CPU nodes (in two groups: their memory differs) go
    two on each, as the member's least-allocated spreading puts them: neither node keeps
    room for a 7-CPU pod, both keep room for a 6-CPU one."""
    rows = [[8000, 10 * GIB, 0, 110_000], [8000, 20 * GIB, 0, 110_000], [0, 0, 0, 0]]
    counts = [1, 1, 0]
    assert node_groups.charge(rows, counts, 4, [1000, GIB, 0, 1000]) == 4
    assert node_groups.fit_one(rows, counts, [(0, 7000)]) == 0
    assert node_groups.fit_one(rows, counts, [(0, 6000)]) == 2


def test_where_the_nodes_are_known_the_emptiest_node_does_not_hide_one_that_fits() -> None:
    """The emptiest node (most CPU free) has little memory; another node has the memory a
    32Gi pod asks for. Counted node by node, the pod fits there, on every path."""
    base = flavor(cpu="8", memory="64Gi", nodes=2)
    roomy = ResourceList.from_wire({"cpu": "8", "memory": "4Gi", "pods": "100"})
    deep = ResourceList.from_wire({"cpu": "2", "memory": "60Gi", "pods": "100"})
    reported = base.model_copy(
        update={
            "free": roomy + deep,
            "largest_free": roomy,
            "free_nodes": [FreeNodes(free=roomy, count=1), FreeNodes(free=deep, count=1)],
        }
    )
    s, state = state_of(cluster("a", reported))
    w = workload("w", cpu="1", memory="32Gi")
    big = fw.request_for(job(w), settings=SETTINGS, device_resources=s.device_resources)
    assert capacity.cluster_available(big, state, ROWS).tolist() == [1]
    assert capacity.one_flavor_available(big, state, 0, 0) == 1
    assert capacity.Capacity().filter(big, s.clusters[0], state).ok
    shape = free_replicas.Shape(big, state)
    state.take(0, 0, 1, request(s, "1").vector)  # the roomy node: 7 CPU, 3Gi left
    shape.sync(big, state)
    assert shape.total == [1]
