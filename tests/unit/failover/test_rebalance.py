"""Fail-back decisions: when a placed workload moves back, what the moved Binding says, that
a Binding changed after the decision is never overwritten, the policy setting, and how the
what-if rates where a workload runs against where its policy would put it now."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from pydantic import ValidationError

from federation import errors
from federation.failover import graceful, rebalance
from federation.registry import codec, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.runtime import whatif
from policies.models.binding import Binding
from policies.models.placement_ext import FedctlPlacement
from policies.models.propagation import FedctlPropagationPolicy
from tests.unit.failover.builders import at, binding, task
from tests.unit.scheduler import fleet


def option(
    placement: dict[str, int],
    *,
    cost: str | None = None,
    group: int | None = None,
    name: str = "",
    score: float | None = None,
) -> rebalance.Option:
    costs = {c: (Decimal(cost) / len(placement) if cost is not None else None) for c in placement}
    return rebalance.Option(
        placement=placement, costs=costs, group=group, group_name=name, score=score, currency="EUR"
    )


def candidate(
    current: rebalance.Option,
    preferred: rebalance.Option | None,
    *,
    b: Binding | None = None,
    batch: bool = False,
    reason: str = "",
    static_weights: bool = False,
) -> rebalance.Candidate:
    return rebalance.Candidate(
        key=keys.binding_key(keys.WorkloadRef("default", "Deployment.apps", "web")),
        revision=7,
        binding=b or binding(clusters=dict(current.placement)),
        current=current,
        preferred=preferred,
        reason=reason,
        batch=batch,
        static_weights=static_weights,
    )


ON_B = option({"b": 2}, cost="3.00", group=1, name="fallback", score=40)


@pytest.mark.parametrize(
    ("given", "move", "why"),
    [
        pytest.param(
            candidate(ON_B, option({"a": 2}, cost="3.00", group=0, name="primary", score=40)),
            True,
            "affinity group fallback -> primary",
            id="failed over to the fallback group: back to the primary group",
        ),
        pytest.param(
            candidate(option({"b": 2}, cost="3.10"), option({"a": 2}, cost="0.80")),
            True,
            "cost 3.1000 EUR/h -> 0.8000 EUR/h",
            id="failed over to a dearer cluster: back to the cheaper one",
        ),
        pytest.param(
            candidate(option({"b": 2}, score=30), option({"a": 2}, score=75)),
            True,
            "score 30 -> 75",
            id="same price, clearly better score: moves",
        ),
        pytest.param(
            candidate(option({"b": 2}, score=70), option({"a": 2}, score=75)),
            False,
            "no clear gain over the current placement",
            id="a few score points are not worth a move (no ping-pong)",
        ),
        pytest.param(
            candidate(option({"a": 2}, cost="0.80"), option({"b": 2}, cost="3.10")),
            False,
            "cheaper where it is (0.8000 EUR/h, not 3.1000 EUR/h)",
            id="the preferred placement costs more: stays",
        ),
        pytest.param(
            candidate(
                option({"b": 6, "c": 6}, cost="0.29"),
                option({"a": 6, "b": 3, "c": 3}, cost="0.31"),
                static_weights=True,
            ),
            True,
            "to the split its static weights give: b:6, c:6 -> a:6, b:3, c:3",
            id="static weights a failover bent: restored, though dearer",
        ),
        pytest.param(
            candidate(
                option({"a": 2}, group=0, name="primary"),
                option({"b": 2}, group=1, name="fallback"),
                static_weights=True,
            ),
            False,
            "current group primary comes before fallback",
            id="static weights: an earlier affinity group still comes first",
        ),
        pytest.param(
            candidate(option({"a": 2}, group=0, name="primary"), ON_B),
            False,
            "current group primary comes before fallback",
            id="already in an earlier group (the primary is merely full of itself): stays",
        ),
        pytest.param(
            candidate(option({"a": 2}), option({"a": 2})),
            False,
            "already where its policy prefers",
            id="already preferred",
        ),
        pytest.param(
            candidate(ON_B, None, reason="0/4 clusters are available"),
            False,
            "no better placement fits now: 0/4 clusters are available",
            id="nothing fits now: stays where it runs",
        ),
        pytest.param(
            candidate(ON_B, option({"a": 2}, group=0), batch=True),
            False,
            "batch job: moving would restart it",
            id="a batch job is never moved (it would restart, or run twice)",
        ),
        pytest.param(
            candidate(
                ON_B,
                option({"a": 2}, group=0),
                b=binding(clusters={"b": 2}, tasks=[task("c")]),
            ),
            False,
            "already leaving c",
            id="a failover or earlier move still in progress: left to finish",
        ),
    ],
)
def test_decide(given: rebalance.Candidate, move: bool, why: str) -> None:
    verdict = rebalance.decide(given)
    assert (verdict.move, verdict.why) == (move, why)


def test_a_member_application_failover_left_is_not_a_move_in_progress() -> None:
    """Its task stays to keep the workload off the member it failed on: the move that
    the plan (made without that memory) prefers would put it back there, and nothing
    is waiting to end soon, so automatic fail-back does not keep asking."""
    bar = task("c", mode="Directly").model_copy(update={"producer": "ApplicationFailover"})
    barred = binding(clusters={"b": 2}, tasks=[bar])
    verdict = rebalance.decide(candidate(ON_B, option({"b": 1, "c": 1}, group=0), b=barred))
    assert not verdict.move and not verdict.waiting
    assert verdict.why == "kept off c, where its copy failed (application failover), for now"


def test_a_pending_binding_is_not_moved() -> None:
    pending = binding(clusters={"b": 2})
    pending = pending.model_copy(
        update={"status": pending.status.model_copy(update={"phase": "Pending"})}
    )
    verdict = rebalance.decide(candidate(ON_B, option({"a": 2}, group=0), b=pending))
    assert (verdict.move, verdict.why) == (False, "not placed")


def test_the_moved_binding_places_the_new_clusters_and_keeps_the_old_copy_gracefully() -> None:
    verdict = rebalance.decide(
        candidate(
            option({"b": 2, "c": 1}, cost="3.00"),
            rebalance.Option(
                placement={"a": 2, "c": 1},
                chips={"a": "amd64", "c": "amd64"},
                costs={"a": Decimal("0.5"), "c": Decimal("0.25")},
                currency="EUR",
            ),
        )
    )
    new = rebalance.moved(verdict, now=at(5))
    assert new.placement() == {"a": 2, "c": 1}
    assert new.spec.hourly_cost == Decimal("0.75")
    assert [t.chip for t in new.spec.clusters] == ["amd64", "amd64"]
    assert new.status.phase == "Scheduled"
    assert new.status.reason == "Rebalanced: cost 3.0000 EUR/h -> 0.7500 EUR/h"
    (leaving,) = new.spec.eviction_tasks
    assert (leaving.cluster, leaving.replicas, leaving.purge_mode) == ("b", 2, "Gracefully")
    assert leaving.creation_time == at(5)
    # The old copy stays until every new cluster is ready, as after a failover.
    waiting = graceful.judge(
        new.spec.eviction_tasks, targets=["a", "c"], ready={"a": False, "c": True},
        now=at(6), timeout=600,
    )  # fmt: skip
    assert (waiting.drop, waiting.purge) == ([], [])
    done = graceful.judge(
        new.spec.eviction_tasks, targets=["a", "c"], ready={"a": True, "c": True},
        now=at(7), timeout=600,
    )  # fmt: skip
    assert done.purge == ["b"]


@pytest.mark.parametrize(
    ("before", "after", "kept"),
    [
        pytest.param(
            {"a": 8, "b": 4}, {"a": 6, "b": 3, "c": 3}, [("a", 8), ("b", 4)],
            id="shares that shrink keep what they ran until the new member is ready",
        ),
        pytest.param(
            {"a": 4}, {"a": 2, "b": 2}, [("a", 4)],
            id="a member keeping half of a StatefulSet keeps all of it meanwhile",
        ),
        pytest.param(
            {"a": 2, "b": 2}, {"c": 4}, [("a", 2), ("b", 2)],
            id="members left entirely keep their copies as they are",
        ),
    ],
)  # fmt: skip
def test_a_move_keeps_every_replica_it_takes_elsewhere_until_it_is_ready(
    before: dict[str, int], after: dict[str, int], kept: list[tuple[str, int]]
) -> None:
    verdict = rebalance.decide(candidate(option(before, cost="3.00"), option(after, cost="1.00")))
    new = rebalance.moved(verdict, now=at(5))
    assert new.placement() == after
    tasks = new.spec.eviction_tasks
    assert [(t.cluster, t.replicas) for t in tasks] == kept
    assert {t.purge_mode for t in tasks} == {"Gracefully"}
    waiting = graceful.judge(
        tasks, targets=list(after), placed=after,
        ready=dict.fromkeys(before, True), now=at(6), timeout=600,
    )  # fmt: skip
    assert waiting.drop == []


async def test_apply_writes_on_the_decided_revision_and_skips_a_binding_changed_since(
    etcd_store: EtcdStore,
) -> None:
    typed = codec.TypedStore(etcd_store, codec.Codec(Binding))
    names = [f"rb-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    verdicts = []
    for name in names:
        b = binding(name, clusters={"b": 2})
        key = keys.binding_key(keys.WorkloadRef("default", "Deployment.apps", name))
        stored = await typed.put(key, b)
        given = rebalance.Candidate(
            key=key,
            revision=stored.revision,
            binding=b,
            current=option({"b": 2}, cost="3"),
            preferred=option({"a": 2}, cost="1"),
        )
        verdicts.append(rebalance.decide(given))
    # The scheduler rewrites the second Binding after the decision was made.
    second = verdicts[1].candidate
    await typed.update(second.key, binding(names[1], clusters={"c": 2}), revision=second.revision)

    outcome = await rebalance.apply(typed, verdicts, now=at(0))

    assert outcome.moved == [verdicts[0].ref]
    assert outcome.changed == [verdicts[1].ref]
    first = await typed.get(verdicts[0].candidate.key)
    assert first is not None and first.obj.placement() == {"a": 2}
    kept = await typed.get(second.key)
    assert kept is not None and kept.obj.placement() == {"c": 2}


async def test_a_fenced_apply_fails_once_the_leader_key_moved(etcd_store: EtcdStore) -> None:
    typed = codec.TypedStore(etcd_store, codec.Codec(Binding))
    name = f"rb-{uuid.uuid4().hex[:8]}"
    key = keys.binding_key(keys.WorkloadRef("default", "Deployment.apps", name))
    stored = await typed.put(key, binding(name, clusters={"b": 2}))
    leader = f"/fedctl-test/leader-{name}"
    first = await etcd_store.commit([st.Put(leader, b"old")])
    await etcd_store.commit([st.Put(leader, b"new")])  # a new leader: the old guard fails
    verdict = rebalance.decide(
        rebalance.Candidate(
            key=key,
            revision=stored.revision,
            binding=stored.obj,
            current=option({"b": 2}, cost="3"),
            preferred=option({"a": 2}, cost="1"),
        )
    )
    with pytest.raises(errors.Fenced):
        await rebalance.apply(
            typed, [verdict], now=at(0), guards=(st.Guard(leader, first.revision),)
        )
    unchanged = await typed.get(key)
    assert unchanged is not None and unchanged.obj.placement() == {"b": 2}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param({}, "Never", id="fail-back is a choice: off unless asked for"),
        pytest.param({"failback": "Automatic"}, "Automatic", id="automatic when the policy says"),
    ],
)
def test_the_failback_setting(given: dict[str, str], expected: str) -> None:
    assert FedctlPlacement.model_validate(given).failback == expected


def test_an_unknown_failback_value_is_refused() -> None:
    with pytest.raises(ValidationError, match="'Never' or 'Automatic'"):
        FedctlPlacement.model_validate({"failback": "Always"})


def _live(
    placed_on: str,
    *,
    failback: str = "Never",
    placement: dict[str, object] | None = None,
    running: dict[str, int] | None = None,
) -> whatif.Live:
    """Two members, `home` cheap and in the first affinity group, one workload on `placed_on`
    (or as `running` says), placed by `placement` when given."""
    clusters = [
        fleet.cluster("home", cpu_price="0.02", apis=[("apps/v1", "Deployment")]),
        fleet.cluster("spare", cpu_price="0.09", apis=[("apps/v1", "Deployment")]),
    ]
    w = fleet.workload("web", kind="Deployment", namespace="default", replicas=2)
    policy = FedctlPropagationPolicy.model_validate(
        {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": placement
                or {
                    "clusterAffinities": [
                        {"affinityName": "first", "clusterNames": ["home"]},
                        {"affinityName": "second", "clusterNames": ["spare"]},
                    ]
                },
                "fedctl": {"failback": failback},
            },
        }
    )
    key = keys.binding_key(keys.WorkloadRef("default", "Deployment.apps", "web"))
    ref = str(keys.parse_workload_key(key))
    return whatif.Live(
        clusters=[c.model_copy(update={"status": None}) for c in clusters],
        statuses={c.name: c.status for c in clusters if c.status is not None},
        policies=[policy],
        workloads={ref: codec.Stored(keys.workload_key(keys.parse_workload_key(key)), w, 3, 3)},
        bindings={key: codec.Stored(key, binding(clusters=running or {placed_on: 2}), 9, 9)},
    )


HALVES = {
    "clusterAffinity": {"clusterNames": ["home", "spare"]},
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": ["home"]}, "weight": 1},
                {"targetCluster": {"clusterNames": ["spare"]}, "weight": 1},
            ]
        },
    },
}
"""Half the replicas on each member, by static weights."""


def test_the_what_if_rates_the_current_and_the_preferred_placement() -> None:
    (found,) = whatif.candidates(_live("spare"))
    assert found.revision == 9
    assert (found.current.group, found.current.group_name) == (1, "second")
    assert found.preferred is not None
    assert dict(found.preferred.placement) == {"home": 2}
    assert (found.preferred.group, found.preferred.group_name) == (0, "first")
    assert found.current.cost is not None and found.preferred.cost is not None
    assert found.preferred.cost < found.current.cost
    assert rebalance.decide(found).why == "affinity group second -> first"


def test_a_static_weight_split_a_failover_left_is_restored_though_dearer() -> None:
    (found,) = whatif.candidates(_live("home", placement=HALVES, running={"home": 2}))
    assert found.static_weights
    assert found.preferred is not None and dict(found.preferred.placement) == {
        "home": 1,
        "spare": 1,
    }
    assert found.current.cost is not None and found.preferred.cost is not None
    assert found.current.cost < found.preferred.cost  # all on the cheap member now
    verdict = rebalance.decide(found)
    assert (verdict.move, verdict.why) == (
        True,
        "to the split its static weights give: home:2 -> home:1, spare:1",
    )
    (dynamic,) = whatif.candidates(_live("home", running={"home": 2}))
    assert not dynamic.static_weights


def test_automatic_only_keeps_the_workloads_whose_policy_asks_for_it() -> None:
    assert whatif.candidates(_live("spare"), automatic_only=True) == []
    (found,) = whatif.candidates(_live("spare", failback="Automatic"), automatic_only=True)
    assert rebalance.decide(found).move


def test_rebalance_and_drill_plan_keep_off_the_member_application_failover_left() -> None:
    """A static-weight split whose copy failed on `home` runs all on `spare`: rebalance
    recommended moving half back to `home`, and `drill plan` for `spare` predicted all of
    it there, where it had just failed. Both now keep off it while the bar lasts."""
    from federation.runtime import drill_plan

    live = _live("spare", placement=HALVES)
    bar = task("home", mode="Directly").model_copy(update={"producer": "ApplicationFailover"})
    (key,) = live.bindings
    stored = live.bindings[key]
    barred = binding(clusters={"spare": 2}, tasks=[bar])
    live.bindings[key] = codec.Stored(key, barred, stored.revision, stored.create_revision)

    (found,) = whatif.candidates(live)
    verdict = rebalance.decide(found)
    assert not verdict.move and verdict.why.startswith("kept off home")

    (predicted,) = drill_plan.predict(live, "spare", now=at(60))
    assert predicted.action == "pending" and "home" not in [t.name for t in predicted.targets]
