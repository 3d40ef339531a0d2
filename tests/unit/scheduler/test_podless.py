"""Objects without pods (ConfigMaps, Services, Namespaces) need no room.

Each was placed as one pod: a member's pod slots filled with ConfigMaps, later ones waited
`no eligible cluster has a node with 1 free pods`, and real pods were refused where the
member ran none.
"""

from __future__ import annotations

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import cluster, flavor, job, placed, run, workload

DUPLICATED = {
    "clusterAffinity": {"clusterNames": ["a", "b"]},
    "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
}


def _configmap(name: str) -> Workload:
    return Workload.model_validate(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "team"},
            "data": {"k": "v"},
        }
    )


def test_configmaps_take_no_pod_slots() -> None:
    fleet = [cluster("a", flavor(nodes=1, cpu="16")), cluster("b", flavor(nodes=1, cpu="16"))]
    pods = next(iter(fleet[0].status.flavors)).allocatable.amount("pods") // 1000
    maps = [job(_configmap(f"cm-{i}"), placement=DUPLICATED, seq=i) for i in range(pods + 10)]
    result = run(fleet, maps)
    assert len(placed(result)) == pods + 10, sorted(result.reasons.values())[:1]
    assert all(p == {"a": 0, "b": 0} for p in placed(result).values())
    # and a pod still finds its slot where they went
    snapshot = snap.build(fleet, bindings=result.bindings)
    app = job(workload("app", cpu="1", kind="Deployment"), placement=DUPLICATED, seq=999)
    after = run(fleet, [app], usage=Usage(result.admitted), snapshot=snapshot)
    assert placed(after) == {"app": {"a": 1, "b": 1}}


def test_a_binding_stored_with_a_replica_for_a_configmap_holds_no_room() -> None:
    """Bindings written before objects without pods had no replicas give them 1 on each
    cluster; read back, that took a pod slot on every member until placed again."""
    from federation.scheduler import bound_usage

    fleet = [cluster("a", flavor(nodes=1, cpu="16")), cluster("b", flavor(nodes=1, cpu="16"))]
    cm = job(_configmap("cm"), placement=DUPLICATED)
    [binding] = run(fleet, [cm]).bindings
    old = [t.model_copy(update={"replicas": 1}) for t in binding.spec.clusters]
    stored = binding.model_copy(update={"spec": binding.spec.model_copy(update={"clusters": old})})
    snapshot = snap.build(fleet)
    admitted = bound_usage.admission_of(
        cm,
        stored,
        device_resources=snapshot.device_resources,
        chip_devices=snapshot.chip_devices,
    )
    assert dict(admitted.placement) == {"a": 0, "b": 0}
