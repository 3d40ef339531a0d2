"""What `fedctl apply`, `fedctl plan` and the policy editor say about a policy that claims
less than it selects: each case names the workload, the policy keeping it and the rule that
decides; a policy that claims everything it selects says nothing."""

from __future__ import annotations

import pytest

from federation.scheduler import claims, plan
from tests.unit.scheduler.fleet import workload
from tests.unit.scheduler.test_claim_preemption import LOW, LOW_ID, WEB, cpp, pp

BY_NAME = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]
BY_LABEL = [{"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {}}}]


def notes(
    proposed: plan.AnyPolicy, *others: plan.AnyPolicy, recorded: str | None = None
) -> list[str]:
    return claims.notes([proposed], [WEB], [proposed, *others], recorded=lambda _: recorded)


def test_a_policy_that_claims_what_it_selects_says_nothing() -> None:
    assert notes(LOW) == []
    # It outranks the policy holding the workload and may preempt it.
    taker = pp("taker", priority=5, preemption="Always")
    assert notes(taker, LOW, recorded=LOW_ID) == []


def test_a_policy_that_selects_nothing_says_so() -> None:
    elsewhere = pp(
        "typo", selectors=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "wbe"}]
    )
    other_ns = pp("lost", namespace="default")
    for policy, name in ((elsewhere, "team/typo"), (other_ns, "default/lost")):
        (line,) = notes(policy)
        assert line.startswith(f"PropagationPolicy {name} selects no workload")


@pytest.mark.parametrize(
    ("proposed", "holder", "recorded", "rule"),
    [
        pytest.param(
            pp("a-first"),
            LOW,
            LOW_ID,
            "it stays with PropagationPolicy team/low, which claimed it first: a policy takes"
            " a claimed workload only with `preemption: Always` and a priority above 0"
            " (this one: preemption Never, priority 0)",
            id="held by an earlier claim: preemption and a higher priority needed",
        ),
        pytest.param(
            pp("a-first", priority=3, preemption="Never"),
            LOW,
            LOW_ID,
            "which claimed it first: a policy takes a claimed workload only with"
            " `preemption: Always` and a priority above 0 (this one: preemption Never,"
            " priority 3)",
            id="a higher priority alone does not take it",
        ),
        pytest.param(
            cpp("wide", priority=9, preemption="Always"),
            LOW,
            LOW_ID,
            "claims it: a PropagationPolicy comes before a ClusterPropagationPolicy",
            id="a cluster policy never takes from a namespaced one",
        ),
        pytest.param(
            pp("a-first", priority=-5),
            cpp("wide", priority=9),
            "ClusterPropagationPolicy/wide",
            "it stays with ClusterPropagationPolicy wide, which claimed it first: a policy"
            " takes a claimed workload only with `preemption: Always` (this one: preemption"
            " Never, priority -5)",
            id="a namespaced policy takes from a cluster one only with preemption",
        ),
        pytest.param(
            pp("z-last"),
            LOW,
            None,
            "PropagationPolicy team/low claims it: both have priority 0 and select it by"
            " kind alone: the name first in alphabetical order claims",
            id="unclaimed: the name decides a tie",
        ),
        pytest.param(
            pp("a-first"),
            pp("z-byname", selectors=BY_NAME),
            None,
            "PropagationPolicy team/z-byname claims it: it selects by name, this one by kind alone",
            id="unclaimed: the closer selector wins",
        ),
        pytest.param(
            pp("a-first", selectors=BY_LABEL),
            pp("z-high", priority=2),
            None,
            "claims it: its priority 2 is above 0",
            id="unclaimed: the higher priority wins",
        ),
        pytest.param(
            cpp("a-wide", priority=9),
            LOW,
            None,
            "claims it: a PropagationPolicy comes before a ClusterPropagationPolicy",
            id="unclaimed: a namespaced policy before a cluster one",
        ),
    ],
)
def test_a_policy_outranked_or_held_back_names_the_keeper_and_the_rule(
    proposed: plan.AnyPolicy, holder: plan.AnyPolicy, recorded: str | None, rule: str
) -> None:
    (line,) = notes(proposed, holder, recorded=recorded)
    assert line.startswith(f"{claims.policy_label(proposed)} selects Deployment team/web, but")
    assert rule in line
    assert claims.policy_label(holder) in line


def test_many_held_workloads_are_counted_past_the_first_few() -> None:
    many = [workload(f"web-{i:02d}", kind="Deployment", replicas=1) for i in range(12)]
    proposed = pp("z-last")
    lines = claims.notes([proposed], many, [proposed, LOW])
    assert len(lines) == claims.SHOWN + 1
    assert lines[-1] == (
        "PropagationPolicy team/z-last: 7 more of the 12 workloads it selects are claimed"
        " by other policies"
    )
    assert "Deployment team/web-00" in lines[0]
