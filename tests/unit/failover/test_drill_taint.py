"""The `taint` drill's NoExecute taint carries its time: a workload tolerating it for
tolerationSeconds must leave once they run out, and without a time they never did."""

from __future__ import annotations

from federation.clock import FakeClock
from federation.failover import eviction, faults
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from policies.models.cluster import Cluster
from policies.models.common import Toleration
from tests.unit.failover.builders import binding


async def test_the_drill_taint_is_stamped_and_its_toleration_runs_out() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    typed = codec.TypedStore(store, objects.ObjectCodec())
    edge = Cluster.model_validate({"metadata": {"name": "edge"}, "spec": {"region": "r"}})
    await typed.create(keys.cluster_key("edge"), edge)

    await faults.set_taint(store, "edge", on=True, clock=clock)
    stored = await typed.get(keys.cluster_key("edge"))
    assert stored is not None and isinstance(stored.obj, Cluster)
    (taint,) = stored.obj.spec.taints
    assert (taint.key, taint.effect, taint.time_added) == (
        faults.DRILL_TAINT,
        "NoExecute",
        clock.now(),
    )

    patient = [Toleration(key=faults.DRILL_TAINT, operator="Exists", toleration_seconds=60)]
    web = binding("web", clusters={"edge": 1})
    await clock.advance(61)
    (decision,) = eviction.judge(web, {"edge": [taint]}, patient, now=clock.now())
    assert decision.due(clock.now()), "60 s after the taint, not 60 s after every look"

    await faults.set_taint(store, "edge", on=False, clock=clock)
    cleared = await typed.get(keys.cluster_key("edge"))
    assert cleared is not None and isinstance(cleared.obj, Cluster)
    assert cleared.obj.spec.taints == []
    await store.close()
