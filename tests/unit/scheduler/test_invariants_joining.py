"""Members joining, coming back, relabelled and starting to serve a kind, in any order and
with cycles at any moment between, leave services placed as if the fleet had been whole,
and labelled as it ends, from the start.

A member goes through the states failover and the monitor give it: down (NotReady, with
failover's `not-ready` taint), or not probed yet; then Ready but still tainted (`not-ready`
until failover's next pass, `recovering` until its stale copies are purged); then Ready
and untainted. Or it is Ready without Deployments among the APIs it reports (a CRD not
installed yet), then with them; or Ready without a node that counts (all NotReady), then
with its nodes back. Members' labels and regions change too, in and out of services'
cluster affinities. Services are divided by static weights or Duplicated, whose
placement does not depend on the previous one, so once every member is Ready, untainted
and serving Deployments the loop must come to the placement a fleet whole from the start
gets. A service placed in a window where a member was Ready but tainted (or did not serve
its kind, or had no node), and not placed again when that ended, would stay without that
member's share; one not placed again when a member was relabelled into its affinity would
never get a share there, nor lose it when one was relabelled out.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from federation.scheduler import reconcile
from policies.models.binding import Binding
from policies.models.cluster import (
    NOT_READY_TAINT,
    RECOVERING_TAINT,
    APIEnablement,
    APIResource,
    ClusterStatus,
    Condition,
    Taint,
)
from policies.models.propagation import PropagationPolicy
from tests.unit.scheduler.fleet import NOW, cluster, flavor, workload
from tests.unit.scheduler.test_invariants import _Member, replica_scheduling
from tests.unit.scheduler.test_invariants_loop import _World

_NEXT = {"down": ("joining", "recovering"), "unprobed": ("joining",), "joining": ("ready",)}
_NEXT["recovering"] = _NEXT["no-api"] = _NEXT["nodeless"] = ("ready",)
"""How a member's state moves on: never back, so every run ends with the fleet whole.
`no-api`: Ready, but Deployments are not among the APIs it reports yet. `nodeless`:
Ready and untainted, but none of its nodes counts (all NotReady or cordoned)."""
_APIS = [("v1", "ConfigMap"), ("apps/v1", "Deployment")]


def _status(state: str, base: ClusterStatus) -> ClusterStatus:
    """A member's status in `state`, as the monitor and failover would have written it."""
    ready = {"down": "False", "unprobed": "Unknown"}.get(state, "True")
    taint = {"recovering": RECOVERING_TAINT, "ready": None}.get(state, NOT_READY_TAINT)
    taint = None if state in ("no-api", "nodeless") else taint
    condition = Condition(type="Ready", status=ready, last_transition_time=NOW)
    taints = [] if taint is None else [Taint(key=taint, effect="NoSchedule")]
    served = _APIS[:1] if state == "no-api" else _APIS
    apis = [
        APIEnablement(group_version=gv, resources=[APIResource(name=k.lower() + "s", kind=k)])
        for gv, k in served
    ]
    update = {"conditions": [condition], "taints": taints, "api_enablements": apis}
    return base.model_copy(update=update)


AFFINITIES: list[dict[str, object] | None] = [
    None,
    {"labelSelector": {"matchLabels": {"tier": "web"}}},
    {
        "labelSelector": {
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["batch"]}]
        }
    },
    {
        "fieldSelector": {
            "matchExpressions": [{"key": "region", "operator": "In", "values": ["us"]}]
        }
    },
]
"""Cluster affinities a service may have; c0 (Ready from the start, labelled `tier: web`
in region `us`, never relabelled) matches them all, so every service has somewhere to go."""


def _where(rng: random.Random) -> tuple[str, dict[str, str]]:
    """A random region and labels."""
    return rng.choice(["us", "eu"]), rng.choice([{}, {"tier": "web"}, {"tier": "batch"}])


class _Joining(_World):
    """A fleet of CPU members with room for everything, each in a random state and place,
    and one to four services, each in its own namespace under static weights or Duplicated
    and a random cluster affinity. `whole`: every member Ready, placed as in `where`."""

    def __init__(
        self, rng: random.Random, *, whole: dict[str, tuple[str, dict[str, str]]] | None = None
    ) -> None:
        super().__init__(rng)
        names = [f"c{i}" for i in range(rng.randint(2, 5))]
        self.fleet = [cluster(n, flavor(cpu="16", nodes=3)) for n in names]
        self.members = {c.metadata.name: _Member(c, rng, others=False) for c in self.fleet}
        self.queues, self.quotas = [], []
        self.workloads, self.scheduling = {}, {}
        self.affinity: dict[str, dict[str, object] | None] = {}
        for i in range(rng.randint(1, 4)):
            kind = "static" if rng.random() < 0.7 else "duplicated"
            self.scheduling[f"svc-{i}"] = replica_scheduling_of(rng, names, kind)
            self.affinity[f"svc-{i}"] = rng.choice(AFFINITIES)
            w = workload(
                f"web{i}", namespace=f"svc-{i}", kind="Deployment", replicas=rng.randint(1, 6)
            )
            self.workloads[str(reconcile.ref_of(w))] = reconcile.Entry(w, i + 1)
        self.state = {n: rng.choice([*_NEXT, "ready"]) for n in names}
        self.where = {n: _where(rng) for n in names}
        self.state["c0"], self.where["c0"] = "ready", ("us", {"tier": "web"})
        self.moves = rng.randint(0, 4)
        self.nodes: dict[str, tuple[list[Any], list[Any]]] = {}
        """Each member's node flavors and nodes, kept while it is `nodeless`."""
        if whole is not None:
            self.state, self.where, self.moves = dict.fromkeys(names, "ready"), whole, 0
        self._apply()

    def policies(self) -> list[PropagationPolicy]:
        return [
            PropagationPolicy.model_validate(
                {
                    "metadata": {"name": "services", "namespace": ns},
                    "spec": {
                        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                        "placement": {
                            "replicaScheduling": scheduling,
                            **({"clusterAffinity": a} if (a := self.affinity[ns]) else {}),
                        },
                    },
                }
            )
            for ns, scheduling in self.scheduling.items()
        ]

    def step(self) -> bool:
        """Move one member on, or move one elsewhere; False once the fleet is whole and
        done moving."""
        moving = [n for n, state in self.state.items() if state != "ready"]
        if self.moves and (not moving or self.rng.random() < 0.3):
            self.moves -= 1
            self.where[self.rng.choice([n for n in self.where if n != "c0"])] = _where(self.rng)
        elif moving:
            name = self.rng.choice(moving)
            self.state[name] = self.rng.choice(_NEXT[self.state[name]])
        else:
            return False
        self._apply()
        return True

    def _apply(self) -> None:
        for name, m in self.members.items():
            nodes = self.nodes.setdefault(name, (m.flavors, m.nodes))
            m.flavors, m.nodes = ([], []) if self.state[name] == "nodeless" else nodes
            assert m.spec.status is not None
            status = _status(self.state[name], m.spec.status)
            region, labels = self.where[name]
            meta = m.spec.metadata.model_copy(update={"labels": labels})
            spec = m.spec.spec.model_copy(update={"region": region})
            m.spec = m.spec.model_copy(update={"metadata": meta, "spec": spec, "status": status})

    def settle(self) -> dict[str, dict[str, int]]:
        """Cycles until the Bindings stop changing (at most four)."""
        for _ in range(4):
            before = _placements(self.bindings)
            self.run_members()
            self.cycle()
            if _placements(self.bindings) == before:
                break
        return _placements(self.bindings)


def replica_scheduling_of(rng: random.Random, names: list[str], kind: str) -> dict[str, object]:
    """A random replica scheduling of `kind` ("static" or "duplicated"); static weights
    always give c0 a share."""
    while True:
        drawn, scheduling = replica_scheduling(rng, names)
        if drawn != kind:
            continue
        weights = scheduling.get("weightPreference")
        if isinstance(weights, dict) and not any(
            t["targetCluster"]["clusterNames"] == ["c0"] for t in weights["staticWeightList"]
        ):
            weights["staticWeightList"].append(
                {"targetCluster": {"clusterNames": ["c0"]}, "weight": 1}
            )
        return scheduling


def _placements(bindings: dict[str, Binding]) -> dict[str, dict[str, int]]:
    return {k: b.placement() for k, b in bindings.items() if b.status.phase == "Scheduled"}


@pytest.mark.parametrize("seed", range(150))
def test_services_end_placed_as_on_a_fleet_whole_from_the_start(seed: int) -> None:
    world = _Joining(random.Random(seed))
    while True:
        for _ in range(world.rng.randint(0, 2)):
            world.run_members()
            world.cycle()
        if not world.step():
            break
    got = world.settle()
    whole = _Joining(random.Random(seed), whole=world.where)
    assert (whole.scheduling, whole.affinity) == (world.scheduling, world.affinity)
    assert len(got) == len(world.workloads), "every service placed"
    assert got == whole.settle(), (world.scheduling, world.affinity, world.where)
