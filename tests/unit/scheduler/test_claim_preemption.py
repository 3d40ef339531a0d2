"""Which policy keeps a claimed workload: the one its Binding records, as in Karmada.

A template once claimed stays with its policy (`spec.preemption` defaults to `Never`); a
matching policy with `preemption: Always` that outranks the claimant takes it over; when
the claimant is deleted or no longer selects it, the policy matching now claims it, and
with none the workload stays where it is (Karmada keeps the ResourceBinding, issue #3873).

Why a record: choosing the claimant afresh every cycle made every policy `Always`, and a
deleted policy sent its workloads through the no-policy path, deleting their copies in all
members but one.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.failover.controller import FailoverController
from federation.registry import codec, objects
from federation.registry.memory import MemoryStore
from federation.scheduler import binder as binder_mod
from federation.scheduler import fingerprint, plan, reconcile, recorded
from federation.settings import SchedulerSettings
from policies.loading import load_text
from policies.models.binding import Binding
from policies.models.common import Toleration
from policies.models.propagation import ClusterPropagationPolicy, PropagationPolicy
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import workload
from tests.unit.scheduler.test_loop import binding, key

SETTINGS = SchedulerSettings()
WEB = workload("web", kind="Deployment", replicas=2)
KEY = key(WEB)
SELECTS_WEB = [{"apiVersion": "apps/v1", "kind": "Deployment"}]


def pp(
    name: str,
    *,
    priority: int = 0,
    preemption: str = "Never",
    clusters: tuple[str, ...] = ("a", "b"),
    namespace: str = "team",
    selectors: list[dict[str, Any]] | None = None,
) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": _spec(priority, preemption, clusters, selectors),
        }
    )


def cpp(
    name: str, *, priority: int = 0, preemption: str = "Never", clusters: tuple[str, ...] = ("a",)
) -> ClusterPropagationPolicy:
    return ClusterPropagationPolicy.model_validate(
        {"metadata": {"name": name}, "spec": _spec(priority, preemption, clusters, None)}
    )


def _spec(
    priority: int, preemption: str, clusters: tuple[str, ...], selectors: Any
) -> dict[str, Any]:
    return {
        "priority": priority,
        "preemption": preemption,
        "resourceSelectors": selectors or SELECTS_WEB,
        "placement": {"clusterAffinity": {"clusterNames": list(clusters)}},
    }


LOW = pp("low", clusters=("a", "b"))
HIGH = pp("high", priority=10, clusters=("b",))
HIGH_ALWAYS = pp("high", priority=10, preemption="Always", clusters=("b",))
ELSEWHERE = pp("low", selectors=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}])
WIDE = cpp("wide")
LOW_ID = "PropagationPolicy/team/low"


@pytest.mark.parametrize(
    ("policies", "recorded", "expected"),
    [
        pytest.param([LOW, HIGH], None, "high", id="nothing recorded: the first choice"),
        pytest.param([LOW, HIGH], LOW_ID, "low", id="a higher priority, Never: kept"),
        pytest.param([LOW, HIGH_ALWAYS], LOW_ID, "high", id="a higher priority, Always: taken"),
        pytest.param(
            [LOW, pp("named", preemption="Always", selectors=[{**SELECTS_WEB[0], "name": "web"}])],
            LOW_ID,
            "low",
            id="Always but the same priority, though more specific: kept",
        ),
        pytest.param(
            [WIDE, pp("late", priority=-5, preemption="Always")],
            "ClusterPropagationPolicy/wide",
            "late",
            id="a PropagationPolicy takes from a cluster-wide one whatever its priority",
        ),
        pytest.param(
            [WIDE, pp("late", priority=5)],
            "ClusterPropagationPolicy/wide",
            "wide",
            id="a PropagationPolicy set to Never does not",
        ),
        pytest.param(
            [LOW, cpp("wide", priority=99, preemption="Always")],
            LOW_ID,
            "low",
            id="a cluster-wide policy never takes from a PropagationPolicy",
        ),
        pytest.param(
            [WIDE, cpp("wider", priority=1, preemption="Always")],
            "ClusterPropagationPolicy/wide",
            "wider",
            id="a cluster-wide policy of higher priority, Always, takes from another",
        ),
        pytest.param(
            [LOW, HIGH, pp("middle", priority=5, preemption="Always")],
            LOW_ID,
            "middle",
            id="the highest policy allowed to preempt wins, not the highest of all",
        ),
        pytest.param([HIGH], LOW_ID, "high", id="the recorded policy deleted: first choice"),
        pytest.param([ELSEWHERE, HIGH], LOW_ID, "high", id="the recorded one no longer selects it"),
        pytest.param([ELSEWHERE], LOW_ID, None, id="none selects it any more"),
    ],
)
def test_the_recorded_claimant_keeps_the_workload_unless_preempted(
    policies: list[Any], recorded: str | None, expected: str | None
) -> None:
    chosen = plan.claimant(WEB, policies, recorded=recorded)
    assert (chosen.metadata.name if chosen is not None else None) == expected


def test_a_policy_is_recorded_by_kind_namespace_and_name() -> None:
    assert plan.policy_id(LOW) == LOW_ID
    assert plan.policy_id(WIDE) == "ClusterPropagationPolicy/wide"


# -- reconcile: what the record does to each workload


def claimed(b: Binding, claim: str) -> Binding:
    notes = {**b.metadata.annotations, binder_mod.CLAIMED_BY: claim}
    return b.model_copy(update={"metadata": b.metadata.model_copy(update={"annotations": notes})})


def sort(
    w: Workload,
    bound: Binding | None,
    policies: list[Any],
    *,
    remembered: dict[str, str] | None = None,
    clusters: tuple[str, ...] = ("a", "b", "c"),
) -> reconcile.Work:
    k = key(w)
    return reconcile.reconcile(
        workloads={k: reconcile.Entry(w, 7)},
        bindings={k: bound} if bound is not None else {},
        phases={},
        policies=policies,
        clusters=clusters,
        fingerprints={},
        claims=remembered,
        settings=SETTINGS,
    )


def admitted_under(policy: Any, placement: dict[str, int]) -> Binding:
    """Web's Binding as the loop writes it: the fingerprint and claim it was admitted under."""
    job = plan.job_for(WEB, policy, settings=SETTINGS, seq=7)
    b = claimed(binding(WEB, placement), plan.policy_id(policy))
    notes = {**b.metadata.annotations, binder_mod.FINGERPRINT: fingerprint.fingerprint(job)}
    return b.model_copy(update={"metadata": b.metadata.model_copy(update={"annotations": notes})})


def placements(work: reconcile.Work) -> dict[str, Any]:
    return {
        "admitted": {a.ref.name: dict(a.placement) for a in work.admitted},
        "pending": {j.ref.name: j.placement is not None for j in work.pending},
    }


def test_a_higher_priority_policy_set_to_never_leaves_a_claimed_workload_where_it_is() -> None:
    bound = admitted_under(LOW, {"a": 2, "b": 2})
    work = sort(WEB, bound, [LOW, HIGH])
    assert placements(work) == {"admitted": {"web": {"a": 2, "b": 2}}, "pending": {}}
    assert work.claims == {KEY: LOW_ID}


def test_a_higher_priority_policy_set_to_always_takes_it_over() -> None:
    work = sort(WEB, admitted_under(LOW, {"a": 2, "b": 2}), [LOW, HIGH_ALWAYS])
    assert [(j.ref.name, j.placement) for j in work.pending] == [
        ("web", HIGH_ALWAYS.spec.placement)
    ]
    assert work.claims == {KEY: "PropagationPolicy/team/high"}


def test_another_claimant_with_the_same_placement_still_takes_it_over() -> None:
    """The fingerprint would not tell them apart; the record does, so it is written."""
    twin = pp("twin", priority=10, preemption="Always", clusters=("a", "b"))
    work = sort(WEB, admitted_under(LOW, {"a": 2, "b": 2}), [LOW, twin])
    assert [j.ref.name for j in work.pending] == ["web"]


@pytest.mark.parametrize(
    ("policies", "gone"),
    [
        pytest.param([], "was deleted", id="its policy deleted"),
        pytest.param([ELSEWHERE], "no longer selects it", id="its policy no longer selects it"),
    ],
)
def test_a_workload_whose_policy_is_gone_and_none_claims_it_stays_where_it_is(
    policies: list[Any], gone: str
) -> None:
    bound = admitted_under(LOW, {"a": 2, "b": 2})
    work = sort(WEB, bound, policies)
    assert placements(work) == {"admitted": {"web": {"a": 2, "b": 2}}, "pending": {}}
    assert (work.claims, work.held) == ({}, {KEY: LOW_ID})  # held until amended
    [amended] = work.amends
    assert amended.spec == bound.spec and amended.status.phase == "Scheduled"
    assert amended.metadata.annotations[binder_mod.CLAIMED_BY] == ""
    assert amended.status.reason == (
        f"Kept where it is: its policy {LOW_ID} {gone} and no other policy claims it;"
        " it stays until one does"
    )
    # Amended, it stays without a further write; a policy matching later claims it.
    assert placements(sort(WEB, amended, policies)) == placements(work)
    assert sort(WEB, amended, policies).amends == []
    again = sort(WEB, amended, [*policies, HIGH])
    assert [(j.ref.name, j.placement) for j in again.pending] == [("web", HIGH.spec.placement)]


def test_a_kept_workload_is_placed_again_when_its_cluster_leaves_the_fleet() -> None:
    work = sort(WEB, claimed(binding(WEB, {"a": 2, "c": 2}), ""), [], clusters=("a", "b"))
    assert placements(work) == {"admitted": {}, "pending": {"web": False}}


def test_a_pending_workload_whose_policy_is_gone_has_no_placement_to_keep() -> None:
    waiting = claimed(binding(WEB, {}, phase="Pending", reason="no room"), LOW_ID)
    work = sort(WEB, waiting, [])
    assert placements(work) == {"admitted": {}, "pending": {"web": False}}
    assert work.amends == []


def test_a_claim_the_binding_does_not_record_is_taken_from_the_loops_memory() -> None:
    """A Binding written before claims were recorded, or a workload not bound yet."""
    legacy = admitted_under(LOW, {"a": 2, "b": 2})
    notes = {k: v for k, v in legacy.metadata.annotations.items() if k != binder_mod.CLAIMED_BY}
    legacy = legacy.model_copy(
        update={"metadata": legacy.metadata.model_copy(update={"annotations": notes})}
    )
    assert [a.ref.name for a in sort(WEB, legacy, [LOW, HIGH], remembered={KEY: LOW_ID}).admitted]
    deleted = sort(WEB, legacy, [], remembered={KEY: LOW_ID})
    assert [a.ref.name for a in deleted.admitted] == ["web"] and len(deleted.amends) == 1
    unbound = sort(WEB, None, [LOW, HIGH], remembered={KEY: LOW_ID})
    assert [(j.ref.name, j.placement) for j in unbound.pending] == [("web", LOW.spec.placement)]
    assert sort(WEB, None, [LOW, HIGH]).claims == {KEY: "PropagationPolicy/team/high"}


def test_an_object_without_pods_whose_policy_is_gone_keeps_its_copies_and_says_so() -> None:
    [config] = [
        o.model
        for o in load_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: team}\n"
            "data: {a: b}\n",
            filename="c.yaml",
        ).objects
    ]
    assert isinstance(config, Workload)
    bound = claimed(binding(config, {"a": 0, "b": 0}), LOW_ID)
    work = sort(config, bound, [])
    assert placements(work) == {"admitted": {}, "pending": {}} and work.stale == []
    assert [b.metadata.annotations[binder_mod.CLAIMED_BY] for b in work.amends] == [""]


# -- the binder: a new claimant is a change, and its reason is written


def test_a_new_claimant_is_a_change_to_write_and_shows_its_reason() -> None:
    stored = admitted_under(LOW, {"a": 2, "b": 2})
    amended = recorded.orphaned(stored, LOW_ID, deleted=True)
    assert binder_mod.same(stored, stored)
    assert not binder_mod.same(stored, amended)
    assert binder_mod._merged(stored, amended).status.reason.startswith("Kept where it is")
    # A placement decided again under the same claimant still keeps the stored reason.
    redecided = stored.model_copy(
        update={"status": stored.status.model_copy(update={"reason": "Scheduled again"})}
    )
    assert binder_mod._merged(stored, redecided).status == stored.status


def test_preemption_is_acted_on_so_validate_no_longer_warns_about_it() -> None:
    loaded = load_text(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata: {name: high, namespace: team}\n"
        "spec:\n  preemption: Always\n  resourceSelectors: [{apiVersion: apps/v1, kind: Job}]\n",
        filename="p.yaml",
    )
    assert loaded.ok and not loaded.warnings


def _tolerating(policy: PropagationPolicy, key: str) -> PropagationPolicy:
    placement = policy.spec.placement.model_copy(
        update={"cluster_tolerations": [Toleration(key=key, operator="Exists")]}
    )
    return policy.model_copy(
        update={"spec": policy.spec.model_copy(update={"placement": placement})}
    )


async def test_failover_reads_its_terms_from_the_policy_the_binding_records() -> None:
    """`high` (priority 10, Never) matches `web` but `low` claimed it: failover must take
    `low`'s tolerations, not those of the policy a stateless claim would pick."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    low, high = _tolerating(LOW, "from-low"), _tolerating(HIGH, "from-high")
    for obj in (WEB, low, high):
        await objs.put(objects.key_for(obj), obj)
    controller = FailoverController(store, claim=plan.claim)
    await controller.workloads.load()
    await controller.policies.load()
    kept = claimed(binding(WEB, {"a": 2}), plan.policy_id(low))
    assert [t.key for t in controller.terms(kept).tolerations] == ["from-low"]
    unrecorded = binding(WEB, {"a": 2})
    assert [t.key for t in controller.terms(unrecorded).tolerations] == ["from-high"]


def test_a_kept_workload_whose_pods_were_resized_is_placed_again() -> None:
    """Kept where its deleted policy placed it, web is resized. The propagator renders the
    current template onto the kept targets, so the larger pods ran there without the
    queue or the quota admitting them: it is placed again, its copies held meanwhile."""
    bound = admitted_under(LOW, {"a": 2, "b": 2})
    pods = WEB.pod_requests().to_wire()
    bound = bound.model_copy(update={"spec": bound.spec.model_copy(update={"pod_requests": pods})})
    assert placements(sort(WEB, bound, [])) == {
        "admitted": {"web": {"a": 2, "b": 2}},
        "pending": {},
    }

    bigger = workload("web", kind="Deployment", replicas=2, cpu="2")
    resized = sort(bigger, bound, [])

    assert placements(resized) == {"admitted": {}, "pending": {"web": False}}
    (waiting,) = resized.waiting
    assert waiting.pod == WEB.pod_requests()  # the copies run the old pods until then
    assert dict(waiting.placement) == {"a": 2, "b": 2}


def test_a_kept_workload_scaled_is_placed_again() -> None:
    """Kept where its deleted policy placed it, web is scaled to 0. The propagator renders
    each target's count from the Binding, so it went on running 2 replicas on each."""
    bound = admitted_under(LOW, {"a": 2, "b": 2})
    bound = bound.model_copy(update={"spec": bound.spec.model_copy(update={"replicas": 2})})
    assert placements(sort(WEB, bound, []))["admitted"] == {"web": {"a": 2, "b": 2}}

    for count in (0, 1, 4):  # 4 adds up over a and b, yet it was 2 on each
        scaled = workload("web", kind="Deployment", replicas=count)
        assert placements(sort(scaled, bound, [])) == {"admitted": {}, "pending": {"web": False}}


def test_a_kept_workload_moved_to_another_queue_is_placed_again() -> None:
    """Kept where its deleted policy placed it, web moves to queue ml: ml must admit it
    (it was charged to ml without ever being admitted there)."""
    bound = admitted_under(LOW, {"a": 2, "b": 2})
    moved = workload("web", kind="Deployment", replicas=2, queue="ml")

    work = sort(moved, bound, [])

    assert placements(work) == {"admitted": {}, "pending": {"web": False}}
    (waiting,) = work.waiting
    assert waiting.queue == "default"  # where the copies were admitted, until ml admits it
