"""`fedctl plan` says what the controller will do: over random fleets, a plan's verdict,
placement, chips, costs and reason are those of the Binding one scheduling cycle writes
for the same job, with and without earlier work holding room.

An engineer edits policy YAML against the plan; a plan that differs from the cycle (it
said "chip any" where the Binding said amd64 on a member of two arches) sends them the
wrong way.
"""

from __future__ import annotations

import random

from federation.cache import snapshot as snap
from federation.scheduler import cycle
from federation.settings import SchedulerSettings
from policies.models.cluster import Cluster
from tests.unit.scheduler.fleet import flavor, job, run, workload
from tests.unit.scheduler.test_invariants import A100, H100
from tests.unit.scheduler.test_invariants_policy import _fleet as invariants_fleet
from tests.unit.scheduler.test_invariants_policy import _policy


def _fleet(rng: random.Random) -> list[Cluster]:
    """The policy invariants' random fleet, with Arm nodes beside x86 on some members."""
    out = []
    for member in invariants_fleet(rng):
        status = member.status
        if status is not None and rng.random() < 0.4:
            arm = flavor(arch="arm64", cpu=str(rng.choice([8, 32])), nodes=2)
            status = status.model_copy(update={"flavors": [*status.flavors, arm]})
        out.append(member.model_copy(update={"status": status}))
    return out


def _compare(seed: int) -> str:
    """Plan and cycle for one random fleet and job, asserted equal; how it came out."""
    rng = random.Random(seed)
    fleet = _fleet(rng)
    placement = _policy(rng, [c.metadata.name for c in fleet])[0] if rng.random() < 0.8 else None
    gpus = rng.choice([0, 0, 1, 2, 4])
    chips = rng.choice(["", A100, H100]) if gpus else rng.choice(["", "", A100, "arm64", "amd64"])
    kind = rng.choice(["Job", "Deployment"])
    cpu = rng.choice(["500m", "2", "6"])
    w = workload("w", kind=kind, cpu=cpu, gpus=gpus, replicas=rng.randint(1, 6), chips=chips)
    pending = job(w, placement=placement, seq=5)
    earlier = [
        job(
            workload(f"pre{k}", kind=rng.choice(["Job", "Deployment"]), cpu=rng.choice(["2", "6"]),
                     gpus=rng.choice([0, 2]), replicas=rng.randint(1, 4)),
            seq=k,
        )
        for k in range(rng.randint(0, 3))
    ]  # fmt: skip
    usage = run(fleet, earlier).usage

    result = run(fleet, [pending], usage=usage.copy())
    planned = cycle.Scheduler(SchedulerSettings()).plan(pending, snap.build(fleet), usage.copy())

    written = [b for b in result.bindings if b.spec.workload.name == "w"]
    if not written or written[0].status.phase != "Scheduled":
        assert planned.reason == result.reasons[str(pending.ref)], seed
        return "pending"
    targets = written[0].spec.clusters
    assert planned.reason == "", seed
    assert planned.placement == {t.name: t.replicas for t in targets}, seed
    assert planned.chips == {t.name: t.chip for t in targets}, seed
    assert planned.costs == {t.name: t.hourly_cost for t in targets}, seed
    two_arches = {c.metadata.name for c in fleet if _arches(c) > 1}
    return "placed on two arches" if any(t.name in two_arches for t in targets) else "placed"


def _arches(c: Cluster) -> int:
    flavors = c.status.flavors if c.status is not None else []
    return len({f.arch for f in flavors if f.accelerator_model is None})


def test_the_plan_is_what_the_cycle_writes() -> None:
    outcomes = [_compare(seed) for seed in range(300)]
    # Each comparison is made often: placed, pending, and on a member of two arches.
    assert min(outcomes.count(o) for o in ("placed", "pending", "placed on two arches")) >= 20
